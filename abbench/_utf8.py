"""Reading the text files a person writes for abbench (definitions, mapping profiles, gates, graders,
prices, lookups) as UTF-8, and saying where and what to do when one is not."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

from abbench.errors import AbbenchError, UsageError

_UTF16_32 = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def not_utf8(name: str, data: bytes, exc: UnicodeDecodeError) -> str:
    """Why `data` (the bytes of the file called `name`) is not UTF-8: the byte, its line and column,
    what the file seems to be instead, and what to do."""
    for bom, kind in _UTF16_32:
        if data.startswith(bom):
            return f"{name} is {kind} (it starts with a {kind} byte order mark), not UTF-8: save it as UTF-8"
    pos = exc.start
    line = data.count(b"\n", 0, pos) + 1
    column = pos - (data.rfind(b"\n", 0, pos) + 1) + 1
    seems = ""
    try:
        data.decode("gb18030")
    except UnicodeDecodeError:
        pass
    else:
        seems = " It reads as GBK/GB18030, what an editor in a Chinese locale saves."
    return (
        f"{name} is not UTF-8 (byte 0x{data[pos]:02x} at line {line}, column {column}): save it as UTF-8."
        f"{seems}"
    )


def read_utf8(path: str | os.PathLike[str], error: type[AbbenchError] = UsageError) -> str:
    """The text of a file a person wrote, read as UTF-8 (a byte order mark is dropped).

    Raises:
        error: the file is not UTF-8 (``m.yaml is not UTF-8 (byte 0xd6 at line 1, column 7): save it
            as UTF-8``); the file cannot be read is an `OSError`, left to the caller.
    """
    p = Path(path)
    data = p.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if data.startswith(codecs.BOM_UTF8):
            exc.start += len(codecs.BOM_UTF8)  # the decoder counts from after the mark it strips
        raise error(not_utf8(str(p), data, exc)) from None

"""Text handling for imports: encoding detection, input whitespace normalisation, label keys."""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from abbench._text import clip
from abbench.dataset._hostile import binary_kind
from abbench.errors import ImportFailed, UsageError

_BLOCK = 1 << 20

# (BOM, codec that strips it, name shown to people). UTF-32 before UTF-16: their BOMs share a prefix.
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig", "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32", "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "utf-16"),
)

# Tried in order when a file has no BOM and no encoding is named. GB18030 is a superset of GBK and
# GB2312, so one attempt covers the Chinese exports analysts bring (Excel "CSV" on a Chinese Windows).
_DETECTED = ("utf-8", "gb18030")


@dataclass(frozen=True, slots=True)
class Encoding:
    """The text encoding of a file: the codec to open it with, and how it was chosen.

    Attributes:
        codec: The Python codec name (``utf-8``, ``utf-8-sig``, ``gb18030``, ...).
        how: ``"bom"``, ``"detected"`` or ``"named"``.
    """

    codec: str
    how: str


def check_codec(name: str) -> str:
    """The canonical codec name for `name`.

    Raises:
        UsageError: Python knows no such encoding.
    """
    choices = (
        "use a Python codec name such as utf-8, utf-8-sig, gb18030, gbk, big5, shift_jis, cp1252 or latin-1"
    )
    try:
        info = codecs.lookup(name)
    except LookupError:
        raise UsageError(f"unknown encoding {name!r}; {choices}") from None
    # base64, hex, rot13, zlib ... are codecs too, but they do not turn bytes into text
    if not getattr(info, "_is_text_encoding", True):
        raise UsageError(f"{name!r} is not a text encoding; {choices}")
    return info.name


_SAMPLE = 1 << 20


def detect_encoding(path: Path, declared: str | None = None) -> Encoding:
    """Choose the encoding of a text file from its first MiB.

    A byte-order mark wins; otherwise a named encoding is used as given; otherwise UTF-8, then
    GB18030 (which also reads GBK), are tried. Only the first MiB is decoded here: the rest is
    decoded once, while it is read, and a bad byte there becomes `decode_error`'s exact message.

    Raises:
        ImportFailed: the start of the file does not decode with the named encoding, or any tried one.
    """
    with path.open("rb") as fh:
        head = fh.read(4)
    kind = binary_kind(path)
    if kind is not None:
        raise ImportFailed(
            f"{path.name} is {kind}; it is not a text file (CSV, JSON), whatever its name says"
        )
    if declared:
        codec = check_codec(declared)
        if codec in ("utf-8", "utf_8") and head.startswith(codecs.BOM_UTF8):
            codec = "utf-8-sig"  # naming utf-8 for a file with a BOM must not leave the BOM in the header
        _check_decodes(path, codec, named=True, limit=_SAMPLE)
        return Encoding(codec, "named")
    for bom, codec, _ in _BOMS:
        if head.startswith(bom):
            try:
                _check_decodes(path, codec, named=False, limit=_SAMPLE)
            except ImportFailed as exc:
                raise ImportFailed(
                    f"{path.name} starts with a {codec} byte order mark but is {exc}: the file mixes encodings "
                    "or the mark is wrong; save it in one encoding, or name it with encoding= (CLI: --encoding)"
                ) from None
            return Encoding(codec, "bom")
    failures = []
    for codec in _DETECTED:
        try:
            _check_decodes(path, codec, named=False, limit=_SAMPLE)
        except ImportFailed as exc:
            failures.append(str(exc))
            continue
        if codec != "utf-8":
            refuse_mixed(path)  # UTF-8 failed: are only some lines legacy (a line pasted from elsewhere)?
        return Encoding(codec, "detected")
    raise ImportFailed(
        f"{path.name}: cannot tell its text encoding; {'; '.join(failures)}. "
        "Name it with encoding= (CLI: --encoding), e.g. big5, shift_jis, cp1252 or latin-1"
    )


def decode_error(path: Path, encoding: Encoding) -> ImportFailed:
    """The error for a file that stopped decoding part way: where (line, column, bytes) and what to do.

    Called when reading meets a bad byte past the sample `detect_encoding` looked at.
    """
    if encoding.how == "detected" and encoding.codec == "utf-8":
        try:
            refuse_mixed(path)
        except ImportFailed as exc:
            return exc
    try:
        _check_decodes(path, encoding.codec, named=encoding.how == "named")
    except ImportFailed as exc:
        if encoding.how == "named":
            return exc
        return ImportFailed(
            f"{path.name} is {exc} — its start read as {encoding.codec}. Name its encoding with encoding= "
            "(CLI: --encoding), e.g. gb18030, gbk, big5, cp1252 or latin-1"
        )
    return ImportFailed(f"{path.name} does not decode as {encoding.codec}")  # pragma: no cover


def _check_decodes(path: Path, codec: str, *, named: bool, limit: int | None = None) -> None:
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        with path.open("rb") as fh:
            if limit is not None:
                # A cut multi-byte character at the end of the sample is not an error (final=False).
                decoder.decode(fh.read(limit))
                return
            while block := fh.read(_BLOCK):
                decoder.decode(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        pass
    except UnicodeError as exc:  # no position to report: "UTF-16 stream does not start with BOM"
        hint = "check the encoding= you named, or leave it out to detect it" if named else "name its encoding"
        raise ImportFailed(f"{path.name} does not decode as {codec} ({exc}); {hint}") from None
    else:
        return
    # Only on failure: decode the whole file at once so the error's offset is absolute.
    data = path.read_bytes()
    try:
        data.decode(codec)
    except UnicodeDecodeError as exc:
        pos = exc.start
    except UnicodeError:  # pragma: no cover - raised above by the incremental decoder already
        pos = 0
    else:  # pragma: no cover - the incremental and one-shot decoders disagree
        return
    if codec.replace("_", "-").lower() == "utf-8-sig" and data.startswith(codecs.BOM_UTF8):
        pos += len(codecs.BOM_UTF8)  # the decoder counts from after the mark it strips
    line = data.count(b"\n", 0, pos) + 1
    column = pos - (data.rfind(b"\n", 0, pos) + 1) + 1
    bad = data[pos : pos + 4].hex(" ") or "end of file"
    where = f"line {line}, column {column} (byte offset {pos})"
    if named:
        raise ImportFailed(
            f"{path.name} does not decode as {codec} at {where}: bytes {bad}; "
            "check the encoding= you named, or leave it out to detect it"
        )
    raise ImportFailed(f"not {codec} (bytes {bad} at {where})")


_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
_HSPACE = re.compile(r"[^\S\n]+")
_AROUND_NL = re.compile(r" ?\n ?")
_NEEDS_WORK = re.compile(r"[^\S ]|  |^\s|\s$|[\u200b-\u200d\u2060\ufeff]")


def normalize_text(text: str) -> str:
    """Tidy the whitespace of an input without changing its words.

    NBSP, tabs and other Unicode spaces become one ASCII space; zero-width characters go; runs of
    spaces collapse; line endings become ``\\n``; the ends are stripped; the text is NFC-composed.
    Full-width punctuation and CJK characters are kept as written (NFKC would rewrite ``？`` to ``?``).
    """
    if _NEEDS_WORK.search(text) is not None:
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        text = _HSPACE.sub(" ", text.translate(_ZERO_WIDTH))
        if "\n" in text:
            text = _AROUND_NL.sub("\n", text)
        text = text.strip()
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text


# Any whitespace but the plain space, and the zero-width characters: one character class, which the
# regex engine scans far faster than an alternation.
_ODD_SPACE = re.compile(
    r"[\t-\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff]"
)


def normalize_texts(values: Sequence[str]) -> list[str]:
    """`normalize_text` over a column of strings, skipped when the joined column shows no value needs it."""
    joined = "\x00".join(values)
    tidy = (
        _ODD_SPACE.search(joined) is None
        and "  " not in joined
        and " \x00" not in joined
        and "\x00 " not in joined
        and not joined.startswith(" ")
        and not joined.endswith(" ")
        and (joined.isascii() or unicodedata.is_normalized("NFC", joined))
    )
    return list(values) if tidy else list(map(normalize_text, values))


def strip_texts(values: Sequence[str]) -> list[str]:
    """`str.strip` over a column of strings."""
    return list(map(str.strip, values))


@lru_cache(maxsize=8192)
def label_key(value: str) -> str:
    """The form two labels are compared in: NFKC, case-folded, inner whitespace collapsed, stripped.

    ``"Fast "``, ``"FAST"`` and ``"ｆａｓｔ"`` share the key ``"fast"``.
    """
    value = unicodedata.normalize("NFKC", value).casefold()
    return " ".join(value.split())


_SHOWN_LINES = 5


def refuse_mixed(path: Path) -> None:
    """Refuse a text file whose lines are in two encodings: UTF-8 lines and GBK/GB18030 lines (one pasted
    from another program). Read whole as either, the other's lines would be stored as mojibake.

    A line counts as UTF-8 when it decodes so and holds a character of three bytes or more (a CJK
    character; a GBK line rarely decodes so by chance), or does not read as GB18030 at all.

    Raises:
        ImportFailed: naming the first lines of each kind and what each would turn into.
    """
    utf8 = _Lines()
    legacy = _Lines()
    with path.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            if line.isascii():
                continue
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                legacy.add(number, line)
                continue
            if max(line) >= 0xE0 or not _decodes(line, "gb18030"):
                utf8.add(number, line)
    if not utf8.count or not legacy.count:
        return
    (at_legacy, bad), (at_utf8, good) = legacy.first[0], utf8.first[0]
    raise ImportFailed(
        f"{path.name} mixes two encodings: {legacy} GBK/GB18030 and {utf8} UTF-8. Read whole as GB18030, "
        f"line {at_utf8} would be stored as {_shown(good, 'gb18030')!r} (it says {_shown(good, 'utf-8')!r}); "
        f"as UTF-8, line {at_legacy} cannot be read (it says {_shown(bad, 'gb18030')!r}). Save the file in "
        "one encoding (UTF-8), or name one with encoding= (CLI: --encoding) to read it so anyway"
    )


class _Lines:
    """How many lines of one kind, and the first few (number, bytes)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: list[tuple[int, bytes]] = []

    def add(self, number: int, line: bytes) -> None:
        self.count += 1
        if len(self.first) < _SHOWN_LINES:
            self.first.append((number, line))

    def __str__(self) -> str:
        numbers = ", ".join(str(n) for n, _ in self.first)
        more = f" and {self.count - len(self.first):,} more" if self.count > len(self.first) else ""
        return f"line{'s' if self.count > 1 else ''} {numbers}{more} {'are' if self.count > 1 else 'is'}"


def _decodes(data: bytes, codec: str) -> bool:
    try:
        data.decode(codec)
    except UnicodeDecodeError:
        return False
    return True


def _shown(line: bytes, codec: str) -> str:
    return clip(line.decode(codec, errors="replace").strip(), 40)

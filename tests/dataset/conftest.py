"""Small helpers that write data files into tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REALDATA, REPO


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The shared real data: ../shared/realdata, or the nearest shared/realdata above a work tree."""
    for base in (REALDATA.parent.parent, *REPO.parents):
        folder = base / "shared" / "realdata"
        if folder.exists():
            return folder
    pytest.skip(f"real data not found at {REALDATA}")


@pytest.fixture
def write(tmp_path):
    """``write(name, text_or_bytes, encoding="utf-8")`` → the path of a new file in tmp_path."""

    def _write(name: str, content: str | bytes, encoding: str = "utf-8") -> Path:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode(encoding))
        return path

    return _write


@pytest.fixture
def write_xlsx(tmp_path):
    """``write_xlsx(name, {sheet: [[cells], ...]}, start=(row, col))`` → an .xlsx written by openpyxl."""
    from openpyxl import Workbook

    def _write(name: str, sheets: dict[str, list[list]], start: tuple[int, int] = (1, 1)) -> Path:
        wb = Workbook()
        wb.remove(wb.active)
        for title, rows in sheets.items():
            ws = wb.create_sheet(title)
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    if value is not None:
                        ws.cell(start[0] + r, start[1] + c, value)
        path = tmp_path / name
        wb.save(path)
        return path

    return _write


@pytest.fixture
def write_jsonl(tmp_path):
    """``write_jsonl(name, rows)`` → a JSON Lines file."""

    def _write(name: str, rows: list) -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return path

    return _write

"""Writing files others read: `atomic_path` publishes whole files only, and `keep_empty` empties a file
only when it holds something (truncating a new empty file made its close cost ~0.3 s on ext4)."""

from __future__ import annotations

import os

import pytest

from abbench._files import atomic_path, keep_empty


def test_a_file_opened_with_keep_empty_holds_only_what_was_written(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("an older, longer content\n")
    with open(path, "w", opener=keep_empty) as f:
        f.write("new\n")
    assert path.read_text() == "new\n"  # emptied first: nothing of the old content remains
    with open(tmp_path / "fresh.txt", "w", opener=keep_empty) as f:  # created when missing
        f.write("x")
    assert (tmp_path / "fresh.txt").read_text() == "x"
    with open(path, "a", opener=keep_empty) as f:  # a mode that keeps the content still keeps it
        f.write("more\n")
    assert path.read_text() == "new\nmore\n"


def test_an_empty_file_is_not_truncated(tmp_path, monkeypatch):
    path = tmp_path / "empty"
    path.touch()
    calls = []
    real_open = os.open

    def spy(p, flags, *args):
        calls.append(flags)
        return real_open(p, flags, *args)

    monkeypatch.setattr(os, "open", spy)
    with open(path, "wb", opener=keep_empty) as f:
        f.write(b"data")
    assert calls and not any(flags & os.O_TRUNC for flags in calls)
    assert path.read_bytes() == b"data"


def test_atomic_path_publishes_a_whole_file_or_nothing(tmp_path):
    target = tmp_path / "out.csv"
    with atomic_path(target) as tmp:
        with open(tmp, "w", opener=keep_empty) as f:
            f.write("a,b\n")
        assert not target.exists()
    assert target.read_text() == "a,b\n"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("failed")
    assert target.read_text() == "a,b\n" and [p.name for p in tmp_path.iterdir()] == ["out.csv"]

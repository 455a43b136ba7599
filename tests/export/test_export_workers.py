"""A big export's slices read by worker processes (`abbench.store.bulk._workers`) give the bytes of the
in-thread read, and a worker that fails, dies or is abandoned never leaves a wrong file or a process
behind.

The byte comparisons run the edge experiment of `test_csv_lines` / `test_xlsx_rows` (values of every
kind, oddities written straight into the store, slices with runs missing) with two workers, which
`ABBENCH_EXPORT_WORKERS` turns on below the size an export would use them at by itself.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sqlite3
import subprocess
import sys

import pytest

from abbench.errors import StoreError
from abbench.export import export_table, write_csv, write_jsonl, write_xlsx
from abbench.store.bulk import _workers
from abbench.store.bulk._workers import read_slices, sqlite_module, worker_count
from tests.export.test_csv_lines import ODDITIES, build_edge
from tests.export.test_xlsx_rows import SHEET_ODDITIES, _parts


@pytest.fixture(scope="module")
def edge(tmp_path_factory):
    store, exp_id = build_edge(tmp_path_factory.mktemp("workers"), ODDITIES + SHEET_ODDITIES)
    yield store, exp_id
    store.close()


@pytest.fixture
def counted(monkeypatch):
    """The worker processes started meanwhile."""
    started = []
    start = _workers._start

    def counting(*args):
        procs = start(*args)
        started.extend(procs)
        return procs

    monkeypatch.setattr(_workers, "_start", counting)
    return started


def _export(write, table, path, workers, monkeypatch):
    monkeypatch.setenv("ABBENCH_EXPORT_WORKERS", str(workers))
    count = write(table, path)
    return count, path.read_bytes()


@pytest.mark.parametrize("sqlite", ["bundled", "system"])
@pytest.mark.parametrize("write", [write_csv, write_xlsx, write_jsonl], ids=["csv", "xlsx", "jsonl"])
def test_two_workers_write_the_bytes_of_one_thread(edge, tmp_path, monkeypatch, counted, write, sqlite):
    # The workers read with the bundled SQLite (3.51) where it is installed, this thread with Python's:
    # the bytes are the same either way, NULs in text handed to the cell functions included.
    monkeypatch.setenv(_workers.SQLITE_ENV, sqlite)
    store, exp_id = edge
    table = export_table(exp_id, "runs", store=store)
    here = _export(write, table, tmp_path / "here", 0, monkeypatch)
    assert counted == []
    apart = _export(write, table, tmp_path / "apart", 2, monkeypatch)
    assert len(counted) == 2 and all(p.returncode == 0 for p in counted)  # both ran and ended
    assert apart == here
    # and both are the Python writer's bytes
    python = dataclasses.replace(table, csv_lines=None, xlsx_rows=None, json_lines=None)
    assert write(python, tmp_path / "python") == here[0]
    if write is not write_xlsx:
        assert (tmp_path / "python").read_bytes() == here[1]
    else:
        assert _parts(tmp_path / "python") == _parts(tmp_path / "here")


def test_an_export_below_the_worker_size_reads_in_this_thread(edge, tmp_path, monkeypatch, counted):
    monkeypatch.delenv("ABBENCH_EXPORT_WORKERS", raising=False)
    store, exp_id = edge
    assert worker_count(3999) == 0 and worker_count(_workers.WORKER_ROWS - 1) == 0
    write_csv(export_table(exp_id, "runs", store=store), tmp_path / "small.csv")
    assert counted == []


def test_a_worker_count_that_is_not_a_number_is_refused(monkeypatch):
    monkeypatch.setenv("ABBENCH_EXPORT_WORKERS", "two")
    with pytest.raises(StoreError, match=r"ABBENCH_EXPORT_WORKERS='two' is not a number.*set it to 0"):
        worker_count(10)
    monkeypatch.setenv("ABBENCH_EXPORT_WORKERS", " 0 ")
    assert worker_count(10**9) == 0


class Job:
    """A `read_slices` job over a table of numbers: a slice is ``(first, last, what)``; `what` tells
    the worker to answer, fail, die or print."""

    def prepare(self, conn: sqlite3.Connection) -> None:
        conn.create_function("twice", 1, lambda x: 2 * x, deterministic=True)

    def read(self, conn: sqlite3.Connection, params):
        first, last, what = params
        if what == "fail":
            raise ValueError(f"slice {first} refused")
        if what == "unpicklable":
            error = ValueError("cannot travel")
            error.hook = lambda: None  # a lambda does not pickle
            raise error
        if what == "die":
            os._exit(3)
        if what == "print":
            print("noise on stdout")  # must not reach the results
        rows = conn.execute("SELECT twice(n) FROM t WHERE n BETWEEN ? AND ? ORDER BY n", (first, last))
        return os.getpid(), [n for (n,) in rows], "x" * (1 << 20 if what == "big" else 0)


@pytest.fixture
def numbers(tmp_path):
    path = tmp_path / "n.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (n INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
    conn.close()
    return path


def _read(path, slices, workers=2, job=None, **more):
    """`read_slices` of `job` (a `Job` by default) over the database at `path`."""
    return read_slices(
        job or Job(),
        slices,
        conn=lambda: sqlite3.connect(path),
        uri=f"file:{path}?mode=ro",
        workers=workers,
        **more,
    )


def test_slices_come_back_in_order_from_both_workers(numbers, counted):
    slices = [(i, i + 9, "ok") for i in range(0, 100, 10)]
    got = list(_read(numbers, slices))
    assert [values for _, values, _ in got] == [[2 * n for n in range(i, i + 10)] for i in range(0, 100, 10)]
    assert len({pid for pid, _, _ in got}) == 2 and os.getpid() not in {pid for pid, _, _ in got}
    assert list(_read(numbers, slices, workers=0)) == [(os.getpid(), v, "") for _, v, _ in got]


def test_a_worker_starts_quietly_without_loading_the_engines(numbers, capfd):
    # ``python -m abbench.store.bulk._workers`` imports the package first: an eager face loaded every
    # engine in each worker and `_workers` twice, which runpy said on the user's terminal (a
    # RuntimeWarning per worker of every big export).
    got = list(_read(numbers, [(0, 9, "ok"), (10, 19, "ok")]))
    assert [v[:2] for _, v, _ in got] == [[0, 2], [20, 22]]
    assert capfd.readouterr().err == ""
    probe = "import sys, abbench.store.bulk; print(sorted(m for m in sys.modules if m.startswith('abbench.store.bulk.')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_what_a_worker_prints_does_not_reach_the_results(numbers):
    got = list(_read(numbers, [(0, 1, "print"), (2, 3, "print"), (4, 5, "ok")]))
    assert [v for _, v, _ in got] == [[0, 2], [4, 6], [8, 10]]


def test_a_workers_error_is_raised_in_the_reader_after_the_slices_before_it(numbers, counted):
    got = []
    with pytest.raises(ValueError, match="slice 20 refused"):
        for item in _read(numbers, [(0, 9, "ok"), (10, 19, "ok"), (20, 29, "fail"), (30, 39, "ok")]):
            got.append(item[1][0])
    assert got == [0, 20]
    assert all(p.poll() is not None for p in counted)  # no worker left running


def test_an_error_that_cannot_travel_is_named(numbers):
    with pytest.raises(StoreError, match="an export worker failed: ValueError\\('cannot travel'\\)"):
        list(_read(numbers, [(0, 9, "ok"), (10, 19, "unpicklable")]))


def test_a_worker_that_dies_is_a_store_error_that_says_what_to_do(numbers, counted):
    with pytest.raises(StoreError, match=r"exit code 3.*ABBENCH_EXPORT_WORKERS=0"):
        list(_read(numbers, [(0, 9, "ok"), (10, 19, "die"), (20, 29, "ok"), (30, 39, "ok")]))
    assert all(p.poll() is not None for p in counted)


def test_a_reader_that_stops_early_leaves_no_worker_behind(numbers, counted):
    # Each result is a megabyte, more than a pipe holds: the workers are blocked writing when the
    # reader stops after the first.
    results = _read(numbers, [(i, i, "big") for i in range(40)])
    first = next(results)
    assert first[1] == [0]
    results.close()
    assert len(counted) == 2
    assert all(p.returncode is not None for p in counted)
    assert all(p.stdout.closed and p.stdin.closed for p in counted)


class WriteJob:
    """A job whose results are file data, ``(data, n)``: slice ``(first, last, what)`` gives the lines
    ``"<pid> <n>\\n"`` of its numbers, as bytes or, with `what` "parts", as a list of them."""

    def prepare(self, conn: sqlite3.Connection) -> None:
        """Nothing to register."""

    def read(self, conn: sqlite3.Connection, params):
        first, last, what = params
        if what == "die":
            os._exit(4)
        lines = [f"{os.getpid()} {n}\n".encode() for (n,) in conn.execute(
            "SELECT n FROM t WHERE n BETWEEN ? AND ? ORDER BY n", (first, last)
        )]  # fmt: skip
        return (lines if what == "parts" else b"".join(lines)), len(lines)


def _write(path, slices, out, workers=2, owner=None):
    return _read(path, slices, workers, WriteJob(), owner=owner, out=out)


@pytest.mark.parametrize("what", ["whole", "parts"])
def test_workers_write_into_a_file_after_what_it_holds(numbers, tmp_path, counted, what):
    slices = [(i, i + 9, what) for i in range(0, 100, 10)]
    with open(tmp_path / "out", "w+b") as out:
        out.write(b"header\n")
        got = list(_write(numbers, slices, out))
        assert out.tell() == out.seek(0, os.SEEK_END)  # left after the last line
        out.write(b"footer\n")
    assert got == [(b"", 10)] * 10  # no data crossed the pipes
    lines = (tmp_path / "out").read_bytes().splitlines()
    assert lines[0] == b"header" and lines[-1] == b"footer"
    assert [int(line.split()[1]) for line in lines[1:-1]] == list(range(100))
    writers = {int(line.split()[0]) for line in lines[1:-1]}
    assert len(writers) == 2 and os.getpid() not in writers and len(counted) == 2


def test_a_file_workers_cannot_write_into_gets_the_data_back(numbers):
    out = io.BytesIO()  # no descriptor: the data comes back through the pipes, joined
    got = list(_write(numbers, [(0, 4, "parts"), (5, 9, "whole")], out))
    assert [n for _, n in got] == [5, 5]
    assert b"".join(data for data, _ in got).count(b"\n") == 10 and out.getvalue() == b""


def test_slices_of_one_owner_go_to_one_worker(numbers, tmp_path):
    # slices of ranges 0-9, 10-19, ... in two "rounds"; a worker owns a range in both rounds
    slices = [(i, i + 9, "whole") for _ in range(2) for i in range(0, 60, 10)]
    with open(tmp_path / "out", "wb") as out:
        list(_write(numbers, slices, out, owner=lambda s: s[0] // 10))
    lines = (tmp_path / "out").read_bytes().splitlines()
    by_range: dict[int, set[int]] = {}
    for line in lines:
        pid, n = map(int, line.split())
        by_range.setdefault(n // 10, set()).add(pid)
    assert all(len(pids) == 1 for pids in by_range.values())
    assert len(set.union(*by_range.values())) == 2
    assert [int(line.split()[1]) for line in lines] == [n for _ in range(2) for n in range(60)]


def test_a_worker_that_dies_while_writing_is_a_store_error(numbers, tmp_path, counted):
    with open(tmp_path / "out", "wb") as out, pytest.raises(StoreError, match=r"exit code 4"):
        list(_write(numbers, [(0, 9, "whole"), (10, 19, "die"), (20, 29, "whole"), (30, 39, "whole")], out))
    assert all(p.poll() is not None for p in counted)


def test_one_process_writes_the_same_lines(numbers, tmp_path):
    slices = [(i, i + 9, "parts") for i in range(0, 100, 10)]
    got = list(_write(numbers, slices, None, workers=0))
    assert [n for _, n in got] == [10] * 10
    assert b"".join(d for d, _ in got) == b"".join(f"{os.getpid()} {n}\n".encode() for n in range(100))


class SqlJob:
    """A job whose SQL fails in the worker, read by the bundled SQLite when it is installed."""

    bundled_sqlite = True

    def prepare(self, conn: sqlite3.Connection) -> None:
        """Nothing to register."""

    def read(self, conn: sqlite3.Connection, params):
        return conn.execute("SELECT json('not json')").fetchone(), sqlite_module(self).sqlite_version


def test_the_bundled_sqlite_reads_the_jobs_that_can_use_it(monkeypatch):
    monkeypatch.delenv(_workers.SQLITE_ENV, raising=False)
    bundled = pytest.importorskip("pysqlite3.dbapi2")
    assert sqlite_module(SqlJob()) is bundled and bundled.sqlite_version > sqlite3.sqlite_version
    assert sqlite_module(Job()) is sqlite3  # it registers functions: Python's module
    monkeypatch.setenv(_workers.SQLITE_ENV, "system")
    assert sqlite_module(SqlJob()) is sqlite3


def test_an_sqlite_setting_that_is_no_choice_is_refused_before_workers_start(numbers, monkeypatch, counted):
    monkeypatch.setenv(_workers.SQLITE_ENV, "newest")
    with pytest.raises(
        StoreError, match=r"ABBENCH_EXPORT_SQLITE='newest' is not a choice: set it to bundled"
    ):
        list(_read(numbers, [(0, 9, "ok"), (10, 19, "ok")]))
    assert counted == []


def test_an_error_of_the_bundled_sqlite_comes_back_as_pythons(numbers):
    got = read_slices(
        SqlJob(),
        [(0,), (1,)],
        conn=lambda: sqlite3.connect(numbers),
        uri=f"file:{numbers}?mode=ro",
        workers=2,
    )
    with pytest.raises(sqlite3.OperationalError, match="malformed JSON"):
        list(got)

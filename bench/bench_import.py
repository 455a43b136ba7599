"""Import benchmark: a generated 200,000-row CSV and 50,000-row XLSX, end to end into a fresh store,
then the same 100,000 rows as Parquet and as CSV side by side.

Prints rows/s and peak memory for each, and the peak at a quarter of the rows, to show that memory
stays flat in the number of rows (rows are streamed in chunks, never held all at once).

    python bench/bench_import.py            # the full benchmark (targets: CSV ≥ 100k rows/s, XLSX ≥ 20k rows/s,
                                            # Parquet within 1.5× the CSV time of the same rows)
    python bench/bench_import.py --quick    # 4k / 1k / 2k rows, for a smoke test

Parquet needs pyarrow (``pip install 'abbench[parquet]'``); without it that part is skipped, saying so.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CSV_ROWS = 200_000
XLSX_ROWS = 50_000
CSV_TARGET = 100_000
XLSX_TARGET = 20_000
PARQUET_ROWS = 100_000
PARQUET_TARGET = 1.5
"""Parquet's import time may be at most this many times the CSV's, on the same rows."""

DOMAINS = {
    "地图导航": [
        "导航去{p}",
        "到{p}还要多久",
        "附近有没有充电桩",
        "避开拥堵重新规划路线",
        "到目的地电量够不够",
        "take me to {e}",
    ],
    "车控": [
        "把空调调到{n}度",
        "打开座椅加热",
        "关闭车窗",
        "后备箱打开",
        "open the sunroof",
        "方向盘加热开到{n}档",
    ],
    "媒体": ["播放{s}的歌", "下一首", "音量调大一点", "play some jazz", "继续播放刚才的播客", "收藏这首歌"],
    "电话": ["给{c}打电话", "回拨刚才的未接来电", "call {c}", "挂断电话", "打开蓝牙电话"],
    "天气": [
        "明天{p}会下雨吗",
        "今天气温多少度",
        "what's the weather in {e}",
        "这周末适合洗车吗",
        "出发地和目的地天气一样吗",
    ],
    "闲聊": [
        "你叫什么名字",
        "讲个笑话",
        "你觉得{s}怎么样",
        "tell me something interesting",
        "今天心情不好",
        "你能帮我写一首诗吗",
    ],
}
PLACES = ["公司", "首都机场", "西湖", "虹桥火车站", "最近的加油站", "家", "陆家嘴", "望京SOHO"]
ENGLISH = ["the airport", "downtown", "Shanghai", "the nearest charger", "Hangzhou"]
SINGERS = ["周杰伦", "陈奕迅", "Taylor Swift", "王菲", "五月天"]
CONTACTS = ["妈妈", "老王", "Alice", "张经理", "the office"]
LEADS = ["", "", "嗯，", "那个，", "hey, ", "小助手，", "请问", "帮我"]
TAILS = ["", "，第{k}次问了", " #{k}", "（{k}号）", "，路线{k}", ", option {k}", "，大概{k}分钟"]
SLOW_HINTS = ("够不够", "多久", "规划", "适合", "一样吗", "写一首诗", "心情", "怎么样", "interesting")


def make_rows(n: int, seed: int = 7):
    """Realistic routing cases: (id, query, label, domain, history, request id), Chinese and English."""
    rnd = random.Random(seed)
    names = list(DOMAINS)
    for i in range(n):
        domain = rnd.choice(names)
        query = rnd.choice(DOMAINS[domain]).format(
            p=rnd.choice(PLACES),
            e=rnd.choice(ENGLISH),
            n=rnd.randint(16, 28),
            s=rnd.choice(SINGERS),
            c=rnd.choice(CONTACTS),
        )
        if rnd.random() < 0.3:
            query += rnd.choice(["，谢谢", "，快点", " please", "？", "吧"])
        if rnd.random() < 0.7:  # most real queries are unique: a detail, a number, a place
            query = rnd.choice(LEADS) + query + rnd.choice(TAILS).format(k=rnd.randint(1, 999))
        label = "slow" if any(h in query for h in SLOW_HINTS) or rnd.random() < 0.1 else "fast"
        history = (
            json.dumps([{"role": "user", "content": "你好"}], ensure_ascii=False)
            if rnd.random() < 0.2
            else ""
        )
        yield (f"case-{i:07d}", query, label, domain, history, f"req-{rnd.getrandbits(48):012x}")


HEADER = ["用例id", "用户query", "人工标签", "垂域", "history", "request_id"]
PROFILE = {
    "name": "bench",
    "fields": {
        "case_id": "用例id",
        "input": "用户query",
        "expected": "人工标签",
        "domain": "垂域",
        "history": "history",
        "request_id": "request_id",
    },
    "label_set": ["fast", "slow"],
}


def write_csv(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        w.writerows(make_rows(n))


def write_xlsx(path: Path, n: int) -> None:
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    ws = wb.create_sheet("用例")
    ws.append(HEADER)
    for row in make_rows(n):
        ws.append(list(row))
    wb.save(path)


def write_parquet(path: Path, n: int) -> None:
    """The rows of `write_csv` as a Parquet file of string columns (pyarrow's default row groups)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = list(zip(*make_rows(n), strict=True))
    pq.write_table(pa.table({h: list(c) for h, c in zip(HEADER, columns, strict=True)}), path)


WRITERS = {"csv": write_csv, "xlsx": write_xlsx, "parquet": write_parquet}


def one(fmt: str, n: int, workdir: Path, trace: bool) -> dict:
    """Generate, then import into a fresh store in this process; return the figures."""
    from abbench.store import open_store

    data = workdir / f"cases_{n}.{fmt}"
    if not data.exists():
        WRITERS[fmt](data, n)
    store_dir = workdir / f"store-{fmt}-{n}-{int(trace)}-{time.time_ns()}"
    if trace:
        tracemalloc.start()
    store = open_store(store_dir)
    start, cpu_start = time.perf_counter(), time.process_time()
    info = store.datasets.import_file(data, PROFILE, name=f"bench-{fmt}")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak = tracemalloc.get_traced_memory()[1] if trace else None
    store.close()
    assert info.n_cases == n, info.validation.summary()
    return {
        "format": fmt,
        "rows": n,
        "seconds": round(elapsed, 3),
        "rows_per_s": round(n / elapsed),
        "cpu_seconds": round(cpu, 3),
        "cpu_rows_per_s": round(n / cpu),
        "file_mb": round(data.stat().st_size / 1e6, 1),
        "peak_python_mb": round(peak / 1e6, 1) if peak is not None else None,
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "fingerprint": info.fingerprint,
    }


def calibration() -> float:
    """Seconds of CPU for a 10-million-step Python loop: how fast this machine runs Python, so figures
    from different machines can be compared."""
    start = time.process_time()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.process_time() - start


def child(fmt: str, n: int, workdir: Path, trace: bool) -> dict:
    """Run `one` in a fresh interpreter, so each figure (RSS above all) is its own."""
    out = subprocess.run(
        [sys.executable, __file__, "--one", fmt, str(n), str(workdir)] + (["--trace"] if trace else []),
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def parquet_beside_csv(workdir: Path, n: int, repeat: int) -> bool:
    """Import the same `n` rows as CSV and as Parquet; print both times and whether Parquet is within
    `PARQUET_TARGET` times the CSV's. True when it is (or when pyarrow is missing: skipped)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("PARQUET skipped: pyarrow is not installed (pip install 'abbench[parquet]')")
        return True
    best = {}
    for fmt in ("csv", "parquet"):
        runs = [child(fmt, n, workdir, trace=False) for _ in range(repeat)]
        best[fmt] = min(runs, key=lambda r: r["seconds"])
    csv_run, pq_run = best["csv"], best["parquet"]
    same = pq_run["fingerprint"].split("@")[1] == csv_run["fingerprint"].split("@")[1]  # names differ
    ratio = pq_run["seconds"] / csv_run["seconds"]
    met = ratio <= PARQUET_TARGET
    print(
        f"PARQUET {n:,} rows ({pq_run['file_mb']} MB; the CSV of the same rows {csv_run['file_mb']} MB): "
        f"{pq_run['seconds']:.2f} s, {pq_run['rows_per_s']:,} rows/s; CSV {csv_run['seconds']:.2f} s, "
        f"{csv_run['rows_per_s']:,} rows/s (best of {repeat}) — {ratio:.2f}× the CSV time, target ≤ "
        f"{PARQUET_TARGET}×: {'met' if met else 'MISSED'}"
    )
    print(
        f"     CPU {pq_run['cpu_seconds']:.2f} s vs {csv_run['cpu_seconds']:.2f} s; max RSS {pq_run['max_rss_mb']} MB "
        f"vs {csv_run['max_rss_mb']} MB; same content hash: {same}"
    )
    return met and same


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="4k CSV, 1k XLSX and 2k Parquet rows: a smoke test"
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per file; the best is reported")
    parser.add_argument("--one", nargs=3, metavar=("FORMAT", "ROWS", "DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        fmt, n, workdir = args.one
        print(json.dumps(one(fmt, int(n), Path(workdir), args.trace)))
        return
    csv_rows, xlsx_rows = (4_000, 1_000) if args.quick else (CSV_ROWS, XLSX_ROWS)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load {load:.2f}, 10M-step Python loop {calibration():.2f} s CPU")
    ok = True
    with tempfile.TemporaryDirectory(prefix="abbench-bench-") as tmp:
        workdir = Path(tmp)
        for fmt, n, target in (("csv", csv_rows, CSV_TARGET), ("xlsx", xlsx_rows, XLSX_TARGET)):
            runs = [child(fmt, n, workdir, trace=False) for _ in range(args.repeat)]
            best = max(runs, key=lambda r: r["rows_per_s"])
            small = child(fmt, n // 4, workdir, trace=True)
            full = child(fmt, n, workdir, trace=True)
            speeds = ", ".join(f"{r['rows_per_s']:,}" for r in runs)
            met = best["rows_per_s"] >= target
            ok &= met
            print(
                f"{fmt.upper():4} {n:>7,} rows ({best['file_mb']} MB): {best['seconds']:.2f} s, "
                f"{best['rows_per_s']:,} rows/s (best of {args.repeat}; all: {speeds}) — target {target:,}: {'met' if met else 'MISSED'}"
            )
            fastest_cpu = min(runs, key=lambda r: r["cpu_seconds"])
            print(
                f"     CPU time {fastest_cpu['cpu_seconds']:.2f} s = {fastest_cpu['cpu_rows_per_s']:,} rows per CPU-second "
                "(wall time above also counts waiting for a busy machine)"
            )
            print(
                f"     peak Python memory (tracemalloc): {small['peak_python_mb']} MB at {n // 4:,} rows, "
                f"{full['peak_python_mb']} MB at {n:,} rows; max RSS {best['max_rss_mb']} MB"
            )
            print(f"     fingerprint {best['fingerprint']}")
        ok &= parquet_beside_csv(workdir, 2_000 if args.quick else PARQUET_ROWS, args.repeat)
    if not args.quick and not ok:
        sys.exit(1)


if __name__ == "__main__":
    os.environ.setdefault("TQDM_DISABLE", "1")
    main()

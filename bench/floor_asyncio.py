"""The peers' workload floor: plain asyncio plus SQLite, no framework, every transition persisted.

    python bench/floor_asyncio.py N CONCURRENCY SLEEP_MS DB

N runs at CONCURRENCY, each sleeping SLEEP_MS (0: answers at once); each run's four transitions
(running, executed, evaluating, pass) and its grade are committed in batches by one writer task, as a
careful hand-written harness would. `bench_scale.py` times this whole process beside `abbench run`.
"""

import asyncio
import sqlite3
import sys
import time


async def main(n: int, concurrency: int, sleep_ms: float, db: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # as abbench's store
    conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, state TEXT, prediction TEXT, updated REAL)")
    conn.execute("CREATE TABLE events (run_id INTEGER, at REAL, to_state TEXT)")
    conn.execute("CREATE TABLE grades (run_id INTEGER, passed INTEGER)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO runs (id, state) VALUES (?, 'pending')", ((i,) for i in range(n)))
    conn.execute("COMMIT")
    events: list[tuple[int, float, str]] = []
    grades: list[tuple[int, int]] = []
    gate = asyncio.Semaphore(concurrency)

    def flush() -> None:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO events VALUES (?,?,?)", events)
        conn.executemany("UPDATE runs SET state=?, updated=? WHERE id=?", [(s, t, r) for r, t, s in events])
        conn.executemany("INSERT INTO grades VALUES (?,?)", grades)
        conn.execute("COMMIT")
        events.clear()
        grades.clear()

    async def run(i: int) -> None:
        async with gate:
            events.append((i, time.time(), "running"))
            if sleep_ms:
                await asyncio.sleep(sleep_ms / 1000)
            events.append((i, time.time(), "executed"))
            events.append((i, time.time(), "evaluating"))
            grades.append((i, 1))
            events.append((i, time.time(), "pass"))
            if len(events) >= 4000:
                flush()

    await asyncio.gather(*(run(i) for i in range(n)))
    flush()
    conn.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]))

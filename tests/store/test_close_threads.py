"""Closing a store while another thread is reading from it never crashes the process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import REPO, subprocess_env

CHILD = textwrap.dedent(
    """
    import sys, threading
    from abbench.store import open_store

    path = sys.argv[1]
    for attempt in range(60):
        store = open_store(path)
        store.query("SELECT 1")
        reading, stop = threading.Event(), threading.Event()

        def poll():
            while not stop.is_set():
                store.query("SELECT COUNT(*) FROM sqlite_master, sqlite_master AS b, sqlite_master AS c")
                reading.set()
            store.close_thread_connection()

        t = threading.Thread(target=poll)
        t.start()
        reading.wait()
        store.close()  # the poller is mid-query most of the time
        stop.set()
        t.join()
    print("ok")
    """
)


def test_closing_a_store_under_a_reading_thread_leaves_that_thread_its_connection(tmp_path):
    # A widget's poller read the store while the notebook (or a test's teardown) closed it: closing a
    # connection under a running statement is a segmentation fault in SQLite, so it ran in a child.
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "store")],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])

"""A reviewer's time per case in a real browser: 04_review in JupyterLab, verdicts given by keyboard.

Builds the demo store (the demo experiment: no skill, v1, v2; three rounds), opens 04_review in
JupyterLab on 127.0.0.1 in Debian's headless Chromium (/usr/bin/chromium, or $ABBENCH_CHROMIUM) through
Playwright, opens the first gold disagreement with ``j`` and reviews ``--cases`` cases with keys 1–5.
For each verdict it measures the time from the key press to the next case shown in the widget's
summary: the wait a reviewer has between two cases (reading time excluded). Target: under 3 s.

Run ``python bench/bench_review.py`` (``--cases 20``, ``--store DIR`` to reuse a demo store). Offline;
about two minutes, most of it building the demo store and starting JupyterLab. The figures are
quoted in the closing note of issue 12.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abbench.review import disagreements, reviews  # noqa: E402
from abbench.store import open_store  # noqa: E402
from tests.browser import CHROMIUM, chromium, offline_page  # noqa: E402
from tests.widgets import review_keys as rk  # noqa: E402
from tests.widgets.demo import build_demo_store  # noqa: E402
from tests.widgets.lab import jupyterlab, open_notebook, parameterized  # noqa: E402

TARGET_S = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10, help="cases to review (default 10)")
    parser.add_argument("--store", type=Path, help="a demo store to copy instead of building one")
    parser.add_argument("--screenshot", type=Path, help="save a screenshot of the widget at the end")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit(f"no Chromium at {CHROMIUM}: `make browser` (apt-get install chromium) first")

    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        store_dir = Path(tmp) / "store"
        t0 = time.perf_counter()
        if args.store:
            shutil.copytree(args.store, store_dir)
        else:
            build_demo_store(store_dir)
        with open_store(store_dir) as store:
            listed = len(disagreements("demo", "gold", store=store))
        print(f"demo store ready in {time.perf_counter() - t0:.1f} s: {listed} gold disagreements to review")
        lab = Path(tmp) / "lab"
        lab.mkdir()
        parameterized(
            ROOT / "notebooks" / "04_review.ipynb",
            lab / "04_review.ipynb",
            store_path=str(store_dir),
            experiment="demo",
        )
        times: list[float] = []
        with (
            jupyterlab(lab) as url,
            chromium() as browser,
            offline_page(
                browser, allow_hosts=(url.removeprefix("http://"),), viewport={"width": 1400, "height": 1000}
            ) as (page, _network, errors),
        ):
            page.set_default_timeout(120_000)
            t0 = time.perf_counter()
            open_notebook(page, url, "04_review.ipynb")
            page.wait_for_selector(".abbench-keys-on", timeout=120_000)
            print(f"notebook open and run in {time.perf_counter() - t0:.1f} s; the widget has the keys")
            first, opened = rk.press(page, "j")
            print(f"j opened {first} in {opened:.2f} s")
            for i in range(args.cases):
                key = "12345"[i % 5]
                case, seconds = rk.press(page, key)
                times.append(seconds)
                print(f"  key {key}: next case {case} shown after {seconds:.2f} s")
            if args.screenshot:
                page.evaluate("() => document.querySelector('.abbench-keys-root').scrollIntoView()")
                page.screenshot(path=str(args.screenshot))
            if errors:
                print("page errors:", *errors[-5:], sep="\n  ")
        with open_store(store_dir) as store:
            saved = len(reviews("demo", store=store))
    print(
        f"{len(times)} verdicts by keyboard, {saved} reviews in the store; seconds from a verdict key to the "
        f"next case shown: median {statistics.median(times):.2f}, max {max(times):.2f}, "
        f"mean {statistics.fmean(times):.2f} (target < {TARGET_S:.0f} s: "
        f"{'met' if max(times) < TARGET_S else 'NOT met'})"
    )


if __name__ == "__main__":
    main()

"""A widget's static copy follows the widget: a notebook saved after the analyst changed a choice, then
exported (``nbconvert --to html``), shows the widget as it was left, not as it first drew.

A real python3 kernel runs the cells (nbclient, as JupyterLab's kernel would): the widget is displayed,
a later cell changes the arms as a click in the Decision tab (03) or the compare widget (05) would, and
waits until the copy was rewritten (``update_display_data`` to the first cell's output). The executed
notebook is what a save writes; nbconvert's HTML exporter then makes the page people share.
"""

from __future__ import annotations

import html
import re
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from abbench.widgets import DiffWidget, ResultsWidget
from tests.browser import HANG_MS
from tests.conftest import REPO, subprocess_env

pytestmark = pytest.mark.slow

WAIT = """
import time
follower = {name}.static_copy
rewrites = follower.rewrites
{change}
deadline = time.monotonic() + 120  # only ends a hung kernel; the wait is on the rewrite itself
while follower.rewrites == rewrites or follower.pending:
    assert time.monotonic() < deadline, "the static copy was never rewritten"
    time.sleep(0.05)
"""


def text(markup: str) -> str:
    """What a person reads in `markup` (tags dropped, entities and no-break spaces as plain text)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def executed(tmp_path, store, *cells: str):
    """Run `cells` in a python3 kernel on this checkout's code; the executed notebook (a save of it)."""
    nb = nbformat.v4.new_notebook()
    setup = f"from abbench.store import open_store\nstore = open_store({str(store.path)!r})\n"
    nb.cells = [nbformat.v4.new_code_cell(setup + textwrap.dedent(cells[0]))]
    nb.cells += [nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells[1:]]
    env = subprocess_env(TQDM_DISABLE=1)
    client = NotebookClient(
        nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(REPO)}}
    )
    client.km = client.create_kernel_manager()
    client.start_new_kernel(env=env)
    try:
        client.start_new_kernel_client()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    finally:
        client._cleanup_kernel()
    return nb


def static_outputs(cell) -> list[str]:
    return [
        o["data"]["text/html"]
        for o in cell.outputs
        if o.get("output_type") == "display_data"
        and "abbench-static" in o.get("data", {}).get("text/html", "")
    ]


def exported_copy(nb) -> str:
    """The static copy as the exported page holds it (nbconvert's lab template, no widget manager)."""
    page, _ = HTMLExporter().from_notebook_node(nb)
    found = re.findall(r'<div class="abbench-static">.*?(?=<div class="jp-Cell |</main>)', page, re.S)
    assert len(found) == 1, len(found)
    return text(found[0])


def test_the_exported_results_show_the_pair_the_analyst_chose(store, ab, tmp_path):
    first = ResultsWidget(store, experiment="ab", baseline="a", candidate="b")
    chosen = ResultsWidget(store, experiment="ab", baseline="b", candidate="a")
    before, after = text(first.headline_html.value), text(chosen.headline_html.value)
    assert before.startswith("b vs a: gate") and after.startswith("a vs b: gate"), (before, after)
    nb = executed(
        tmp_path,
        store,
        "from abbench.widgets import ResultsWidget\n"
        "results = ResultsWidget(store, experiment='ab', baseline='a', candidate='b')\nresults",
        WAIT.format(name="results", change="results.baseline.select('b')\nresults.candidate.select('a')"),
    )
    (copy,) = static_outputs(nb.cells[0])  # one output, rewritten in place: not a second copy
    assert after in text(copy) and before not in text(copy)
    page = exported_copy(nb)
    assert after in page and before not in page


def test_the_exported_comparison_shows_the_arms_the_analyst_chose(store, ab, tmp_path):
    first = DiffWidget(store, a="ab", arm_a="a", arm_b="b")
    chosen = DiffWidget(store, a="ab", arm_a="b", arm_b="a")
    before, after = text(first.verdict_html.value), text(chosen.verdict_html.value)
    assert before != after
    nb = executed(
        tmp_path,
        store,
        "from abbench.widgets import DiffWidget\ndiff = DiffWidget(store, a='ab', arm_a='a', arm_b='b')\ndiff",
        WAIT.format(name="diff", change="diff.arm_a.select('b')\ndiff.arm_b.select('a')"),
    )
    (copy,) = static_outputs(nb.cells[0])
    assert after in text(copy) and before not in text(copy)
    assert after in exported_copy(nb)


def test_a_burst_of_changes_gives_one_rewrite_of_the_state_it_ends_in(store, ab, monkeypatch):
    """No kernel: the follower's own schedule. Many changes in a row → one rewrite, of the last state;
    a change that leaves the copy as it was rewrites nothing; the copy's own drawing is not a change."""
    from abbench.widgets import _static
    from abbench.widgets._static import Follower, static_html

    # The rewrite is called below, not left to the timer: on a loaded machine the burst outlasted the
    # timer's delay and it rewrote midway (two rewrites). The test controls when the rewrite comes.
    monkeypatch.setattr(_static, "REFRESH_SECONDS", HANG_MS / 1000)

    widget = DiffWidget(store, a="ab", arm_a="a", arm_b="b")

    shown: list[str] = []

    class Handle:
        def update(self, bundle, raw):
            assert raw
            shown.append(bundle["text/html"])

    follower = Follower(widget, static_html(widget))
    follower.add(Handle())
    for arm_a, arm_b in [("b", "a"), ("a", "b"), ("b", "a")]:
        widget.arm_a.select(arm_a)
        widget.arm_b.select(arm_b)
    assert follower.pending
    follower.refresh()
    assert not follower.pending and len(shown) == 1 and follower.rewrites == 1
    assert shown[0] == static_html(widget) and text(widget.verdict_html.value) in text(shown[0])
    assert not follower.refresh() and len(shown) == 1  # nothing changed since: nothing sent

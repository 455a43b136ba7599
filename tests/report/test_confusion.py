"""The report's confusion section with banking77's 77 intents: top confusions, the full matrix in a box that
scrolls, per-class figures, as the results widget shows them; a few labels keep one figure per arm."""

from __future__ import annotations

import html
import re

import pytest

from abbench._matrix import SCROLL_STYLE
from abbench.metrics import experiment_metrics
from abbench.report import confusion_section
from tests.banking import NAME

pytestmark = pytest.mark.slow


def _text(parts) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", "".join(p for p in parts if isinstance(p, str))))


def test_77_labels_get_top_confusions_and_a_scrolling_matrix(banking_store):
    m = experiment_metrics(NAME, store=banking_store)
    parts = confusion_section(m)
    assert all(isinstance(p, str) for p in parts)  # the matrices are drawn into their scrolling boxes
    page = "".join(parts)
    assert page.count(f'<div class="abb-matrix" style="{SCROLL_STYLE}">') == 2
    assert page.count("Plotly.newPlot") == 2 and "cdn" not in page.lower()
    text = _text(parts)
    assert "The gold values read as labels: 77 distinct short values over 3,080 cases" in text
    for arm in ("plain", "noisy"):
        a = m.arm(arm)
        first = a.classes.confusion.top_confusions(1)[0]
        assert re.search(rf"{first.gold}\s+→\s+{first.predicted}\s+{first.count}\s", text)
        assert f"{arm}: top confusions" in text and f"{arm}: per class (macro F1" in text
        # the figure's title, in plotly's JSON (non-ASCII escaped)
        assert f"{arm}: {len(a.classes.labels)} labels \\u00d7 300 graded runs" in page
        # per-class rows, most frequent labels first
        by_support = sorted(a.classes.per_class.items(), key=lambda kv: (-kv[1].support, kv[0].casefold()))
        start = text.index(f"{arm}: per class")
        names = [name for name, _ in by_support[:3]]
        at = [text.index(f" {n} ", start) for n in names]
        assert at == sorted(at), names


def test_a_few_labels_keep_one_figure_per_arm(store):
    from tests.results import cases_of, make_experiment, one_round

    exp = make_experiment(store, "e", cases_of(6), {"a": one_round([True, False, True, True, False, True])})
    parts = confusion_section(experiment_metrics(exp, store=store))
    figures = [p for p in parts if not isinstance(p, str)]
    assert len(figures) == 1 and figures[0].data[0].type == "heatmap"
    assert "abb-matrix" not in "".join(p for p in parts if isinstance(p, str))

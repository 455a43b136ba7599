"""Item 9 of issue 37: a domain's row shows the counts its test used. With rounds the exact sign test
counts cases whose pass rate rose or fell (2/3 → 3/3 rises without changing the majority), so a row
never prints majority counts beside a p-value they did not give."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from scipy.stats import binomtest

from abbench.compare import compare_arms
from tests.recorded import recorded_experiment, write_dataset

# (A's passes, B's passes) of three rounds, per case of the domain "loans": 19 cases rise (only 8 of them
# change the majority), 4 fall (2 of them change it), 7 stay.
LOANS = [(1, 2)] * 8 + [(2, 3)] * 7 + [(0, 1)] * 4 + [(2, 1)] * 2 + [(3, 2)] * 2 + [(1, 1)] * 7
OTHER = [(2, 2)] * 10 + [(1, 2)] * 2 + [(2, 1)] * 2


@pytest.fixture
def rounds(store, tmp_path):
    plan = LOANS + OTHER
    n = len(plan)
    info = write_dataset(store, tmp_path, n, domains=["loans"] * len(LOANS) + ["travel"] * len(OTHER))

    def outcome(i, arm, r):
        passes = plan[i][0 if arm == "a" else 1]
        return {"prediction": "yes", "grades": {"judge": {"passed": r <= passes}}}

    return store, recorded_experiment(store, info, "dom", outcome, n=n, rounds=3)


def test_a_domain_row_shows_the_counts_its_sign_test_used(rounds):
    store, exp = rounds
    c = compare_arms(exp.name, store=store)
    loans = next(d for d in c.by_domain if d.domain == "loans")
    up = sum(b > a for a, b in LOANS)
    down = sum(b < a for a, b in LOANS)
    fixed = sum(2 * b > 3 and not 2 * a > 3 for a, b in LOANS)
    regressed = sum(2 * a > 3 and not 2 * b > 3 for a, b in LOANS)
    assert (up, down, fixed, regressed) == (19, 4, 8, 2)
    assert (loans.up, loans.down, loans.fixed, loans.regressed) == (up, down, fixed, regressed)
    assert loans.test == "exact sign test"
    assert loans.p_value == pytest.approx(binomtest(down, up + down).pvalue)  # 0.0026, not 8/2's 0.109
    assert loans.moved_text == "19 up, 4 down"


def test_the_views_print_the_tested_counts(rounds, tmp_path):
    from abbench.cli import cli
    from abbench.report._sections._comparison import _domain_table

    store, exp = rounds
    out = (
        CliRunner()
        .invoke(cli, ["--store", str(store.path), "compare", exp.name, "--by-domain"], catch_exceptions=False)
        .output
    )
    row = next(line for line in out.splitlines() if line.startswith("loans"))
    assert "19 up, 4 down" in row and "8/2" not in row
    assert "the counts the exact sign test uses" in out
    c = compare_arms(exp.name, store=store)
    html = "".join(str(getattr(p, "html", p)) for p in _domain_table(c, "a", "b"))
    assert "19 up, 4 down" in html and "8 fixed, 2 regressed" not in html


def test_the_diff_widget_prints_the_tested_counts(rounds):
    from abbench.widgets import DiffWidget

    store, exp = rounds
    w = DiffWidget(store, a=exp.name)
    assert "19 up, 4 down" in w.domains_html.value


def test_one_round_rows_keep_fixed_and_regressed(store, tmp_path):
    plan = [(0, 1)] * 6 + [(1, 0)] * 1 + [(1, 1)] * 5 + [(0, 1)] * 2 + [(0, 0)] * 4
    info = write_dataset(store, tmp_path, len(plan), domains=("x", "y"))
    exp = recorded_experiment(
        store, info, "one", lambda i, arm, r: {"prediction": "yes", "grades": {"judge": {"passed": bool(plan[i][arm == "b"])}}},
        n=len(plan),
    )  # fmt: skip
    c = compare_arms(exp.name, store=store)
    x = next(d for d in c.by_domain if d.domain == "x")
    assert x.test == "exact McNemar" and (x.up, x.down) == (x.fixed, x.regressed) == (6, 1)
    assert x.moved_text == "6 fixed, 1 regressed"
    assert x.p_value == pytest.approx(binomtest(1, 7).pvalue)

"""DiffWidget: metric deltas with intervals, the lists of moved cases, the case detail, refusal, kept choices."""

from __future__ import annotations

import html

import pytest

from abbench._text import clip
from abbench.runner import create_experiment, run_experiment
from abbench.types import Case
from abbench.widgets import DiffWidget
from abbench.widgets._diff import INPUT_SHOWN
from tests.widgets.conftest import make_cases, python_arm, without_errors

EVERY_CITED = [f"c{i:02d}" for i in range(24) if i != 6]


@pytest.fixture
def widget(store, ab):
    return without_errors(DiffWidget(store, a="ab"))


def test_two_arms_of_one_experiment_default_to_first_against_last(widget):
    assert (widget.arm_a.value, widget.arm_b.value) == ("a", "b")
    c = widget.comparison
    assert (c.a.arm, c.b.arm, c.n_cases) == ("a", "b", 24)
    assert widget.lists == {
        "fixed": ["c01"],
        "regressed": ["c03", "c04"],
        "reason changed": ["c08"],
        "evidence appeared": EVERY_CITED,
        "evidence disappeared": [],
    }
    assert widget.list_tabs.titles[:3] == ("fixed (1)", "regressed (2)", "reason changed (1)")


def test_each_listed_case_shows_its_input_shortened_and_whole_on_hover(store):
    long_input = (
        "打开空调然后导航到最近的充电站，顺便播放我收藏的歌单，再把座椅加热打开，最后提醒我明天早上八点开会"
    )
    cases = [Case(f"c{i:02d}", f"{i}: {long_input}", "fast", domain="导航") for i in range(4)]
    ds = store.datasets.save("long", cases, label_set=["fast", "slow"])
    exp = create_experiment(
        {
            "name": "long",
            "dataset": ds.fingerprint,
            "arms": {"a": python_arm(wrong=["c01"]), "b": python_arm()},
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    w = DiffWidget(store, a="long")
    fixed = w.case_lists["fixed"]
    (label,) = fixed.labels
    assert label.startswith(f"c01 · {clip('1: ' + long_input, INPUT_SHOWN)} · 导航")
    assert long_input not in label  # shortened in the list ...
    w.open_case("fixed", "c01")
    assert fixed.widget.tooltip == f"c01: 1: {long_input}"  # ... and whole on hover


def test_metric_deltas_come_with_their_intervals(widget):
    c = widget.comparison
    assert c.main.difference == pytest.approx(19.5 / 24 - 20 / 24)
    low, high = c.interval.low, c.interval.high
    html = widget.metrics_html.value
    assert f"{100 * c.main.difference:+.1f} points" in html
    assert f"[{100 * low:+.1f} points, {100 * high:+.1f} points]" in html
    assert "exact McNemar" in html and "<td>latency</td>" in html and " ms</td>" in html  # not latency_ms
    assert f">{100 * c.value_a.value:.1f}%</td>" in html  # a share reads as a percentage
    assert "导航" in widget.domains_html.value
    assert c.verdict.text.split(":")[0] in widget.verdict_html.value


def test_a_case_opens_on_both_sides(widget):
    widget.open_case("regressed", "c03")
    assert widget.errors.message is None and widget.detail.case_id == "c03"
    runs = widget.detail.runs_html.value
    assert runs.count("<tr>") == 1 + 4 and "<td>a<br>round 1</td>" in runs and "<td>b<br>round 2</td>" in runs
    assert "ab / a" not in runs  # both sides are arms of one experiment: its name would only repeat
    assert "(the other way)" in runs


def test_reversing_the_arms_turns_appeared_evidence_into_disappeared(widget):
    widget.arm_a.select("b")
    widget.arm_b.select("a")
    assert widget.lists["fixed"] == ["c03", "c04"] and widget.lists["regressed"] == ["c01"]
    assert widget.lists["evidence disappeared"] == EVERY_CITED and widget.lists["evidence appeared"] == []


def test_the_chosen_case_is_kept_across_reloads_and_comes_back(store, widget):
    widget.open_case("regressed", "c03")
    widget.reload_button.click()
    assert widget.case_lists["regressed"].value == "c03" and widget.detail.case_id == "c03"
    widget.arm_a.select("b")
    widget.arm_b.select("a")  # c03 is now fixed, not regressed: the regressed list does not hold it
    assert widget.case_lists["regressed"].value is None and widget.case_lists["regressed"].missing == "c03"
    assert widget.detail.case_id is None
    widget.arm_a.select("a")
    widget.arm_b.select("b")
    assert widget.case_lists["regressed"].value == "c03" and widget.detail.case_id == "c03"


def test_two_experiments_on_the_same_dataset_are_compared(store, ab, small):
    other = create_experiment(
        {"name": "again", "dataset": small.fingerprint, "arms": {"c": python_arm(wrong=["c05"])}}, store=store
    )
    run_experiment(other.id, store=store)
    w = DiffWidget(store, a="ab", b="again")
    assert w.errors.message is None and w.refusal is None
    assert (w.arm_a.value, w.arm_b.value) == ("b", "c")  # the last arm of each
    assert w.comparison.kind == "experiments"
    assert "c05" in w.lists["regressed"] and "c03" in w.lists["fixed"]
    w.open_case("regressed", "c05")
    runs = w.detail.runs_html.value
    assert "<td>ab / b<br>round 1</td>" in runs and "<td>again / c<br>round 1</td>" in runs


def test_experiments_on_different_datasets_are_refused_with_why(store, ab):
    other_ds = store.datasets.save("other", make_cases(10), label_set=["fast", "slow"])
    other = create_experiment(
        {"name": "elsewhere", "dataset": other_ds.fingerprint, "arms": {"b": python_arm()}}, store=store
    )
    run_experiment(other.id, store=store)
    w = DiffWidget(store, a="ab", b="elsewhere")
    assert w.errors.message is None  # a refusal is an answer, not an error
    assert w.comparison is None and "Comparison refused." in w.refusal_html.value
    assert ab.dataset in w.refusal and other_ds.fingerprint in w.refusal
    assert all(ids == [] for ids in w.lists.values())
    w.exp_b.select(ab.id)  # back to the same dataset: compared again
    assert w.refusal is None and w.comparison is not None and w.refusal_html.value == ""


def test_an_empty_store_says_what_to_do(store):
    w = DiffWidget(store)
    assert w.comparison is None and w.lists["fixed"] == [] and w.errors.message is None
    assert "run an experiment first" in w.verdict_html.value


def test_naming_nothing_opens_on_the_newest_pair(store, ab):
    w = DiffWidget(store)
    assert w.errors.message is None and (w.arm_a.value, w.arm_b.value) == ("a", "b")
    assert w.comparison is not None and w.lists["fixed"] == ["c01"]


def test_each_list_keeps_its_own_case_and_a_tab_shows_it(widget):
    widget.open_case("regressed", "c04")
    widget.open_case("fixed", "c01")
    assert widget.detail.case_id == "c01"
    widget.list_tabs.selected_index = 1
    assert widget.detail.case_id == "c04"
    widget.list_tabs.selected_index = 2  # nothing chosen in "reason changed" yet
    assert widget.detail.case_id is None


def _one_arm(store, dataset, name="solo"):
    exp = create_experiment(
        {"name": name, "dataset": dataset, "rounds": 1, "arms": {"b": python_arm(wrong=["c05"])}}, store=store
    )
    run_experiment(exp.id, store=store)
    return store.experiments.get(exp.id)


def test_a_newest_experiment_with_one_arm_opens_against_the_earlier_one_on_its_dataset(store, ab):
    solo = _one_arm(store, ab.dataset)
    widget = DiffWidget(store, arm_a="v1", arm_b="v2")  # the notebook's preferred names, absent here
    assert widget.errors.message is None and widget.refusal is None
    assert (widget.exp_a.value, widget.exp_b.value) == (ab.id, solo.id)
    assert (widget.arm_a.value, widget.arm_b.value) == ("b", "b")  # the same arm on both sides
    c = widget.comparison
    assert c is not None and c.n_cases == 24
    text = html.unescape(widget.verdict_html.value)
    assert "'ab' has no arm 'v1'" in text and "compare_experiments" not in text


def test_a_store_without_a_pair_says_how_to_make_one(store, small):
    solo = _one_arm(store, small.fingerprint)
    widget = DiffWidget(store)
    assert widget.errors.message is None and widget.comparison is None
    text = widget.verdict_html.value
    assert f"#{solo.id} solo has a single arm (b)" in text and "02_run" in text
    assert "compare_experiments" not in text


def test_preferred_arms_absent_in_one_experiment_fall_back_to_its_own(store, ab):
    widget = DiffWidget(store, a="ab", arm_a="v1", arm_b="v2")
    assert widget.errors.message is None
    assert (widget.arm_a.value, widget.arm_b.value) == ("a", "b")


def test_an_error_shown_in_a_widget_is_not_copied_to_stderr(tmp_path):
    """A notebook keeps stderr under the cell: a copy there would outlive the widget clearing its error."""
    import subprocess
    import sys

    from tests.conftest import subprocess_env

    code = (
        "from abbench.widgets import View\n"
        f"v = View({str(tmp_path / 'store')!r})\n"
        "v.guard('choosing', lambda: 1 / 0)()\n"
        "assert v.errors.message.startswith('choosing failed: ZeroDivisionError'), v.errors.message\n"
        "v.guard('choosing', lambda: None)()\n"
        "assert v.errors.message is None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_the_skill_text_diff_between_the_two_sides_is_shown(store, small):
    from abbench.snapshot import build_snapshot, diff_snapshots
    from tests.conftest import DEMO

    skills = DEMO / "skills"
    exp = create_experiment(
        {
            "name": "versions",
            "dataset": small.fingerprint,
            "arms": {
                "v1": python_arm(skill=str(skills / "fast-slow-routing-v1")),
                "v2": python_arm(skill=str(skills / "fast-slow-routing-v2")),
            },
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    widget = DiffWidget(store, a="versions")
    assert widget.errors.message is None and widget.skill_diff is not None
    # independently: the two folders diffed as `abbench diff-skill` diffs them
    want = diff_snapshots(
        build_snapshot(skills / "fast-slow-routing-v1"), build_snapshot(skills / "fast-slow-routing-v2")
    )
    assert [c.ref for c in widget.skill_diff.sections_changed] == [c.ref for c in want.sections_changed]
    text = html.unescape(widget.skill_html.value)
    assert want.sections_changed and all(c.ref in text for c in want.sections_changed)
    assert all(s.ref in text for s in want.sections_added + want.sections_removed)
    added = next(
        line
        for line in want.sections_changed[0].unified_diff().splitlines()
        if line.startswith("+") and not line.startswith("+++")
    )
    assert added in text
    widget.arm_a.select("v2")  # refused (an arm against itself): nothing of the previous pair stays
    assert "compared with itself" in widget.errors.message
    assert widget.comparison is None and widget.skill_html.value == widget.metrics_html.value == ""
    widget.arm_a.select("v1")
    assert widget.errors.message is None and widget.skill_diff is not None


def test_cases_without_domains_get_a_note_not_an_empty_table_or_none_on_every_line(store, no_domains):
    # A trial on IBM's VIRA (no domain column): an empty "Per domain" table, and "· (none) ·" in every list line.
    w = DiffWidget(store, a=no_domains)
    assert "no per-domain breakdown: the cases have no domains" in w.domains_html.value
    assert "<table" not in w.domains_html.value
    (label,) = w.case_lists["fixed"].labels
    assert label == "c01 · question 1 · 0/1 → 1/1", label


def test_naming_nothing_opens_on_the_newest_finished_pair_not_a_cancelled_one(store, ab, small):
    from abbench.runner import cancel_experiment

    later = create_experiment(
        {"name": "later", "dataset": small.fingerprint, "arms": {"x": python_arm(), "y": python_arm()}},
        store=store,
    )
    cancel_experiment(later.id, store=store)  # newer, but never ran: its figures would be empty
    assert store.experiments.all()[0].id == later.id
    w = DiffWidget(store)
    assert (w.exp_a.value, w.exp_b.value) == (ab.id, ab.id)
    assert w.comparison is not None and w.lists["fixed"] == ["c01"]

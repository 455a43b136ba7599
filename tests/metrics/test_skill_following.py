"""Skill instruction-following as figures: per arm (share of applicable sections followed, with its interval
over cases, and the sections skipped most), paired in compare, in the gate, the CLI, the report and the
results widget. A real store, the builtin agent, and a skill-following judge over real HTTP to a scripted
server on 127.0.0.1 whose replies depend on the case, the skill and the round."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest
from scipy import stats

from abbench.compare import compare_arms
from abbench.gate import evaluate_gate
from abbench.metrics import experiment_metrics, following_difference, skill_following
from abbench.runner import create_experiment, run_experiment
from abbench.store import SectionGrade
from abbench.testing import ScriptedOpenAIServer
from abbench.types import Case

CASES = 8
ROUNDS = 2
SKILL = "---\nname: route\ndescription: route requests\n---\n\n# Route\n\n## Steps\n\nRead the rules, then answer.\n\n## Rules\n\n- 打开空调 → fast\n- 规划路线 → slow\n\n## Output\n\nAnswer in JSON with evidence_refs.\n"
HISTORY = "\n## History\n\nWith a history, look at the last turn first.\n"


def verdicts(arm: str, case: int, k: int) -> dict[str, str]:
    """The scripted judge: what it says of each section for this arm (v1 or v2), case and call (round)."""
    if arm == "v1":
        return {
            "Steps": "followed",
            "Rules": "skipped" if (case + k) % 2 == 0 else "followed",
            "Output": "followed" if case % 3 else "skipped",
        }
    return {
        "Steps": "followed",
        "Rules": "skipped" if case == 5 and k == 0 else "followed",
        "Output": "followed",
        "History": "skipped" if case == 0 else "not_applicable",
    }


def expected_share(arm: str, case: int, k: int) -> float:
    v = list(verdicts(arm, case, k).values())
    return v.count("followed") / (v.count("followed") + v.count("skipped"))


class Judge:
    """Answers a skill-following request from its case (the input's number), its skill (v2 has a History
    section) and how often that same prompt was asked before (the round, in some order)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen: dict[str, int] = {}

    def __call__(self, request):
        user = request.messages[-1]["content"]
        case = int(re.search(r"case (\d+)", user).group(1))
        arm = "v2" if "History" in user else "v1"
        with self.lock:
            k = self.seen.get(user, 0)
            self.seen[user] = k + 1
        sections = [{"ref": ref, "verdict": v} for ref, v in verdicts(arm, case, k).items()]
        return json.dumps({"sections": sections, "comment": "scripted"})


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Arms none (no skill), v1 and v2, two rounds of eight cases, judged section by section."""
    from abbench.store import open_store

    root = tmp_path_factory.mktemp("following")
    (root / "v1").mkdir()
    (root / "v1" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (root / "v2").mkdir()
    (root / "v2" / "SKILL.md").write_text(SKILL + HISTORY, encoding="utf-8")
    store = open_store(root / "store")
    cases = [Case(f"c{i}", f"case {i} 打开空调", "fast") for i in range(CASES)]
    dataset = store.datasets.save("route", cases, label_set=["fast", "slow"])
    with ScriptedOpenAIServer(Judge()) as server:
        judge = {
            "type": "skill_instruction_following", "name": "following", "model": "judge-m",
            "base_url": server.base_url, "advisory": True,
        }  # fmt: skip
        spec = {
            "name": "follow",
            "dataset": dataset.fingerprint,
            "rounds": ROUNDS,
            "graders": ["label_match", judge],
            "arms": {
                "none": {"agent": "builtin"},
                "v1": {"agent": "builtin", "skill": str(root / "v1")},
                "v2": {"agent": "builtin", "skill": str(root / "v2")},
            },
            "decision": {"baseline": "v1", "candidate": "v2"},
        }
        exp = create_experiment(spec, store=store)
        run_experiment(exp.id, store=store)
    yield store, exp
    store.close()


def per_case(arm: str) -> list[float]:
    return [float(np.mean([expected_share(arm, c, k) for k in range(ROUNDS)])) for c in range(CASES)]


def test_each_arm_has_the_share_followed_with_a_t_interval_over_cases(judged):
    store, exp = judged
    m = experiment_metrics(exp.id, store=store)
    arms = {a.arm: a for a in m.arms}
    assert arms["none"].skill_following is None  # it loaded no skill: not assessed
    for arm in ("v1", "v2"):
        f = arms[arm].skill_following
        means = per_case(arm)
        assert f.grader == "following" and f.runs == CASES * ROUNDS and f.none_applicable == 0
        assert f.following.value == pytest.approx(np.mean(means))
        assert f.following.n_cases == CASES and f.following.n_values == CASES * ROUNDS
        # rounds are not cases: Student's t over the per-case means
        low, high = stats.ttest_1samp(means, 0).confidence_interval(0.95)
        assert (f.following.low, f.following.high) == pytest.approx((max(0, low), min(1, high)))
    v1 = arms["v1"].skill_following
    assert [(s.ref, s.skipped, s.applicable) for s in v1.most_skipped] == [
        ("SKILL.md#Rules", 8, 16),
        ("SKILL.md#Output", 6, 16),
    ]
    v2 = arms["v2"].skill_following
    history = next(s for s in v2.sections if s.ref == "SKILL.md#History")
    assert (history.skipped, history.applicable, history.not_applicable) == (2, 2, 14)
    assert "of applicable sections followed over 16 runs of 8 cases (following, judge judge-m)" in v2.text


def test_the_comparison_pairs_the_cases_like_scipy(judged):
    store, exp = judged
    c = compare_arms(exp.id, "v1", "v2", store=store)
    d = c.skill_following
    a, b = per_case("v1"), per_case("v2")
    t = stats.ttest_rel(b, a)
    assert d.n_cases == CASES and d.method == "paired t"
    assert d.difference == pytest.approx(np.mean(b) - np.mean(a))
    assert d.p_value == pytest.approx(t.pvalue)
    assert (d.interval.low, d.interval.high) == pytest.approx(tuple(t.confidence_interval(0.95)))
    assert c.as_dict()["skill_following"]["difference"] == pytest.approx(d.difference)
    none = compare_arms(exp.id, "none", "v2", store=store).skill_following
    assert none.difference is None and none.reason.startswith("none: no run with an applicable section")


def test_the_gate_reads_skill_following(judged):
    store, exp = judged
    rules = [
        {"metric": "skill_following", "op": ">=", "value": 0.9},
        {"metric": "a.skill_following", "op": ">=", "value": 0.9},
        {"metric": "skill_following_diff_ci_low", "op": ">=", "value": 0},
        {"metric": "none.skill_following", "op": ">=", "value": 0, "severity": "warn"},
    ]
    g = evaluate_gate(exp.id, rules, store=store)
    got = {r.rule.metric: r for r in g.rules}
    assert got["skill_following"].value == pytest.approx(np.mean(per_case("v2")))
    assert got["skill_following"].status == "pass"
    assert got["a.skill_following"].status == "fail"
    low = stats.ttest_rel(per_case("v2"), per_case("v1")).confidence_interval(0.95)[0]
    assert got["skill_following_diff_ci_low"].value == pytest.approx(low)
    assert got["none.skill_following"].value is None
    assert "not assessed" in got["none.skill_following"].reason


def test_pure_functions_agree_with_the_store_path():
    grades = [
        SectionGrade(
            1, c, k, "j", None, "s", ("a",) if (c + k) % 2 else ("a", "b"), ("b",) if (c + k) % 2 else (), ()
        )
        for c in range(4)
        for k in range(3)
    ]
    f = skill_following("x", grades)
    means = [np.mean([0.5 if (c + k) % 2 else 1.0 for k in range(3)]) for c in range(4)]
    assert f.following.value == pytest.approx(np.mean(means))
    none = [SectionGrade(1, 0, 0, "j", None, "s", (), (), ("a",))]
    assert (
        skill_following("x", none).following.value is None and skill_following("x", none).none_applicable == 1
    )
    assert skill_following("x", []) is None
    d = following_difference("j", "x", grades, "y", grades)
    assert d.difference == 0 and d.interval is None and "no spread" in d.reason


def test_the_cli_prints_the_share_and_the_sections_skipped_most(judged, cli):
    store, exp = judged
    out = cli("metrics", exp.name, store=store.path).output
    v1 = out[out.index("\nv1") : out.index("\nv2")]
    assert "skill-following" in v1 and "most skipped" in v1
    assert "SKILL.md#Rules: skipped 8 of 16 runs it applied to" in v1
    out = cli("compare", exp.name, "--arms", "v1", "v2", store=store.path).output
    line = next(x for x in out.splitlines() if x.startswith("skill-following"))
    assert "points" in line and "16 cases" not in line and "8 cases, paired t" in line


def test_the_report_section_and_the_widget_show_where_each_skill_was_ignored(judged):
    from abbench.report import following_section
    from abbench.widgets import ResultsWidget

    store, exp = judged
    m = experiment_metrics(exp.id, store=store)
    c = compare_arms(exp.id, "v1", "v2", store=store)
    html = "".join(p for p in following_section(m, c) if isinstance(p, str))
    assert "Skill instruction-following" in html and "Where each skill was ignored" in html
    assert "SKILL.md#Rules" in html and "8 of 16" in html and "not assessed" in html
    assert "share followed, v2 − v1" in html and "stand-in" not in html
    w = ResultsWidget(store, experiment=exp.id)
    tab = w.tabs.children[w.tabs.titles.index("Skill-following")]
    assert tab is w.following and "SKILL.md#History" in w.following.skipped_html.value
    assert "v2 − v1" in w.following.pair_html.value  # the decision pair: v1 → v2

"""Metrics through the whole path (store → metrics), checked against scipy, statsmodels and scikit-learn."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from abbench.errors import UsageError
from abbench.graders import GradeContext, read_skill
from abbench.metrics import NO_DOMAIN, OTHER_LABEL, experiment_metrics
from abbench.stats import repeated_se, wilson_interval
from abbench.types import AgentOutput, Case
from tests.results import cases_of, make_experiment, one_round


def _strict_json(data) -> None:
    json.dumps(data, allow_nan=False)  # raises on a NaN anywhere


def test_one_round_accuracy_is_wilson(store):
    outcomes = [True] * 13 + [False] * 7
    exp = make_experiment(store, "e", cases_of(20), {"only": one_round(outcomes)})
    m = experiment_metrics(exp, store=store)
    acc = m.arm("only").accuracy
    assert acc.value == pytest.approx(13 / 20)
    assert acc.method == "wilson"
    ref = wilson_interval(13, 20)
    assert (acc.interval.low, acc.interval.high) == pytest.approx((ref.low, ref.high))
    _strict_json(m.as_dict())


def test_rounds_take_per_case_means_first(store):
    rng = np.random.default_rng(3)
    matrix = rng.random((30, 4)) < np.linspace(0.1, 0.9, 30)[:, None]
    exp = make_experiment(store, "e", cases_of(30), {"only": matrix.tolist()})
    acc = experiment_metrics(exp, store=store).arm("only").accuracy
    ref = repeated_se(matrix.astype(float))
    assert acc.method == "per-case means"
    assert acc.value == pytest.approx(ref.mean) and acc.se == pytest.approx(ref.se)
    assert acc.interval.low == pytest.approx(max(0.0, ref.interval.low))
    assert acc.rounds == 4


def test_no_spread_between_cases_falls_back_to_wilson_over_cases(store):
    exp = make_experiment(store, "e", cases_of(8), {"only": [[True, True, True]] * 8})
    acc = experiment_metrics(exp, store=store).arm("only").accuracy
    assert acc.value == 1.0 and acc.method == "wilson over cases"
    assert acc.interval.high == 1.0 and acc.interval.low == pytest.approx(wilson_interval(8, 8).low)


def test_failures_are_left_out_counted_and_shown_in_strict_accuracy(store):
    runs = [
        *one_round([True] * 6 + [False] * 2),
        ["exec_fail"],
        ["exec_fail"],
        ["grade_fail"],
        ["cancelled"],
        ["pending"],
    ]
    exp = make_experiment(store, "e", cases_of(13), {"only": runs})
    a = experiment_metrics(exp, store=store).arm("only")
    c = a.counts
    assert (c.passed, c.failed, c.execution_failed, c.grading_failed, c.cancelled, c.unfinished) == (
        6,
        2,
        2,
        1,
        1,
        1,
    )
    assert c.failure_types == {"agent_error": 2}
    assert a.accuracy.value == pytest.approx(6 / 8) and a.accuracy.n_cases == 8
    assert a.strict_accuracy.value == pytest.approx(6 / 11) and a.strict_accuracy.n_cases == 11


def test_all_failures_give_no_accuracy_and_a_reason(store):
    exp = make_experiment(store, "e", cases_of(3), {"only": [["exec_fail"]] * 3})
    m = experiment_metrics(exp, store=store)
    a = m.arm("only")
    assert a.accuracy.value is None and a.accuracy.reason == "no graded run"
    assert a.usage.cost_per_correct is None and a.usage.reason
    assert a.classes is None
    _strict_json(m.as_dict())


def test_per_class_figures_equal_scikit_learn(store):
    import sklearn.metrics as metrics_mod

    cases = cases_of(40, labels=("fast", "slow", "mid"))
    rng = np.random.default_rng(0)
    choices = ["fast", "slow", "mid", "Fast ", "banana", None]
    runs, gold, pred = [], [], []
    for c in cases:
        p = choices[rng.integers(len(choices))]
        right = p is not None and p.strip().lower() == c.expected
        runs.append([{"passed": right, "prediction": p}])
        gold.append(c.expected)
        pred.append(p.strip().lower() if p else "(none)")
    exp = make_experiment(store, "e", cases, {"only": runs}, label_set=("fast", "slow", "mid"))
    report = experiment_metrics(exp, store=store).arm("only").classes
    labels = list(report.labels)
    p, r, f, s = metrics_mod.precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
    for i, label in enumerate(labels):
        assert report.per_class[label].precision == pytest.approx(p[i])
        assert report.per_class[label].recall == pytest.approx(r[i])
        assert report.per_class[label].f1 == pytest.approx(f[i])
        assert report.per_class[label].support == s[i]
    for average, mine in (("macro", report.macro), ("micro", report.micro), ("weighted", report.weighted)):
        # labels=None: the predictions outside the set ("banana", none) are classes with F1 0
        ref = metrics_mod.precision_recall_fscore_support(gold, pred, average=average, zero_division=0)
        assert (mine.precision, mine.recall, mine.f1) == pytest.approx(ref[:3])
    unknown = ["banana", "(none)"]
    matrix = metrics_mod.confusion_matrix(
        gold, [x if x in labels else "~" for x in pred], labels=[*labels, "~"]
    )
    assert report.confusion.columns == (*labels, OTHER_LABEL)
    assert [list(row) for row in report.confusion.counts] == matrix[: len(labels)].tolist()
    assert set(report.confusion.unknown_predictions) == {x for x in pred if x not in labels} == set(unknown)


def test_labels_are_normalised_with_the_dataset_label_map(store):
    cases = cases_of(6)
    runs = [
        [{"passed": True, "prediction": "快"}],
        [{"passed": True, "prediction": "SLOW"}],
        [{"passed": True, "prediction": "ｆａｓｔ"}],  # full-width, as the import reads gold labels
        [{"passed": True, "prediction": "ＳＬＯＷ　"}],
        [{"passed": True, "prediction": "fast"}],
        [{"passed": True, "prediction": "slow"}],
    ]
    exp = make_experiment(store, "e", cases, {"only": runs}, label_map={"快": "fast", "慢": "slow"})
    report = experiment_metrics(exp, store=store).arm("only").classes
    assert report.confusion.counts == ((3, 0), (0, 3))
    assert report.confusion.unknown_predictions == {}


def test_no_gold_and_free_form_gold_give_no_classes_with_a_reason(store):
    no_gold = [c.__class__(c.case_id, c.input, None, domain=c.domain) for c in cases_of(3)]
    exp = make_experiment(store, "e", no_gold, {"only": [[{"passed": True}]] * 3}, label_set=None)
    a = experiment_metrics(exp, store=store).arm("only")
    assert a.classes is None and "no gold labels" in a.classes_reason
    free = [c.__class__(c.case_id, c.input, f"answer number {i}") for i, c in enumerate(cases_of(60))]
    exp = make_experiment(store, "f", free, {"only": [[True]] * 60}, dataset="free", label_set=None)
    a = experiment_metrics(exp, store=store).arm("only")
    assert a.classes is None and "answers, not labels" in a.classes_reason
    assert "60 distinct values over 60 cases, each different" in a.classes_reason
    # the mapping may say otherwise: the same values declared as labels get their classes
    exp = make_experiment(
        store,
        "g",
        free,
        {"only": [[True]] * 60},
        dataset="free-labels",
        label_set=None,
        expected_kind="label",
    )
    m = experiment_metrics(exp, store=store)
    assert m.expected_kind.declared and len(m.arm("only").classes.labels) == 60


def test_many_short_shared_gold_values_are_labels_however_many_classes(store):
    # 77 intents, 3 cases each: no fixed class count turns them into free text (it once did above 50)
    intents = [f"intent_{i:02d}" for i in range(77)]
    cases = [Case(f"c{i}", f"query {i}", intents[i % 77]) for i in range(77 * 3)]
    runs = [
        [{"passed": i % 5 != 0, "prediction": intents[i % 77] if i % 5 else intents[0]}] for i in range(231)
    ]
    exp = make_experiment(store, "many", cases, {"only": runs}, dataset="many", label_set=None)
    m = experiment_metrics(exp, store=store)
    assert m.expected_kind.kind == "label" and not m.expected_kind.declared
    report = m.arm("only").classes
    assert report is not None and len(report.labels) == 77
    assert report.confusion.counts[1][0] == sum(1 for i in range(231) if i % 77 == 1 and i % 5 == 0)
    # declared answers win over the values
    exp = make_experiment(
        store, "many-a", cases, {"only": runs}, dataset="many-a", label_set=None, expected_kind="answer"
    )
    a = experiment_metrics(exp, store=store).arm("only")
    assert a.classes is None and "expected_kind: answer" in a.classes_reason


def test_stability_counts_flips_and_flaky_cases(store):
    runs = [
        [True, True, True],  # stable right
        [True, False, True],  # flaky; answers differ
        [{"passed": True}, {"passed": True, "prediction": "FAST"}, True],  # same answer after normalising
        [False, False, False],  # stable wrong
    ]
    exp = make_experiment(store, "e", cases_of(4, labels=("fast",)), {"only": runs})
    s = experiment_metrics(exp, store=store).arm("only").stability
    assert s.n_cases == 4 and s.flipped == ("c001",) and s.flip_rate == pytest.approx(1 / 4)
    assert s.flaky == ("c001",) and s.flaky_rate == pytest.approx(1 / 4)
    assert s.agreement == pytest.approx((1 + 2 / 3 + 1 + 1) / 4)
    assert s.within_variance == pytest.approx(np.var([1, 0, 1], ddof=1) / 4)


def test_one_round_has_no_stability_and_says_why(store):
    exp = make_experiment(store, "e", cases_of(3), {"only": one_round([True, False, True])})
    s = experiment_metrics(exp, store=store).arm("only").stability
    assert s.flip_rate is None and "one round" in s.reason


def test_cost_latency_and_tokens(store):
    latencies = [100.0, 200.0, 300.0, 400.0, 5000.0]
    runs = [[{"passed": i < 3, "latency_ms": lat, "cost": 0.1 * (i + 1)}] for i, lat in enumerate(latencies)]
    exp = make_experiment(store, "e", cases_of(5), {"only": runs})
    u = experiment_metrics(exp, store=store).arm("only").usage
    assert u.latency_ms.p50 == pytest.approx(np.percentile(latencies, 50))
    assert u.latency_ms.p95 == pytest.approx(np.percentile(latencies, 95))
    assert u.total_cost == pytest.approx(1.5) and u.cost_per_correct == pytest.approx(1.5 / 3)
    assert u.tokens.mean == 120


def test_grounding_evidence_confidence_and_skill_read(store):
    runs = [
        [
            {
                "passed": True,
                "evidence": ["SKILL.md#Rules"],
                "files_read": ["SKILL.md", "refs/a.md"],
                "confidence": 0.9,
            }
        ],
        # SKILL.md alone is the injected prompt, not a read (as the read_skill grader holds): the ATIS trial
        # showed "skill read 100%" beside a read_skill grade failing 22 of 1,786 runs.
        [{"passed": True, "evidence": [], "files_read": ["SKILL.md"], "confidence": 0.2}],
        [{"passed": False, "evidence": [], "files_read": [], "confidence": None}],
        [
            {
                "passed": True,
                "evidence": ["SKILL.md#Rules"],
                "files_read": [],
                "sections_read": ["SKILL.md#Rules"],
                "confidence": 0.4,
            }
        ],
    ]
    snapshot = _snapshot(store)
    exp = make_experiment(
        store, "e", cases_of(4), {"skill": runs, "none": runs}, snapshots={"skill": snapshot}
    )
    m = experiment_metrics(exp, store=store, low_confidence=0.5)
    g = m.arm("skill").grounding
    assert (g.no_evidence.k, g.no_evidence.n) == (2, 4)
    assert (g.low_confidence.k, g.low_confidence.n, g.confidence_missing) == (2, 3, 1)
    assert (g.skill_read.k, g.skill_read.n) == (2, 4)
    assert g.accuracy_when_read.value == 1.0 and g.accuracy_when_not_read.value == 0.5
    # The same runs through the read_skill grader: the metric and the grader count the same reads.
    skill = store.snapshots.get(snapshot)
    grader = read_skill()
    outputs = [
        AgentOutput(
            "x", files_read=tuple(r[0]["files_read"]), sections_read=tuple(r[0].get("sections_read", []))
        )
        for r in runs
    ]
    verdicts = [grader(GradeContext(cases_of(1)[0], o, skill=skill)).passed for o in outputs]  # type: ignore[union-attr]
    assert verdicts.count(True) == g.skill_read.k
    none = m.arm("none").grounding
    assert none.no_evidence.value is None and "no skill" in none.no_evidence.reason


def _snapshot(store) -> str:
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp()) / "skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text("# Rules\n- fast things are fast\n", encoding="utf-8")
    return store.snapshots.freeze(folder).hash


def test_clustered_accuracy_equals_statsmodels_ols_cluster(store):
    import statsmodels.api as sm

    rng = np.random.default_rng(7)
    domains = [f"d{i}" for i in range(12)]
    cases = cases_of(60, domains=domains)
    outcomes = (rng.random(60) < 0.6).tolist()
    exp = make_experiment(store, "e", cases, {"only": one_round(outcomes)})
    acc = experiment_metrics(exp, store=store, cluster="domain").arm("only").accuracy
    y = np.asarray(outcomes, dtype=float)
    groups = np.asarray([c.domain for c in cases])
    fit = sm.OLS(y, np.ones_like(y)).fit(
        cov_type="cluster", cov_kwds={"groups": np.unique(groups, return_inverse=True)[1]}, use_t=True
    )
    assert acc.se == pytest.approx(float(fit.bse[0]))
    # t with G − 1 = 11 df, as statsmodels' use_t and the clustered comparison: not the normal value.
    assert (acc.low, acc.high) == pytest.approx(tuple(fit.conf_int()[0]))
    assert "clustered by domain" in acc.method and "only 12 domain clusters" in acc.reason


def test_per_domain_and_per_round(store):
    runs = [[True, False], [True, True], [False, False]]
    cases = cases_of(3, domains=("nav", None, "nav"))
    exp = make_experiment(store, "e", cases, {"only": runs})
    m = experiment_metrics(exp, store=store)
    domains = {r.group: r for r in m.by_domain}
    assert set(domains) == {"nav", NO_DOMAIN}
    assert domains["nav"].accuracy.value == pytest.approx(0.25)
    rounds = {r.group: r.accuracy.value for r in m.by_round}
    assert rounds == {
        1: pytest.approx(2 / 3),
        2: pytest.approx(1 / 3),
    }  # rounds from 1, as every view shows them


@pytest.mark.parametrize("judged", [False, True])
def test_per_domain_rows_count_the_domains_runs_and_failures(store, judged):
    runs = [[True, "exec_fail"], [True, True], ["grade_fail", "cancelled"], [False, "exec_fail"]]
    if judged:  # scores, not verdicts: the same counts
        runs = [
            [{"passed": r, "score": 0.5} if isinstance(r, bool) else r for r in rounds] for rounds in runs
        ]
    cases = cases_of(4, domains=("nav", None, "nav", "car"))
    exp = make_experiment(store, "e", cases, {"only": runs})
    m = experiment_metrics(exp, store=store, outcome="score" if judged else "auto")
    counts = {r.group: (r.runs, r.failures) for r in m.by_domain}
    assert counts == {"car": (2, 1), "nav": (4, 2), NO_DOMAIN: (2, 0)}


def test_judge_scores_by_dimension_and_score_outcome(store):
    runs = [
        [
            {
                "passed": True,
                "judge": {"score": s, "dimensions": {"helpful": s, "grounded": 5 - s}, "cost": 0.01},
            }
        ]
        for s in (1.0, 2.0, 4.0, 5.0)
    ]
    exp = make_experiment(store, "e", cases_of(4), {"only": runs}, judge="rubric")
    m = experiment_metrics(exp, store=store)
    scores = {(j.grader, j.dimension): j.estimate for j in m.arm("only").judges}
    assert scores[("rubric", "score")].value == pytest.approx(3.0)
    assert scores[("rubric", "grounded")].value == pytest.approx(2.0)
    assert scores[("rubric", "helpful")].se == pytest.approx(np.std([1, 2, 4, 5], ddof=1) / 2)
    assert m.arm("only").usage.judge_cost == pytest.approx(0.04)


def test_a_judge_without_a_price_costs_unknown_never_zero(store):
    from abbench.formatting import judge_cost
    from abbench.metrics import judge_costs

    priced = {"passed": True, "judge": {"score": 1.0, "cost": 0.01, "model": "big"}}
    unpriced = {"passed": True, "judge": {"score": 1.0, "cost": None, "model": "smollm2"}}
    arms = {"priced": [[priced], [priced]], "mixed": [[priced], [unpriced]], "none": [[unpriced], [unpriced]]}
    exp = make_experiment(store, "e", cases_of(2), arms, judge="rubric")
    m = experiment_metrics(exp, store=store)
    assert m.arm("priced").usage.judge_cost == pytest.approx(0.02)
    assert m.arm("mixed").usage.judge_cost is None and m.arm("none").usage.judge_cost is None
    (cost,) = judge_costs(exp, store=store)
    assert (cost.cost, cost.unknown_cost) == (pytest.approx(0.03), 3)
    assert judge_cost(cost) == "$0.0300 + 3 calls without a price"
    nothing = dataclasses.replace(cost, cost=0.0)
    assert judge_cost(nothing) == "unknown (3 calls without a price)"


def test_scores_only_experiment_reports_the_mean_score(store):
    runs = [[{"passed": None, "state": "pass", "score": s, "grade": None}] for s in (0.2, 0.4, 0.9)]
    exp = make_experiment(store, "e", cases_of(3), {"only": runs})
    with store.transaction() as conn:  # a judge that only scores: no pass/fail verdict anywhere
        conn.execute(
            "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, score, created_at) "
            "SELECT experiment_id, 'b', id, 'judge', 'judge', 'ok', score, 'now' FROM runs"
        )
    m = experiment_metrics(exp, store=store)
    assert m.outcome == "score"
    a = m.arm("only")
    assert a.accuracy.value is None and a.score.value == pytest.approx(0.5)


def test_a_domain_without_a_scored_run_has_no_score_and_no_error(store):
    # Scores for the nav and car cases only: the media domain's runs could not be graded. Its row says
    # "no scored run" (it raised "scores_by_case is empty" for the whole experiment).
    runs = [
        ["grade_fail" if i % 3 == 2 else {"passed": None, "state": "pass", "score": 0.1 * i, "grade": None}]
        for i in range(6)
    ]
    exp = make_experiment(store, "e", cases_of(6), {"only": runs})
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, score, created_at) "
            "SELECT experiment_id, 'b', id, 'judge', 'judge', 'ok', score, 'now' FROM runs WHERE score IS NOT NULL"
        )
    m = experiment_metrics(exp, store=store, outcome="score")
    rows = {d.group: d.accuracy for d in m.by_domain if d.arm == "only"}
    assert rows["media"].value is None and rows["media"].reason == "no scored run"
    assert rows["nav"].value == pytest.approx(np.mean([0.0, 0.3])) and rows["car"].value == pytest.approx(
        0.25
    )


def test_a_score_only_judge_makes_no_run_right_or_wrong(store):
    from abbench.gate import evaluate_gate

    runs = [[{"passed": None, "state": "pass", "score": s, "grade": None} for s in pair] for pair in
            ((1.0, 4.0), (2.0, 2.0), (5.0, 3.0))]  # fmt: skip
    exp = make_experiment(store, "e", cases_of(3), {"only": runs})
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, score, created_at) "
            "SELECT experiment_id, 'b', id, 'judge', 'judge', 'ok', score, 'now' FROM runs"
        )
        # The runner records a run no grader failed as passed, even when every grader only scores.
        conn.execute("UPDATE runs SET passed = 1")
    a = experiment_metrics(exp, store=store).arm("only")
    assert a.score.n_cases == 3
    # "Cost per correct answer" and "flaky" (passed in some rounds, failed in others) mean nothing here.
    assert a.usage.cost_per_correct is None and "scores" in a.usage.reason
    assert a.stability.flaky_rate is None and a.stability.flaky == ()
    gate = evaluate_gate(exp, ["n_cases == 3", "cost_per_correct >= 0", "flaky_rate <= 1"], store=store)
    values = {r.rule.metric: (r.value, r.status) for r in gate.rules}
    assert values["n_cases"] == (3, "pass")
    assert values["cost_per_correct"] == (None, "missing") and values["flaky_rate"] == (None, "missing")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("confidence", 1.5, "confidence must be"),
        ("cluster", "case", "cluster must be"),
        ("outcome", "x", "outcome must be"),
    ],
)
def test_bad_options_are_refused(store, option, value, message):
    exp = make_experiment(store, "e", cases_of(2), {"only": one_round([True, False])})
    with pytest.raises(UsageError, match=message):
        experiment_metrics(exp, store=store, **{option: value})

"""Reviews persisted and shown latest-first, disagreements by kind, case details, judge-versus-human kappa."""

from __future__ import annotations

import json

import pytest

from abbench.errors import NotFoundError, UsageError
from abbench.review import (
    DISAGREEMENT_KINDS,
    add_review,
    case_detail,
    disagreements,
    judge_agreement,
    review_history,
    reviews,
)
from abbench.types import REVIEW_VERDICTS
from tests.results import cases_of, make_experiment, one_round


@pytest.fixture
def skill(store, tmp_path):
    folder = tmp_path / "skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "# Rules\n- 空调 requests are slow\n\n## Fast\nnavigation is fast\n", encoding="utf-8"
    )
    return store.snapshots.freeze(folder)


@pytest.fixture
def exp(store, skill):
    control = [
        [True, True],  # c000: fine
        [False, False],  # c001: gold disagreement in control
        [True, False],  # c002: flaky in control
        [{"passed": True, "confidence": 0.2}, True],  # c003: low confidence
        [True, True],  # c004: arms disagree below
    ]
    treatment = [
        [{"passed": True, "evidence": ["SKILL.md#Rules"]}, {"passed": True, "evidence": ["SKILL.md#Rules"]}],
        [{"passed": True, "evidence": ["SKILL.md#fast"]}, {"passed": True, "evidence": ["SKILL.md#Fast"]}],
        [{"passed": True, "evidence": ["SKILL.md#Rules"]}, {"passed": True, "evidence": ["SKILL.md#Rules"]}],
        [{"passed": True, "evidence": ["SKILL.md#Rules"]}, {"passed": True, "evidence": ["SKILL.md#Rules"]}],
        [{"passed": False, "evidence": []}, {"passed": False, "evidence": ["SKILL.md#Nope"]}],
    ]
    return make_experiment(
        store,
        "rev",
        cases_of(5),
        {"control": control, "treatment": treatment},
        snapshots={"treatment": skill.hash},
    )


def test_reviews_are_appended_and_the_latest_is_shown(store, exp):
    first = add_review(
        exp.id, "c001", "gold_correct", note="gold is right", arm="control", store=store, reviewer="ana"
    )
    second = add_review(exp.id, "c001", "model_correct", arm="control", store=store, reviewer="bo")
    whole = add_review(exp.id, "c001", "ambiguous_standard", store=store)
    latest = reviews(exp.id, store=store)
    assert [r.id for r in latest] == [second.id, whole.id]
    assert [r.verdict for r in review_history(exp.id, "c001", "control", store=store)] == [
        "gold_correct",
        "model_correct",
    ]
    assert first.reviewer == "ana" and whole.arm is None and whole.reviewer
    assert len(reviews(exp.id, store=store, latest=False)) == 3


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"case_id": "c001", "verdict": "gold"}, UsageError, "choose one of " + ", ".join(REVIEW_VERDICTS)),
        ({"case_id": "c001", "verdict": "gold_corect"}, UsageError, "did you mean gold_correct"),
        ({"case_id": "c0o1", "verdict": "unsure"}, NotFoundError, "did you mean c001"),
        (
            {"case_id": "c001", "verdict": "unsure", "arm": "ghost"},
            NotFoundError,
            "its arms: control, treatment",
        ),
        ({"case_id": "c001", "verdict": "unsure", "run_id": 999}, NotFoundError, "no run 999"),
    ],
)
def test_bad_reviews_are_refused_with_the_valid_choices(store, exp, kwargs, error, message):
    with pytest.raises(error, match=message):
        add_review(exp.id, store=store, **kwargs)


def test_a_run_of_another_case_or_arm_is_refused_and_a_run_names_its_arm(store, exp):
    runs = {(r.arm, r.case_id, r.round): r.id for r in store.runs.records(exp.id)}
    with pytest.raises(UsageError, match="is of case 'c000'"):
        add_review(exp.id, "c001", "unsure", run_id=runs[("control", "c000", 0)], store=store)
    with pytest.raises(UsageError, match="is of arm 'control'"):
        add_review(
            exp.id, "c001", "unsure", arm="treatment", run_id=runs[("control", "c001", 0)], store=store
        )
    r = add_review(exp.id, "c001", "unsure", run_id=runs[("treatment", "c001", 1)], store=store)
    assert r.arm == "treatment"


def test_disagreements_by_kind(store, exp):
    found = {d.case_id: d for d in disagreements(exp.id, store=store)}
    assert set(found) == {"c001", "c002", "c003", "c004"}
    assert found["c001"].kinds == ("gold", "arms")
    assert found["c002"].kinds == ("gold", "flaky", "arms")  # 1 of 2 is no majority; treatment passes both
    assert found["c003"].kinds == ("low_confidence",)
    assert found["c004"].kinds == ("gold", "no_evidence", "arms")
    assert found["c004"].arms == ("control", "treatment")
    flaky = disagreements(exp.id, "flaky", store=store)
    assert [d.case_id for d in flaky] == ["c002"] and flaky[0].arms == ("control",)
    assert [d.case_id for d in disagreements(exp.id, ["no_evidence"], store=store)] == ["c004"]
    assert len(disagreements(exp.id, store=store, limit=2)) == 2
    with pytest.raises(UsageError, match="choose from " + ", ".join(DISAGREEMENT_KINDS)):
        disagreements(exp.id, "weird", store=store)
    json.dumps([d.as_dict() for d in found.values()], allow_nan=False)


def test_a_disagreement_carries_what_a_case_view_needs(store, exp):
    add_review(exp.id, "c001", "model_correct", arm="control", store=store)
    (d,) = [d for d in disagreements(exp.id, "gold", store=store) if d.case_id == "c001"]
    assert d.case.input == "query 1" and d.case.expected == "slow" and d.case.domain == "car"
    assert [(r.arm, r.round) for r in d.runs] == [
        ("control", 0),
        ("control", 1),
        ("treatment", 0),
        ("treatment", 1),
    ]
    control = d.runs[0]
    assert control.prediction == "wrong" and control.outcome == "fail" and control.passed is False
    ev = d.runs[2].evidence[0]
    assert (
        ev.ref == "SKILL.md#fast"
        and ev.found
        and ev.resolved == "SKILL.md#Fast"
        and "navigation is fast" in ev.text
    )
    assert [r.verdict for r in d.reviews] == ["model_correct"]


def test_unknown_evidence_is_marked_not_found(store, exp):
    detail = case_detail(exp.id, "c004", store=store)
    cited = [e for r in detail.runs for e in r.evidence]
    assert [(e.ref, e.found) for e in cited] == [("SKILL.md#Nope", False)]


def test_case_detail_reads_grades_tool_calls_and_history(store, exp):
    run = next(
        r for r in store.runs.records(exp.id) if r.case_id == "c000" and r.arm == "treatment" and r.round == 0
    )
    path = store.path / "transcripts" / f"{run.id}.jsonl"
    events = [
        {"type": "message", "role": "user", "content": "q"},
        {
            "type": "tool_call",
            "turn": 0,
            "id": "t1",
            "name": "read_section",
            "arguments": {"ref": "SKILL.md#Rules"},
            "ok": True,
            "result_chars": 20,
        },
        {
            "type": "message",
            "role": "assistant",
            "tool_calls": [{"id": "t1", "function": {"name": "read_section"}}],
        },
    ]
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n", encoding="utf-8")
    with store.transaction() as conn:
        conn.execute("UPDATE runs SET transcript_path=? WHERE id=?", (f"transcripts/{run.id}.jsonl", run.id))
    add_review(exp.id, "c000", "unsure", arm="treatment", store=store)
    add_review(exp.id, "c000", "model_correct", arm="treatment", store=store)
    detail = case_detail(exp.id, "c000", store=store)
    view = next(r for r in detail.runs if r.run_id == run.id)
    assert [(c.name, c.arguments, c.ok) for c in view.calls] == [
        ("read_section", {"ref": "SKILL.md#Rules"}, True)
    ]
    assert view.transcript_path.endswith(f"{run.id}.jsonl")
    assert view.grades["label_match"].passed is True
    # The JSON form of a grade is what it was when grades were dicts: these keys, from the store's grade.
    stored = store.grades.latest(run.id)["label_match"]
    assert view.as_dict()["grades"]["label_match"] == {
        k: getattr(stored, k)
        for k in ("kind", "status", "passed", "score", "verdict", "comment", "error", "dimensions")
    }
    assert [r.verdict for r in detail.history] == ["unsure", "model_correct"]
    assert [r.verdict for r in detail.reviews] == ["model_correct"]
    assert detail.kinds == ()
    with pytest.raises(NotFoundError, match="has no case 'zzz'"):
        case_detail(exp.id, "zzz", store=store)


def test_judge_agreement_is_cohens_kappa_once_reviews_exist(store):
    import sklearn.metrics as sklearn_metrics

    outcomes = [True, True, False, False, True, False, True, False]
    exp = make_experiment(store, "k", cases_of(8), {"only": one_round(outcomes)})
    assert judge_agreement(exp.id, store=store).kappa is None
    people = [
        "model_correct",
        "gold_correct",
        "gold_correct",
        "model_correct",
        "model_correct",
        "gold_correct",
        "unsure",
        "gold_correct",
    ]
    for i, verdict in enumerate(people):
        add_review(exp.id, f"c{i:03d}", verdict, store=store)
    agreement = judge_agreement(exp.id, store=store)
    judge = ["pass" if o else "fail" for o, p in zip(outcomes, people, strict=True) if p != "unsure"]
    human = [{"model_correct": "pass", "gold_correct": "fail"}[p] for p in people if p != "unsure"]
    assert agreement.n == 7
    assert agreement.kappa.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score(judge, human))
    assert agreement.agreement == pytest.approx(sum(a == b for a, b in zip(judge, human, strict=True)) / 7)
    assert sum(agreement.excluded.values()) == 1


def test_reviews_show_up_in_the_comparison(store, exp):
    from abbench.compare import compare_arms

    assert compare_arms(exp.id, store=store).review_agreement is None
    add_review(exp.id, "c001", "gold_correct", arm="control", store=store)
    add_review(exp.id, "c004", "model_correct", arm="treatment", store=store)
    agreement = compare_arms(exp.id, store=store).review_agreement
    assert agreement.n == 2 and agreement.agreement == pytest.approx(0.5)


def test_a_run_failed_by_another_grader_with_the_gold_answer_is_not_a_gold_disagreement(store):
    # c000's gold is "fast": one run answers it but a judge (or a citation check) failed it
    right_but_failed = {"passed": False, "prediction": " FAST "}
    wrong = {"passed": False, "prediction": "fast"}  # c001 is "slow"
    make_experiment(store, "judged", cases_of(3), {"a": [[right_but_failed], [wrong], [True]]})
    gold = disagreements("judged", "gold", store=store)
    assert [d.case_id for d in gold] == ["c001"]
    assert "gold" not in case_detail("judged", "c000", store=store).kinds
    assert "gold" in case_detail("judged", "c001", store=store).kinds

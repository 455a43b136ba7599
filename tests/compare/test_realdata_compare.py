"""Comparisons of banking77 arms recorded with everything that makes reading hard (see `realdata_runs`):
the per-case sums, the reason and evidence changes and the compare widget's lists must equal what an
independent reading of every run (`store.runs.table`, plain Python) gives."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from abbench._text import clip
from abbench.compare import compare_arms, compare_experiments
from abbench.graders import normalise_label
from abbench.metrics import dataset_labels
from abbench.runner import create_experiment, record_runs
from abbench.store import PASSED, open_store
from abbench.widgets import DiffWidget
from abbench.widgets._diff import INPUT_SHOWN
from tests.compare import realdata_runs


@pytest.fixture(scope="module")
def recorded(realdata, tmp_path_factory):
    store = open_store(tmp_path_factory.mktemp("cmp") / "store")
    made = realdata_runs.build(store, realdata)
    return store, made["exp"], made["other"]


def _answered(store, exp, arm):
    """Each case's answered runs of an arm, by round: (prediction, reason, evidence_refs), read from `load_runs`."""
    t = store.runs.table(exp.id, arms=[arm], text=True)
    text = t.text
    out: dict[str, list[tuple]] = {}
    for i in range(t.run_id.size):
        executed = not np.isnan(t.latency_ms[i])
        if executed and t.failure_type[i] is None:
            out.setdefault(str(t.case_id[i]), []).append(
                (t.prediction[i], text["reason"][i], text["evidence_refs"][i])
            )
    return out


def _reference_text(store, ea, arm_a, eb, arm_b, case_ids):
    """Reason and evidence changes by their definition, every case read (`TextChanges` documents it)."""
    label_map = dataset_labels(store, ea.dataset_id)[1]
    runs_a, runs_b = _answered(store, ea, arm_a), _answered(store, eb, arm_b)

    def mode(runs):
        normal = [normalise_label(p, label_map) for p, _, _ in runs]
        counts = Counter(normal)
        best = max(counts.values())
        return next((v, p) for v, (p, _, _) in zip(normal, runs, strict=True) if counts[v] == best)

    def reason(x):
        return " ".join(str(x).split()) if x else ""

    def refs(x):
        if not x:
            return []
        if isinstance(x, str):  # load_runs hands the references over decoded; a raw text is read as JSON
            try:
                x = json.loads(x)
            except ValueError:
                return [x]
        values = x
        return [str(v).strip() for v in values or () if str(v).strip()]

    reasons, evidence = [], []
    for case_id in case_ids:
        a, b = runs_a.get(case_id), runs_b.get(case_id)
        if not a or not b:
            continue
        (mode_a, raw_a), (mode_b, _) = mode(a), mode(b)
        if mode_a == mode_b:
            why_a = [r for p, r, _ in a if normalise_label(p, label_map) == mode_a]
            why_b = [r for p, r, _ in b if normalise_label(p, label_map) == mode_b]
            if not {reason(x) for x in why_a} & {reason(x) for x in why_b}:
                reasons.append((case_id, raw_a, why_a[0], why_b[0]))
        cited_a = list(dict.fromkeys(ref for _, _, e in a for ref in refs(e)))
        cited_b = list(dict.fromkeys(ref for _, _, e in b for ref in refs(e)))
        appeared = tuple(x for x in cited_b if x not in cited_a)
        gone = tuple(x for x in cited_a if x not in cited_b)
        if appeared or gone:
            evidence.append((case_id, appeared, gone))
    return reasons, evidence


def _text_of(c):
    reasons = [(x.case_id, x.prediction, x.reason_a, x.reason_b) for x in c.text.reason_changed]
    evidence = [(x.case_id, x.appeared, x.disappeared) for x in c.text.evidence]
    return reasons, evidence


def _compared_ids(store, ea, arm_a, eb, arm_b):
    """The cases both sides ran, in dataset order."""
    ta, tb = store.runs.table(ea.id, arms=[arm_a]), store.runs.table(eb.id, arms=[arm_b])
    both = np.intersect1d(ta.case_idx, tb.case_idx)
    at = {int(i): str(c) for i, c in zip(ta.case_idx, ta.case_id, strict=True)}
    return [at[int(i)] for i in both]


@pytest.mark.parametrize(("a", "b"), [("a", "b"), ("b", "a"), ("a", "c"), ("c", "b")])
def test_reason_and_evidence_changes_equal_every_case_read(recorded, a, b):
    store, exp, _ = recorded
    c = compare_arms(exp.id, a, b, store=store, details=True)
    ids = _compared_ids(store, exp, a, exp, b)
    reasons, evidence = _reference_text(store, exp, a, exp, b, ids)
    assert _text_of(c) == (reasons, evidence)
    assert c.text.checked == len(ids)
    assert reasons and evidence  # the data have both kinds of change


def test_experiments_with_different_rounds_compare_every_case(recorded):
    store, exp, other = recorded
    c = compare_experiments(exp.id, other.id, arm_a="b", store=store, details=True)
    ids = _compared_ids(store, exp, "b", other, "d")
    assert _text_of(c) == _reference_text(store, exp, "b", other, "d", ids)


def test_case_sums_equal_the_runs_added_up(recorded):
    store, exp, _ = recorded
    outcomes = store.runs.case_outcomes(exp.id)
    t = store.runs.table(exp.id)
    for k, (arm_id, case_idx) in enumerate(zip(outcomes.arm_id, outcomes.case_idx, strict=True)):
        mine = (t.arm_id == arm_id) & (t.case_idx == case_idx)
        assert outcomes.runs[k] == np.count_nonzero(mine)
        assert outcomes.passed[k] == np.count_nonzero(mine & (t.outcome == PASSED))
        assert outcomes.executed[k] == np.count_nonzero(mine & ~np.isnan(t.latency_ms))
        assert outcomes.latency_ms[k] == pytest.approx(np.nansum(t.latency_ms[mine]), rel=1e-12)
        cost = t.cost[mine]
        assert np.isnan(outcomes.cost[k]) == bool(np.all(np.isnan(cost)))
    assert outcomes.case_idx.flags["C_CONTIGUOUS"] and outcomes.arm_id.dtype == np.int64
    assert set(outcomes.arm_id.tolist()) == {x.id for x in exp.arms}


@pytest.mark.parametrize("reason_in_b", [False, True])
def test_arms_without_reasons_or_references_have_no_text_changes(realdata, tmp_path, reason_in_b):
    """Label-only answers (no reason, no reference, some empty lists and reasons): nothing changed, every
    case read; one reason in one arm and the cases are read again (that case's reason changed)."""
    store = open_store(tmp_path / "store")
    categories = json.loads((realdata / "banking77" / "categories.json").read_text())
    profile = {"fields": {"input": "text", "expected": "category"}, "label_set": categories}
    info = store.datasets.import_file(realdata / "banking77" / "test.csv", profile, name="banking77")
    cases = store.datasets.load_cases(info)[:120]
    exp = create_experiment(
        {
            "name": "labels",
            "dataset": info.fingerprint,
            "rounds": 2,
            "cases": {"ids": [x.case_id for x in cases]},
            "arms": {"a": {"agent": "external"}, "b": {"agent": "external"}},
        },
        store=store,
    )
    rows = [
        {"case_id": x.case_id, "arm": arm, "round": r, "latency_ms": 5.0,
         "prediction": x.expected if (k + r) % (3 if arm == "a" else 4) else "card_linking",
         **({"evidence_refs": []} if k % 5 == 0 else {}), **({"reason": ""} if k % 7 == 0 else {})}
        for k, x in enumerate(cases) for arm in ("a", "b") for r in (1, 2)
    ]  # fmt: skip
    if reason_in_b:
        rows[2]["reason"] = rows[3]["reason"] = "the card has not come"  # case 0, arm b, both rounds
    record_runs(store, exp, rows)
    assert not store.analysis.arm_gives_text(exp.id, exp.arm("a").id)
    assert store.analysis.arm_gives_text(exp.id, exp.arm("b").id) == reason_in_b
    c = compare_arms(exp.id, "a", "b", store=store, details=True)
    ids = _compared_ids(store, exp, "a", exp, "b")
    assert _text_of(c) == _reference_text(store, exp, "a", exp, "b", ids)
    reasons, evidence = _text_of(c)
    assert evidence == [] and [(x[0], x[3]) for x in reasons] == (
        [(cases[0].case_id, "the card has not come")] if reason_in_b else []
    )
    assert c.text.checked == len(ids) == 120
    assert c.fixed or c.regressed  # the answers did change


def test_the_compare_widget_lists_each_case_with_its_own_input(recorded):
    store, exp, _ = recorded
    w = DiffWidget(store, a=exp.id, arm_a="a", arm_b="b")
    assert w.errors.message is None
    inputs = {x.case_id: " ".join(str(x.input).split()) for x in store.datasets.load_cases(exp.dataset_id)}
    seen = 0
    for name, choice in w.case_lists.items():
        for label, case_id in zip(choice.labels, w.lists[name], strict=False):
            assert label.startswith(f"{case_id} · {clip(inputs[case_id], INPUT_SHOWN)} · ")
            seen += 1
    assert seen > 50
    first = store.datasets.load_cases(exp.dataset_id)[:700]  # more than one chunk of ids
    read = store.datasets.case_inputs(
        exp.dataset_id, ["no such case", *(x.case_id for x in first), first[0].case_id]
    )
    assert read == {x.case_id: x.input for x in first}

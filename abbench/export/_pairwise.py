"""A pairwise judge's contest as one JSON document, in the double-blind workflow's own shape.

The workflow abbench's pairwise judge was built from writes an A/B result as ``test_summary`` (the
task, the rounds, the two contestants, the rubric), ``rounds`` (each comparison's outputs, the judge's
scores, the winner and its comment) and ``final_result`` (totals, wins, the winner and a confidence).
`pairwise_result` writes the same from the store, a round for each pair judged (case × round), with
abbench's own confidence: the exact sign test of the wins, B's win rate with its Wilson interval, and
the judge's position and verbosity audits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abbench.errors import UsageError
from abbench.graders import (
    PairJudgement as _PairJudgement,
    Rubric,
    measure_position_bias,
    measure_verbosity_bias,
    rubric_totals,
    swap_sides,
)
from abbench.store import Experiment, StoreLike, open_store

SHAPE_VERSION = 1
"""The version of the document's shape (``format_version``)."""


def pairwise_result(
    experiment: int | str | Experiment, *, grader: str | None = None, store: StoreLike = None
) -> dict[str, Any]:
    """An experiment's pairwise contest as judged by `grader` (default: its only pairwise judge), in
    the double-blind workflow's shape: ``test_summary``, ``rounds``, ``final_result``.

    Contestant A is the judge's first arm, B its second. A round's ``winner`` is the winning arm's name
    or ``tie``; ``judge_scores`` are each side's rubric scores (averaged over the two orders when judged
    in both); ``final_result.total_score_a`` sums A's scores over every dimension and round (None
    without a rubric).

    Raises:
        UsageError: no pairwise judge graded the experiment, or several did and `grader` names none
            of them (the message lists them).
    """
    store = open_store(store)
    exp = experiment if isinstance(experiment, Experiment) else store.experiments.get(experiment)
    grades = [g for g in store.grades.records(exp.id, kind="pairwise") if g.status == "ok"]
    names = list(dict.fromkeys(g.grader for g in grades))
    if not names:
        raise UsageError(f"{exp.name}: no pairwise judge has judged a pair yet; nothing to export")
    if (grader is None and len(names) > 1) or (grader is not None and grader not in names):
        raise UsageError(
            f"{exp.name}: choose the pairwise judge to export: {', '.join(names)}",
            kind="pairwise judge",
            name=grader or "",
            choices=tuple(names),
        )
    name = grader or names[0]
    grades = [g for g in grades if g.grader == name]
    arm_a, arm_b = _arms(exp, grades)
    runs = {r.id: r for r in store.runs.records(exp.id)}
    rows = []
    for g in grades:
        first, second = runs.get(g.run_id), runs.get(g.other_run_id or -1)
        if first is None or second is None:
            continue
        flipped = first.arm != arm_a
        sides = (second, first) if flipped else (first, second)
        dims = swap_sides(g.dimensions) if flipped and g.dimensions else dict(g.dimensions or {})
        verdict = {"a": "b", "b": "a"}.get(g.verdict or "", g.verdict) if flipped else g.verdict
        rows.append((sides, dims, verdict, g))
    rows.sort(key=lambda row: (row[0][0].case_idx, row[0][0].round))
    rounds = [
        _round(i, sides, dims, verdict, g, (arm_a, arm_b))
        for i, (sides, dims, verdict, g) in enumerate(rows, 1)
    ]
    spec = _grader_spec(exp, name)
    return {
        "format_version": SHAPE_VERSION,
        "test_summary": {
            "task": exp.name,
            "experiment_id": exp.id,
            "dataset": exp.dataset,
            "rounds": len(rounds),
            "contestant_a": _contestant(exp, arm_a),
            "contestant_b": _contestant(exp, arm_b),
            "rubric": _rubric(spec),
            "judge": {
                "grader": name,
                "model": spec.get("model"),
                "both_orders": bool(spec.get("both_orders")),
            },
        },
        "rounds": rounds,
        "final_result": _final(rows, (arm_a, arm_b), name),
    }


def _arms(exp: Experiment, grades: list[Any]) -> tuple[str, str]:
    for g in grades:
        arms = list((g.details or {}).get("arms") or ())
        if len(arms) == 2:
            return arms[0], arms[1]
    return exp.arms[0].name, exp.arms[1].name


def _contestant(exp: Experiment, arm: str) -> dict[str, Any]:
    found = next((a for a in exp.arms if a.name == arm), None)
    if found is None:
        return {"arm": arm}
    return {
        "arm": arm,
        "agent": found.agent,
        "model": found.model,
        "skill": found.skill_name,
        "snapshot": found.snapshot,
        "skill_mode": found.skill_mode,
    }


def _grader_spec(exp: Experiment, name: str) -> Mapping[str, Any]:
    for spec in (exp.definition or {}).get("graders") or ():
        if isinstance(spec, Mapping) and spec.get("name", spec.get("type")) == name:
            return spec
    return {}


def _rubric(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    if spec.get("rubric") is None:
        return None
    try:
        return Rubric.parse(spec["rubric"]).as_dict()
    except UsageError:  # a definition the experiment accepted; said as written should it not read now
        return {"as_written": spec["rubric"]}


def _side(dims: Mapping[str, float], letter: str) -> dict[str, float]:
    return {k.partition(".")[2]: v for k, v in dims.items() if k.startswith(letter + ".")}


def _round(
    i: int, sides: tuple[Any, Any], dims: dict[str, float], verdict: str | None, g: Any, arms: tuple[str, str]
) -> dict[str, Any]:
    details = g.details or {}
    out: dict[str, Any] = {
        "round": i,
        "case_id": sides[0].case_id,
        "case_round": sides[0].round + 1,
        "outputs": {
            letter: {
                "arm": run.arm,
                "run_id": run.id,
                "prediction": run.output.prediction if run.output else None,
                "reason": run.output.reason if run.output else None,
            }
            for letter, run in zip("ab", sides, strict=True)
        },
        "judge_scores": {"a": _side(dims, "a"), "b": _side(dims, "b")} if dims else None,
        "winner": {"a": arms[0], "b": arms[1]}.get(verdict or "", "tie"),
        "judge_comment": g.comment,
    }
    if details.get("tie_rule"):
        out["tie_rule"] = details["tie_rule"]
    if details.get("free_text"):
        out["read_from_free_text"] = True
    return out


def _final(rows: list[Any], arms: tuple[str, str], grader: str) -> dict[str, Any]:
    from abbench.stats import mcnemar_exact, wilson_interval  # numpy and scipy: loaded when exporting

    verdicts = [v for _, _, v, _ in rows]
    wins_a, wins_b, ties = (
        verdicts.count("a"),
        verdicts.count("b"),
        len(verdicts) - verdicts.count("a") - verdicts.count("b"),
    )
    totals = rubric_totals(dims for _, dims, _, _ in rows)
    scored = [dims for _, dims, _, _ in rows if dims]
    total_a = sum(sum(_side(d, "a").values()) for d in scored) if scored else None
    total_b = sum(sum(_side(d, "b").values()) for d in scored) if scored else None
    decisive = wins_a + wins_b
    interval = wilson_interval(wins_b, decisive) if decisive else None
    judged = [_PairJudgement.from_details(g.details, verdict=g.verdict, status=g.status) for *_, g in rows]
    position = measure_position_bias(judged, grader)
    verbosity = measure_verbosity_bias(judged, grader)
    p = mcnemar_exact(wins_a, wins_b).p_value
    return {
        "total_score_a": total_a,
        "total_score_b": total_b,
        "dimensions": [t.as_dict() for t in totals],
        "wins_a": wins_a,
        "wins_b": wins_b,
        "ties": ties,
        "winner": arms[0] if wins_a > wins_b else arms[1] if wins_b > wins_a else "tie",
        "confidence": {
            "sign_test_p": p,
            "test": "exact sign test of B's wins against A's (ties left out)",
            "b_win_rate": wins_b / decisive if decisive else None,
            "b_win_interval": None if interval is None else interval.as_dict(),
            "position_bias": {
                "first_win_rate": position.first_win_rate,
                "first_win_interval": None
                if position.first_win_interval is None
                else position.first_win_interval.as_dict(),
                "flip_rate": position.flip_rate,
                "biased": position.biased,
            },
            "verbosity_bias": {
                "longer_win_rate": verbosity.longer_win_rate,
                "longer_win_interval": None
                if verbosity.longer_win_interval is None
                else verbosity.longer_win_interval.as_dict(),
                "pairs": verbosity.pairs,
                "min_difference": verbosity.min_difference,
                "biased": verbosity.biased,
                "prefers": verbosity.prefers,
            },
            "summary": _summary(wins_a, wins_b, p, position.biased, verbosity.prefers, arms),
        },
    }


def _summary(
    wins_a: int, wins_b: int, p: float, slot: bool | None, length: str | None, arms: tuple[str, str]
) -> str:
    lead = (
        f"{arms[1] if wins_b > wins_a else arms[0]} preferred in {max(wins_a, wins_b)} of {wins_a + wins_b} "
        f"decisive pairs (sign test p = {p:.3g})"
        if wins_a != wins_b
        else f"no arm preferred ({wins_a} wins each)"
    )
    doubts = [
        w
        for w, on in (("the judge favours a slot", slot), (f"the judge prefers the {length} answer", length))
        if on
    ]
    return lead + ("; but " + " and ".join(doubts) + ": treat it with caution" if doubts else "")

"""The pair a decision is about: a baseline and a candidate, named — never guessed among three or more arms."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from abbench.compare._votes import VOTE_MARGIN, VOTE_MIN_CASES
from abbench.errors import NotFoundError, PairNotNamed, UsageError, View
from abbench.metrics import Result
from abbench.store import Arm, Experiment

WAYS_TO_NAME = (
    "in the experiment definition: decision: {baseline: A, candidate: B}",
    "in the gate file, beside rules: baseline: A and candidate: B",
    "on the command line: --arms A B (arms=(A, B) in Python)",
)
"""The three places a decision's pair can be named, most general first (the command line wins)."""

ARMS_GIVEN = "the arms given"
"""`Pair.named_by` when the caller gave the pair (``arms=``, ``--arms``, a widget's choice, a request's arms);
`Pair.named_in` says it in a view's words."""


@dataclass(frozen=True)
class Pair(Result):
    """The baseline and the candidate a decision compares, and who named them.

    Attributes:
        baseline: The baseline arm (None when the experiment has a single arm and no baseline is given).
        candidate: The candidate arm, the one the decision is about.
        named_by: `ARMS_GIVEN` (the caller gave them: ``arms=``, ``--arms``, a widget's choice), the gate file's
            path, ``experiment decision``, ``the experiment's two arms`` or ``the experiment's only arm``.
        given: The arm names the caller gave (baseline, candidate), with `ARMS_GIVEN` (not exported).
    """

    baseline: str | None
    candidate: str
    named_by: str
    given: tuple[str, str] | None = field(default=None, compare=False, metadata={"export": False})

    def named_in(self, view: View) -> str:
        """Who named the pair in `view`'s words: ``arms=('v1', 'v2')`` in Python (and the widgets, which pass
        the arms chosen), ``--arms v1 v2`` on the command line, the request's ``arms`` over HTTP."""
        if self.named_by != ARMS_GIVEN or self.given is None:
            return self.named_by
        a, b = self.given
        if view == "cli":
            return f"--arms {a} {b}"
        if view == "http":
            return f"the request's arms [{a!r}, {b!r}]"
        return f"arms=({a!r}, {b!r})"

    @property
    def text(self) -> str:
        """``v2 vs v1``: the candidate first, as every verdict line opens."""
        return self.candidate if self.baseline is None else f"{self.candidate} vs {self.baseline}"


def check_arm(exp: Experiment, name: Any, where: str) -> Arm:
    """The arm `name` of `exp`, or a usage error saying where it was named, with "did you mean".

    Raises:
        NotFoundError: no such arm (the message lists the arms and the closest name).
    """
    names = [a.name for a in exp.arms]
    if not isinstance(name, str) or not name.strip():
        raise UsageError(
            f"{where}: an arm name is text; got {name!r}; the arms of {exp.name!r}: {', '.join(names)}"
        )
    for a in exp.arms:
        if a.name == name:
            return a
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise NotFoundError(
        f"{where}: experiment {exp.name!r} has no arm {name!r}{hint}; its arms: {', '.join(names)}",
        kind="arm",
        name=name,
        choices=names,
    )


def vote_policy(exp: Experiment) -> dict[str, Any] | None:
    """``{margin, min_cases}`` when the experiment's ``decision:`` says ``policy: votes``, else None
    (the defaults `VOTE_MARGIN` and `VOTE_MIN_CASES` fill what it leaves out)."""
    decision = exp.spec.decision.model_dump() if exp.spec.decision else {}
    if decision.get("policy") != "votes":
        return None
    margin, minimum = decision.get("margin"), decision.get("min_cases")
    return {
        "margin": VOTE_MARGIN if margin is None else margin,
        "min_cases": VOTE_MIN_CASES if minimum is None else minimum,
    }


def experiment_pair(exp: Experiment) -> tuple[str, str] | None:
    """The pair the experiment's definition names (``decision: {baseline, candidate}``), or None."""
    decision = exp.spec.decision.model_dump() if exp.spec.decision else {}
    if decision.get("baseline") and decision.get("candidate"):
        return str(decision["baseline"]), str(decision["candidate"])
    return None


def _refusal(exp: Experiment, what: str) -> PairNotNamed:
    names = ", ".join(a.name for a in exp.arms)
    ways = "; ".join(f"({i}) {w}" for i, w in enumerate(WAYS_TO_NAME, start=1))
    return PairNotNamed(
        f"{what} on experiment {exp.name!r} needs a baseline and a candidate, and nothing names them: it has "
        f"{len(exp.arms)} arms ({names}) and abbench does not guess which two. Name the pair {ways}"
    )


def resolve_pair(
    exp: Experiment,
    arms: Sequence[str] | None = None,
    *,
    gate_pair: tuple[str, str] | None = None,
    gate_source: str = "gate file",
    what: str = "a decision",
) -> Pair:
    """The pair a decision on `exp` is about: named on the command line, in the gate file, or in the
    experiment (in that order); with exactly two arms, the first is the baseline and the second the
    candidate; with one arm, that arm alone.

    Args:
        exp: The experiment.
        arms: ``(baseline, candidate)`` from the command line or the caller.
        gate_pair: ``(baseline, candidate)`` named by the gate file.
        gate_source: The gate file's name, for messages.
        what: What needs the pair, for the refusal (``a decision``, ``the comparison``).

    Raises:
        PairNotNamed: three or more arms and no pair named anywhere (the message lists the arms and
            the three ways to name one).
        UsageError: a named arm does not exist (with "did you mean"), or the same arm twice.
    """
    if arms is not None:
        arms = list(arms)
        if len(arms) != 2:
            raise UsageError(f"arms takes two arm names (baseline, candidate); got {arms!r}")
        chosen, source, where = (arms[0], arms[1]), ARMS_GIVEN, "--arms"
    elif gate_pair is not None:
        chosen, source, where = gate_pair, gate_source, f"{gate_source}: baseline/candidate"
    elif (named := experiment_pair(exp)) is not None:
        chosen, source = named, "experiment decision"
        where = f"experiment {exp.name!r}, decision:"
    elif len(exp.arms) == 2:
        chosen, source, where = (exp.arms[0].name, exp.arms[1].name), "the experiment's two arms", ""
    elif len(exp.arms) == 1:
        return Pair(None, exp.arms[0].name, "the experiment's only arm")
    else:
        raise _refusal(exp, what)
    baseline, candidate = chosen
    if source == ARMS_GIVEN:  # the command line's own message (no arm of that name; its arms: ...)
        exp.arm(baseline), exp.arm(candidate)
    if len(exp.arms) == 1 and where:
        check_arm(exp, candidate, where)
        raise UsageError(
            f"{where}: experiment {exp.name!r} has a single arm ({exp.arms[0].name}); compare it with another "
            "experiment (compare_experiments, CLI --vs) instead of naming two arms"
        )
    check_arm(exp, baseline, where or "baseline")
    check_arm(exp, candidate, where or "candidate")
    if baseline == candidate:
        raise UsageError(
            f"{where}: {baseline!r} is both the baseline and the candidate; name two different arms"
        )
    return Pair(baseline, candidate, source, (baseline, candidate) if source == ARMS_GIVEN else None)


def experiment_arm(exp: Experiment, name: str | None, role: str, where: str = "--arms") -> Arm:
    """The arm of `exp` a two-experiment comparison uses: the one named, else the experiment's candidate
    (its ``decision:``, its only arm, or the second of two); with three or more arms and none named, a refusal.

    Raises:
        PairNotNamed: three or more arms, no arm named and no ``decision:`` in the experiment.
        UsageError: the named arm does not exist.
    """
    if name is not None:
        return exp.arm(name) if where == "--arms" else check_arm(exp, name, where)
    named = experiment_pair(exp)
    if named is not None:
        return check_arm(exp, named[1], f"experiment {exp.name!r}, decision:")
    if len(exp.arms) <= 2:
        return exp.arms[-1]
    raise _refusal(exp, f"the {role} side of a two-experiment comparison")

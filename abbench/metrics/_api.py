"""Every figure of an experiment, per arm, per domain and per round: `experiment_metrics`."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abbench._memo import Memo
from abbench._result import Result
from abbench.dataset import ExpectedKind
from abbench.errors import NotFoundError, UsageError
from abbench.graders import SelfJudging, experiment_self_judging
from abbench.metrics._activation import ExperimentActivation, arm_offers, experiment_activation
from abbench.metrics._base import (
    Estimate,
    check_level,
    estimate_mean,
    estimate_rate,
    pd_isna,
    value_lists,
)
from abbench.metrics._classes import ClassReport, class_report, label_space
from abbench.metrics._following import SkillFollowing, with_skill_following
from abbench.metrics._format import FormatAdherence, with_format_adherence
from abbench.metrics._grader import check_grader, experiment_graders
from abbench.metrics._judges import JudgeScore, judge_scores
from abbench.metrics._judging import JudgeCost, judge_costs
from abbench.metrics._notes import first_notes
from abbench.metrics._skill_cost import skill_prompt_notes
from abbench.metrics._stability import Stability, stability
from abbench.metrics._usage import LOW_CONFIDENCE, GroundingMetrics, UsageMetrics, grounding, usage
from abbench.store import (
    CANCELLED,
    EXECUTION_FAILED,
    FAILED,
    GRADING_FAILED,
    OUTCOMES,
    PASSED,
    SCORED,
    UNFINISHED,
    Arm,
    ArmSpend,
    Experiment,
    RunTable,
    Store,
    StoreState,
    open_store,
)

NO_DOMAIN = "(none)"
"""The domain shown for cases that have none."""

OUTCOME_KINDS = ("auto", "passed", "score")
"""What a run's result is: ``passed`` (a pass/fail verdict) or ``score`` (a judge's number)."""

DEFINITIONS = """\
accuracy: share of graded runs that passed; execution failures, grading failures, cancelled and unfinished
  runs are left out and counted beside it. One round: k/n with Wilson's interval. Several rounds: the mean
  of per-case pass rates, the standard error over cases (Miller 2024), interval clipped to [0, 1].
strict accuracy: the same, with execution and grading failures counted as wrong (cancelled and unfinished
  runs still left out: nobody answered them).
cost per correct answer: the agent's total cost over executed runs divided by the runs graded as right.
judge cost: grading cost is the judge's, never in an arm's cost; an arm's judge cost is what pointwise
  judges spent on its runs; a pairwise judge compares two arms and is reported per judge only (judging).
spent: the agent's cost over every execution attempt, failed and retried ones included (a tool loop out of
  turns or a timeout after some model calls still cost money); total cost counts the stored executions only.
flip rate: share of cases answered in two or more rounds whose answers (normalised like label_match) are
  not all the same; flaky: cases graded in two or more rounds that passed in some and failed in others.
pass@k / pass^k (several rounds): the chance that at least one / all of k attempts at a case pass, by the
  unbiased estimators 1 − C(n−c,k)/C(n,k) (Chen et al. 2021) and C(c,k)/C(n,k) (τ-bench, Yao et al. 2024)
  per case, averaged over cases, t-interval over cases. Execution failures are attempts that did not pass;
  grading failures and cancelled runs are no attempt; cases with fewer than k attempts are left out of k.
per-class figures: every graded run counts once (rounds pooled); 0/0 is 0.0 (zero_division=0). Only the
  labels present in the gold or the predictions of an arm's graded runs are scored (scikit-learn's
  labels=None): labels of the set that none of them has are left out and counted; a prediction outside the
  label set is a class with F1 0 in the macro average, and pooled in the confusion matrix's (other) column.
"""


@dataclass(frozen=True)
class RunCounts(Result):
    """What became of one arm's runs.

    Attributes:
        runs: All runs.
        passed: Graded as right.
        failed: Graded as wrong.
        execution_failed: The agent produced no usable answer (re-run these).
        grading_failed: A grader failed, or none gave a verdict or a score (re-grade these).
        cancelled: Cancelled.
        unfinished: Pending, running, or waiting for grading.
        failure_types: Execution failures by kind (``timeout``, ``agent_error``, ...).
        scored: Graded with a score and no verdict (graders that only score): neither right nor wrong.
        not_graded: With figures from one grader (``grader=``): answered runs it has not graded (not
            assessed, apart from `unfinished`); 0 otherwise.
    """

    runs: int
    passed: int
    failed: int
    execution_failed: int
    grading_failed: int
    cancelled: int
    unfinished: int
    failure_types: dict[str, int]
    scored: int = 0
    not_graded: int = 0

    @property
    def graded(self) -> int:
        """Runs with a verdict (passed + failed)."""
        return self.passed + self.failed


@dataclass(frozen=True)
class ArmMetrics(Result):
    """Every figure of one arm.

    Attributes:
        arm: The arm's name.
        label: ``name (agent/model, skill)`` for people.
        snapshot: The arm's skill snapshot hash, or None.
        counts: What became of its runs.
        accuracy: Pass rate over graded runs (None for an experiment graded by scores only).
        strict_accuracy: Pass rate with execution and grading failures counted as wrong.
        score: Mean graded score over cases, when the graders score (judges); else None.
        classes: Per-class precision/recall/F1 and the confusion matrix; None with `classes_reason`.
        classes_reason: Why `classes` is None.
        stability: Stability across rounds.
        usage: Cost, tokens and latency.
        grounding: Evidence cited, confidence, skill read.
        judges: Judge scores by grader and dimension.
        format_adherence: How its answers were read (strict JSON, structured output, the fallback reader,
            unreadable, truncated); None when no run's reply was read (builtin and python agents).
        grader: The grader whose grades alone the figures come from, or None (the runs' verdicts).
        skill_following: How closely its runs followed the skill they loaded, as a skill-following judge
            saw them (`abbench.metrics.SkillFollowing`: the share of applicable SKILL.md sections followed,
            and the sections skipped most); None when no run of the arm was judged so.
    """

    arm: str
    label: str
    snapshot: str | None
    counts: RunCounts
    accuracy: Estimate
    strict_accuracy: Estimate
    score: Estimate | None
    classes: ClassReport | None
    classes_reason: str | None
    stability: Stability
    usage: UsageMetrics
    grounding: GroundingMetrics
    judges: tuple[JudgeScore, ...]
    format_adherence: FormatAdherence | None = None
    grader: str | None = None
    skill_following: SkillFollowing | None = None

    @property
    def classes_note(self) -> str | None:
        """Why micro F1 and accuracy differ, when they do: F1 compares labels alone, while a run is right
        only when every grader passes (a skill-read check, a judge). None when they agree."""
        c = self.classes
        if c is None or not c.n:
            return None
        gold = round(c.micro.f1 * c.n)
        if gold == self.counts.passed:
            return None
        return (
            f"F1 compares labels alone: {gold:,} of {c.n:,} graded runs have the gold label; "
            f"{self.counts.passed:,} pass {self.grader or 'every grader'}, which accuracy counts"
        )


@dataclass(frozen=True)
class GroupAccuracy(Result):
    """One arm's accuracy (or mean score) within a group of cases: a domain or a round.

    Attributes:
        arm: The arm.
        group: The domain name, or the round number counted from 1 (as every view shows rounds).
        accuracy: The estimate with its interval.
        runs: Runs of the arm in the group.
        failures: Execution and grading failures among them.
    """

    arm: str
    group: str | int
    accuracy: Estimate
    runs: int
    failures: int


@dataclass(frozen=True)
class ExperimentMetrics(Result):
    """Every figure of an experiment.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        dataset: The dataset fingerprint.
        rounds: Rounds per case.
        outcome: ``passed`` (accuracy is the main figure) or ``score`` (the mean judge score is).
        confidence: Coverage of every interval.
        cluster: The field accuracy intervals are clustered on, or None.
        arms: Per-arm figures, in the experiment's arm order.
        by_domain: Per arm and domain.
        by_round: Per arm and round.
        notes: Caveats found in these data (how figures are counted is in `DEFINITIONS`).
        judging: What each judge spent grading the experiment (pairwise judges included), apart from
            the arms' execution cost.
        expected_kind: Whether the dataset's gold values are labels or answers, and why (what decides
            whether there are per-class figures).
        activation: Skill activation per arm (`abbench.metrics.ExperimentActivation`) when an arm
            offers its skills in a catalogue; None when every arm injects its skill or has none.
        corrected: Arm → (judge-scored accuracy corrected by people's reviews of a random sample, by
            prediction-powered inference; or None and why), filled by the gate when a rule asks for
            ``corrected_accuracy`` (`abbench.review.corrected_accuracy` has the figures in full); None
            otherwise. Not exported.
        grader: The grader whose grades alone the figures come from (``grader=``); None: the runs' own
            verdicts, which combine every deciding grader.
        self_judging: Judges whose model is an arm's model or of its family (self-preference risk).
    """

    experiment: str
    experiment_id: int
    dataset: str
    rounds: int
    outcome: str
    confidence: float
    cluster: str | None
    arms: tuple[ArmMetrics, ...]
    by_domain: tuple[GroupAccuracy, ...]
    by_round: tuple[GroupAccuracy, ...]
    notes: tuple[str, ...]
    judging: tuple[JudgeCost, ...] = ()
    expected_kind: ExpectedKind | None = None
    activation: ExperimentActivation | None = None
    corrected: Mapping[str, tuple[float | None, str | None]] | None = field(
        default=None, repr=False, metadata={"export": False}
    )
    grader: str | None = None
    self_judging: tuple[SelfJudging, ...] = ()

    @property
    def domains(self) -> tuple[str, ...]:
        """The domains of `by_domain`, in its order: fewer than two (none, or `NO_DOMAIN` alone when no
        case has one) is no breakdown, only the arms' own figures again."""
        return tuple(dict.fromkeys(str(g.group) for g in self.by_domain))

    @property
    def has_domain_breakdown(self) -> bool:
        """Whether per-domain figures say more than the arms' own: two domains or more (see `domains`)."""
        return len(self.domains) >= 2

    @property
    def judge_cost(self) -> float:
        """Known judge cost over every judge, apart from the arms' execution cost."""
        return float(sum(j.cost for j in self.judging))

    def arm(self, name: str) -> ArmMetrics:
        """The figures of the arm called `name`.

        Raises:
            NotFoundError: no such arm (the message lists them).
        """
        for a in self.arms:
            if a.arm == name:
                return a
        raise NotFoundError.no_arm(repr(self.experiment), name, (a.arm for a in self.arms))


def dataset_labels(store: Store, dataset_id: int) -> tuple[Any, dict[str, str]]:
    """The dataset's declared label set (or None) and its label value map (source value -> label)."""
    settings = store.analysis.dataset_label_settings(dataset_id)
    if settings is None:
        return None, {}
    label_set, label_map = settings
    return label_set, {str(k): str(v) for k, v in (label_map or {}).items()}


def resolve_outcome(store: Store, exp_id: int, outcome: str, grader: str | None = None) -> str:
    """``passed`` or ``score``: what decides whether a run is right (``auto`` looks at the grades, of
    `grader` alone when given)."""
    if outcome not in OUTCOME_KINDS:
        raise UsageError(f"outcome must be one of {', '.join(OUTCOME_KINDS)}; got {outcome!r}")
    if outcome != "auto":
        return outcome
    if store.grades.has_verdicts(exp_id, grader):
        return "passed"
    return "score" if store.analysis.has_scores(exp_id, grader) else "passed"


def grader_kinds(store: Store, exp_id: int) -> dict[str, str]:
    """The graders that graded the experiment and their kinds (``rule``, ``judge``, ``pairwise``)."""
    return store.analysis.grader_kinds(exp_id)


def _counts(outcome: np.ndarray, failure_type: np.ndarray, not_graded: int = 0) -> RunCounts:
    c = np.bincount(outcome, minlength=len(OUTCOMES))
    kinds = Counter(str(f) for f in failure_type[outcome == EXECUTION_FAILED] if f is not None)
    return RunCounts(
        runs=int(outcome.size),
        passed=int(c[PASSED]),
        failed=int(c[FAILED]),
        execution_failed=int(c[EXECUTION_FAILED]),
        grading_failed=int(c[GRADING_FAILED]),
        cancelled=int(c[CANCELLED]),
        unfinished=int(c[UNFINISHED]) - not_graded,
        failure_types=dict(kinds.most_common()),
        scored=int(c[SCORED]),
        not_graded=not_graded,
    )


def experiment_metrics(
    experiment: int | str | Experiment,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    arms: list[str] | None = None,
    confidence: float = 0.95,
    low_confidence: float = LOW_CONFIDENCE,
    cluster: str | None = None,
    outcome: str = "auto",
    grader: str | None = None,
) -> ExperimentMetrics:
    """Every figure of an experiment: per arm, per domain and per round, from the store.

    Args:
        experiment: The experiment (id, ``#id``, name, or Experiment).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        arms: Only these arms (default: all, in the experiment's order).
        confidence: Coverage of every interval.
        low_confidence: Answers with a confidence below this count as low-confidence.
        cluster: ``"domain"`` to cluster the accuracy intervals by domain (cases of one domain are not
            independent); None for none.
        outcome: ``"auto"`` (pass/fail when a grader gives verdicts, else the judge score), ``"passed"``
            or ``"score"``.
        grader: The figures as this grader alone graded the runs (its latest grade of each run's
            current execution), not by the runs' verdicts; answered runs it has not graded, or failed
            to grade, are not assessed and counted (`RunCounts.not_graded`, ``grading_failed``).

    Raises:
        NotFoundError: no such experiment or arm.
        UsageError: an invalid option (the message lists the valid ones), or `grader` is no grader of
            the experiment that grades runs (the message lists them).
    """
    confidence = _check_options(confidence, cluster, low_confidence)
    store = open_store(store)
    # Read before anything else: a write while the figures are worked out changes the next call's state.
    state = store.state_stamp()
    exp = store.experiments.get(experiment)
    if grader is not None:
        grader = check_grader(exp, grader, store)
    key = (str(store.db_path), exp.id, None if arms is None else tuple(arms), confidence, float(low_confidence),
           cluster, outcome, grader)  # fmt: skip
    if state.in_transaction:
        # A transaction's writes count in `total_changes` even once rolled back: figures read inside
        # one are neither kept nor taken from what was kept.
        return _measure(store, exp, arms, confidence, low_confidence, cluster, outcome, grader)
    return _MEMO.get(
        key,
        state,
        lambda: _measure(store, exp, arms, confidence, low_confidence, cluster, outcome, grader),
        same=StoreState.same,
    )


_MEMO: Memo[ExperimentMetrics] = Memo(8)
"""The latest figures per store, experiment and options, with the store's state they were read in: a
view that reads them again (a reload, another tab) gets them back while nothing was written."""


def _measure(
    store: Store,
    exp: Experiment,
    arms: list[str] | None,
    confidence: float,
    low_confidence: float,
    cluster: str | None,
    outcome: str,
    grader: str | None = None,
) -> ExperimentMetrics:
    """`experiment_metrics`' figures, read from the store (as `grader` alone graded the runs, when named)."""
    kind = resolve_outcome(store, exp.id, outcome, grader)
    # On a helper thread while this one reads the runs: what every attempt spent (one aggregate answered
    # in a row per arm) and each arm's usage numbers (turned into arrays in Python while SQLite, which
    # hands back the GIL, packs the runs' codes here).
    usage_ids = [a.id for a in exp.arms if arms is None or a.name in arms]
    aside = store.read_aside(
        lambda: (
            store.attempts.spend_by_run(exp.id),
            {i: store.runs.executed_usage(exp.id, i) for i in usage_ids},
        )
    )
    # The runs without their numbers (the same order and figures, a fraction of the objects), and each
    # arm's usage numbers apart, in that order.
    table = store.runs.load_run_flags(exp.id, arms=arms, threshold=low_confidence)
    if grader is not None:  # each run's outcome and score that grader's (`abbench.store.GraderVerdicts`)
        table = store.grades.verdicts(exp.id, grader, [exp.arm(a).id for a in table.arms]).on(table)
    kinds = grader_kinds(store, exp.id)
    grades = store.grades.table(exp.id) if any(k != "rule" for k in kinds.values()) else []
    judge_cost = _judge_cost(store, exp.id) if grades else {}
    spend, usages = aside.result()
    ctx, case_pos = _context(store, exp, table, kind, confidence, low_confidence, cluster, grader)
    arm_objects = [exp.arm(a) for a in table.arms]
    judges = judge_scores(
        grades,
        {a.id: a.name for a in arm_objects},
        {int(v): i for i, v in enumerate(ctx.case_values)} if grades else {},
        confidence,
    )
    notes = first_notes(exp, table, kind, grader)
    arm_metrics, by_domain, by_round = _arms(
        ctx, table, case_pos, arm_objects, judge_cost, judges, spend, usages
    )
    arm_metrics = with_format_adherence(
        store, exp.id, arm_metrics, {a.id: a.name for a in arm_objects}, confidence
    )
    arm_metrics, following_note = with_skill_following(
        store, exp.id, arm_metrics, {a.id: a.name for a in arm_objects}, list(experiment_graders(exp, store)),
        confidence, grader,
    )  # fmt: skip
    if following_note:
        notes.append(following_note)
    notes += skill_prompt_notes(arm_objects, spend)
    notes += [
        f"{a.arm}: {a.accuracy.reason}"
        for a in arm_metrics
        if a.accuracy.reason and a.accuracy.value is not None
    ]
    return ExperimentMetrics(
        experiment=exp.name,
        experiment_id=exp.id,
        dataset=exp.dataset,
        rounds=exp.rounds,
        outcome=kind,
        confidence=confidence,
        cluster=cluster,
        arms=tuple(arm_metrics),
        by_domain=tuple(by_domain),
        by_round=tuple(by_round),
        notes=tuple(notes),
        judging=tuple(judge_costs(exp, store=store)) if kinds and set(kinds.values()) != {"rule"} else (),
        self_judging=experiment_self_judging(exp),
        expected_kind=ctx.expected_kind,
        activation=experiment_activation(exp, store=store, arms=list(table.arms), confidence=confidence)
        if any(arm_offers(a) for a in arm_objects)
        else None,
        grader=grader,
    )


def _arms(
    ctx: _Context,
    table: RunTable,
    case_pos: np.ndarray,
    arm_objects: list[Arm],
    judge_cost: dict[int, float | None],
    judges: tuple[JudgeScore, ...],
    spend: dict[int, ArmSpend],
    numbers: Mapping[int, tuple[np.ndarray, ...]],
) -> tuple[list[ArmMetrics], list[GroupAccuracy], list[GroupAccuracy]]:
    """Each arm's figures, and the rows of the per-domain and per-round tables, arm by arm (`numbers`:
    each arm's usage numbers by arm id, `store.runs.executed_usage`). Each arm's runs are views
    of `table`'s rows, not copies."""
    arm_metrics: list[ArmMetrics] = []
    by_domain: list[GroupAccuracy] = []
    by_round: list[GroupAccuracy] = []
    for index, arm in enumerate(arm_objects):
        rows = table.arm_rows(index)
        result, domain_rows, round_rows = _arm(
            ctx,
            arm,
            table.select(rows),
            case_pos[rows],
            judge_cost.get(arm.id, 0.0),
            tuple(j for j in judges if j.arm == arm.name),
            spend.get(arm.id),
            numbers[arm.id],
        )
        arm_metrics.append(result)
        by_domain.extend(domain_rows)
        by_round.extend(round_rows)
    return arm_metrics, by_domain, by_round


def _check_options(confidence: float, cluster: str | None, low_confidence: float) -> float:
    """The confidence level, validated; a UsageError for any invalid option."""
    confidence = check_level(confidence)
    if cluster not in (None, "domain"):
        raise UsageError(f"cluster must be None or 'domain'; got {cluster!r}")
    if not 0.0 <= float(low_confidence) <= 1.0:
        raise UsageError(
            f"low_confidence must be a confidence between 0 and 1 (e.g. 0.5); got {low_confidence!r}"
        )
    return confidence


@dataclass(frozen=True)
class _Context:
    """What every arm's figures are computed against: the experiment's cases, their domains, the label
    space, and the options."""

    exp: Experiment
    case_values: np.ndarray
    domains: np.ndarray
    kind: str
    classes: dict[str, str] | None
    classes_reason: str | None
    label_map: dict[str, str]
    expected_kind: ExpectedKind | None
    confidence: float
    low_confidence: float
    cluster: str | None
    grader: str | None = None

    @property
    def n_cases(self) -> int:
        return int(self.case_values.size)


def _context(
    store: Store,
    exp: Experiment,
    table: RunTable,
    kind: str,
    confidence: float,
    low_confidence: float,
    cluster: str | None,
    grader: str | None = None,
) -> tuple[_Context, np.ndarray]:
    """The arms' shared context, and each run's case position in it."""
    label_set, label_map = dataset_labels(store, exp.dataset_id)
    case_values, case_pos = _case_positions(table.case_idx)
    n_cases = case_values.size
    domains = np.empty(n_cases, dtype=object)
    domains[case_pos] = table.domain
    domains = np.where(pd_isna(domains), NO_DOMAIN, domains) if n_cases else domains
    expected = store.datasets.get(exp.dataset_id).expected_kind
    classes, classes_reason = label_space(_unique_gold(table), label_set, label_map, expected)
    ctx = _Context(
        exp, case_values, domains, kind, classes, classes_reason, label_map, expected, confidence,
        low_confidence, cluster, grader,
    )  # fmt: skip
    return ctx, case_pos


def _case_positions(case_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct case positions, sorted, and where each run's case sits among them: what
    ``np.unique(case_idx, return_inverse=True)`` gives, by marking the positions present rather than
    sorting every run (case positions are small non-negative integers)."""
    if not case_idx.size:
        return np.unique(case_idx, return_inverse=True)
    present = np.zeros(int(case_idx.max()) + 1, dtype=bool)
    present[case_idx] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[case_idx]


def _unique_gold(table: RunTable) -> list[Any]:
    """The runs' distinct gold values in the order they first appear. A case's runs sit side by side
    and share its gold, so only the first run of each stretch is looked at."""
    import pandas as pd

    first = np.ones(len(table), dtype=bool)
    first[1:] = table.case_idx[1:] != table.case_idx[:-1]
    return [v for v in pd.unique(table.expected[first]) if v is not None and v == v]


def _judge_cost(store: Store, exp_id: int) -> dict[int, float | None]:
    """What judging each arm's own runs cost (pointwise judges). A pairwise judge compares two arms: its
    cost is the judge's, reported per grader in `ExperimentMetrics.judging`, and charged to neither arm."""
    return store.analysis.judge_cost_by_arm(exp_id)


@dataclass(frozen=True)
class _ArmRuns:
    """One arm's runs as masks and per-case counts: ``k`` right of ``n`` graded (``n_strict``: failures too)."""

    t: RunTable
    pos: np.ndarray
    graded: np.ndarray
    passed: np.ndarray
    scored: np.ndarray
    failures: np.ndarray
    k: np.ndarray
    n: np.ndarray
    n_strict: np.ndarray

    @classmethod
    def of(cls, t: RunTable, pos: np.ndarray, n_cases: int) -> _ArmRuns:
        outcome = t.outcome
        graded = (outcome == PASSED) | (outcome == FAILED)
        passed = (outcome == PASSED).astype(float)
        counted = graded | (outcome == EXECUTION_FAILED) | (outcome == GRADING_FAILED)
        return cls(
            t=t,
            pos=pos,
            graded=graded,
            passed=passed,
            scored=(graded | (outcome == SCORED)) & ~np.isnan(t.score),
            failures=(outcome == EXECUTION_FAILED) | (outcome == GRADING_FAILED),
            k=np.bincount(pos, weights=passed, minlength=n_cases).astype(np.int64),
            n=np.bincount(pos[graded], minlength=n_cases),
            n_strict=np.bincount(pos[counted], minlength=n_cases),
        )


def _arm(
    ctx: _Context,
    arm: Arm,
    t: RunTable,
    pos: np.ndarray,
    judge_cost: float | None,
    judges: tuple[JudgeScore, ...],
    spend: ArmSpend | None,
    numbers: tuple[np.ndarray, ...],
) -> tuple[ArmMetrics, list[GroupAccuracy], list[GroupAccuracy]]:
    """One arm's figures, and its rows of the per-domain and per-round tables (`numbers`: cost, input and
    output tokens and latency of its executed runs, in the runs' order)."""
    runs = _ArmRuns.of(t, pos, ctx.n_cases)
    cost, input_tokens, output_tokens, latency_ms = numbers
    accuracy, strict = _accuracies(ctx, runs)
    report = None
    if ctx.classes is not None and runs.graded.any():
        report = class_report(t.expected[runs.graded], t.prediction[runs.graded], ctx.classes, ctx.label_map)
    result = ArmMetrics(
        arm=arm.name,
        label=arm.label,
        snapshot=arm.snapshot,
        counts=_counts(t.outcome, t.failure_type, _not_graded(ctx, t)),
        accuracy=accuracy,
        strict_accuracy=strict,
        score=_score(ctx, runs),
        classes=report,
        classes_reason=ctx.classes_reason if report is None else None,
        stability=_stability(ctx, runs),
        usage=usage(
            np.ones(latency_ms.size, dtype=bool),
            cost,
            input_tokens,
            output_tokens,
            latency_ms,
            None if ctx.kind == "score" else _right_of_executed(t, latency_ms.size),
            judge_cost,
            spend,
        ),
        grounding=grounding(
            arm.snapshot is not None,
            _executed(t),
            t.evidence_cited,
            t.confidence,
            t.read_skill,
            runs.graded,
            runs.passed,
            ctx.low_confidence,
            ctx.confidence,
            runs.pos,
        ),
        judges=judges,
        grader=ctx.grader,
    )
    return result, _by_domain(ctx, arm, runs), _by_round(ctx, arm, runs)


def _not_graded(ctx: _Context, t: RunTable) -> int:
    """Answered runs the named grader has not graded (0 for the runs' own verdicts)."""
    return int(np.count_nonzero(t.executed & (t.outcome == UNFINISHED))) if ctx.grader is not None else 0


def _right_of_executed(t: RunTable, n: int) -> np.ndarray | int:
    """Whether each executed run (in the order of `executed_usage`'s numbers) was graded right; only how
    many were, when a run finished between the two reads (a running experiment) and they do not align."""
    right: np.ndarray = (t.outcome == PASSED)[t.executed]
    return right if right.size == n else int(np.count_nonzero(right))


def _executed(t: RunTable) -> np.ndarray:
    return t.executed  # from the run's state: a run recorded without a latency is executed too


def _accuracies(ctx: _Context, runs: _ArmRuns) -> tuple[Estimate, Estimate]:
    """Accuracy and strict accuracy (execution and grading failures counted wrong); none for scores."""
    if ctx.kind == "score":
        accuracy = Estimate(
            None,
            None,
            None,
            "none",
            0,
            0,
            None,
            "the graders give scores, not right/wrong verdicts; see score",
        )
        return accuracy, accuracy
    clusters = ctx.domains if ctx.cluster == "domain" else None
    return (
        estimate_rate(runs.k, runs.n, ctx.confidence, clusters),
        estimate_rate(runs.k, runs.n_strict, ctx.confidence, clusters),
    )


def _score(ctx: _Context, runs: _ArmRuns) -> Estimate | None:
    """The mean score, when graders score (or give more than 0/1)."""
    t, scored = runs.t, runs.scored
    if ctx.kind == "score" or (scored.any() and not np.isin(t.score[scored], (0.0, 1.0)).all()):
        lists, kept = value_lists(t.score[scored], runs.pos[scored], ctx.n_cases)
        clustered = ctx.domains[kept].tolist() if ctx.cluster == "domain" else None
        return estimate_mean(lists, ctx.confidence, int(scored.sum()), clustered)
    return None


def _stability(ctx: _Context, runs: _ArmRuns) -> Stability:
    """Flips and flaky cases over rounds."""
    t, outcome = runs.t, runs.t.outcome
    answered = _executed(t) & (outcome != EXECUTION_FAILED) & (outcome != CANCELLED)
    verdicts = ctx.kind != "score"
    # With graders that only score there is no right answer, so figures built on right and wrong (flaky
    # cases, cost per correct answer) have no value.
    return stability(
        ctx.exp.rounds,
        t.case_id,
        runs.pos,
        t.prediction,
        answered,
        runs.passed,
        runs.graded & verdicts,
        ctx.label_map,
        (runs.graded | (outcome == EXECUTION_FAILED)) & verdicts,
    )


def _by_domain(ctx: _Context, arm: Arm, runs: _ArmRuns) -> list[GroupAccuracy]:
    """The arm's accuracy (or mean score) in each domain, domains by name."""
    import pandas as pd

    t, pos, n_cases = runs.t, runs.pos, ctx.n_cases
    # Integer codes per case: comparing object arrays with every domain name costs seconds at scale.
    codes, names = pd.factorize(ctx.domains)
    run_codes = codes[pos]
    # Runs and failures of every domain counted in one pass each, not a pass over the runs per domain.
    in_runs = np.bincount(run_codes, minlength=len(names))
    failed = np.bincount(run_codes[runs.failures], minlength=len(names))
    rows = []
    for code in sorted(range(len(names)), key=lambda c: str(names[c])):
        in_domain = codes == code
        if ctx.kind == "score":
            here = runs.scored & (run_codes == code)
            lists, _ = value_lists(t.score[here], pos[here], n_cases)
            estimate = estimate_mean(lists, ctx.confidence, int(here.sum()))
        else:
            estimate = estimate_rate(runs.k[in_domain], runs.n[in_domain], ctx.confidence)
        rows.append(GroupAccuracy(arm.name, names[code], estimate, int(in_runs[code]), int(failed[code])))
    return rows


def _by_round(ctx: _Context, arm: Arm, runs: _ArmRuns) -> list[GroupAccuracy]:
    """The arm's accuracy (or mean score) in each round."""
    t, pos, n_cases = runs.t, runs.pos, ctx.n_cases
    rows = []
    for rnd in range(ctx.exp.rounds):
        here = t.round == rnd
        if ctx.kind == "score":
            sel = runs.scored & here
            lists, _ = value_lists(t.score[sel], pos[sel], n_cases)
            estimate = estimate_mean(lists, ctx.confidence, int(sel.sum()))
        else:
            sel = runs.graded & here
            kr = np.bincount(pos[sel], weights=runs.passed[sel], minlength=n_cases).astype(np.int64)
            nr = np.bincount(pos[sel], minlength=n_cases)
            estimate = estimate_rate(kr, nr, ctx.confidence)
        rows.append(  # rounds from 1, as every view shows them
            GroupAccuracy(arm.name, rnd + 1, estimate, int(here.sum()), int((runs.failures & here).sum()))
        )
    return rows

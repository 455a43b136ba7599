"""What an agent or a judge would be sent for one case, built by their own code and sent nowhere.

`preview_prompt` makes the arm's agent (or the named judge) from the stored definition, hands it the
case the way a run would (`arm_task_fields`, the stored run's output for a judge), and asks it for
the JSON body of its first model call: the agent's ``first_request``, a judge's ``request_bodies``.
Those are the same methods its real calls build their bodies with (`abbench.llm.ChatClient.request_body`),
so the preview cannot drift from what the endpoint receives. Nothing is called, nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from abbench._result import Result
from abbench.agents import Task, make_agent
from abbench.errors import NotFoundError, UsageError
from abbench.graders import GradeContext, PairContext, pair_seed
from abbench.runner._execution import arm_task_fields
from abbench.runner._grading import build_graders
from abbench.store import Arm, Experiment, RunRecord, Store, StoreLike, open_store
from abbench.types import Case


@dataclass(frozen=True)
class PromptPreview(Result):
    """The exact requests an agent or a judge would send for one case, none of them sent.

    Attributes:
        experiment: The experiment's name.
        case_id: The case.
        arm: The arm (for a pairwise judge, the first arm of its pair).
        judge: The judge's grader name, or None for the agent's prompt.
        kind: ``agent``, or the grader's kind (``judge``, ``pairwise``).
        agent: The arm's agent adapter.
        model: The model the requests name.
        base_url: Where they would be sent.
        round: The round (counted from 1).
        requests: Each request's JSON body, in the order they would be sent (a pairwise judge in both
            orders sends two).
        note: What else the reader should know (an agent that calls no model, the slot orders).
    """

    experiment: str
    case_id: str
    arm: str
    judge: str | None
    kind: str
    agent: str
    model: str | None
    base_url: str | None
    round: int
    requests: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    note: str | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages of the first request."""
        return list(self.requests[0].get("messages", [])) if self.requests else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools the first request offers (none: ``[]``)."""
        return list(self.requests[0].get("tools", [])) if self.requests else []


def preview_prompt(
    experiment: int | str | Experiment,
    case_id: str,
    *,
    arm: str | None = None,
    judge: str | None = None,
    round: int = 1,
    store: StoreLike = None,
) -> PromptPreview:
    """The exact prompt (messages, tools offered, model) an arm's agent or a judge would receive.

    Nothing is called and nothing is stored. The agent's prompt needs only the case; a judge's needs
    the arm's stored answer to the case in `round` (and, for a pairwise judge, the other arm's).

    Args:
        experiment: The experiment (id, name, or Experiment).
        case_id: The case.
        arm: The arm (default: the experiment's first, or a pairwise judge's first).
        judge: A judge's grader name: its prompt instead of the agent's.
        round: The round, counted from 1.
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).

    Raises:
        NotFoundError: no such experiment, case, arm or grader; or no stored answer for a judge to see.
        UsageError: the grader is a rule (it is sent nothing), or the agent calls no model.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    if round < 1 or round > exp.rounds:
        raise UsageError(f"round must be between 1 and {exp.rounds} (rounds are counted from 1), not {round}")
    case = store.datasets.get_case(exp.dataset_id, str(case_id))
    if judge is None:
        return _agent_preview(store, exp, _arm(exp, arm), case, round)
    return _judge_preview(store, exp, judge, arm, case, round)


def _arm(exp: Experiment, name: str | None) -> Arm:
    if name is None:
        return exp.arms[0]
    for a in exp.arms:
        if a.name == name:
            return a
    raise NotFoundError.no_arm(exp.name, name, [a.name for a in exp.arms])


def _skills(store: Store, arm: Arm) -> tuple[Any, tuple[Any, ...]]:
    """The arm's injected skill and its offered catalogue, as the runner reads them."""
    skill = store.snapshots.get(arm.snapshot) if arm.snapshot and not arm.offered else None
    offered = tuple(store.snapshots.get(h) for h in arm.snapshots) if arm.offered else ()
    return skill, offered


def _agent_preview(store: Store, exp: Experiment, arm: Arm, case: Case, round: int) -> PromptPreview:
    agent = make_agent(arm.agent, model=arm.model, **(arm.params or {}))
    first_request = getattr(agent, "first_request", None)
    if first_request is None:
        raise UsageError(
            f"arm {arm.name!r} runs the {arm.agent} agent, which sends no chat request abbench builds; "
            "`abbench prompt` shows the requests of openai arms and of judges"
        )
    dataset = store.datasets.get(exp.dataset_id)
    skill, offered = _skills(store, arm)
    label_set = tuple(dataset.label_set) if dataset.label_set else None
    values = arm_task_fields(arm, skill, offered, label_set, float(exp.settings.timeout_s))
    task = Task(**{**values, "params": dict(values["params"] or {})}, case=case, round=round - 1)
    body = first_request(task)
    client = getattr(agent, "client", None)
    return PromptPreview(
        experiment=exp.name,
        case_id=case.case_id,
        arm=arm.name,
        judge=None,
        kind="agent",
        agent=arm.agent,
        model=body.get("model"),
        base_url=getattr(client, "base_url", None),
        round=round,
        requests=(body,),
        note="the first model call of the run; later calls add the tool results to these messages",
    )


def _judge_preview(
    store: Store, exp: Experiment, name: str, arm_name: str | None, case: Case, round: int
) -> PromptPreview:
    graders = build_graders(list(exp.settings.graders), exp.name, [a.name for a in exp.arms])
    by_name = {g.name: g for g in graders}
    grader = by_name.get(name)
    if grader is None:
        raise NotFoundError(
            f"experiment {exp.name!r} has no grader {name!r}; its graders: {', '.join(by_name) or '(none)'}"
        )
    bodies = getattr(grader, "request_bodies", None)
    if grader.kind == "rule" or bodies is None:
        raise UsageError(f"grader {name!r} is a rule: it asks no model, so it is sent no prompt")
    settings = getattr(grader, "settings", None)
    if grader.kind == "pairwise":
        pair = tuple(getattr(grader, "arms", None) or [a.name for a in exp.arms[:2]])
        runs = [_stored_run(store, exp, _arm(exp, a), case, round) for a in pair]
        ctx: GradeContext | PairContext = PairContext(
            case=case,
            a=_grade_context(store, exp, runs[0], case),
            b=_grade_context(store, exp, runs[1], case),
            seed=pair_seed(int(exp.settings.seed), case.case_id, round - 1),
        )
        orders = grader.orders(ctx)  # type: ignore[attr-defined]
        note = "; ".join(
            f"request {i}: response 1 is {pair[0] if o[0] == 'a' else pair[1]}, "
            f"response 2 is {pair[0] if o[1] == 'a' else pair[1]}"
            for i, o in enumerate(orders, 1)
        )
        arm = _arm(exp, pair[0])
    else:
        arm = _arm(exp, arm_name)
        ctx = _grade_context(store, exp, _stored_run(store, exp, arm, case, round), case)
        note = None
    requests = tuple(bodies(ctx))
    return PromptPreview(
        experiment=exp.name,
        case_id=case.case_id,
        arm=arm.name,
        judge=grader.name,
        kind=grader.kind,
        agent=arm.agent,
        model=requests[0].get("model") if requests else None,
        base_url=getattr(getattr(settings, "client", None), "base_url", None),
        round=round,
        requests=requests,
        note=note,
    )


def _stored_run(store: Store, exp: Experiment, arm: Arm, case: Case, round: int) -> RunRecord:
    """The arm's executed run of the case in `round`, whose answer a judge would see."""
    ids = store.analysis.case_run_ids(exp.id, case.case_id, arm.name)
    for run in store.runs.records(run_ids=ids) if ids else []:
        if run.round == round - 1 and run.output is not None and not run.execution_failed:
            return run
    raise NotFoundError(
        f"arm {arm.name!r} has no answer to case {case.case_id!r} in round {round} yet: a judge's prompt "
        f"holds the answer it judges (run the experiment first: abbench run {exp.name})"
    )


def _grade_context(store: Store, exp: Experiment, run: RunRecord, case: Case) -> GradeContext:
    """The run as a grader sees it (`abbench.runner._grading.Grading._context`)."""
    arm = next(a for a in exp.arms if a.id == run.arm_id)
    dataset = store.datasets.get(exp.dataset_id)
    skill, offered = _skills(store, arm)
    assert run.output is not None
    if offered:  # the skill it loaded, if any
        by_name = {s.skill_name: s for s in offered}
        skill = next((by_name[n] for n in run.output.skills_loaded or () if n in by_name), None)
    return GradeContext(
        case=case,
        output=run.output,
        skill=skill,
        label_map=dict(dataset.label_map or {}),
        label_set=tuple(dataset.label_set) if dataset.label_set else None,
        arm=arm.name,
        round=run.round,
        run_id=run.id,
        transcript_path=run.transcript_path,
        tool_calls=int(run.transcript_summary.get("tool_calls", 0)),
        agent=arm.agent,
        model=arm.model,
    )

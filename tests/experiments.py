"""Finished experiments for export and report tests: a deterministic agent, judges, and six shapes of experiment.

`build_all(store)` creates them once per session; each is a real experiment run by the real runner.
"""

from __future__ import annotations

import json
from pathlib import Path

from abbench.agents import register_agent
from abbench.errors import AgentError
from abbench.graders import FunctionGrader, GradeResult, register_grader
from abbench.review import add_review
from abbench.runner import cancel_experiment, create_experiment, run_experiment
from abbench.types import CASE_FIELDS, AgentOutput, Case, Usage

HOSTILE_SCRIPT = '<script>alert("pwned")</script>'
HOSTILE_IMG = "<img src=x onerror=alert(1)>"
HOSTILE_DOMAIN = "<b onmouseover=alert(2)>media</b>"
FORMULA = '=HYPERLINK("http://evil.example","click")'


class FixtureAgent:
    """Answers with the gold label, except: `wrong` cases always wrong, `unstable` ones wrong in odd
    rounds, `fail` ones raise a non-retryable agent error. Reasons carry the case's text verbatim."""

    name = "fixture"

    def __init__(self, model=None, wrong=(), unstable=(), fail=(), cost=0.001, latency_ms=120.0, **params):
        self.model = model or "fixture-1"
        self.wrong = set(wrong)
        self.unstable = set(unstable)
        self.fail = set(fail)
        self.cost = cost
        self.latency_ms = latency_ms

    async def run(self, task):
        cid = task.case.case_id
        if cid in self.fail:
            raise AgentError(f"the fixture agent cannot answer {cid}", "agent_error", retryable=False)
        gold = task.case.expected or "fast"
        other = "slow" if gold == "fast" else "fast"
        wrong = cid in self.wrong or (cid in self.unstable and task.round % 2 == 1)
        pred = other if wrong else gold
        n = len(task.case.input)
        return AgentOutput(
            prediction=pred,
            reason=f"matched {task.case.input[:60]}",
            confidence=0.6 if wrong else 0.9,
            evidence_refs=("SKILL.md#Rules",) if task.skill else (),
            transcript=({"role": "user", "content": task.case.input}, {"role": "assistant", "content": pred}),
            usage=Usage(100 + n, 10 + (n % 7)),
            cost=self.cost * (1 + (n % 5) / 10),
            latency_ms=self.latency_ms + (n % 13) * 3,
            session_id=task.session_id,
            model=self.model,
        )


register_agent("fixture")(FixtureAgent)


def _judge(ctx):
    ok = ctx.output.prediction == ctx.case.expected
    return GradeResult(
        passed=ok,
        score=4.0 if ok else 2.0,
        dimensions={"accuracy": 5.0 if ok else 1.0, "clarity": 3.0},
        comment=f"judge read: {ctx.output.reason}",
        raw_output=json.dumps({"score": 4 if ok else 2}),
        judge_model="fixture-judge",
        judge_cost=0.0002,
        input_tokens=300,
        output_tokens=20,
    )


def _pairwise(ctx):
    """Prefers the right answer; shown in a seeded order and, like real judges, a little drawn to slot 1."""
    a_ok = ctx.a.output.prediction == ctx.case.expected
    b_ok = ctx.b.output.prediction == ctx.case.expected
    slots = ("a", "b") if ctx.seed % 2 == 0 else ("b", "a")
    winner = "a" if a_ok else "b"
    if a_ok == b_ok:  # equally good: a tie, broken towards slot 1 now and then
        winner = slots[0] if ctx.seed % 3 == 0 else "tie"
    return GradeResult(
        verdict=winner,
        score={"a": 1.0, "b": 0.0, "tie": 0.5}[winner],
        comment="the better answer follows the rules",
        judge_model="fixture-judge",
        judge_cost=0.0003,
        details={
            "seed": ctx.seed,
            "arms": [ctx.a.arm, ctx.b.arm],
            "slots": list(slots),
            "judgements": [
                {
                    "slots": list(slots),
                    "winner_slot": None if winner == "tie" else slots.index(winner) + 1,
                    "winner": winner,
                }
            ],
        },
    )


register_grader("fixture_judge")(lambda name="fixture_judge", **kw: FunctionGrader(name, _judge, "judge"))
register_grader("fixture_pairwise")(
    lambda name="fixture_pairwise", **kw: FunctionGrader(name, _pairwise, "pairwise")
)


def routing_cases(n: int = 30) -> list[Case]:
    """`n` in-car routing cases over three domains, Chinese text, with hostile strings in a few."""
    domains = ("导航", "车控", HOSTILE_DOMAIN)
    cases = []
    for i in range(n):
        text = f"第{i}号请求：打开空调并导航到公司 {i}"
        if i == 1:
            text = f"{HOSTILE_SCRIPT} 打开车窗"
        elif i == 2:
            text = f"{HOSTILE_IMG} 播放音乐"
        elif i == 3:
            text = FORMULA
        cases.append(
            Case(
                case_id=f"c{i:03d}",
                input=text,
                expected="fast" if i % 3 else "slow",
                domain=domains[i % len(domains)],
                request_id=f"req-{i}",
                metadata={"tags": ["smoke"], "source": "fixture"} if i < 4 else {"source": "fixture"},
            )
        )
    return cases


def save_cases(store, name: str, cases: list[Case], folder: Path):
    """Store `cases` as a dataset named `name`, through the importer (a JSONL file of the case fields)."""
    path = folder / f"{name}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c.canonical(), ensure_ascii=False) + "\n")
    profile = {
        "name": "fixture-cases",
        # expected_skill only when a case says it (a canonical line leaves it out when absent)
        "fields": {
            f: {"column": f}
            for f in CASE_FIELDS
            if f != "expected_skill" or any(c.expected_skill is not None for c in cases)
        },
        "label_set": ["fast", "slow"],
        "normalize_input": False,
    }
    return store.datasets.import_file(path, profile, name=name)


def _skill(folder: Path, name: str, text: str) -> Path:
    d = folder / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(
        f"---\nname: routing\ndescription: test\n---\n# Rules\n{text}\n", encoding="utf-8"
    )
    return d


GATE_RULES = [
    {"metric": "accuracy", "op": ">=", "value": 0.95, "name": "accuracy at least 95%"},
    {"metric": "regressed", "op": "<=", "value": 1, "severity": "warn"},
    {"metric": "p95_latency_ms", "op": "<=", "value": 8000},
]
"""The judges experiment's own gate: it blocks (accuracy is about 83%) and warns (2 regressed)."""

SHAPES = ("two-arm", "three-arm", "failures", "judges", "no-discordant", "single-case")


def build_all(store, folder: Path, only: tuple[str, ...] = SHAPES) -> dict[str, int]:
    """Create and run the fixture experiments (all six shapes, or `only` these); returns their ids by shape."""
    folder.mkdir(parents=True, exist_ok=True)
    ds = save_cases(store, "routing", routing_cases(30), folder)
    one = save_cases(store, "single", routing_cases(1), folder)
    v1 = _skill(folder, "skill-v1", "- fast things")
    v2 = _skill(folder, "skill-v2", "- fast things\n- and more")
    control_wrong = ["c001", "c002", "c004", "c005", "c007", "c010", "c011", "c013", "c020"]
    v2_wrong = ["c001", "c002", "c005", "c008", "c021"]
    ids: dict[str, int] = {}

    def make(shape: str, *, run: bool = True, **spec) -> int | None:
        """Create experiment `shape` (on the routing cases unless `spec` names a dataset) and run it unless
        `run` is false; None when `shape` is not asked for."""
        if shape not in only:
            return None
        base = {
            "name": shape,
            "dataset": ds.fingerprint,
            "rounds": 2,
            "graders": ["label_match"],
            "concurrency": 4,
            "retries": 0,
        }
        exp = create_experiment({**base, **spec}, store=store)
        ids[shape] = exp.id
        if run:
            run_experiment(exp.id, store=store)
        return exp.id

    make(
        "two-arm",
        arms={
            "control": {"agent": "fixture", "wrong": control_wrong, "unstable": ["c014"]},
            "treatment": {
                "agent": "fixture",
                "skill": str(v2),
                "wrong": v2_wrong,
                "unstable": ["c014", "c017"],
            },
        },
    )
    make(
        "three-arm",
        arms={
            "none": {"agent": "fixture", "wrong": control_wrong},
            "v1": {"agent": "fixture", "skill": str(v1), "wrong": ["c001", "c004", "c008", "c013"]},
            "v2": {"agent": "fixture", "skill": str(v2), "wrong": v2_wrong, "cost": 0.002},
        },
    )
    exp = make(
        "failures",
        run=False,
        arms={
            "control": {"agent": "fixture", "wrong": control_wrong, "fail": ["c003", "c006"]},
            "treatment": {"agent": "fixture", "skill": str(v2), "wrong": v2_wrong, "fail": ["c006", "c009"]},
        },
    )
    if exp is not None:
        runs = store.runs.records(exp)
        run_experiment(exp, store=store, run_ids=[r.id for r in runs if r.case_idx < 20])
        cancel_experiment(exp, store=store)

    exp = make(
        "judges",
        graders=["label_match", "fixture_judge", "fixture_pairwise"],
        arms={
            "control": {"agent": "fixture", "wrong": control_wrong},
            "treatment": {"agent": "fixture", "skill": str(v2), "wrong": v2_wrong},
        },
        gate=GATE_RULES,
    )
    if exp is not None:
        add_review(exp, "c002", "gold_correct", f"missed it: {HOSTILE_IMG}", arm="treatment", store=store)
        add_review(exp, "c005", "model_correct", "the gold label is wrong here", arm="treatment", store=store)
        add_review(exp, "c001", "ambiguous_standard", None, store=store)

    make(
        "no-discordant",
        arms={
            "control": {"agent": "fixture", "wrong": v2_wrong},
            "treatment": {"agent": "fixture", "skill": str(v1), "wrong": v2_wrong},
        },
    )
    make(
        "single-case",
        dataset=one.fingerprint,
        rounds=1,
        arms={"control": {"agent": "fixture"}, "treatment": {"agent": "fixture", "skill": str(v1)}},
    )
    return ids

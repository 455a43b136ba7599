"""An experiment judged by a blind pairwise judge over a scripted server on 127.0.0.1, for the judge
audits, the comparison's rubric totals and the pairwise export (issue 42, items 5, 11, 12).

Two arms answer the same labels; the treatment writes a much longer reason. The judges below are
scripted to show one bias each: `prefers_longer` picks the longer response wherever it sits,
`prefers_first` picks slot 1 whatever it holds, and `fair` picks the right label.
"""

from __future__ import annotations

import json
from typing import Any

from abbench.agents import register_agent
from abbench.runner import create_experiment, run_experiment
from abbench.testing import ScriptedOpenAIServer
from abbench.types import AgentOutput, Usage
from tests.results import cases_of

SHORT = "够。"
LONG = "需要路线、能耗与天气数据，综合考虑后给出详细而礼貌的解释。" * 4
WRONG = ("c003", "c007")
"""The cases the control arm answers wrong (the treatment answers every case right)."""


@register_agent("verbosity-scripted")
class _Agent:
    """Answers the gold label (except `wrong`) with a short or a long reason."""

    def __init__(self, model=None, wrong=(), verbose=False, **params):
        self.wrong, self.verbose = set(wrong), verbose

    async def run(self, task):
        pred = "wrong" if task.case.case_id in self.wrong else task.case.expected
        return AgentOutput(
            prediction=pred, reason=LONG if self.verbose else SHORT, usage=Usage(10, 2), cost=0.001
        )


def _responses(request) -> tuple[str, str]:
    user = request.messages[-1]["content"]
    one = user.split('<response id="1">')[1].split("</response>")[0]
    two = user.split('<response id="2">')[1].split("</response>")[0]
    return one, two


def _reply(winner: str, one: str, two: str) -> str:
    """A reply in the double-blind workflow's own format: per-plan scores, then the winner tag."""

    def score(text: str) -> int:
        return 9 if len(text) > 100 else 6

    lines = [
        f"plan{slot}-{dim}: {score(text) + bump}/10"
        for slot, text in ((1, one), (2, two))
        for dim, bump in (("准确性", 0), ("完整性", 1), ("表达", -1), ("深度", 0))
    ]
    return "\n".join([*lines, f"[WINNER]plan{winner}[/WINNER]", f"理由：plan{winner} 更完整"])


def prefers_longer(request) -> str:
    one, two = _responses(request)
    return _reply("1" if len(one) > len(two) else "2", one, two)


def prefers_first(request) -> str:
    one, two = _responses(request)
    return _reply("1", one, two)


def fair(request) -> str:
    """Prefers the right label; a tie when both are right or both wrong."""
    one, two = _responses(request)
    right = ["Answer: wrong" not in t for t in (one, two)]
    if right[0] == right[1]:
        return json.dumps({"winner": "tie", "comment": "both alike"})
    return json.dumps({"winner": "1" if right[0] else "2", "comment": "right label"})


def judged_experiment(store, judge, *, name="judged", cases=30, both_orders=True, **grader: Any):
    """Run a two-arm experiment judged by `judge` (a scripted reply function); return it, finished."""
    ds = store.datasets.save(f"{name}-cases", cases_of(cases), label_set=["fast", "slow"])
    with ScriptedOpenAIServer(judge) as server:
        spec = {
            "name": name,
            "dataset": ds.fingerprint,
            "rounds": 1,
            "seed": 5,
            "arms": {
                "control": {"agent": "verbosity-scripted", "wrong": list(WRONG)},
                "treatment": {"agent": "verbosity-scripted", "verbose": True},
            },
            "graders": [
                "label_match",
                {
                    "type": "pairwise_judge",
                    "name": "blind",
                    "model": "judge-m",
                    "base_url": server.base_url,
                    "both_orders": both_orders,
                    "backoff_s": 0,
                    **grader,
                },
            ],
        }
        exp = create_experiment(spec, store=store)
        summary = run_experiment(exp.id, store=store)
    assert summary.pairs_judged == cases and summary.pairs_failed == 0
    return store.experiments.get(exp.id)

"""A pass tunes the interpreter while its runs move (collector, switch interval), and puts it back after."""

from __future__ import annotations

import gc
import sys

from abbench.agents import register_agent
from abbench.runner import create_experiment, run_experiment
from abbench.runner._scheduler import GC_YOUNG, SWITCH_S
from abbench.types import AgentOutput

SEEN: list[tuple[float, int]] = []
"""(Switch interval, the collector's youngest threshold) as each run of the agent below saw them."""


@register_agent("tuning_probe")
class _Probe:
    def __init__(self, **_options):
        pass

    async def run(self, task):
        SEEN.append((sys.getswitchinterval(), gc.get_threshold()[0]))
        return AgentOutput(prediction=task.case.expected)


def test_a_pass_tunes_the_interpreter_and_restores_it(store, definition):
    before = (sys.getswitchinterval(), gc.get_threshold())
    SEEN.clear()
    arms = {"control": {"agent": "tuning_probe"}}
    exp = create_experiment(definition(arms=arms, rounds=1), store=store)
    run_experiment(exp.id, store=store)
    assert SEEN and all(switch <= SWITCH_S and young >= GC_YOUNG for switch, young in SEEN)
    assert (sys.getswitchinterval(), gc.get_threshold()) == before

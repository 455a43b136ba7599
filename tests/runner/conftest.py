"""Fixtures for the runner: a small dataset, skill folders, and test agents registered by name."""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import threading
from pathlib import Path

import pytest

from abbench.agents import register_agent
from abbench.errors import AgentError
from abbench.runner import create_experiment
from abbench.types import AgentOutput, Case, Usage
from tests.blocking import Gate, pass_gate
from tests.conftest import start_run

CALLS_ENV = "ABBENCH_TEST_CALLS"
"""The file of the running test where scripted agents and graders log every call (set by `calls`)."""


def log_call(kind: str, key: tuple) -> int:
    """Append one call of `kind` (agent, grader) to this test's log; returns the calls of `key` so far."""
    path = os.environ.get(CALLS_ENV)
    if not path:
        return 0
    line = "\t".join(map(str, (kind, *key))) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode("utf-8"))  # one write with O_APPEND: lines from threads never mix
    finally:
        os.close(fd)
    return ("\n" + Path(path).read_text(encoding="utf-8")).count("\n" + line)


class CallLog:
    """The calls one test made: ``calls.agent[(tag, case_id, round, arm)]`` and ``calls.grader[...]``."""

    def __init__(self, path: Path):
        self.path = path

    def of(self, kind: str) -> collections.Counter:
        counts: collections.Counter = collections.Counter()
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                k, tag, case_id, rnd, arm = line.split("\t")
                if k == kind:
                    counts[(tag, case_id, int(rnd), arm)] += 1
        return counts

    @property
    def agent(self) -> collections.Counter:
        return self.of("agent")

    @property
    def grader(self) -> collections.Counter:
        return self.of("grader")

    def agent_total(self, tag: str) -> int:
        return sum(v for k, v in self.agent.items() if k[0] == tag)

    def grader_total(self, tag: str) -> int:
        return sum(v for k, v in self.grader.items() if k[0] == tag)


@pytest.fixture(autouse=True)
def calls(tmp_path, monkeypatch) -> CallLog:
    """This test's own call counts (a file in its tmp_path: nothing shared across tests, workers, reruns)."""
    path = tmp_path / "calls.log"
    monkeypatch.setenv(CALLS_ENV, str(path))
    return CallLog(path)


class ScriptedAgent:
    """Answers with the gold label except for cases listed in `wrong`; can fail, flake, sleep or hang.

    With a `gate` (a `tests.blocking.Gate` folder) every run waits there until the test lets it through.
    """

    name = "scripted"

    def __init__(
        self,
        model=None,
        wrong=(),
        fail=(),
        flaky=0,
        sleep_ms=0,
        hang=(),
        tag="",
        stubborn_ms=0,
        gate=None,
        **params,
    ):
        self.model = model
        self.wrong = set(wrong)
        self.fail = set(fail)
        self.flaky = flaky
        self.sleep_ms = sleep_ms
        self.hang = set(hang)
        self.tag = tag
        self.stubborn_ms = stubborn_ms  # ignores cancellation for this long (a badly behaved adapter)
        self.gate = gate
        self.attempts: collections.Counter = collections.Counter()

    async def run(self, task):
        key = (self.tag, task.case.case_id, task.round, task.arm)
        log_call("agent", key)
        self.attempts[key] += 1
        await pass_gate({"gate": self.gate})
        if self.sleep_ms:
            await asyncio.sleep(self.sleep_ms / 1000)
        if self.stubborn_ms:
            try:
                await asyncio.sleep(self.stubborn_ms / 1000)
            except asyncio.CancelledError:
                await asyncio.sleep(self.stubborn_ms / 1000)
        if task.case.case_id in self.hang:
            await asyncio.sleep(3600)
        if task.case.case_id in self.fail:
            raise AgentError(f"cannot answer {task.case.case_id}", "agent_error", retryable=False)
        if self.attempts[key] <= self.flaky:
            raise AgentError("rate limited", "rate_limited", retryable=True)
        pred = "wrong" if task.case.case_id in self.wrong else task.case.expected
        return AgentOutput(
            prediction=pred,
            reason=f"because {task.case.input}",
            confidence=0.9,
            evidence_refs=("SKILL.md#Rules",) if task.skill else (),
            transcript=({"role": "user", "content": task.case.input}, {"role": "assistant", "content": pred}),
            files_read=("SKILL.md",) if task.skill else (),
            usage=Usage(10, 2),
            cost=0.001,
            session_id=task.session_id,
        )


register_agent("scripted")(ScriptedAgent)


def make_cases(n: int, domains=("nav", "car", "media")) -> list[Case]:
    """`n` small cases with gold labels fast/slow over a few domains."""
    return [
        Case(
            f"c{i:03d}",
            f"query {i}",
            "fast" if i % 3 else "slow",
            domain=domains[i % len(domains)],
            metadata={"tags": ["smoke"]} if i < 2 else {},
        )
        for i in range(n)
    ]


def gated_experiment(store, name: str, dataset: str, gate: Gate, *, concurrency: int, rounds: int = 1):
    """An experiment of one arm ``a`` whose runs wait at `gate` (tests/blocking.py) until the test lets them go."""
    return create_experiment(
        {
            "name": name,
            "dataset": dataset,
            "rounds": rounds,
            "concurrency": concurrency,
            "arms": {"a": {"agent": "python", "function": "tests.blocking:gated", **gate.params}},
        },
        store=store,
    )


def interrupt_cli_run(
    store, exp_id: int, arrived: threading.Event, release: threading.Event, **env
) -> tuple[int, str]:
    """Run `abbench run` in a child process and send it SIGINT (Ctrl-C) once `arrived` is set (a model
    call hangs); `release` then lets the held call go. Returns the exit code and the child's stderr."""
    proc = start_run(
        store.path, exp_id, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **env
    )
    try:
        assert arrived.wait(120), "the second model call never came"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=600)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


@pytest.fixture
def dataset(store):
    """A stored 6-case dataset."""
    return store.datasets.save("small", make_cases(6), label_set=["fast", "slow"])


@pytest.fixture
def skill_dir(tmp_path):
    """A tiny skill folder."""
    d = tmp_path / "skill"
    d.mkdir()
    (d / "SKILL.md").write_text(
        "---\nname: tiny\ndescription: test\n---\n# Rules\n- fast things\n", encoding="utf-8"
    )
    return d


@pytest.fixture
def definition(dataset, skill_dir):
    """An experiment definition over the small dataset: control without a skill, treatment with one."""

    def make(**overrides):
        spec = {
            "name": "exp",
            "dataset": dataset.fingerprint,
            "rounds": 2,
            "arms": {
                "control": {"agent": "scripted", "wrong": ["c001", "c002"]},
                "treatment": {"agent": "scripted", "skill": str(skill_dir), "wrong": ["c002"]},
            },
            "concurrency": 4,
            "retries": 2,
        }
        spec.update(overrides)
        return spec

    return make

"""The real (tiny) model of the real-model tests: SmolLM2-135M-Instruct behind the local OpenAI-compatible
server (`abbench.testing.LocalModelServer`, installed by `make local-model`).

Every test here is slow and runs in CI; they share one xdist group, so one worker runs them one after
another while the others run the rest of the suite (two models decoding at once on 2 cores slowed both).
Requests are kept tiny: short prompts, a small ``max_tokens``, 1 thread, temperature 0 unless a test says.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from abbench.errors import UsageError
from abbench.runner import create_experiment
from abbench.store import Experiment, Store
from abbench.testing import LocalModelServer
from abbench.types import Case

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / ".tools"
MODEL = "smollm2"


def start(**kw) -> LocalModelServer:
    try:
        server = LocalModelServer.from_tools(TOOLS, **kw)
    except UsageError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    return server.start()


@pytest.fixture(scope="session")
def local_model():
    """The local model as llama-cpp-python 0.3's server answers (its quirks: see LocalModelServer)."""
    server = start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def openai_like_model():
    """The same model as the OpenAI API answers (usage in streams, json_schema accepted)."""
    server = start(quirks="openai")
    yield server
    server.close()


def served_since(server: LocalModelServer, mark: int):
    """What the server recorded after `mark` requests."""
    return server.log()[mark:]


def routing_experiment(
    store: Store, queries: list[tuple[str, str]], name: str, arms: dict, **definition
) -> Experiment:
    """An experiment of one round over `queries` ((text, label) pairs, saved as the ``routing`` dataset
    with the labels fast and slow); `definition`: its other keys (``retries``, ``graders``...)."""
    cases = [Case(case_id=f"c{i}", input=q, expected=label) for i, (q, label) in enumerate(queries)]
    ds = store.datasets.save("routing", cases, label_set=["fast", "slow"])
    return create_experiment(
        {"name": name, "dataset": ds.fingerprint, "rounds": 1, "arms": arms, **definition}, store=store
    )

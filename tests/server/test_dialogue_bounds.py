"""A file of dialogues sent to a real `abbench serve` is bounded before it is expanded into cases: one
dialogue of 20,000 turns (one case per user turn, each with the turns before it, is quadratic) and a
mapping whose ``conversation.turns`` path is 1,000 levels deep are refused by their size with what limit,
where and what to do; nothing is stored, and another owner's datasets are as they were."""

from __future__ import annotations

import json

from abbench.dataset import MAX_DIALOGUE_TURNS, MAX_HISTORY_TURNS
from tests.server.live import api_client, store_state
from tests.server.uploads import upload_demo

# A bound only for the code before the fix, which expanded the dialogue until the work process hit its
# limits: the test then fails instead of hanging. It asserts nothing about speed.
NEVER = 300


def _dialogues(n_turns: int) -> bytes:
    turns = [
        {"speaker": "USER" if i % 2 == 0 else "SYSTEM", "utterance": f"turn {i}"} for i in range(n_turns)
    ]
    short = [{"speaker": "USER", "utterance": "hello"}, {"speaker": "SYSTEM", "utterance": "hi"}]
    return json.dumps(
        [{"dialogue_id": "call-huge", "turns": turns}, {"dialogue_id": "call-short", "turns": short}]
    ).encode()


def test_a_dialogue_too_long_and_a_path_too_deep_are_refused_by_their_size(live):
    server, keys = live
    with api_client(server, keys["bob"], NEVER) as bob, api_client(server, keys["alice"], NEVER) as alice:
        upload_demo(bob, "bobs-cases")
        bobs = bob.get("/datasets").json()
        before = store_state(server.store)

        huge = alice.post(
            "/datasets",
            files={"file": ("calls.json", _dialogues(20_000))},
            data={"recipe": "conversations", "name": "calls"},
        )
        assert huge.status_code == 422, huge.text
        detail = huge.json()["detail"]
        assert (
            f"item #1: history: dialogue call-huge has 20,000 turns, more than the {MAX_DIALOGUE_TURNS:,} one "
            "dialogue may hold"
        ) in detail
        assert f"its history the last {MAX_HISTORY_TURNS} turns before it" in detail
        assert "split it into shorter dialogues" in detail
        assert huge.json()["report"]["counts"] == {"dialogue_too_long": 1}

        deep = ".".join(["x"] * 1_000)
        mapping = {"recipe": "conversations", "conversation": {"turns": deep, "text": "utterance"}}
        too_deep = alice.post(
            "/datasets",
            files={"file": ("calls.json", _dialogues(4))},
            data={"mapping": json.dumps(mapping), "name": "calls"},
        )
        assert too_deep.status_code == 422, too_deep.text
        detail = too_deep.json()["detail"]
        assert "conversation.turns" in detail and "more than the 1,000 a path may have" in detail
        assert deep not in detail  # the path is quoted by its start, not echoed whole

        odd = {
            "recipe": "conversations",
            "conversation": {"turns": "turns" + "[*]" * 80, "text": "utterance"},
        }
        too_many_steps = alice.post(
            "/datasets",
            files={"file": ("calls.json", _dialogues(4))},
            data={"mapping": json.dumps(odd), "name": "calls"},
        )
        assert too_many_steps.status_code == 422, too_many_steps.text
        assert "takes more than 64 steps" in too_many_steps.json()["detail"]

        # nothing stored by the refusals; bob's datasets as they were, and alice holds none of them
        assert store_state(server.store) == before
        assert bob.get("/datasets").json() == bobs
        assert "calls" not in {d["name"] for d in alice.get("/datasets").json()}

        # the same file under the limit imports, each history kept to its last turns
        ok = alice.post(
            "/datasets",
            files={"file": ("calls.json", _dialogues(MAX_HISTORY_TURNS + 21))},
            data={"recipe": "conversations", "name": "calls"},
        )
        assert ok.status_code == 201, ok.text
        assert bob.get("/datasets").json() == bobs

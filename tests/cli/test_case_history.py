"""`abbench case` and `abbench disagreements` show a case's earlier turns: the verdict may rest on them."""

from __future__ import annotations

import json

import pytest

from abbench.cli._review import TURN_CHARS, TURNS_SHOWN
from abbench.store import open_store
from tests.conftest import run_abbench
from tests.multiturn import ESCAPE, EVAL, build_multiturn_store, conversation


@pytest.fixture(scope="module")
def multiturn(tmp_path_factory):
    """``(store folder, {input: case id})`` of `tests.multiturn`'s store (read, never changed)."""
    path = build_multiturn_store(tmp_path_factory.mktemp("multiturn") / "store")
    with open_store(path) as store:
        ids = {c.input: c.case_id for c in store.datasets.load_cases(store.datasets.get("long").id)}
    return path, ids


def test_case_prints_the_earlier_turns_by_role_before_the_input(multiturn, cli):
    store, _ = multiturn
    out = cli("case", "routing", "FS-0017", store=store)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    start = lines.index("history: 2 earlier turns, oldest first")
    assert [line.split(":", 1)[0].strip() for line in lines[start + 1 : start + 3]] == ["user", "assistant"]
    assert lines[start + 1].endswith("user: 附近有什么停车场")
    assert "1. 国贸商城停车场" in lines[start + 2]
    assert lines[start + 3] == "input: 导航去第三个"


def test_a_long_history_shows_its_latest_turns_and_says_what_it_left_out(multiturn, cli):
    store, ids = multiturn
    case = ids["so, fast or slow?"]
    out = cli("case", "long", case, store=store).output
    assert "history: 12 earlier turns, oldest first" in out
    assert f"… {12 - TURNS_SHOWN} earlier turns not shown" in out
    shown = [int(line.split("turn ")[1].split(":")[0]) for line in out.splitlines() if ": turn " in line]
    assert shown == list(range(12 - TURNS_SHOWN + 1, 13))  # the latest, oldest first
    assert "(--full prints every turn whole)" in out
    full = cli("case", "long", case, "--full", store=store).output
    shown = [int(line.split("turn ")[1].split(":")[0]) for line in full.splitlines() if ": turn " in line]
    assert shown == list(range(1, 13)) and "not shown" not in full


def test_a_long_turn_is_cut_saying_how_much_and_full_prints_it_whole(multiturn):
    """The real eval's system message (over 1,000 characters) before its question, in a child process."""
    store, ids = multiturn
    first = json.loads(EVAL.read_text(encoding="utf-8").splitlines()[0])
    message = first["input"][0]["content"]
    assert len(message) > TURN_CHARS
    case = ids[first["input"][-1]["content"]]
    out = run_abbench("--store", store, "case", "long", case)
    assert out.returncode == 0, out.stderr
    turn = next(line for line in out.stdout.splitlines() if line.startswith("  assistant: "))
    kept = turn.removeprefix("  assistant: ").split("… [+")[0]
    assert message.startswith(kept) and len(kept) <= TURN_CHARS
    assert turn.endswith(f"… [+{len(message) - len(kept):,} characters]")
    full = run_abbench("--store", store, "case", "long", case, "--full").stdout
    assert f"  assistant: {message}\n" in full


def test_a_turn_cannot_drive_the_terminal(multiturn, cli):
    store, ids = multiturn
    out = cli("case", "long", ids["so, fast or slow?"], "--full", store=store).output
    assert "\x1b" not in out
    assert (ESCAPE.encode("unicode_escape").decode() + "still turn 10") in out
    assert conversation()[9]["content"].startswith("turn 10")


def test_disagreements_say_which_inputs_answer_earlier_turns(multiturn, cli):
    store, _ = multiturn
    out = cli("disagreements", "routing", "--kind", "gold", store=store).output
    lines = out.splitlines()
    for case in ("FS-0015", "FS-0017", "FS-0057"):
        at = next(i for i, line in enumerate(lines) if line.startswith(case))
        assert lines[at + 1].strip().startswith("(after 2 earlier turns) "), lines[at + 1]
    assert "earlier turns of a case: abbench case routing CASE_ID" in out

"""What one file of dialogues can make abbench do is bounded before it is expanded: a dialogue holds at
most MAX_DIALOGUE_TURNS turns (a longer one is refused on its row), a case's history keeps the last
MAX_HISTORY_TURNS turns, and a JSON path (conversation.turns among them) takes a bounded number of steps."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.dataset import MAX_DIALOGUE_TURNS, MAX_HISTORY_TURNS, convert_file, parse_path
from abbench.dataset._jsonpath import MAX_PATH_CHARS, MAX_PATH_STEPS
from abbench.errors import ImportFailed, MappingError
from abbench.store import Store


def _turns(n: int) -> list[dict[str, str]]:
    return [{"speaker": "USER" if i % 2 == 0 else "SYSTEM", "utterance": f"turn {i}"} for i in range(n)]


def test_a_dialogue_past_the_turn_limit_is_refused_on_its_row_and_the_others_kept(write):
    dialogues = [{"id": "long", "turns": _turns(MAX_DIALOGUE_TURNS + 1)}, {"id": "short", "turns": _turns(4)}]
    path = write("calls.json", json.dumps(dialogues))
    with pytest.raises(ImportFailed) as caught:
        convert_file(path, {"recipe": "conversations"})
    (problem,) = caught.value.report.problems
    assert (problem.kind, problem.location, problem.value) == ("dialogue_too_long", "item #1", "long")
    assert f"dialogue long has {MAX_DIALOGUE_TURNS + 1:,} turns, more than the {MAX_DIALOGUE_TURNS:,}" in (
        problem.message
    )
    kept = convert_file(path, {"recipe": "conversations"}, skip_invalid=True).cases
    assert [c.case_id for c in kept] == ["short:0", "short:2"]
    # at the limit, a dialogue is read
    assert (
        len(
            convert_file(
                write("at.json", json.dumps([{"id": "a", "turns": _turns(MAX_DIALOGUE_TURNS)}])),
                {"recipe": "conversations"},
            ).cases
        )
        == MAX_DIALOGUE_TURNS // 2
    )


def test_a_table_dialogue_past_the_turn_limit_is_refused_at_its_first_row(write):
    rows = [f"long,{'用户' if i % 2 == 0 else '客服'},第{i}轮" for i in range(MAX_DIALOGUE_TURNS + 5)]
    text = "会话id,角色,内容\n" + "\n".join([*rows, "s2,用户,查一下余额", "s2,客服,20 元"]) + "\n"
    path = write("turns.csv", text)
    with pytest.raises(ImportFailed) as caught:
        convert_file(path, {"recipe": "conversations"})
    (problem,) = caught.value.report.problems
    assert (problem.kind, problem.location) == ("dialogue_too_long", "line 2")
    assert f"dialogue long has {MAX_DIALOGUE_TURNS + 5:,} turns" in problem.message
    assert [c.case_id for c in convert_file(path, {"recipe": "conversations"}, skip_invalid=True).cases] == [
        "s2:0"
    ]


def test_a_history_keeps_the_last_turns_before_its_user_turn(write):
    n = MAX_HISTORY_TURNS + 21
    path = write("calls.json", json.dumps([{"id": "d", "turns": _turns(n)}]))
    cases = convert_file(path, {"recipe": "conversations"}).cases
    last = cases[-1]
    assert last.case_id == f"d:{n - 1 if (n - 1) % 2 == 0 else n - 2}"
    index = int(last.case_id.split(":")[1])
    assert last.history == [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"}
        for i in range(index - MAX_HISTORY_TURNS, index)
    ]
    # under the cap, every turn before it (the recipe as it always was)
    assert cases[3].history == [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(6)
    ]


def test_the_import_report_says_how_many_histories_were_cut_and_from_how_long(write, tmp_path):
    # user turns at 0, 2 … 120 of a 121-turn dialogue: those past turn 100 (102 … 120) lose turns
    dialogues = [{"id": "d", "turns": _turns(MAX_HISTORY_TURNS + 21)}, {"id": "short", "turns": _turns(6)}]
    path = write("calls.json", json.dumps(dialogues))
    cut = [i for i in range(0, MAX_HISTORY_TURNS + 21, 2) if i > MAX_HISTORY_TURNS]
    note = (
        f"{len(cut)} cases keep the last {MAX_HISTORY_TURNS} turns of a history of up to {max(cut)} "
        f"(a case's history is cut to the last {MAX_HISTORY_TURNS} turns before its user turn)"
    )
    assert convert_file(path, {"recipe": "conversations"}).report.notes == (note,)
    # in a store's import, its report and the CLI's words
    store = Store(tmp_path / "ab.db")
    assert note in store.datasets.import_file(path, {"recipe": "conversations"}).validation.notes
    out = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "cli"), "import", str(path), "--recipe", "conversations"]
    )
    assert out.exit_code == 0, out.output
    assert note.split(" (")[0] in " ".join(out.output.split())
    # nothing cut, nothing said
    short = write("short.json", json.dumps(dialogues[1:]))
    assert convert_file(short, {"recipe": "conversations"}).report.notes == ()


def test_a_table_of_turns_says_its_cut_histories_too(write):
    rows = [f"long,{'用户' if i % 2 == 0 else '客服'},第{i}轮" for i in range(MAX_HISTORY_TURNS + 3)]
    path = write("turns.csv", "会话id,角色,内容\n" + "\n".join(rows) + "\n")
    (note,) = convert_file(path, {"recipe": "conversations"}).report.notes
    assert note.startswith(f"1 case keeps the last {MAX_HISTORY_TURNS} turns of a history of up to 102 ")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (".".join(["a"] * (MAX_PATH_STEPS + 1)), f"takes more than {MAX_PATH_STEPS} steps"),
        ("a" + "[*]" * MAX_PATH_STEPS, f"takes more than {MAX_PATH_STEPS} steps"),
        ("x" * (MAX_PATH_CHARS + 1), f"more than the {MAX_PATH_CHARS:,} a path may have"),
    ],
)
def test_a_path_is_bounded_in_steps_and_length(path, message):
    with pytest.raises(MappingError, match=message) as caught:
        parse_path(path)
    assert path not in str(caught.value)  # quoted by its start, never echoed whole


def test_a_path_at_the_bounds_is_read():
    assert len(parse_path(".".join(["a"] * MAX_PATH_STEPS)).steps) == MAX_PATH_STEPS


@pytest.mark.parametrize("turns", [".".join(["x"] * 1_000), "turns" + "[*]" * 100, "", "a..b", "turns]"])
def test_conversation_turns_is_read_as_a_bounded_path_when_the_mapping_is(write, turns):
    path = write("calls.json", json.dumps([{"id": "d", "turns": _turns(4)}]))
    with pytest.raises(MappingError, match=r"conversation\.turns") as caught:
        convert_file(path, {"recipe": "conversations", "conversation": {"turns": turns}})
    assert len(str(caught.value)) < 600


def test_the_cli_refuses_a_dialogue_too_long_with_where_and_what_to_do(cli, tmp_path):
    path = tmp_path / "calls.json"
    path.write_text(json.dumps([{"id": "huge", "turns": _turns(20_000)}]), encoding="utf-8")
    result = cli("import", path, "--recipe", "conversations")
    assert result.exit_code == 2
    assert "item #1: history: dialogue huge has 20,000 turns" in result.stderr
    assert "--skip-invalid" in result.stderr

"""Files of dialogues as one case per user turn (the conversations recipe), and speakers as chat roles."""

from __future__ import annotations

import json

import pytest

from abbench.dataset import MappingProfile, convert_file, plan_import, suggest_mapping
from abbench.errors import ImportFailed, MappingError

USER_SIDE = {"usr": "user", "sys": "assistant", "USER": "user", "SYSTEM": "assistant"}


def expected_cases(dialogues, text, speaker):
    """(case id, input, history, reply) of each user turn, written out from the corpus's own turns."""
    out = []
    for did, turns in dialogues:
        for i, turn in enumerate(turns):
            if USER_SIDE[turn[speaker]] != "user":
                continue
            history = [{"role": USER_SIDE[t[speaker]], "content": t[text]} for t in turns[:i]]
            after = turns[i + 1] if i + 1 < len(turns) else None
            reply = after[text] if after is not None and USER_SIDE[after[speaker]] == "assistant" else None
            out.append((f"{did}:{i}", turn[text], history or None, reply))
    return out


def test_crosswoz_dialogues_become_one_case_per_user_turn(realdata):
    path = realdata / "dialogues" / "crosswoz_test_head10.json"
    corpus = json.loads(path.read_text(encoding="utf-8"))
    want = expected_cases([(k, v["messages"]) for k, v in corpus.items()], "content", "role")
    result = convert_file(path, recipe="conversations")
    got = [(c.case_id, c.input, c.history, c.expected) for c in result.cases]
    assert got == want and len(got) == 75
    first = result.cases[1]
    assert first.source_line == "dialogue 2303, turn 2" and first.metadata == {"dialogue": "2303", "turn": 2}
    assert first.source_row == corpus["2303"]["messages"][2]  # the user turn as written
    assert all(t["role"] in ("user", "assistant") for c in result.cases for t in c.history or ())
    # the reader's nested "splits" (2303.messages, 2303.goal …) are no part of how the recipe read it
    assert "splits" not in result.read_options


def test_one_keyed_dialogue_with_the_recipe_asked_for(realdata, tmp_path):
    corpus = json.loads((realdata / "dialogues" / "crosswoz_test_head10.json").read_text(encoding="utf-8"))
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"118": corpus["118"]}, ensure_ascii=False), encoding="utf-8")
    cases = convert_file(path, recipe="conversations").cases
    assert [c.case_id for c in cases] == [f"118:{i}" for i in range(0, len(corpus["118"]["messages"]), 2)]


def test_sgd_with_a_per_turn_gold_and_stable_ids(realdata, tmp_path):
    path = realdata / "dialogues" / "sgd_dev_001_head20.json"
    corpus = json.loads(path.read_text(encoding="utf-8"))
    profile = {"recipe": "conversations", "fields": {"expected": "turn.frames[0].state.active_intent"}}
    cases = convert_file(path, profile).cases
    want = [
        (f"{d['dialogue_id']}:{i}", t["frames"][0]["state"]["active_intent"])
        for d in corpus
        for i, t in enumerate(d["turns"])
        if t["speaker"] == "USER"
    ]
    assert [(c.case_id, c.expected) for c in cases] == want and len(want) == 122
    # ids are the dialogue's id and the turn's place: the same when other dialogues go
    fewer = tmp_path / "fewer.json"
    fewer.write_text(json.dumps(corpus[5:]), encoding="utf-8")
    gone = {d["dialogue_id"] for d in corpus[:5]}
    kept = [c.case_id for c in cases if c.metadata["dialogue"] not in gone]
    again = {c.case_id: c for c in convert_file(fewer, profile).cases}
    assert list(again) == kept
    assert all(
        (again[c.case_id].input, again[c.case_id].history) == (c.input, c.history) for c in cases[-20:]
    )


def test_the_suggestion_recognises_dialogues_and_import_uses_it(realdata):
    path = realdata / "dialogues" / "crosswoz_test_head10.json"
    suggestion = suggest_mapping(path)
    assert suggestion.profile.recipe == "conversations"
    assert suggestion.profile.conversation.model_dump() == {
        "turns": "messages",
        "speaker": "role",
        "text": "content",
        "id": "$key",
    }
    assert "'usr' → user, 'sys' → assistant" in suggestion.reasons["input"]
    assert any("dialog_act" in n for n in suggestion.notes)  # where a per-turn gold could come from
    plan = plan_import(path)  # no mapping: the suggestion, hence the recipe
    assert plan.recipe is not None and plan.recipe.name == "conversations"
    assert len(convert_file(path).cases) == 75


def test_suggest_on_a_large_raw_dialogue_file_is_a_screenful(realdata, tmp_path, cli):
    corpus = json.loads((realdata / "dialogues" / "crosswoz_test_head10.json").read_text(encoding="utf-8"))
    many = {f"{k}-{n}": v for n in range(50) for k, v in corpus.items()}  # 500 dialogues, as test.json
    path = tmp_path / "test.json"
    path.write_text(json.dumps(many, ensure_ascii=False), encoding="utf-8")
    out = cli("import", path, "--suggest").output
    assert "recipe: conversations" in out
    assert len(out) < 4_000 and max(map(len, out.splitlines())) < 400


def test_the_profile_suggest_prints_cuts_long_lists_and_keeps_the_format(tmp_path, cli):
    doc = {f"part{n}": [{"text": f"question number {n} about the weather"}] for n in range(2000)}
    path = tmp_path / "parts.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = cli("import", path, "--suggest").output
    assert "format: json" in out and "- part19\n" in out and "- part20\n" not in out
    assert "# shape.splits: … and 1,980 more (--save-profile or --json keeps them all)" in out
    assert len(out) < 4_000
    full = json.loads(cli("import", path, "--suggest", "--json").output)
    assert len(full["profile"]["shape"]["splits"]) == 2000


def test_every_suggestion_note_is_capped(tmp_path):
    # 2,000 named parts: the note listing them names the first and counts the rest
    doc = {f"part{n}": [{"text": f"question number {n} about the weather"}] for n in range(2000)}
    path = tmp_path / "parts.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    suggestion = suggest_mapping(path)
    note = next(n for n in suggestion.notes if "splits" in n)
    assert "… and 1,992 more" in note
    assert all(len(n) <= 600 for n in suggestion.notes)
    assert all(len(r) <= 600 for r in suggestion.reasons.values())


def test_a_speaker_no_one_named_is_refused_with_the_dialogue_and_the_name(write):
    dialogues = [
        {
            "id": "call-1",
            "turns": [{"who": "Operator", "text": "Hello, line 3."}, {"who": "Member", "text": "Hi"}],
        },
        {
            "id": "call-2",
            "turns": [{"who": "Member", "text": "My card"}, {"who": "Operator", "text": "Which?"}],
        },
    ]
    path = write("calls.json", json.dumps(dialogues))
    layout = {"conversation": {"turns": "turns", "speaker": "who", "text": "text", "id": "id"}}
    with pytest.raises(ImportFailed) as caught:
        convert_file(path, layout)
    problems = caught.value.report.problems
    assert {(p.kind, p.location, p.value) for p in problems} == {
        ("unknown_speaker", "item #1", "Operator"),
        ("unknown_speaker", "item #1", "Member"),
        ("unknown_speaker", "item #2", "Member"),
        ("unknown_speaker", "item #2", "Operator"),
    }
    assert (caught.value.report.n_rows, caught.value.report.n_invalid) == (2, 2)  # one row a dialogue
    assert "dialogue call-1: turn 0 has speaker 'Operator'" in problems[0].message
    assert "roles: {Operator: assistant}" in problems[0].message

    cases = convert_file(path, {**layout, "roles": {"operator": "assistant", "MEMBER": "user"}}).cases
    assert [(c.case_id, c.input, c.history, c.expected) for c in cases] == [
        ("call-1:1", "Hi", [{"role": "assistant", "content": "Hello, line 3."}], None),
        ("call-2:0", "My card", None, "Which?"),
    ]


def test_a_table_of_turns_one_row_each(write):
    text = (
        "会话id,角色,内容,意图\n"
        "s1,用户,我想订一张去上海的机票,订票\n"
        "s1,客服,请问哪天出发？,\n"
        "s1,用户,明天上午,订票\n"
        "s2,用户,查一下余额,查询\n"
        "s2,客服,您的余额是 20 元,\n"
    )
    profile = {"recipe": "conversations", "fields": {"expected": "turn.意图"}}
    cases = convert_file(write("turns.csv", text), profile).cases
    assert [(c.case_id, c.input, c.expected, c.source_line) for c in cases] == [
        ("s1:0", "我想订一张去上海的机票", "订票", "line 2"),
        ("s1:2", "明天上午", "订票", "line 4"),
        ("s2:0", "查一下余额", "查询", "line 5"),
    ]
    assert cases[1].history == [
        {"role": "user", "content": "我想订一张去上海的机票"},
        {"role": "assistant", "content": "请问哪天出发？"},
    ]


def test_history_speakers_are_checked_and_mapped_at_import(write_jsonl):
    rows = [
        {"q": "and tomorrow?", "h": [{"speaker": "Member", "text": "weather today?"}, {"speaker": "Operator", "text": "sunny"}]},
        {"q": "thanks", "h": [{"role": "user", "content": "hi"}, {"role": "SYSTEM", "content": "hello"}]},
    ]  # fmt: skip
    path = write_jsonl("h.jsonl", rows)
    fields = {"fields": {"case_id": "q", "input": "q", "history": "h"}}
    with pytest.raises(ImportFailed) as caught:
        convert_file(path, fields)
    (problem,) = caught.value.report.problems
    assert (problem.kind, problem.case_id, problem.value, problem.location) == (
        "unknown_speaker",
        "and tomorrow?",
        "Member",
        "line 1",
    )
    first, second = convert_file(path, {**fields, "roles": {"Member": "user", "Operator": "assistant"}}).cases
    assert first.history == [
        {"role": "user", "content": "weather today?"},
        {"role": "assistant", "content": "sunny"},
    ]
    assert second.history == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


@pytest.mark.parametrize(
    ("roles", "message"),
    [
        ({"SYSTEM": "system"}, "never sent as the chat's system message"),
        ({"bot": "robot"}, "a speaker's role is user or assistant"),
    ],
)
def test_a_roles_table_maps_only_to_user_or_assistant(roles, message):
    with pytest.raises(MappingError, match=message):
        MappingProfile.from_dict({"fields": {"input": "q"}, "roles": roles})


def test_a_file_that_holds_no_dialogues_is_told_what_to_state(write_jsonl):
    path = write_jsonl("flat.jsonl", [{"text": "hello", "label": "greet"}])
    with pytest.raises(ImportFailed, match=r"no list of turns found .*conversation: \{turns: KEY\}"):
        convert_file(path, recipe="conversations")


def test_a_speaker_key_of_its_own_name_is_found_never_replaced_by_turn_order(write):
    # `who` is no usual name; taking turns by order would make the operator's greeting the user's turn
    turns = [{"who": "Operator", "text": "Bank line, hello."}, {"who": "Member", "text": "Lost my card"}] * 2
    path = write("calls.json", json.dumps([{"id": "c1", "turns": turns}]))
    with pytest.raises(ImportFailed) as caught:
        convert_file(path, recipe="conversations")
    assert {p.value for p in caught.value.report.problems} == {"Operator", "Member"}
    suggestion = suggest_mapping(path)
    assert suggestion.profile.conversation.speaker == "who"
    assert any("guessed from who speaks first" in n for n in suggestion.notes)  # said to be a guess

"""The builtin agent: the demo is meaningful, answers cite the skill, runs are reproducible and cheap."""

from __future__ import annotations

import asyncio
import csv
import json
import re
from collections import defaultdict

import pytest

from abbench.agents import Task, agent_names, extract_rules, make_agent
from abbench.errors import AgentError, UsageError
from abbench.stats import mcnemar_exact
from abbench.types import AgentOutput, Case

LABELS = ("fast", "slow")


def run_tasks(agent, tasks: list[Task]) -> list[AgentOutput]:
    async def gather():
        return await asyncio.gather(*(agent.run(t) for t in tasks))

    return asyncio.run(gather())


def run_one(agent, task: Task) -> AgentOutput:
    return run_tasks(agent, [task])[0]


def tasks_for(cases, skill, rounds=1, labels=LABELS) -> list[Task]:
    return [
        Task(case=c, skill=skill, round=r, label_set=labels, session_id=f"{c.case_id}/{r}")
        for r in range(rounds)
        for c in cases
    ]


@pytest.fixture(scope="module")
def demo_runs(demo_cases, demo_skills) -> dict[str, dict[str, AgentOutput]]:
    """Every demo case through no skill, v1 and v2 at temperature 0: {arm: {case_id: output}}."""
    agent = make_agent("builtin")
    out = {}
    for arm, skill in {"none": None, **demo_skills}.items():
        outputs = run_tasks(agent, tasks_for(demo_cases, skill))
        out[arm] = {c.case_id: o for c, o in zip(demo_cases, outputs, strict=True)}
    return out


def correct(runs, cases) -> dict[str, dict[str, bool]]:
    return {
        arm: {c.case_id: by_id[c.case_id].prediction == c.expected for c in cases}
        for arm, by_id in runs.items()
    }


# -- the demo is meaningful -----------------------------------------------------------------------------


def test_accuracy_rises_from_no_skill_to_v1_to_v2(demo_runs, demo_cases):
    ok = correct(demo_runs, demo_cases)
    acc = {arm: sum(v.values()) / len(v) for arm, v in ok.items()}
    assert 0.55 <= acc["none"] <= 0.68, acc
    assert 0.68 <= acc["v1"] <= 0.80, acc
    assert 0.85 <= acc["v2"] <= 0.93, acc
    assert acc["v1"] - acc["none"] >= 0.05 and acc["v2"] - acc["v1"] >= 0.08, acc


def test_v2_fixes_many_breaks_a_few_and_the_difference_is_significant(demo_runs, demo_cases):
    ok = correct(demo_runs, demo_cases)
    fixed = [c for c in ok["v1"] if not ok["v1"][c] and ok["v2"][c]]
    broke = [c for c in ok["v1"] if ok["v1"][c] and not ok["v2"][c]]
    assert 4 <= len(broke) <= 12, broke
    assert len(fixed) >= 5 * len(broke)
    assert mcnemar_exact(len(broke), len(fixed)).p_value < 0.001


def test_some_domains_gain_more_than_others(demo_runs, demo_cases):
    ok = correct(demo_runs, demo_cases)
    per: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0])
    for c in demo_cases:
        per[c.domain][0] += 1
        per[c.domain][1] += ok["v1"][c.case_id]
        per[c.domain][2] += ok["v2"][c.case_id]
    gains = {d: (v2 - v1) / n for d, (n, v1, v2) in per.items()}
    assert len(gains) >= 6
    assert max(gains.values()) - min(gains.values()) >= 0.1, gains


# -- answers cite the skill, and the session reads like one ----------------------------------------------


def test_citations_and_reads_resolve_in_the_snapshot(demo_runs, demo_skills):
    for version, skill in demo_skills.items():
        paths = {f.path for f in skill.files}
        for out in demo_runs[version].values():
            assert out.prediction in LABELS
            assert out.reason and 0.0 <= out.confidence <= 1.0
            assert out.evidence_refs, out.reason
            for ref in (*out.evidence_refs, *out.sections_read):
                assert skill.resolve(ref) is not None, ref
            assert set(out.evidence_refs) <= set(out.sections_read)
            assert out.files_read[0] == "SKILL.md" and set(out.files_read) <= paths
    for out in demo_runs["none"].values():
        assert out.evidence_refs == () and out.files_read == () and out.sections_read == ()


def test_the_transcript_is_a_plausible_session(demo_runs, demo_skills):
    out = next(o for o in demo_runs["v2"].values() if len(o.files_read) >= 2)
    kinds = [e["type"] for e in out.transcript]
    assert kinds[0] == "message" and out.transcript[0]["role"] == "system"
    assert '<skill file="SKILL.md">' in out.transcript[0]["content"]  # the skill is injected
    assert kinds[-1] == "answer" and out.transcript[-1]["prediction"] == out.prediction
    calls = [e for e in out.transcript if e["type"] == "tool_call"]
    assert calls and {c["name"] for c in calls} == {"read_section"}
    read_refs = [json.loads(c["arguments"])["ref"] for c in calls]
    assert set(read_refs) <= set(out.sections_read)
    assert {r.partition("#")[0] for r in read_refs} == set(out.files_read[1:])
    results = [e for e in out.transcript if e["type"] == "message" and e["role"] == "tool"]
    assert [r["content"] for r in results] == [demo_skills["v2"].resolve(r).text for r in read_refs]
    turns = [e for e in out.transcript if e["type"] == "llm_call"]
    assert [t["turn"] for t in turns] == [1, 2]
    assert sum(t["usage"]["input_tokens"] for t in turns) == out.usage.input_tokens
    assert sum(t["usage"]["output_tokens"] for t in turns) == out.usage.output_tokens
    final = [e for e in out.transcript if e["type"] == "message" and e["role"] == "assistant"][-1]
    assert final["content"] == out.raw_output
    assert json.loads(out.raw_output) == {
        "prediction": out.prediction,
        "reason": out.reason,
        "confidence": out.confidence,
        "evidence_refs": list(out.evidence_refs),
    }


def test_the_prompt_carries_history_and_context(demo_skills):
    history = [
        {"role": "user", "content": "导航去首都机场"},
        {"role": "assistant", "content": "1. 最快 2. 少收费"},
    ]
    case = Case(
        "c1", "走第二条", history=json.dumps(history, ensure_ascii=False), context={"nav_active": True}
    )
    out = run_one(make_agent("builtin"), Task(case=case, skill=demo_skills["v2"], label_set=LABELS))
    messages = [
        {"role": e["role"], "content": e["content"]} for e in out.transcript if e["type"] == "message"
    ]
    assert messages[1:3] == history
    assert "走第二条" in messages[3]["content"] and "nav_active" in messages[3]["content"]
    assert out.prediction == "fast"


def test_reason_names_the_deciding_rule_in_the_skill_language(demo_skills, make_skill):
    case = Case("c1", "帮我把空调打开")
    out = run_one(make_agent("builtin"), Task(case=case, skill=demo_skills["v2"], label_set=LABELS))
    assert out.prediction == "fast"
    assert out.reason.startswith("依据 knowledge/车控.md#空调 的规则「")
    english = make_skill(
        {"SKILL.md": "# Routing\n- turn the air conditioning on or off → fast\n- plan a trip → slow\n"}
    )
    out = run_one(
        make_agent("builtin"),
        Task(case=Case("c2", "turn on the air conditioning"), skill=english, label_set=LABELS),
    )
    assert out.reason.startswith('Rule "turn the air conditioning on or off" in SKILL.md#Routing says fast.')


# -- reproducible, varied only when asked -------------------------------------------------------------------


def test_the_same_task_gives_the_same_output(demo_cases, demo_skills):
    tasks = tasks_for(demo_cases[:40], demo_skills["v1"])
    first = run_tasks(make_agent("builtin", temperature=0.7), tasks)
    again = run_tasks(make_agent("builtin", temperature=0.7), tasks)
    for a, b in zip(first, again, strict=True):
        assert a.prediction == b.prediction and a.reason == b.reason and a.confidence == b.confidence
        assert a.transcript == b.transcript and a.usage == b.usage and a.evidence_refs == b.evidence_refs


@pytest.mark.parametrize("arm", ["none", "v2"])
def test_temperature_flips_close_calls_between_rounds_but_reruns_reproduce(arm, demo_cases, demo_skills):
    skill = demo_skills.get(arm)
    rounds = run_tasks(make_agent("builtin", temperature=0.3), tasks_for(demo_cases, skill, rounds=3))
    by_case = defaultdict(set)
    for task, out in zip(tasks_for(demo_cases, skill, rounds=3), rounds, strict=True):
        by_case[task.case.case_id].add(out.prediction)
    flipped = [c for c, preds in by_case.items() if len(preds) > 1]
    assert 3 <= len(flipped) <= 40, flipped
    round_1 = tasks_for(demo_cases, skill, rounds=3)[len(demo_cases) : 2 * len(demo_cases)]
    rerun = run_tasks(make_agent("builtin", temperature=0.3), round_1)
    assert [o.prediction for o in rerun] == [
        o.prediction for o in rounds[len(demo_cases) : 2 * len(demo_cases)]
    ]
    cold = run_tasks(make_agent("builtin"), tasks_for(demo_cases, skill, rounds=3))
    assert all(
        cold[i].prediction == cold[i + len(demo_cases)].prediction == cold[i + 2 * len(demo_cases)].prediction
        for i in range(len(demo_cases))
    )


def test_simulated_latency_overlaps_on_the_event_loop(demo_cases, demo_skills):
    agent = make_agent("builtin", latency_ms=300)
    sentinel = make_agent("builtin", latency_ms=120_000)
    tasks = tasks_for(demo_cases[:9], demo_skills["v2"])

    async def main():
        # the sentinel starts first and waits two minutes: a latency that held the loop would make
        # the eight others wait behind it; spent on the loop, they finish while it still waits
        waiting = asyncio.create_task(sentinel.run(tasks[0]))
        await asyncio.sleep(0)
        outputs = await asyncio.gather(*(agent.run(t) for t in tasks[1:]))
        still_waiting = not waiting.done()
        waiting.cancel()
        return outputs, still_waiting

    outputs, still_waiting = asyncio.run(main())
    assert still_waiting and len(outputs) == 8
    assert all(o.latency_ms >= 300 for o in outputs)


def test_latency_jitter_is_seeded_per_case(demo_cases):
    from abbench.agents._builtin import _latency

    agent = make_agent("builtin", latency_ms=40, latency_jitter=0.5)
    tasks = tasks_for(demo_cases[:6], None)
    # the simulated wait: seeded per case (another agent plans the same), within ±50 % of 40 ms
    planned = [_latency(t, agent._settings(t)) for t in tasks]
    again = make_agent("builtin", latency_ms=40, latency_jitter=0.5)
    assert planned == [_latency(t, again._settings(t)) for t in tasks]
    assert len(set(planned)) == 6 and all(20 <= ms <= 60 for ms in planned)
    # what a run reports is measured: never less than its wait (a busy machine only adds to it)
    measured = [o.latency_ms for o in run_tasks(agent, tasks)]
    assert all(m >= p - 0.001 for m, p in zip(measured, planned, strict=True)), (
        measured,
        planned,
    )  # ms, rounded


# -- usage, cost and identity --------------------------------------------------------------------------------


def test_usage_cost_session_and_model(demo_cases, demo_skills):
    agent = make_agent("builtin", model="ref-1", price_in_per_mtok=3.0, price_out_per_mtok=15.0)
    case = demo_cases[0]
    with_skill = run_one(agent, Task(case=case, skill=demo_skills["v2"], label_set=LABELS, session_id="s-42"))
    bare = run_one(agent, Task(case=case, label_set=LABELS, session_id="s-43"))
    for out in (with_skill, bare):
        assert out.usage.input_tokens > 0 and out.usage.output_tokens > 0
        expected = (out.usage.input_tokens * 3.0 + out.usage.output_tokens * 15.0) / 1e6
        assert out.cost == pytest.approx(expected)
        assert out.model == "ref-1"
    assert with_skill.session_id == "s-42" and bare.session_id == "s-43"
    # reading the skill costs tokens: every turn of the tool loop re-reads the conversation
    assert with_skill.usage.input_tokens > 5 * bare.usage.input_tokens
    assert make_agent("builtin").model == "builtin-bm25"


def test_task_params_override_the_arm_settings(demo_cases):
    agent = make_agent("builtin", price_in_per_mtok=1.0)
    task = Task(case=demo_cases[0], label_set=LABELS, params={"price_in_per_mtok": 0.0, "unrelated": "x"})
    assert run_one(agent, task).cost == 0.0


def test_cost_is_unknown_without_a_price(demo_cases):
    """A stand-in with no price names no cost: None, not a measured-looking $0."""
    task = Task(case=demo_cases[0], label_set=LABELS)
    assert run_one(make_agent("builtin"), task).cost is None
    assert run_one(make_agent("builtin", price_out_per_mtok=2.0), task).cost > 0


# -- settings and errors ----------------------------------------------------------------------------------


def test_builtin_is_registered():
    assert "builtin" in agent_names()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"temperature": 3}, "temperature must be between 0 and 2"),
        ({"latency_ms": -5}, "latency_ms must be ≥ 0"),
        ({"price_in_per_mtok": -1}, "prices must be ≥ 0"),
        ({"latency_jitter": 2}, "latency_jitter must be between 0 and 1"),
        ({"top_sections": 0}, "top_sections must be ≥ 1"),
        ({"temperature": "warm"}, "not a number"),
        (
            {"base_url": "http://127.0.0.1:1"},
            "unknown parameter(s) base_url; valid parameters — activation_threshold: offered skills",
        ),
    ],
)
def test_bad_settings_are_refused_with_the_valid_choices(settings, message):
    with pytest.raises(UsageError) as err:
        make_agent("builtin", **settings)
    assert message in str(err.value)


def test_without_skill_or_labels_the_task_is_refused_as_not_retryable():
    with pytest.raises(AgentError) as err:
        run_one(make_agent("builtin"), Task(case=Case("q7", "打开空调")))
    assert err.value.retryable is False and err.value.failure_type == "bad_task"
    assert "q7" in str(err.value) and "label set" in str(err.value)


# -- the naive baseline says what it is ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels", "prediction", "reason"),
    [
        ("打开空调", ("fast", "slow"), "fast", "未使用技能，朴素基线"),
        (
            "帮我规划一条避开拥堵并且途经充电站的路线",
            ("fast", "slow"),
            "slow",
            "含推理或多步标志「规划、并且」",
        ),
        (
            "why is my transfer still pending and what should I do",
            ("simple", "complex"),
            "complex",
            "naive baseline",
        ),
        (
            "my card has not arrived yet",
            ("exchange_rate", "card_arrival", "pin_blocked"),
            "card_arrival",
            "shares 2 word",
        ),
        ("hello there", ("exchange_rate", "card_arrival"), "exchange_rate", "the first label"),
    ],
)
def test_the_no_skill_baseline_is_naive_and_says_so(text, labels, prediction, reason):
    out = run_one(make_agent("builtin"), Task(case=Case("b", text), label_set=labels))
    assert out.prediction == prediction
    assert reason in out.reason


def test_a_skill_with_no_matching_rule_falls_back_without_claiming_there_was_no_skill(make_skill):
    skill = make_skill(
        {"SKILL.md": "---\nlabels: [delivery, refund]\n---\n# Rules\n- where is my parcel → delivery\n"}
    )
    out = run_one(make_agent("builtin"), Task(case=Case("b", "hello there"), skill=skill))
    assert out.reason.startswith("No rule of the skill matches the request and it has no default rule")
    assert "so the naive baseline decides" in out.reason and "No skill" not in out.reason


# -- the rule convention works on anyone's skill and labels -------------------------------------------------

CONVENTION = [
    pytest.param(
        {
            "SKILL.md": "# Rules\n- where is my parcel, tracking a delivery → delivery\n- money back for a broken item → refund\n"
        },
        ("refund", "delivery"),
        "I want my money back, the item arrived broken",
        "refund",
        "SKILL.md#Rules",
        id="arrow-bullets",
    ),
    pytest.param(
        {
            "SKILL.md": "# Intents\n## refund\n- money back for an item\n## delivery\n- the parcel is late or lost\n"
        },
        ("refund", "delivery"),
        "my parcel is late",
        "delivery",
        "SKILL.md#delivery",
        id="heading-names-label",
    ),
    pytest.param(
        {
            "SKILL.md": "## fast\n### can do\n- turn on the radio\n### cannot do\n- plan a trip across several cities\n"
        },
        ("fast", "slow"),
        "plan a trip to three cities",
        "slow",
        "SKILL.md#cannot do",
        id="cannot-do-under-label",
    ),
    pytest.param(
        {
            "SKILL.md": "---\nname: r\nlabels:\n  fast: 快系统\n  slow: [慢系统]\n---\n# 车载快慢系统路由\n"
            "## 快系统能做\n- 打开空调\n## 交给慢系统的请求\n- 规划路线\n"
        },
        ("fast", "slow"),
        "帮我规划一下去机场的路线",
        "slow",
        "SKILL.md#交给慢系统的请求",
        id="front-matter-aliases",
    ),
    pytest.param(
        {"SKILL.md": "# 路由表\n| 请求 | 路由 |\n|---|---|\n| 打开空调 | fast |\n| 规划路线 | slow |\n"},
        ("fast", "slow"),
        "打开空调",
        "fast",
        "SKILL.md#路由表",
        id="table-rows",
    ),
    pytest.param(
        {"SKILL.md": "# 规则\n- 打开车窗（fast）\n- 比较两条路线（slow）\n"},
        ("fast", "slow"),
        "比较一下这两条路线",
        "slow",
        "SKILL.md#规则",
        id="trailing-label",
    ),
    pytest.param(
        {"SKILL.md": "# 规则\n- 打开空调 → fast\n\n## 兜底\n- 不确定时 → slow\n"},
        ("fast", "slow"),
        "今天股市怎么样",
        "slow",
        "SKILL.md#兜底",
        id="default-rule",
    ),
    pytest.param(
        {
            "SKILL.md": '## 优先规则\n- 一句话多个操作（"然后"）→ slow\n## 快系统能做 → fast\n- 打开空调，打开座椅加热\n'
        },
        ("fast", "slow"),
        "打开空调然后打开座椅加热",
        "slow",
        "SKILL.md#优先规则",
        id="priority-trigger",
    ),
    pytest.param(
        {
            "SKILL.md": "# Card intents\n## card_arrival\nThe card I ordered has not arrived yet.\n"
            "## exchange_rate\nWhich rate converts my currency into another.\n"
        },
        ("card_arrival", "exchange_rate"),
        "what exchange rate do you use for dollars",
        "exchange_rate",
        "SKILL.md#exchange_rate",
        id="paragraph-per-label",
    ),
]


@pytest.mark.parametrize(("files", "labels", "text", "prediction", "ref"), CONVENTION)
def test_the_documented_rule_convention(make_skill, files, labels, text, prediction, ref):
    skill = make_skill(files)
    out = run_one(make_agent("builtin"), Task(case=Case("c", text), skill=skill, label_set=labels))
    assert out.prediction == prediction, out.reason
    assert out.evidence_refs[0] == ref, out.reason


def test_a_priority_rule_only_decides_when_its_trigger_is_said(make_skill):
    skill = make_skill({"SKILL.md": CONVENTION[7].values[0]["SKILL.md"]})
    out = run_one(make_agent("builtin"), Task(case=Case("c", "打开座椅加热"), skill=skill, label_set=LABELS))
    assert out.prediction == "fast"


def test_extract_rules_reads_the_demo_skill_as_documented(demo_skills):
    rules = extract_rules(demo_skills["v2"], LABELS)
    assert rules.language == "zh" and rules.aliases == {
        "fast": ("fast", "快系统"),
        "slow": ("slow", "慢系统"),
    }
    assert (
        rules.default is not None
        and rules.default.label == "slow"
        and rules.default.ref == "SKILL.md#判断步骤"
    )
    refs = {r.ref for r in rules.rules}
    assert "SKILL.md#背景" not in refs  # a title that mentions 慢系统 does not label the prose under it
    general = [r for r in rules.rules if r.ref == "SKILL.md#通用规则（优先于垂域清单）"]
    assert general and all(r.label == "slow" and r.priority for r in general)
    assert any("然后" in r.phrases for r in general)
    cannot = [r for r in rules.rules if r.ref.endswith("#快系统不能做（→ slow）")]
    assert len({r.ref for r in cannot}) == 9 and all(r.label == "slow" and r.exception for r in cannot)
    can = [r for r in rules.rules if r.ref == "knowledge/车控.md#空调"]
    assert can and all(r.label == "fast" and not r.exception for r in can)


def test_the_arm_can_name_the_labels_when_the_dataset_declares_none():
    agent = make_agent("builtin", labels=["exchange_rate", "card_arrival"])
    out = run_one(agent, Task(case=Case("b", "my card has not arrived yet")))
    assert out.prediction == "card_arrival"
    with pytest.raises(UsageError, match="labels must be a list"):
        make_agent("builtin", labels="card_arrival")


@pytest.mark.parametrize(
    ("settings", "skill_md", "label_set", "refused"),
    [
        ({}, None, None, "declares none: give the arm `labels:"),
        ({}, None, ("fast", "slow"), None),
        ({"labels": ["fast", "slow"]}, None, None, None),
        ({}, "# Rules\nbe nice\n", None, "names no labels"),
        ({}, "# Rules\n- track a parcel → delivery\n", None, None),
    ],
)
def test_preflight_refuses_an_arm_that_could_answer_nothing(
    make_skill, settings, skill_md, label_set, refused
):
    skill = make_skill({"SKILL.md": skill_md}) if skill_md else None
    agent = make_agent("builtin", **settings)
    if refused is None:
        agent.preflight(skill, label_set)
    else:
        with pytest.raises(UsageError, match=re.escape(refused)):
            agent.preflight(skill, label_set)


def test_labels_come_from_the_skill_when_the_dataset_declares_none(make_skill):
    skill = make_skill({"SKILL.md": "# Rules\n- refund the customer → refund\n- track a parcel → delivery\n"})
    assert extract_rules(skill).labels == ("refund", "delivery")
    out = run_one(make_agent("builtin"), Task(case=Case("c", "please track my parcel"), skill=skill))
    assert out.prediction == "delivery"


# -- generality: a user's own skill on real data --------------------------------------------------------------

BANKING_SKILL = """---
name: banking-card-intents
description: Route a bank customer's message about their card to one of ten intents.
---
# Card intents

Pick the one intent whose description fits the customer's message best.

## card_arrival
The customer ordered a card and it has not come yet.
- my new card has not arrived, I am still waiting for it in the post
- track or locate the card you sent me

## card_delivery_estimate
- how long does delivery take, when will a card be delivered
- how many days or weeks until I get a new card; can I get it express

## activate_my_card
- activate or start using the card I just received
- what are the steps to set up a new card

## card_linking
- link or connect a card I already have to the app or my account
- add an existing card to the app

## card_not_working
- my card does not work, it keeps getting rejected or refused in shops
- the card stopped working, what is wrong with it

## card_swallowed
- the ATM or cash machine ate, kept or swallowed my card
- the machine did not give my card back

## card_about_to_expire
- my card expires soon or has expired, I need a replacement before the expiry date
- what happens when my card runs out, will you renew it

## lost_or_stolen_card
- I lost my card or it was stolen, I cannot find it
- someone took my wallet with the card

## compromised_card
- someone else used my card or my card details without permission
- I think my card was hacked, cloned or compromised; fraud on my card

## card_payment_fee_charged
- I was charged a fee when I paid with my card
- why is there an extra charge for a card payment
"""


def test_a_skill_in_the_convention_beats_the_baseline_on_banking77(realdata, make_skill):
    skill = make_skill({"SKILL.md": BANKING_SKILL}, name="banking")
    labels = tuple(s.heading for s in skill.sections if s.level == 2)
    assert len(labels) == 10
    with open(realdata / "banking77" / "test.csv", encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["category"] in labels]
    cases = [Case(f"b{i}", r["text"], expected=r["category"]) for i, r in enumerate(rows)]
    assert len(cases) == 400
    agent = make_agent("builtin")
    accuracy = {}
    for name, s in (("baseline", None), ("skill", skill)):
        outputs = run_tasks(agent, tasks_for(cases, s, labels=labels))
        accuracy[name] = sum(o.prediction == c.expected for o, c in zip(outputs, cases, strict=True)) / len(
            cases
        )
        assert {o.prediction for o in outputs} <= set(labels)
    assert accuracy["skill"] >= 0.6 and accuracy["skill"] - accuracy["baseline"] >= 0.1, accuracy

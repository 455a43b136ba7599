"""The builtin agent: an offline, deterministic, lexical stand-in for real agents (no network, no model).

``builtin`` exists so that every part of abbench — runs, grading, statistics, review, reports — can be
used and tested on a machine with no keys and no network. It is **not** a language model and its answers
say nothing about how a real agent would do; it only behaves like one in the ways that matter for the
tooling: it reads the injected skill, its accuracy depends on what the skill says, it cites the sections
it used, it can be made slow and slightly random, and it reports tokens, cost and latency.

How it answers one task:

1. **With a skill** it turns the skill into rules following the convention documented in
   `abbench.agents._rules` (headings and bullets that name a label: ``- 打开空调 → fast``, a
   ``## slow`` section, a "cannot do" list under a label, ``labels:`` aliases in the SKILL.md front
   matter, quoted trigger phrases, priority and default rules). It ranks the skill's sections against the
   case with BM25 (CJK text as character unigrams and bigrams, Latin script as lightly stemmed words; the
   input counts fully, the last user turn of the history and the context count less) and scores each rule
   by its own BM25 match, plus the information of a quoted trigger phrase found in the input, plus a share
   of its section's score. Rules that share too little with what was said do not vote; a priority rule
   whose trigger is in the input decides before ordinary rules; "cannot do" rules win close calls. The
   label with the best rule (plus a quarter of its second best) is the answer. When no rule matches, the
   skill's default rule decides; without one, the naive baseline.
2. **Without a skill** it is a naive baseline and says so: for a pair of labels that read as
   simple/complex (``fast``/``slow``, ``simple``/``complex``, ``快``/``慢`` ...) it calls long inputs and
   inputs with reasoning or multi-step markers complex; for other label sets it picks the label whose
   name shares most words with the input, and the first label when none does.

The answer is the JSON an LLM agent would give (``prediction``, ``reason``, ``confidence``,
``evidence_refs``); ``reason`` names the rule that decided, in the skill's language; ``confidence``
follows the margin between the best and the runner-up label. The transcript records a plausible session
in the events the ``openai`` adapter records: the prompt every LLM-like adapter gets (`build_prompt`:
SKILL.md injected, the history as prior turns, the case), a turn reading the other sections it used with
``read_section``, and the turn that answers. ``files_read`` starts with SKILL.md.

Determinism: the same task gives the same output. ``temperature > 0`` adds Gumbel noise to the label
scores, seeded by (case id, round, skill hash, ``seed``), so close calls can flip between rounds while a
re-run of the same round reproduces exactly. Simulated latency (``latency_ms``) is spent in
``asyncio.sleep``, so many runs overlap on one event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from abbench.agents._base import Agent, Task, register_agent
from abbench.agents._builtin_decision import _baseline, _build_index, _decide, _Decision, _Index
from abbench.agents._builtin_offer import DEFAULT_ACTIVATION_THRESHOLD, Choice, choose, load_events
from abbench.agents._builtin_session import _session
from abbench.agents._parameters import AgentParameter
from abbench.agents._rules import extract_rules
from abbench.errors import AgentError, UsageError
from abbench.snapshot import Snapshot
from abbench.types import AgentOutput, FailureType, Usage

DEFAULT_MODEL = "builtin-bm25"
"""The model name builtin reports when the arm names none."""

_PARAMS = {
    "latency_jitter": "share of latency_ms added or removed per run, seeded (0..1, default 0)",
    "price_in_per_mtok": "price per million input tokens (default: none, so the cost is unknown)",
    "price_out_per_mtok": "price per million output tokens (default: none, so the cost is unknown)",
    "seed": "extra seed mixed into the temperature noise (default 0)",
    "top_sections": "how many best-matching sections it reads besides SKILL.md (default 3)",
    "labels": "the labels to choose among, or `dataset` for the dataset's (default: its declared label set, else the skill's)",
    "activation_threshold": "offered skills: the share of the query's terms a skill's name and description "
    f"must hold for builtin to load it (0..1, default {DEFAULT_ACTIVATION_THRESHOLD})",
}

_CACHE_SIZE = 32


@dataclass
class BuiltinAgent:
    """The ``builtin`` adapter (see the module docstring); build it with `builtin`.

    Attributes:
        model: The model name reported in outputs.
        latency_ms: Simulated latency per run, spent in ``asyncio.sleep``.
        temperature: 0 for fully deterministic answers; above 0, seeded variation on close calls.
        params: Further settings (prices, seed, latency_jitter, top_sections).
    """

    model: str = DEFAULT_MODEL
    latency_ms: float = 0.0
    temperature: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    name: str = "builtin"
    offers_skills: ClassVar[bool] = True
    _cache: OrderedDict[tuple[str, tuple[str, ...] | None], _Index] = field(
        default_factory=OrderedDict, repr=False
    )
    _building: dict[tuple[str, tuple[str, ...] | None], tuple[Any, Any]] = field(
        default_factory=dict, repr=False
    )

    async def run(self, task: Task) -> AgentOutput:
        """Answer one task: decide, simulate latency without blocking the loop, and report."""
        started = time.perf_counter()
        settings = self._settings(task)
        offered = task.offered
        choice: Choice | None = None
        if offered:
            # the catalogue step: load the best-matching skill (or none), then answer as injected with it
            choice = choose(task, offered, settings["activation_threshold"])
            if choice.skill is not None and task.spending is not None:
                task.spending.load(choice.skill.skill_name, 1)
            task = replace(task, skill=choice.skill, skills=(), skill_mode="injected")
        await self._warm(task)
        decision, files_read = self._answer(task, settings)
        raw = json.dumps(
            {
                "prediction": decision.label,
                "reason": decision.reason,
                "confidence": decision.confidence,
                "evidence_refs": list(decision.evidence),
            },
            ensure_ascii=False,
        )
        transcript, usage = _session(task, decision, raw, self.model, self._reads(task.skill, decision))
        if choice is not None:
            transcript = [
                *load_events(replace(task, skills=offered, skill_mode="offered"), choice),
                *transcript,
            ]
        delay = _latency(task, settings)
        if delay > 0:
            await asyncio.sleep(delay / 1000.0)
        cost = _cost(usage, settings["price_in_per_mtok"], settings["price_out_per_mtok"])
        return AgentOutput(
            prediction=decision.label,
            reason=decision.reason,
            confidence=decision.confidence,
            evidence_refs=decision.evidence,
            raw_output=raw,
            transcript=tuple(transcript),
            files_read=files_read,
            sections_read=decision.read,
            usage=usage,
            cost=None if cost is None else round(cost, 10),
            latency_ms=round((time.perf_counter() - started) * 1000.0, 3),
            session_id=task.session_id or None,
            model=self.model,
            skills_offered=tuple(s.skill_name for s in offered) if offered else None,
            skills_loaded=None if choice is None else _loaded(choice),
            first_load_turn=1 if choice is not None and choice.skill is not None else None,
        )

    def preflight(self, skill: Snapshot | None, label_set: Sequence[str] | None) -> None:
        """Refuse an arm that could answer no case, before any run: no labels to choose among.

        Raises:
            UsageError: without a skill, neither the arm (``labels``) nor the dataset names the labels;
                with a skill, neither does the skill's front matter (or a label section).
        """
        if self.params.get("labels") or label_set:
            return
        if skill is None:
            raise UsageError(
                "the builtin agent without a skill chooses among the dataset's labels, and the dataset "
                "declares none: give the arm `labels: [label_a, label_b, ...]`, or declare `label_set:` "
                "in the mapping profile and import the file under a new name (--name), or give the arm a skill"
            )
        if not extract_rules(skill, None).labels:
            raise UsageError(
                f"skill {skill.label} names no labels and the dataset declares none: add `labels:` to "
                "its SKILL.md front matter (label: [words for it]), or give the arm `labels: [...]`, or "
                "declare `label_set:` in the mapping profile"
            )

    # -- settings -------------------------------------------------------------------------------------

    def _settings(self, task: Task) -> dict[str, Any]:
        """The agent's settings with the task's own parameters (same names) taking precedence."""
        merged: dict[str, Any] = {
            "latency_ms": self.latency_ms,
            "temperature": self.temperature,
            "latency_jitter": 0.0,
            "price_in_per_mtok": None,
            "price_out_per_mtok": None,
            "seed": 0,
            "top_sections": 3,
            "labels": None,
            "activation_threshold": DEFAULT_ACTIVATION_THRESHOLD,
        }
        merged.update(self.params)
        for key in merged:
            if key in task.params and task.params[key] is not None:
                merged[key] = task.params[key]
        return _check(merged)

    # -- deciding -------------------------------------------------------------------------------------

    def _answer(self, task: Task, settings: dict[str, Any]) -> tuple[_Decision, tuple[str, ...]]:
        """The decision and the skill files it read (SKILL.md, injected into the prompt, first)."""
        labels = _labels(task, settings)
        rng = random.Random(_seed(task, settings["seed"]))
        temperature = float(settings["temperature"])
        if task.skill is None:
            if not labels:
                raise AgentError(
                    f"case {task.case.case_id!r}: builtin has no skill and no label set to choose from; "
                    "declare the dataset's labels (the mapping profile's label set) or give the arm a skill",
                    failure_type=FailureType.BAD_TASK,
                    retryable=False,
                )
            return _baseline(task, labels, rng, temperature, skill_language=None), ()
        index = self._index(task.skill, labels)
        if not index.skill.labels:
            raise AgentError(
                f"case {task.case.case_id!r}: skill {task.skill.label} names no labels and the dataset "
                "declares none; add `labels:` to the SKILL.md front matter or declare the dataset's label set",
                failure_type=FailureType.BAD_TASK,
                retryable=False,
            )
        decision = _decide(task, index, rng, temperature, int(settings["top_sections"]))
        paths = {f.path for f in task.skill.files}
        files = ["SKILL.md"] if "SKILL.md" in paths else []
        for ref in decision.read:
            path = ref.partition("#")[0]
            if path in paths and path not in files:
                files.append(path)
        return decision, tuple(files)

    def _reads(self, skill: Snapshot | None, decision: _Decision) -> list[tuple[str, str]]:
        """(reference, text) of each section read with a tool: those outside SKILL.md, which is injected."""
        if skill is None:
            return []
        out = []
        for ref in decision.read:
            section = skill.resolve(ref)
            if section is not None and section.path != "SKILL.md":
                out.append((ref, section.text))
        return out

    def _index(self, skill: Snapshot, labels: tuple[str, ...] | None) -> _Index:
        key = (skill.hash, labels)
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        index = _build_index(skill, labels)
        self._cache[key] = index
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return index

    async def _warm(self, task: Task) -> None:
        """Index a skill not seen before in a worker thread, so a large skill never stalls the loop."""
        if task.skill is None:
            return
        labels = _labels(task, self._settings(task))
        key = (task.skill.hash, labels)
        if key in self._cache:
            return
        # one build per skill: the runs that arrive while it is under way wait for the same one
        loop = asyncio.get_running_loop()
        pending = self._building.get(key)
        if pending is None or pending[0] is not loop:
            future = loop.run_in_executor(None, _build_index, task.skill, labels)
            pending = self._building[key] = (loop, future)
        try:
            index = await pending[1]
        finally:
            if self._building.get(key) is pending:
                del self._building[key]
        self._cache.setdefault(key, index)
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)


def _loaded(choice: Choice) -> tuple[str, ...]:
    return () if choice.skill is None else (choice.skill.skill_name,)


def _cost(usage: Usage, price_in: float | None, price_out: float | None) -> float | None:
    """What the run would cost at the arm's prices; unknown (None) when the arm names no price — the
    stand-in costs nothing, but an analyst reading "$0" would take it for a measured figure."""
    if price_in is None and price_out is None:
        return None
    return (usage.input_tokens * (price_in or 0.0) + usage.output_tokens * (price_out or 0.0)) / 1e6


def _check(settings: dict[str, Any]) -> dict[str, Any]:
    try:
        for key in ("latency_ms", "temperature", "latency_jitter"):
            settings[key] = float(settings[key])
        for key in ("price_in_per_mtok", "price_out_per_mtok"):  # no price: the cost is unknown
            settings[key] = None if settings[key] is None else float(settings[key])
        settings["top_sections"] = int(settings["top_sections"])
        threshold = settings.get("activation_threshold")
        settings["activation_threshold"] = (
            DEFAULT_ACTIVATION_THRESHOLD if threshold is None else float(threshold)
        )
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"builtin: a numeric setting is not a number ({exc}); settings: {settings}"
        ) from None
    problems = []
    labels = settings.get("labels")
    if labels == "dataset":
        pass  # written out as the dataset's labels when the experiment is created (`abbench.runner`)
    elif labels is not None:
        if isinstance(labels, (str, dict)) or not all(isinstance(v, (str, int)) for v in labels):
            problems.append(f"labels must be a list of labels, e.g. [fast, slow], not {labels!r}")
        else:
            settings["labels"] = tuple(str(v) for v in labels) or None
    if settings["latency_ms"] < 0:
        problems.append("latency_ms must be ≥ 0")
    if not 0 <= settings["temperature"] <= 2:
        problems.append("temperature must be between 0 and 2")
    if not 0 <= settings["latency_jitter"] <= 1:
        problems.append("latency_jitter must be between 0 and 1")
    if any((settings[k] or 0) < 0 for k in ("price_in_per_mtok", "price_out_per_mtok")):
        problems.append("prices must be ≥ 0")
    if settings["top_sections"] < 1:
        problems.append("top_sections must be ≥ 1")
    if not 0 <= settings["activation_threshold"] <= 1:
        problems.append("activation_threshold must be between 0 and 1")
    if problems:
        raise UsageError("builtin: " + "; ".join(problems))
    return settings


def _labels(task: Task, settings: dict[str, Any]) -> tuple[str, ...] | None:
    """The labels to choose among: the arm's ``labels``, else the dataset's declared set."""
    if settings.get("labels"):
        return tuple(settings["labels"])
    return tuple(task.label_set) if task.label_set else None


def _seed(task: Task, extra: Any) -> int:
    skill = task.skill.hash if task.skill is not None else "no-skill"
    key = f"{task.case.case_id}|{task.round}|{skill}|{extra}"
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def _latency(task: Task, settings: dict[str, Any]) -> float:
    base: float = settings["latency_ms"]
    jitter: float = settings["latency_jitter"]
    if base <= 0 or jitter <= 0:
        return base
    u = random.Random(_seed(task, f"latency{settings['seed']}")).uniform(-1.0, 1.0)
    return base * (1.0 + jitter * u)


@register_agent("builtin")
def builtin(
    model: str | None = None, latency_ms: float = 0, temperature: float = 0.0, **params: Any
) -> Agent:
    """The offline, deterministic reference agent — a stand-in for real agents (see the module docstring).

    Args:
        model: Name reported as the output's model (default ``builtin-bm25``); it changes nothing else.
        latency_ms: Simulated latency per run, spent in ``asyncio.sleep`` (never blocks the event loop).
        temperature: 0 for deterministic answers; above 0 (up to 2), close calls vary between rounds,
            seeded by (case id, round, skill hash) so that re-runs reproduce.
        **params: ``price_in_per_mtok``, ``price_out_per_mtok`` (cost per million tokens; without either the cost is unknown),
            ``seed`` (mixed into the noise), ``latency_jitter`` (0..1), ``top_sections`` (default 3),
            ``labels`` (the labels to choose among when the dataset declares none). A task's ``params`` with the same names override these per run.

    Returns:
        An `Agent` whose ``run(task)`` returns an `AgentOutput`.

    Raises:
        UsageError: an unknown parameter or a value out of range (the message lists the valid ones).
    """
    unknown = sorted(set(params) - set(_PARAMS))
    if unknown:
        own = {
            "latency_ms": "simulated latency per run (default 0)",
            "temperature": "0 for deterministic answers, up to 2 for seeded variation (default 0)",
        }
        valid = "; ".join(f"{k}: {v}" for k, v in sorted({**own, **_PARAMS}.items()))
        raise UsageError(f"builtin: unknown parameter(s) {', '.join(unknown)}; valid parameters — {valid}")
    settings = _check(
        {
            "latency_ms": latency_ms,
            "temperature": temperature,
            "latency_jitter": params.get("latency_jitter", 0.0),
            "price_in_per_mtok": params.get("price_in_per_mtok"),
            "price_out_per_mtok": params.get("price_out_per_mtok"),
            "seed": params.get("seed", 0),
            "top_sections": params.get("top_sections", 3),
            "labels": params.get("labels"),
            "activation_threshold": params.get("activation_threshold"),
        }
    )
    extra = {k: settings[k] for k in _PARAMS}
    return BuiltinAgent(
        model=model or DEFAULT_MODEL,
        latency_ms=settings["latency_ms"],
        temperature=settings["temperature"],
        params=extra,
    )


_DEFAULTS = {
    "latency_jitter": 0.0,
    "price_in_per_mtok": 0.0,
    "price_out_per_mtok": 0.0,
    "seed": 0,
    "top_sections": 3,
    "activation_threshold": DEFAULT_ACTIVATION_THRESHOLD,
}
# What **params accepts, for forms (abbench.agents.agent_parameters); the signature gives the rest.
builtin.parameters = tuple(  # type: ignore[attr-defined]  # a function attribute agent_parameters reads
    AgentParameter(k, _DEFAULTS.get(k), "list" if k == "labels" else "number", v) for k, v in _PARAMS.items()
)


def stand_in_note(arms: Sequence[str]) -> str | None:
    """The sentence every view shows when arms run the builtin agent, so nobody reads its figures as a
    model's quality (None for no arm).

    Args:
        arms: The names of the arms whose agent is ``builtin``.
    """
    names = [str(a) for a in arms]
    if not names:
        return None
    if len(names) == 1:
        return (
            f"arm {names[0]} uses the builtin stand-in agent (offline BM25 lookup, not a model): its figures "
            "show the workflow, not an agent's quality"
        )
    listed = ", ".join(names[:-1]) + f" and {names[-1]}"
    return (
        f"arms {listed} use the builtin stand-in agent (offline BM25 lookup, not a model): their figures "
        "show the workflow, not an agent's quality"
    )

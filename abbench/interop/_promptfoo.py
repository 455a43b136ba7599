"""promptfoo eval output (``promptfoo eval -o out.json``).

Each result row is one (test, prompt, provider) evaluation: the provider (with the prompt's label,
when the config has several prompts) is the arm, each test a case — its ``description``, else
``test-<n>`` by its place in the config — and a test repeated (``--repeat N``) gives rounds, in
the order promptfoo ran them. The row's overall assertion result (``success``, ``score``,
``gradingResult``) is the recorded verdict ``assertions``; a row with an ``error`` and no output is
an execution failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from abbench.errors import ImportFailed
from abbench.interop._model import ImportedCase, ImportedLog, ImportedRun, arm_name
from abbench.types import FailureType

VERDICT = "assertions"
"""The recorded grader of a promptfoo import."""
_INPUT_VARS = ("query", "question", "input", "prompt", "text", "message", "topic")
_EXPECTED_VARS = ("expected", "answer", "label", "target", "gold")
_ERROR = 2
"""promptfoo's ``failureReason`` of a row whose provider failed (1 is a failed assertion)."""


def _load(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The result rows and the config of one output file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFailed(f"{path}: not readable JSON ({exc})") from exc
    results = data.get("results") if isinstance(data, dict) else None
    rows = results.get("results") if isinstance(results, dict) else results
    if not isinstance(rows, list):
        raise ImportFailed(
            f"{path}: not promptfoo eval output (no `results.results` list); write it with "
            "promptfoo eval -o out.json"
        )
    return rows, data.get("config") or {}


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _case(row: dict[str, Any], numbers: dict[str, int]) -> ImportedCase:
    """The row's test as a case: its description, else ``test-<n>`` numbering distinct variables
    in first-seen order (a repeated test has the same variables, and is the same case)."""
    test = row.get("testCase") or {}
    variables = dict(row.get("vars") or test.get("vars") or {})
    index = row.get("testIdx")
    description = test.get("description")
    key = json.dumps(variables, sort_keys=True, ensure_ascii=False, default=str)
    number = numbers.setdefault(key, len(numbers) + 1)
    case_id = str(description) if description else f"test-{number}"
    chosen = next((k for k in _INPUT_VARS if k in variables), None)
    text = _text(variables[chosen]) if chosen else _text(variables) if variables else case_id
    expected = next((_text(variables[k]) for k in _EXPECTED_VARS if k in variables), None)
    if expected is None:
        expected = _expected_from_asserts(test.get("assert") or [])
    return ImportedCase(case_id, text, expected, {"vars": variables, "test_index": index})


def _expected_from_asserts(asserts: list[Any]) -> str | None:
    """The value of the test's single ``equals`` assertion, when it has one: its gold answer."""
    values = [a.get("value") for a in asserts if isinstance(a, dict) and a.get("type") == "equals"]
    return _text(values[0]) if len(values) == 1 else None


def _arm(row: dict[str, Any], several_prompts: bool) -> tuple[str, dict[str, Any]]:
    provider = row.get("provider") or {}
    if isinstance(provider, str):
        provider = {"id": provider}
    pid = str(provider.get("id") or "provider")
    label = provider.get("label") or pid
    prompt = row.get("prompt") or {}
    name = arm_name(str(label))
    if several_prompts:
        name += f".{arm_name(str(prompt.get('label') or row.get('promptIdx')))}"
    return name, {"model": pid, "tool": "promptfoo", "provider": pid, "prompt": prompt.get("label")}


def _outcome(row: dict[str, Any]) -> dict[str, Any]:
    response = row.get("response") or {}
    usage = response.get("tokenUsage") or row.get("tokenUsage") or {}
    tokens = None
    if usage.get("prompt") is not None or usage.get("completion") is not None:
        tokens = {
            "input_tokens": int(usage.get("prompt") or 0),
            "output_tokens": int(usage.get("completion") or 0),
        }
    provider = row.get("provider") or {}
    out: dict[str, Any] = {
        "usage": tokens,
        # promptfoo writes cost 0 for a provider that reports none: unknown, not free
        "cost": response.get("cost"),
        "latency_ms": row.get("latencyMs"),
        "model": provider.get("id") if isinstance(provider, dict) else str(provider),
        "session_id": None if row.get("id") is None else str(row["id"]),
    }
    output = response.get("output")
    if (output is None and row.get("error")) or row.get("failureReason") == _ERROR:
        out["error"] = str(row.get("error") or "the provider failed (promptfoo failureReason 2)")
        out["failure_type"] = FailureType.AGENT_ERROR.value
        return out
    out["prediction"] = _text(output)
    out["raw_output"] = _text(output)
    grading = row.get("gradingResult") or {}
    passed = grading.get("pass", row.get("success"))
    score = grading.get("score", row.get("score"))
    if passed is not None or score is not None:
        verdict: dict[str, Any] = {"passed": None if passed is None else bool(passed), "score": score}
        if grading.get("reason"):
            verdict["comment"] = str(grading["reason"])
        out["grades"] = {VERDICT: verdict}
        if not passed and row.get("error"):
            out["reason"] = str(row["error"])
    return out


def read_promptfoo(paths: list[Path]) -> ImportedLog:
    """Read promptfoo eval output files: providers (× prompts) as arms, repeats as rounds.

    Raises:
        ImportFailed: a file is not promptfoo output, or holds no results.
    """
    result = ImportedLog("promptfoo", "eval", list(paths))
    for path in paths:
        rows, config = _load(path)
        if not rows:
            raise ImportFailed(f"{path}: the eval holds no results; nothing to import")
        if config.get("description"):
            result.name = arm_name(str(config["description"]))
        numbers: dict[str, int] = {}
        several = len({(r.get("prompt") or {}).get("label") or r.get("promptIdx") for r in rows}) > 1
        rounds: dict[tuple[str, str], int] = {}
        for i, row in enumerate(sorted(rows, key=lambda r: (r.get("testIdx", 0), r.get("promptIdx", 0)))):
            case = _case(row, numbers)
            result.add_case(case, f"{path} results[{i}]")
            arm, settings = _arm(row, several)
            result.arms.setdefault(arm, settings)
            key = (case.case_id, arm)
            rounds[key] = rounds.get(key, 0) + 1
            result.runs.append(ImportedRun(case.case_id, arm, rounds[key], _outcome(row)))
    if any(r.outcome.get("grades") for r in result.runs):
        result.add_grader(VERDICT)
    return result

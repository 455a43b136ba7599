"""Inspect AI eval logs (``.eval`` or ``.json``), read with ``inspect_ai.log.read_eval_log``.

Each log is one task run against one model: the model (with the task arguments, when two logs share a
model) is the arm, each sample a case (its id; its input and target), each epoch a round. The
scorers' values are the recorded verdicts: ``C``/``I`` (correct, incorrect), ``P`` (partial: not
passed, score 0.5), ``N`` (no answer: not passed), booleans, and numbers (passed when at least 1).
A sample that ended in an error is an execution failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from abbench.errors import ImportFailed, UsageError
from abbench.interop._model import ImportedCase, ImportedLog, ImportedRun, arm_name, message_text
from abbench.types import FailureType

_LETTERS = {"C": (True, 1.0), "I": (False, 0.0), "P": (False, 0.5), "N": (False, 0.0)}


def _read(path: Path) -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise UsageError(
            "reading Inspect AI logs needs inspect-ai: pip install 'abbench[inspect]' (or pip install inspect-ai)"
        ) from None
    try:
        return read_eval_log(str(path))
    except Exception as exc:
        raise ImportFailed(
            f"{path}: not an Inspect AI eval log that inspect-ai can read ({type(exc).__name__}: {exc})"
        ) from exc


def verdict(value: Any) -> dict[str, Any] | None:
    """An Inspect score value as a recorded verdict ``{passed, score}``; None when it is not one."""
    if isinstance(value, bool):
        return {"passed": value, "score": float(value)}
    if isinstance(value, str) and value.upper() in _LETTERS:
        passed, score = _LETTERS[value.upper()]
        return {"passed": passed, "score": score}
    if isinstance(value, (int, float)):
        return {"passed": float(value) >= 1.0, "score": float(value)}
    return None


def _grades(sample: Any, log: ImportedLog) -> dict[str, Any]:
    grades: dict[str, Any] = {}
    for scorer, score in (sample.scores or {}).items():
        values = score.value if isinstance(score.value, dict) else {None: score.value}
        for key, value in values.items():
            name = scorer if key is None else f"{scorer}.{key}"
            found = verdict(value)
            if found is None:
                continue
            explanation = score.explanation or (f"answer: {score.answer}" if score.answer else None)
            if explanation:
                found["comment"] = str(explanation)
            grades[name] = found
            log.add_grader(name)
    return grades


def _usage(sample: Any) -> dict[str, int] | None:
    inputs = outputs = 0
    seen = False
    for usage in (sample.model_usage or {}).values():
        seen = True
        inputs += int(usage.input_tokens or 0)
        outputs += int(usage.output_tokens or 0)
    return {"input_tokens": inputs, "output_tokens": outputs} if seen else None


def _transcript(sample: Any) -> list[dict[str, Any]]:
    return [
        {"role": str(getattr(m, "role", "")), "content": message_text(getattr(m, "content", None))}
        for m in sample.messages or ()
    ]


def _target(sample: Any) -> str | None:
    target = sample.target
    if isinstance(target, (list, tuple)):
        target = target[0] if len(target) == 1 else json.dumps(list(target), ensure_ascii=False)
    return None if target in (None, "") else str(target)


def _outcome(sample: Any, model: str, log: ImportedLog) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": model,
        "usage": _usage(sample),
        "latency_ms": None if sample.total_time is None else float(sample.total_time) * 1000.0,
        "transcript": _transcript(sample),
        "session_id": None if getattr(sample, "uuid", None) is None else str(sample.uuid),
    }
    if sample.error is not None:
        out["error"] = str(getattr(sample.error, "message", sample.error))
        out["failure_type"] = FailureType.AGENT_ERROR.value
        return out
    completion = sample.output.completion if sample.output is not None else ""
    out["prediction"] = completion
    out["raw_output"] = completion
    out["grades"] = _grades(sample, log) or None
    return out


def read_inspect(paths: list[Path]) -> ImportedLog:
    """Read Inspect AI eval logs: one arm per model (and task arguments), epochs as rounds.

    Raises:
        ImportFailed: a file is not a readable log, holds no samples, or two logs make the same arm.
        UsageError: inspect-ai is not installed.
    """
    logs = [(p, _read(p)) for p in paths]
    tasks = sorted({lg.eval.task for _, lg in logs})
    result = ImportedLog("inspect", tasks[0] if len(tasks) == 1 else "inspect", [p for p, _ in logs])
    models = [lg.eval.model for _, lg in logs]
    for path, lg in logs:
        if not lg.samples:
            raise ImportFailed(f"{path}: the log holds no samples (status {lg.status}); nothing to import")
        arm = _arm(lg, models.count(lg.eval.model) > 1)
        if arm in result.arms:
            raise ImportFailed(
                f"{path}: a second log of arm {arm!r} (same model and task arguments); import one of them, "
                "or import them as separate experiments"
            )
        result.arms[arm] = {
            "model": lg.eval.model,
            "tool": "inspect",
            "task": lg.eval.task,
            "task_args": dict(lg.eval.task_args or {}),
            "log": path.name,
        }
        for sample in lg.samples:
            case_id = str(sample.id)
            text = sample.input if isinstance(sample.input, str) else _last_user(sample.input)
            where = f"{path} sample {case_id} epoch {sample.epoch}"
            result.add_case(ImportedCase(case_id, text, _target(sample), {"inspect_id": sample.id}), where)
            outcome = _outcome(sample, lg.eval.model, result)
            result.runs.append(ImportedRun(case_id, arm, int(sample.epoch or 1), outcome))
    return result


def _arm(lg: Any, shared: bool) -> str:
    """The model; with the task arguments when another log has the same model."""
    name = arm_name(lg.eval.model)
    args = dict(lg.eval.task_args or {})
    if shared and args:
        name += "." + ",".join(f"{k}={v}" for k, v in sorted(args.items()))
    elif shared:
        name += f".{lg.eval.run_id}"
    return name


def _last_user(messages: Any) -> str:
    """A chat input as text: its last user message (the whole history is kept by the transcript)."""
    users = [m for m in messages or () if getattr(m, "role", None) == "user"]
    chosen = users[-1] if users else (messages[-1] if messages else None)
    return message_text(getattr(chosen, "content", None)) if chosen is not None else ""

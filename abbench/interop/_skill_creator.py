"""skill-creator benchmark folders (anthropics/skills, ``skills/skill-creator``).

The layout its ``scripts/aggregate_benchmark.py`` reads (and where it writes ``benchmark.json``)::

    <iteration or benchmark folder>/
        eval-<name>/eval_metadata.json        {eval_id, eval_name, prompt, assertions}
        eval-<name>/<configuration>/run-<n>/grading.json   (and timing.json, outputs/)
        benchmark.json                        (optional: its runs are used when no grading.json is)

(or the same under ``runs/``). Each eval is a case (its ``eval_name``, else ``eval-<id>``; its prompt),
each configuration an arm (``without_skill`` / ``old_skill`` the baseline, ``with_skill`` /
``new_skill`` the candidate), each run number a round. The verdict ``expectations`` passes when every
expectation passed, its score the pass rate — skill-creator's own figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from abbench.errors import ImportFailed
from abbench.interop._model import ImportedCase, ImportedLog, ImportedRun, arm_name
from abbench.types import FailureType

VERDICT = "expectations"
"""The recorded grader of a skill-creator import."""
_BASELINES = ("without_skill", "old_skill", "baseline")
_CANDIDATES = ("with_skill", "new_skill", "candidate")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFailed(f"{path}: not readable JSON ({exc})") from exc


def _eval_dirs(folder: Path) -> list[Path]:
    base = folder / "runs" if (folder / "runs").is_dir() else folder
    return sorted(p for p in base.glob("eval-*") if p.is_dir())


def _case(eval_dir: Path, index: int) -> tuple[str, ImportedCase, Any]:
    """The eval's case, and its id as skill-creator numbers it (eval_metadata's eval_id)."""
    meta_path = eval_dir / "eval_metadata.json"
    meta = _json(meta_path) if meta_path.exists() else {}
    eval_id = meta.get("eval_id", index)
    name = str(meta.get("eval_name") or eval_dir.name)
    prompt = str(meta.get("prompt") or name)
    extra = {"eval_id": eval_id, "assertions": meta.get("assertions") or []}
    return name, ImportedCase(name, prompt, None, extra), eval_id


def _outputs(run_dir: Path) -> tuple[str, str | None]:
    """What the run produced: the names of its output files, and the text of a single small text file."""
    out = run_dir / "outputs"
    files = (
        sorted(p for p in out.rglob("*") if p.is_file() and p.name != "metrics.json") if out.is_dir() else []
    )
    names = [str(p.relative_to(out)) for p in files]
    text = None
    if len(files) == 1 and files[0].stat().st_size <= 100_000:
        try:
            text = files[0].read_text(encoding="utf-8")
        except UnicodeDecodeError:
            text = None
    return ("outputs: " + ", ".join(names)) if names else "(no output files)", text


def _grading_outcome(run_dir: Path, grading: dict[str, Any]) -> dict[str, Any]:
    expectations = grading.get("expectations") or []
    summary = grading.get("summary") or {}
    total = summary.get("total", len(expectations))
    passed = summary.get("passed", sum(1 for e in expectations if e.get("passed")))
    rate = summary.get("pass_rate", passed / total if total else None)
    timing = dict(grading.get("timing") or {})
    timing_file = run_dir / "timing.json"
    if timing_file.exists():
        timing = {**_json(timing_file), **timing}
    seconds = timing.get("executor_duration_seconds") or timing.get("total_duration_seconds")
    if not seconds and timing.get("duration_ms"):
        seconds = float(timing["duration_ms"]) / 1000.0
    metrics = grading.get("execution_metrics") or {}
    prediction, text = _outputs(run_dir)
    failed = [e.get("text", "") for e in expectations if not e.get("passed")]
    return {
        "prediction": prediction,
        "raw_output": text,
        "reason": ("failed: " + "; ".join(failed)) if failed else None,
        "latency_ms": None if not seconds else float(seconds) * 1000.0,
        "transcript_summary": {
            "tool_calls": int(metrics.get("total_tool_calls") or 0),
            "steps": metrics.get("total_steps"),
            "errors": metrics.get("errors_encountered"),
            "total_tokens": timing.get("total_tokens"),
        },
        "grades": None
        if rate is None
        else {
            VERDICT: {
                "passed": bool(total) and passed == total,
                "score": float(rate),
                "comment": f"{passed}/{total} expectations passed",
            }
        },
    }


def _read_folder(folder: Path, result: ImportedLog) -> int:
    """The runs of one benchmark folder from its grading.json files; how many were read."""
    found = 0
    for index, eval_dir in enumerate(_eval_dirs(folder)):
        case_id, case, _ = _case(eval_dir, index)
        result.add_case(case, str(eval_dir))
        for config_dir in sorted(p for p in eval_dir.iterdir() if p.is_dir() and list(p.glob("run-*"))):
            arm = arm_name(config_dir.name)
            result.arms.setdefault(arm, {"tool": "skill-creator", "configuration": config_dir.name})
            for run_dir in sorted(config_dir.glob("run-*")):
                grading_file = run_dir / "grading.json"
                number = _run_number(run_dir)
                if not grading_file.exists():
                    outcome: dict[str, Any] = {"error": f"{grading_file} is missing: the run was not graded"}
                    outcome["failure_type"] = FailureType.NOT_GRADED.value
                else:
                    outcome = _grading_outcome(run_dir, _json(grading_file))
                result.runs.append(ImportedRun(case_id, arm, number, outcome))
                found += 1
    return found


def _run_number(run_dir: Path) -> int:
    try:
        return int(run_dir.name.split("-", 1)[1])
    except (IndexError, ValueError):
        raise ImportFailed(f"{run_dir}: a run folder is named run-<number>, not {run_dir.name!r}") from None


def _read_benchmark(path: Path, result: ImportedLog) -> None:
    """The runs of a benchmark.json alone (no eval folders beside it: prompts are unknown)."""
    data = _json(path)
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list):
        raise ImportFailed(f"{path}: not a skill-creator benchmark.json (it has no `runs` list)")
    for i, run in enumerate(runs):
        where = f"{path} runs[{i}]"
        try:
            case_id = str(run.get("eval_name") or f"eval-{run['eval_id']}")
            arm = arm_name(run["configuration"])
            number = int(run.get("run_number", 1))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ImportFailed(f"{where}: a run needs eval_id, configuration and run_number") from None
        result.add_case(ImportedCase(case_id, case_id, None, {"eval_id": run.get("eval_id")}), where)
        result.arms.setdefault(arm, {"tool": "skill-creator", "configuration": run["configuration"]})
        grading = {"expectations": run.get("expectations") or [], "summary": run.get("result") or {}}
        outcome = _grading_outcome(path.parent / "-", grading)
        seconds = (run.get("result") or {}).get("time_seconds")
        outcome["latency_ms"] = None if not seconds else float(seconds) * 1000.0
        result.runs.append(ImportedRun(case_id, arm, number, outcome))


def read_skill_creator(paths: list[Path]) -> ImportedLog:
    """Read skill-creator benchmark folders (or benchmark.json files): configurations as arms.

    Raises:
        ImportFailed: a folder holds no eval-*/<configuration>/run-* runs and no benchmark.json.
    """
    result = ImportedLog("skill-creator", "benchmark", list(paths))
    for path in paths:
        if path.is_dir():
            if _read_folder(path, result):
                meta = path / "benchmark.json"
                if meta.exists():
                    result.name = str((_json(meta).get("metadata") or {}).get("skill_name") or result.name)
                continue
            if (path / "benchmark.json").exists():
                _read_benchmark(path / "benchmark.json", result)
                continue
            raise ImportFailed(
                f"{path}: no skill-creator runs here (eval-*/<configuration>/run-*/grading.json) and no "
                "benchmark.json; give the iteration folder that aggregate_benchmark.py was run on"
            )
        _read_benchmark(path, result)
    result.name = result.name if result.name not in ("", "<skill-name>") else "benchmark"
    result.add_grader(VERDICT)
    result.arms = dict(sorted(result.arms.items(), key=lambda kv: (kv[0] not in _BASELINES, kv[0])))
    base = next((a for a in result.arms if a in _BASELINES), None)
    cand = next((a for a in result.arms if a in _CANDIDATES), None)
    if base and cand:
        result.decision = (base, cand)
    return result

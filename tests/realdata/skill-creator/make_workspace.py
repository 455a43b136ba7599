"""Lay out a skill-creator iteration folder as its SKILL.md describes, then aggregate it with its own
scripts/aggregate_benchmark.py (anthropics/skills @ 9d2f1ae1).

Usage: python make_workspace.py SKILL_CREATOR_DIR OUT_DIR
Three evals of an internal-comms skill, two configurations (with_skill, without_skill), two runs
each. The executor outputs, timing.json and grading.json (what skill-creator's grader agent writes,
agents/grader.md) are scripted here: no model is called.
"""

import json
import subprocess
import sys
from pathlib import Path

EVALS = [
    (
        "weekly-update",
        "Write our team's weekly update for the #eng channel: shipped search v2, hiring 1 SRE.",
        ["Starts with a one-line summary", "Lists shipped work as bullets", "Mentions the open SRE role"],
    ),
    (
        "incident-note",
        "Draft a short incident note: checkout was down 14 minutes, root cause a bad config push.",
        ["States the impact and its duration", "Names the root cause", "Says what will prevent a repeat"],
    ),
    (
        "all-hands-faq",
        "Turn these all-hands questions into an FAQ: Are we hiring? Is the office moving?",
        ["Uses question-and-answer pairs", "Answers both questions"],
    ),
]
# passed expectations per (eval, configuration, run)
PASSED = {
    ("weekly-update", "with_skill"): [3, 3],
    ("weekly-update", "without_skill"): [1, 2],
    ("incident-note", "with_skill"): [3, 2],
    ("incident-note", "without_skill"): [1, 1],
    ("all-hands-faq", "with_skill"): [2, 2],
    ("all-hands-faq", "without_skill"): [2, 2],
}


def main(creator: Path, out: Path) -> None:
    for i, (name, prompt, expectations) in enumerate(EVALS):
        eval_dir = out / f"eval-{name}"
        eval_dir.mkdir(parents=True, exist_ok=True)
        meta = {"eval_id": i, "eval_name": name, "prompt": prompt, "assertions": expectations}
        (eval_dir / "eval_metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
        for config in ("with_skill", "without_skill"):
            for run, passed in enumerate(PASSED[(name, config)], start=1):
                run_dir = eval_dir / config / f"run-{run}"
                (run_dir / "outputs").mkdir(parents=True, exist_ok=True)
                (run_dir / "outputs" / "message.md").write_text(
                    f"# {name} ({config}, run {run})\n\n{prompt}\n"
                )
                seconds = 20.0 + 3 * i + (6 if config == "with_skill" else 0) + run
                tokens = 3000 + 400 * i + (900 if config == "with_skill" else 0) + 10 * run
                timing = {
                    "total_tokens": tokens,
                    "duration_ms": int(seconds * 1000),
                    "total_duration_seconds": seconds,
                }
                (run_dir / "timing.json").write_text(json.dumps(timing, indent=2) + "\n")
                graded = [
                    {
                        "text": t,
                        "passed": k < passed,
                        "evidence": "found in message.md" if k < passed else "not in the output",
                    }
                    for k, t in enumerate(expectations)
                ]
                grading = {
                    "expectations": graded,
                    "summary": {
                        "passed": passed,
                        "failed": len(expectations) - passed,
                        "total": len(expectations),
                        "pass_rate": round(passed / len(expectations), 2),
                    },
                    "execution_metrics": {
                        "total_tool_calls": 4 + run,
                        "total_steps": 3,
                        "errors_encountered": 0,
                        "output_chars": 400,
                    },
                    "timing": {
                        "executor_duration_seconds": seconds,
                        "grader_duration_seconds": 5.0,
                        "total_duration_seconds": seconds + 5.0,
                    },
                }
                (run_dir / "grading.json").write_text(json.dumps(grading, indent=2) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.aggregate_benchmark",
            str(out.resolve()),
            "--skill-name",
            "internal-comms",
        ],
        cwd=creator,
        check=True,
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

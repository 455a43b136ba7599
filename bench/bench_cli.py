"""Benchmark of a real agent CLI driven through its preset: abbench's overhead over the spawn floor.

Run ``python bench/bench_cli.py`` after ``make agent-clis`` (``make bench`` runs every bench). It
starts the scripted OpenAI-compatible server on 127.0.0.1, then runs the same ``--runs`` one-shot
runs (default 200) at concurrency ``--concurrency`` (default 8) of the real CLI (``--cli opencode``,
the default, or ``llm``) twice, in one process:

1. by hand: a shell loop (``xargs -P``) that copies a prepared workspace (the CLI's config, the
   skill, the prompt), launches the CLI with the same argv and environment, and throws the output
   away — the process-spawn floor;
2. through abbench: an experiment of as many cases, one arm ``agent: command, preset: <cli>``,
   run by the real runner into a real store (workspace set-up, the CLI's config, the process group,
   reading the JSON events, the answer, tokens and cost, every state written).

The two alternate in ``--rounds`` slices (default 2), so load from neighbours on a shared machine falls
on both. It prints runs/s of both, abbench's overhead per run (its wall time minus the loop's, over the runs,
times the concurrency: the extra time one run slot spends), and the ratio of the wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abbench.agents import Task
from abbench.agents._presets import Setup, get_preset
from abbench.agents._prompt import build_prompt
from abbench.runner import create_experiment, run_experiment
from abbench.snapshot import build_snapshot
from abbench.store import open_store
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.types import Case

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / "data" / "demo" / "skills" / "fast-slow-routing-v2"
KEY_ENV = "ABBENCH_BENCH_KEY"
ANSWER = json.dumps({"prediction": "fast", "reason": "one command, not slow", "confidence": 0.9})


def reply(request):
    system = " ".join(str(m.get("content")) for m in request.messages if m.get("role") == "system")
    if "title generator" in system:
        return Reply.text("Routing")
    return Reply.text(ANSWER, usage=(2042, 64))


def by_hand(cli: str, program: Path, server, runs: int, concurrency: int, tmp: Path) -> float:
    """The shell loop: the same CLI, argv, config and environment, nothing else."""
    preset = get_preset(cli)
    template = tmp / "template"
    template.mkdir(parents=True)
    shutil.copytree(SKILL, template / "skill")
    setup = Setup(workspace=template, model="scripted-m", base_url=server.base_url, api_key_env=KEY_ENV)
    env = preset.prepare(setup)
    task = Task(case=Case("c0", "打开空调"), skill=build_snapshot(SKILL), label_set=("fast", "slow"))
    (template / "prompt.txt").write_text(
        build_prompt(task, tools=False, skill_dir=str(template / "skill")).text
    )
    argv = [
        a.replace("{model}", preset.cli_model(setup)).replace("{prompt}", "$(cat prompt.txt)")
        for a in preset.argv(str(program), [])
    ]
    # the config names paths inside the template: each run's copy points at its own folder
    exports = " ".join(
        f'{k}="{v.replace(str(template), "$ws")}"' if not v.startswith("${") else f"{k}=${KEY_ENV}"
        for k, v in env.items()
    )
    command = " ".join(a if a == "$(cat prompt.txt)" else shlex.quote(a) for a in argv)
    script = tmp / "one.sh"
    script.write_text(
        "set -e\n"
        f'ws=$(mktemp -d {tmp}/run-XXXXXX)\ncp -r {template}/. "$ws"\ncd "$ws"\n'
        f"export {exports}\n"
        # setsid, as abbench does (start_new_session): with the kernel's autogroup scheduling a new
        # session is its own CPU group, so without it the loop's CLIs would share one group's time
        f"setsid -w {command.replace('$(cat prompt.txt)', chr(34) + '$(cat prompt.txt)' + chr(34))} >/dev/null 2>&1\n"
        'cd / && rm -rf "$ws"\n'
    )
    started = time.perf_counter()
    subprocess.run(
        f"seq {runs} | xargs -P {concurrency} -n 1 sh -c 'bash {script}'",
        shell=True,
        check=True,
        env={**os.environ, "PATH": os.environ.get("PATH", "")},
    )
    return time.perf_counter() - started


def through_abbench(
    cli: str, program: Path, server, runs: int, concurrency: int, tmp: Path
) -> tuple[float, dict]:
    store = open_store(tmp / "store")
    cases = [Case(f"c{i:04d}", "打开空调", "fast") for i in range(runs)]
    dataset = store.datasets.save("bench", cases, label_set=["fast", "slow"])
    arm = {
        "agent": "command",
        "preset": cli,
        "program": str(program),
        "model": "scripted-m",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        "prices": {"scripted-m": {"input": 2.0, "output": 8.0}},
        "timeout_s": 600,
        "skill": str(SKILL),
    }
    spec = {
        "name": f"bench-{cli}",
        "dataset": dataset.fingerprint,
        "rounds": 1,
        "concurrency": concurrency,
        "arms": {"b": arm},
    }
    exp = create_experiment(spec, store=store)
    started = time.perf_counter()
    run_experiment(exp.id, store=store)
    elapsed = time.perf_counter() - started
    done = store.runs.records(exp.id)
    failed = [r for r in done if r.failure_type]
    tokens = sum(r.output.usage.total_tokens for r in done if r.output and r.output.usage)
    return elapsed, {
        "runs": len(done),
        "failed": len(failed),
        "tokens": tokens,
        "first_failure": failed[0].error if failed else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", choices=("opencode", "llm"), default="opencode")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2, help="alternate the two ways in this many slices")
    args = ap.parse_args()
    program = ROOT / ".tools" / "bin" / args.cli
    if not program.exists():
        raise SystemExit(f"{program} is missing: run `make agent-clis` first")
    os.environ[KEY_ENV] = "sk-bench-not-a-real-key"
    # the two ways alternate in --rounds slices, so a neighbour's load on the shared machine falls on both
    shell_s = ab_s = 0.0
    served_by_hand = 0
    totals = {"runs": 0, "failed": 0, "tokens": 0, "first_failure": None}
    per = max(1, args.runs // args.rounds)
    with (
        ScriptedOpenAIServer(reply) as server,
        tempfile.TemporaryDirectory(prefix="abbench-bench-cli-") as tmp,
    ):
        for i in range(args.rounds):
            before = len(server.chat_requests)
            shell_s += by_hand(args.cli, program, server, per, args.concurrency, Path(tmp) / f"hand{i}")
            served_by_hand += len(server.chat_requests) - before
            elapsed, stats = through_abbench(
                args.cli, program, server, per, args.concurrency, Path(tmp) / f"ab{i}"
            )
            ab_s += elapsed
            for key in ("runs", "failed", "tokens"):
                totals[key] += stats[key]
            totals["first_failure"] = totals["first_failure"] or stats["first_failure"]
    stats = totals
    args.runs = per * args.rounds
    n, c = args.runs, args.concurrency
    print(f"{args.cli}: {n} runs at concurrency {c} against the scripted server ({os.cpu_count()} cores)")
    print(
        f"  by hand (shell loop, xargs -P {c}): {shell_s:7.1f} s  {n / shell_s:6.2f} runs/s  ({served_by_hand} requests)"
    )
    print(
        f"  through abbench (runner + store):  {ab_s:7.1f} s  {n / ab_s:6.2f} runs/s  "
        f"({stats['runs']} runs, {stats['failed']} failed, {stats['tokens']:,} tokens recorded)"
    )
    print(f"  abbench's overhead per run: {(ab_s - shell_s) / n * c * 1000:+.0f} ms of a run slot")
    print(f"  ratio abbench / by hand: {ab_s / shell_s:.3f}")
    if stats["failed"]:
        print(f"  first failure: {stats['first_failure']}")


if __name__ == "__main__":
    main()

"""Which module defines each command, and its first help paragraph: ``abbench --help`` lists the commands
without importing them, and ``abbench run`` imports only the module of ``run``.

In the order of the flow (the order ``--help`` lists them). tests/cli/test_startup.py checks this table
against the commands themselves: a new command, or a changed first paragraph, is written here too.
"""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "import": ("_data", "Import a data file (CSV/TSV, XLSX, JSONL, JSON) as a dataset."),
    "datasets": (
        "_data",
        "List the stored datasets, or show one (REF: fingerprint, name, hash prefix or id).",
    ),
    "profiles": ("_data", "List the saved mapping profiles, or show one (NAME or NAME@VERSION)."),
    "snapshot": ("_snapshot", "Snapshot a skill folder (or a git ref of it) into the store."),
    "snapshots": ("_snapshot", "List the stored skill snapshots."),
    "show-ref": ("_snapshot", "Print a section of a snapshot, or list its references."),
    "diff-skill": ("_snapshot", "Compare two skill versions: files and sections that changed."),
    "create": (
        "_define",
        "Create an experiment from a YAML definition (one pending run per case × round × arm).",
    ),
    "experiments": (
        "_run",
        "List experiments, newest first; experiments sharing a name (one per skill version) are grouped.",
    ),
    "run": (
        "_run",
        "Run an experiment (a name, #id, or a YAML definition to create first) until its work is done.",
    ),
    "status": (
        "_run",
        "Show where an experiment stands: runs per arm and state (reading never starts work).",
    ),
    "pause": (
        "_run",
        "Pause a running experiment: running runs finish, no new ones start (seen within a second).",
    ),
    "cancel": ("_run", "Cancel an experiment: runs in flight stop and pending runs become cancelled."),
    "retry": (
        "_run",
        "Retry runs: execution failures run again, grading failures are re-graded (no agent run).",
    ),
    "regrade": ("_run", "Grade runs again from their stored executions (the agent is not run again)."),
    "clone": ("_define", "Clone an experiment with one arm replaced (a new skill version, a new model)."),
    "try": (
        "_define",
        "Try one input at once: prints the prediction, reason, confidence, cited evidence and files read.",
    ),
    "resume": (
        "_spend",
        "Resume a paused experiment; with --budget / --max-tokens, raise its budget and go on.",
    ),
    "estimate": (
        "_spend",
        "Project what an experiment will cost — money, tokens, wall time — per arm, before running it.",
    ),
    "prompt": (
        "_prompt",
        "Show the exact prompt an agent or judge would receive for one case, without calling anything.",
    ),
    "grade": ("_grade", "Grade what the graders have not graded yet (no agent runs)."),
    "grades": ("_grade", "Show grades: latest per (run, grader), or all (--history)."),
    "judge-report": ("_grade", "Judges' position and verbosity bias, and judge cost apart from agent cost."),
    "import-results": (
        "_import_results",
        "Import runs made by another tool as an experiment, so compare, gate and report apply to them.",
    ),
    "plan": ("_plan", "Cases needed to detect a difference between two arms run on the same cases."),
    "compare": (
        "_compare",
        "Compare two arms, or two experiments on the same dataset: the verdict first, then the figures.",
    ),
    "metrics": (
        "_metrics",
        "Per-arm metrics: accuracy with intervals, failures, classes, stability, cost, latency, grounding.",
    ),
    "gate": (
        "_gate",
        "Apply a gate: the pair, the outcome and its coverage first, then each rule and the three dimensions.",
    ),
    "review": (
        "_review",
        "Record a review of a case (appended; the latest per case and arm is the one shown), or draw a random sample of judged runs to review (--sample N --seed S).",
    ),
    "reviews": ("_review", "List reviews (the latest per case and arm), with judge-versus-people agreement."),
    "disagreements": (
        "_review",
        "List cases worth a review: gold vs prediction, low confidence, no evidence, flaky, arms disagreeing.",
    ),
    "case": (
        "_review",
        "Show one case in full: earlier turns, input, gold, every run's answer, reason, evidence, tool calls, "
        "reviews.",
    ),
    "cache": (
        "_cache",
        "The response cache of model calls (agents and judges): what it holds and saved, and clearing it.",
    ),
    "export": (
        "_report",
        "Export an experiment's runs, grades, reviews or comparison to CSV, XLSX or JSONL, "
        "or its pairwise judge's contest to JSON.",
    ),
    "report": ("_report", "Render a self-contained HTML report (and keep the executed notebook beside it)."),
    "demo": ("_demo", "Run the embedded demo offline: import, snapshot, run, grade, compare, gate, report."),
    "keys": (
        "_keys",
        "API keys for `abbench serve`: each acts for one owner, with scopes, until it expires or is revoked.",
    ),
    "serve": (
        "_serve",
        "Serve the store over HTTP (FastAPI): keys from `abbench keys create`, docs at /docs.",
    ),
}
"""Command name -> (module of abbench.cli that defines it, the first paragraph of its help, on one line)."""

ON_A_SERVER = frozenset(
    {"import", "snapshot", "create", "run", "status", "pause", "resume", "cancel", "compare", "gate", "export",
     "report"}
)  # fmt: skip
"""Commands written once over `abbench.cli._backend.Backend`: with ``--server`` the same command works on
the server and prints the same text (what cannot be the same is refused by name: a local option, a folder
of the server's). The others work on a local store only."""

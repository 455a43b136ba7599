"""A retry stopped part-way says how many runs ran, each counted once: a run that executed and then failed
to grade is one run, not two."""

from __future__ import annotations

from abbench.runner import create_experiment, run_experiment

from .test_retry_kinds import grader_failing_on  # noqa: F401  (registers the grader)


def test_a_paused_retry_counts_a_grading_failure_as_one_run(cli, store, definition, calls):
    exp = create_experiment(
        definition(
            rounds=1,
            retries=0,
            concurrency=1,
            budget={"max_tokens": 100},  # 6 runs of 12 tokens, then the retry pauses after a few more
            arms={"a": {"agent": "scripted", "tag": "retry"}},
            graders=[{"type": "grader_failing_on", "fail": ["c000", "c001"]}],
        ),
        store=store,
    )
    run_experiment(exp.id, store=store)
    before = {r.case_id: r.attempts for r in store.runs.records(exp.id)}
    cases = [arg for c in sorted(before) for arg in ("--cases", c)]
    said = cli("retry", exp.id, *cases, "-q").output
    summary = store.experiments.get(exp.id)
    after = {r.case_id: r.attempts for r in store.runs.records(exp.id)}
    ran = sum(after[c] > before[c] for c in before)  # the store's own count: runs executed again
    assert summary.status == "paused" and 0 < ran < len(before)
    assert "grading failed 2" in said or "2 grading" in said, said  # the runs that ran failed to grade
    assert (
        f"retried: re-running {len(before)} runs, but the experiment was paused part-way ({ran} ran, 0 cancelled); "
        f"`abbench resume {exp.id}` runs the rest"
    ) in said, said

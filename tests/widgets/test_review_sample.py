"""The review widget draws a random sample of judged runs and shows the judge's accuracy it corrects."""

from __future__ import annotations

from abbench.runner import create_experiment, run_experiment
from abbench.types import Case
from abbench.widgets import ReviewWidget


def test_the_widget_draws_a_sample_lists_it_and_shows_the_corrected_accuracy(store):
    cases = [Case(f"w{i:03d}", f"query {i}", "slow" if i % 2 else "fast") for i in range(60)]
    dataset = store.datasets.save("sampled", cases, label_set=["fast", "slow"])
    agent = {"agent": "python", "function": "tests.runner.stop_agent:answer"}
    exp = create_experiment(
        {"name": "w", "dataset": dataset.fingerprint, "arms": {"only": agent}}, store=store
    )
    run_experiment(exp.id, store=store)

    widget = ReviewWidget(store, experiment=exp.id)
    assert "reviews of disagreements cannot, they are not random" in widget.sample_html.value
    widget.sample_size.value, widget.sample_seed.value = 8, 4
    widget.sample_button.click()
    assert widget.errors.message is None
    sample = store.reviews.samples(exp.id)[-1]
    assert sample.size == 8 and sample.seed == 4
    assert widget.kind.value == "sample"
    sampled = {
        case for run_id, _, case, _ in store.reviews.judged_runs(exp.id) if run_id in set(sample.run_ids)
    }
    assert {d.case_id for d in widget.shown} == sampled
    assert dict((k, label) for label, k in widget.kind.options)["sample"] == "random sample (8)"
    widget.select_case(widget.shown[0].case_id)
    widget.review_arm.value = "only"  # stays chosen from case to case; each save opens the next one
    for _ in range(8):
        widget.save("model_correct")
    assert "corrected by people (prediction-powered inference)" in widget.sample_html.value
    assert (
        f"random review sample #{sample.id} (seed 4, 8 of 8 sampled runs reviewed)"
        in widget.sample_html.value
    )


def test_a_draw_reads_the_list_once_and_draws_what_the_seed_gives_over_the_judged_runs(store, monkeypatch):
    """Issue 40 item 15: *Draw random sample* lists the sample's cases with one read of the list (it read
    it twice), and the runs drawn are the seed's draw over `judged_runs` (numpy's generator, written out),
    of every arm or of the arm chosen."""
    import numpy as np

    from abbench.widgets import _review

    cases = [Case(f"d{i:03d}", f"query {i}", "slow" if i % 2 else "fast") for i in range(40)]
    dataset = store.datasets.save("drawn", cases, label_set=["fast", "slow"])
    agent = {"agent": "python", "function": "tests.runner.stop_agent:answer"}
    exp = create_experiment(
        {"name": "d", "dataset": dataset.fingerprint, "rounds": 2, "arms": {"a": agent, "b": agent}},
        store=store,
    )
    run_experiment(exp.id, store=store)
    widget = ReviewWidget(store, experiment=exp.id)
    reads: list[dict] = []
    real = _review.disagreement_page
    monkeypatch.setattr(_review, "disagreement_page", lambda *a, **k: reads.append(k) or real(*a, **k))
    for arm, seed in ((None, 4), ("b", 9)):
        reads.clear()
        widget.arm.select(arm or "", notify=False)
        widget.sample_size.value, widget.sample_seed.value = 8, seed
        widget.sample_button.click()
        assert widget.errors.message is None
        assert len(reads) == 1 and reads[0]["sample"] is True
        population = np.array([r[0] for r in store.reviews.judged_runs(exp.id, arm)], dtype=np.int64)
        drawn = np.random.default_rng(seed).choice(population, size=8, replace=False)
        sample = store.reviews.samples(exp.id)[-1]
        assert (sample.arm, sample.population, list(sample.run_ids)) == (arm, population.size, drawn.tolist())
        assert widget.kind.value == "sample" and widget.shown

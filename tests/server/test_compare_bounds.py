"""What one comparison or gate request may ask of the server: a bounded amount of bootstrap work, and a
source name that prints as one line."""

from __future__ import annotations

import pytest

from abbench.client import ServerError
from abbench.compare import BOOTSTRAP_MAX_CASES
from abbench.server._routes_analysis import MAX_BOOTSTRAP_DRAWS, MAX_ITERATIONS

MAPPING = {
    "fields": {"case_id": "case_id", "input": "query", "expected": "route"},
    "label_set": ["fast", "slow"],
}
N = MAX_BOOTSTRAP_DRAWS // MAX_ITERATIONS + 500  # the most replicates draw more than the bound at this size


@pytest.fixture(scope="module")
def exp(alice, tmp_path_factory):
    assert N <= BOOTSTRAP_MAX_CASES  # the bootstrap runs on these cases when not asked for
    data = tmp_path_factory.mktemp("bounds") / "cases.csv"
    rows = "".join(f"c{i},query {i},{'fast' if i % 2 else 'slow'}\n" for i in range(N))
    data.write_text("case_id,query,route\n" + rows, encoding="utf-8")
    ds = alice.import_dataset(data, mapping=MAPPING, name="bounds")
    arms = {"a": {"agent": "builtin"}, "b": {"agent": "builtin"}}
    return alice.create_experiment({"name": "bounds", "dataset": ds.fingerprint, "arms": arms})


def test_a_comparison_drawing_more_than_the_bound_is_refused_with_what_its_cases_allow(alice, exp):
    for call in (
        lambda: alice.compare_arms(exp.id, "a", "b", iterations=MAX_ITERATIONS),
        lambda: alice.compare_experiments(exp.id, exp.id, "a", "b", iterations=MAX_ITERATIONS),
    ):
        with pytest.raises(ServerError) as refused:
            call()
        assert refused.value.status == 422 and refused.value.title == "too much work"
        most = MAX_BOOTSTRAP_DRAWS // N
        assert f"{MAX_ITERATIONS:,} bootstrap replicates of {N:,} cases" in str(refused.value)
        assert f"give iterations ≤ {most:,}, or bootstrap: false" in str(refused.value)
    # within the bound, or with no bootstrap, the comparison is made (of no run yet: nothing to draw)
    for settings in (
        {"iterations": MAX_BOOTSTRAP_DRAWS // N},
        {"iterations": MAX_ITERATIONS, "bootstrap": False},
    ):
        assert alice.compare_arms(exp.id, "a", "b", **settings).n_cases == 0


@pytest.mark.parametrize("source", ["gate.yaml\nrule 1 passed", "\x1b[2Jgate.yaml"])
def test_a_gate_source_that_would_forge_a_line_is_refused(alice, exp, source):
    with pytest.raises(ServerError) as refused:
        alice._call(
            "POST",
            f"/experiments/{exp.id}/gate",
            json={"rules": {"rules": ["accuracy >= 0.5"]}, "source": source},
        )
    assert refused.value.status == 422 and "printed as it is; this one holds" in str(refused.value)

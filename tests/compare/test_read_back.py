"""The records a server sends are read back as the library's own: ``from_dict`` of ``as_dict`` written
as JSON gives a record that writes the same JSON again, byte for byte, and says the same."""

from __future__ import annotations

import json

import pytest

from abbench.compare import Comparison, MultiComparison, compare_all, compare_arms
from abbench.gate import GateResult, evaluate_gate
from abbench.snapshot import TakenSnapshot
from abbench.store import open_store
from tests.experiments import build_all


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("read-back")
    store = open_store(folder / "store")
    ids = build_all(
        store, folder / "files", only=("two-arm", "three-arm", "failures", "judges", "single-case")
    )
    yield store, ids
    store.close()


def _sent(data: dict) -> dict:
    """`data` as it crosses HTTP: JSON text, read again."""
    return json.loads(json.dumps(data, allow_nan=False))


def _text(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


@pytest.mark.parametrize("shape", ["two-arm", "failures", "judges", "single-case"])
@pytest.mark.parametrize("details", [None, True])
def test_a_comparison_reads_back_what_it_wrote(finished, shape, details):
    store, ids = finished
    c = compare_arms(ids[shape], store=store, details=details, margin=0.05)
    back = Comparison.from_dict(_sent(c.as_dict()))
    assert _text(back.as_dict()) == _text(c.as_dict())
    # what the views ask of it, beyond its JSON: the cases that moved, the votes, another margin
    assert back.fixed == c.fixed and back.regressed == c.regressed and back.moved == c.moved
    assert back.votes().as_dict() == c.votes().as_dict()
    assert back.settle(0.1) == c.settle(0.1)
    if shape == "judges":
        assert back.review_agreement is not None and back.review_agreement.n == c.review_agreement.n
        assert back.pairwise and back.pairwise == c.pairwise


def test_every_arm_compared_reads_back(finished):
    store, ids = finished
    m = compare_all(ids["three-arm"], store=store)
    back = MultiComparison.from_dict(_sent(m.as_dict()))
    assert _text(back.as_dict()) == _text(m.as_dict()) and back.pass_rates == m.pass_rates


def test_json_that_no_record_wrote_is_refused_naming_the_field(finished):
    store, ids = finished
    data = _sent(compare_arms(ids["two-arm"], store=store).as_dict())
    metric = {**data["usage"][0], "difference": "0.5"}  # a text where a figure is: it would fail when shown
    for wrong, said in (
        (
            {**data, "usage": [metric, *data["usage"][1:]]},
            r"Comparison\.usage: MetricDifference\.difference: '0\.5' is not a number",
        ),
        ({**data, "n_cases": True}, r"Comparison\.n_cases: True is not a whole number"),
        ({**data, "a": {**data["a"], "arm": 7}}, r"Comparison\.a: Side\.arm: 7 is not a text"),
    ):
        with pytest.raises(TypeError, match=said):
            Comparison.from_dict(wrong)
    with pytest.raises(TypeError, match="MultiComparison: a JSON object is a record, not list"):
        MultiComparison.from_dict([data])


@pytest.mark.parametrize("shape", ["two-arm", "failures", "judges", "single-case"])
@pytest.mark.parametrize("view", ["cli", "http"])
def test_a_gate_reads_back_for_every_view(finished, shape, view):
    """A server words its gate for HTTP; read back, it words itself for the command line again."""
    store, ids = finished
    g = evaluate_gate(ids[shape], store=store, arms=["control", "treatment"])
    back = GateResult.from_dict(_sent(g.as_dict(view)))
    for each in ("cli", "http", "python"):
        assert _text(back.as_dict(each)) == _text(g.as_dict(each)), each
        assert back.worded_reason(each) == g.worded_reason(each)
    assert back.passed == g.passed and back.headline == g.headline
    assert back.pair.named_in("cli") == "--arms control treatment"


def test_a_taken_snapshot_reads_back(tmp_path):
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\n# Rules\nx\n", encoding="utf-8")
    (skill / "logo.png").write_bytes(b"\x89PNG\x00\x01")
    with open_store(tmp_path / "store") as store:
        taken = store.snapshots.taken(store.snapshots.freeze(skill))
    sent = {**taken.snapshot.to_dict(files=True), **taken.as_dict()}
    back = TakenSnapshot.from_dict(_sent(sent))
    assert back == taken and back.new and back.n_refs == 1
    assert sum(f.binary for f in back.snapshot.files) == 1

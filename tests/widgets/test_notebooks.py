"""Every workbench notebook executes against a demo store (papermill, python3 kernel) without an error."""

from __future__ import annotations

import os
import shutil
import subprocess

import nbformat
import pytest

from tests.conftest import REPO, subprocess_env

NOTEBOOKS = REPO / "notebooks"

# After the notebook's own cells: the widget it shows has nothing in its error area (errors raised in
# callbacks are shown there instead of failing the cell, so a cell that "worked" could still hide one).
CHECKS = {
    "01_import_and_map": "assert mapping.errors.message is None, mapping.errors.message\n"
    "assert mapping.preview is not None and mapping.preview.cases\n"
    "assert {r.label.value for r in mapping.label_rows} == {'fast', 'slow'}  # the demo's mapping YAML",
    "02_run": "assert run.errors.message is None, run.errors.message\n"
    "assert run.dataset.value and len(run.arm_rows) == 3\n"
    "import yaml\n"
    "demo = yaml.safe_load(open(definition, encoding='utf-8'))\n"
    "got = run.spec()['arms']\n"
    "for name, arm in demo['arms'].items():\n"
    "    want = {k: v for k, v in arm.items() if k not in ('agent', 'skill')}\n"
    "    assert got[name].get('params', {}) == want, (name, got[name], want)\n"
    "    assert ('skill' in arm) == ('skill' in got[name])\n"
    "assert run.spec()['graders'] == demo['graders'] and run.rounds.value == demo['rounds']\n"
    "# the definition runs as written: every key, those the form has no control for included\n"
    "from abbench.runner import load_spec\n"
    "mine = load_spec(run.spec())[0].model_dump(exclude={'dataset', 'arms'})\n"
    "assert mine == load_spec(definition)[0].model_dump(exclude={'dataset', 'arms'})\n"
    "assert run.spec()['concurrency'] == 16 and run.spec()['decision']['candidate'] == 'v2'\n"
    "assert run.form_changes() == [] and 'as written' in run.changes_html.value",
    "03_results": "assert results.errors.message is None, results.errors.message\n"
    "assert results.metrics is not None and results.gate_result is not None",
    "04_review": "assert review.errors.message is None, review.errors.message\nassert review.items\n"
    "assert cases.errors.message is None, cases.errors.message\n"
    "assert cases.experiment.id == review.experiment.id and cases.page.total == cases.page.cases > 0",
    "05_compare": "assert diff.errors.message is None, diff.errors.message\n"
    "assert diff.comparison is not None and diff.lists['fixed']",
}


def execute(name: str, tmp_path, **parameters):
    """Run notebooks/NAME.ipynb (with the check cell appended) in a python3 kernel; return the executed notebook."""
    import papermill

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    if name in CHECKS:
        nb.cells.append(nbformat.v4.new_code_cell(CHECKS[name]))
    source = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, source)
    return papermill.execute_notebook(
        str(source),
        str(tmp_path / f"{name}.out.ipynb"),
        parameters=parameters,
        kernel_name="python3",
        cwd=str(NOTEBOOKS),
        progress_bar=False,
        request_save_on_cell_execute=False,
    )


@pytest.fixture
def kernel_env(monkeypatch):
    """The kernel imports this checkout's abbench and draws no tqdm bars."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.delenv("ABBENCH_STORE", raising=False)


def test_notebooks_are_stored_clean():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata.kernelspec.name == "python3", path.name
        assert nb.cells[0].cell_type == "markdown", path.name
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "parameters" in code[0].metadata.get("tags", []), path.name
        assert all(not c.outputs and c.execution_count is None for c in code), f"{path.name} has outputs"


@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")))
def test_the_first_cell_says_how_to_share(name):
    first = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells[0].source
    assert "`abbench report " in first and "nbconvert --execute --to abbench_html" in first


def test_make_test_runs_every_notebook_under_nbval():
    if not shutil.which("make"):
        pytest.skip("no make on this machine")
    plan = subprocess.run(
        ["make", "-n", "test"], cwd=REPO, capture_output=True, text=True, check=True, env=subprocess_env()
    ).stdout
    nbval = [line for line in plan.splitlines() if "--nbval-lax" in line]
    assert nbval and "notebooks/" in nbval[0].split(), plan
    assert "--dist loadscope" in nbval[0]  # one notebook's cells stay in one kernel
    # the demo store the notebooks find is made first when missing
    assert (REPO / ".abbench" / "abbench.db").is_file() or "abbench demo" in plan, plan


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")))
def test_the_notebook_runs_on_the_demo_store(name, shared_demo_store, tmp_path, kernel_env):
    executed = execute(name, tmp_path, store_path=str(shared_demo_store))
    errors = [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    widgets = [
        o
        for c in executed.cells
        for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert widgets, "the notebook shows no widget"


@pytest.mark.slow
def test_a_notebook_finds_the_store_from_the_environment(
    shared_demo_store, tmp_path, kernel_env, monkeypatch
):
    monkeypatch.setenv("ABBENCH_STORE", str(shared_demo_store))
    executed = execute("04_review", tmp_path)  # store_path left empty, as in git
    assert not [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]


@pytest.mark.slow
def test_compare_opens_on_a_pair_when_the_newest_experiment_has_one_arm(
    demo_store_copy, tmp_path, kernel_env
):
    from abbench.runner import create_experiment, run_experiment
    from abbench.store import open_store
    from tests.widgets.demo import ARMS

    with open_store(demo_store_copy) as store:
        solo = create_experiment({"name": "solo", "dataset": "demo", "arms": {"v2": ARMS["v2"]}}, store=store)
        run_experiment(solo.id, store=store)
    # arms named as a person editing the top cell would: the earlier experiment's v1 against solo's v2
    executed = execute("05_compare", tmp_path, store_path=str(demo_store_copy), arm_a="v1", arm_b="v2")
    outputs = [o for c in executed.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error" or o.get("name") == "stderr"]

"""Every Python example of the README and docs/ runs as written, each in a fresh interpreter.

Item 14 of issue 37: docs/import-results.md's first example failed in a new process (`unknown agent
'external'`, `unknown grader 'recorded'`) while the tests passed, because they had imported the module that
registered both. So each example runs here in a child process of its own, in a folder and store prepared
for it (the files and experiments it names), after at most a *prelude* that gives the names the page
leaves to the reader (`control_rounds`, `v1`, `user_id`), and with the stand-ins the page uses for the
reader's own data swapped for real ones (a snapshot hash, a case id). An example that needs what a test
cannot have (a model endpoint, a running server with a key) is listed in `NOT_RUN` with why, and a new
example is neither: `test_every_python_example_is_run_or_said_why_not` fails until it is classified.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import DEMO, REPO, run_abbench, subprocess_env

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _python_blocks() -> list[str]:
    """``page:code`` of every ```python block of the pages."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        out += [
            f"{page.relative_to(REPO)}:{m.group(1)}" for m in re.finditer(r"```python\n(.*?)```", text, re.S)
        ]
    return out


BLOCKS = _python_blocks()


def _block(key: str) -> list[str]:
    """The blocks `key` names: ``page:`` and the start of the code (enough of it to tell it apart)."""
    return [b for b in BLOCKS if b.startswith(key)]


@dataclass(frozen=True)
class Example:
    """How to run one example: what its folder needs first, names it leaves to the reader, stand-ins."""

    setup: tuple[str, ...] = ()
    prelude: str = ""
    swap: dict[str, str] = field(default_factory=dict)
    check: str = ""
    slow: bool = False


ROUTING_V = """
name: {name}
dataset: routing
rounds: 2
cases: {{ids: [{ids}]}}
arms:
  control: {{agent: builtin, skill: skills/fast-slow-routing}}
  treatment: {{agent: builtin, skill_mode: offered, skills: [skills/fast-slow-routing-v2, skills/in-car-media]}}
"""
TRIGGERS = """
name: triggers
dataset: {file: cases.csv, mapping: mapping-triggers.yaml, name: demo-triggers}
cases: {limit: 30}
graders: [label_match, read_skill]
arms:
  injected: {agent: builtin, skill: skills/fast-slow-routing-v2}
  plugin: {agent: builtin, skill_mode: offered, skills: [skills/fast-slow-routing-v2, skills/in-car-media]}
"""
CASE_IDS = ", ".join(f"FS-{i:04d}" for i in range(1, 41))

EXAMPLES: dict[str, Example] = {
    "README.md:import abbench\ninfo": Example(setup=("files",), check="assert info.n_cases == 401, info"),
    "README.md:import abbench\nsnap": Example(
        setup=("files", "snapshots"),
        prelude="import abbench\nv1 = abbench.load_snapshot('{v1}')\nv2 = abbench.load_snapshot('{v2}')",
        # the README's skill is the reader's: the demo's v1 has no "规则" heading, and its hash is its own
        swap={"fast-slow-routing@1a2b3c": "{v1}", "SKILL.md#规则": "SKILL.md#通用规则"},
    ),
    "README.md:from abbench.stats": Example(
        prelude=(
            "control_rounds = [[1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]] * 5\n"
            "treatment_rounds = [[1, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 0], [1, 1, 1], [0, 1, 0]] * 5\n"
            "domains = ['nav', 'media', 'car'] * 10\n"
            "control_pass = [sum(r) * 2 > 3 for r in control_rounds]\n"
            "treatment_pass = [sum(r) * 2 > 3 for r in treatment_rounds]"
        ),
    ),
    "README.md:import abbench\nm": Example(
        setup=("files", "routing", "triggers"),
        prelude="user_id = 'u-42'",
        swap={
            '"c017"': '"FS-0017"',
            "store.runs.table(exp_id)": "abbench.open_store().runs.table(abbench.open_store().experiments.get('routing-v2').id)",
        },
    ),
    "README.md:abbench.record_runs(store": Example(
        setup=("files", "demo", "ci-routing"), prelude="import abbench\nstore = None"
    ),
    "README.md:from abbench.widgets": Example(
        setup=("files", "demo", "notebooks"), check="assert run.spec()"
    ),
    "README.md:from abbench.export": Example(setup=("files", "routing"), slow=True),
    "docs/agents.md:from abbench.agents import make_agent": Example(check="assert agent is not None"),
    "docs/import-results.md:import abbench": Example(
        setup=("files", "demo"), check="assert summary.recorded == 2 and summary.unchanged == 0, summary"
    ),
}
NOT_RUN: dict[str, str] = {
    "docs/grading.md:import abbench": "asks a judge model (gpt-4o-mini) over the network: needs an endpoint and a key",
    "docs/service.md:from abbench.client import Client": "talks to a running `abbench serve` with an API key",
}


def test_every_python_example_is_run_or_said_why_not():
    assert len(BLOCKS) >= 10
    named = [key for key in (*EXAMPLES, *NOT_RUN)]
    unknown = [b.split("\n")[0] for b in BLOCKS if not any(b.startswith(key) for key in named)]
    assert not unknown, f"examples neither run nor said why not: {unknown}"
    vague = {key: len(_block(key)) for key in named if len(_block(key)) != 1}
    assert not vague, f"keys that name no example, or several (say more of the code): {vague}"


def _setup(folder: Path, env: dict[str, str], steps: tuple[str, ...]) -> dict[str, str]:
    """Prepare `folder` (cwd) and its store for an example; the values its prelude and swaps name."""
    names: dict[str, str] = {}

    def abbench(*args: str) -> str:
        out = run_abbench(*args, cwd=folder, **env)
        assert out.returncode == 0, (args, out.stdout, out.stderr)
        return out.stdout

    for step in steps:
        if step == "files":
            shutil.copy(DEMO / "cases.csv", folder / "cases.csv")
            shutil.copy(DEMO / "mapping-csv.yaml", folder / "routing.yaml")
            shutil.copy(DEMO / "mapping-triggers.yaml", folder / "mapping-triggers.yaml")
            shutil.copytree(DEMO / "skills" / "fast-slow-routing-v1", folder / "skills" / "fast-slow-routing")
            for skill in ("fast-slow-routing-v2", "in-car-media"):
                shutil.copytree(DEMO / "skills" / skill, folder / "skills" / skill)
            (folder / "gate.yaml").write_text(
                "baseline: control\ncandidate: treatment\nrules: ['accuracy >= 0']\n"
            )
        elif step == "demo":
            abbench("import", "cases.csv", "--mapping", "routing.yaml", "--name", "demo")
        elif step == "snapshots":
            for name, path in (("v1", "skills/fast-slow-routing"), ("v2", "skills/fast-slow-routing-v2")):
                found = re.search(r"([\w-]+@[0-9a-f]{12})", abbench("snapshot", path))
                assert found, name
                names[name] = found.group(1)
        elif step == "routing":
            abbench("import", "cases.csv", "--mapping", "routing.yaml", "--name", "routing")
            for name in ("routing-v1", "routing-v2"):
                (folder / f"{name}.yaml").write_text(ROUTING_V.format(name=name, ids=CASE_IDS))
                abbench("run", f"{name}.yaml")
        elif step == "triggers":
            (folder / "triggers.yaml").write_text(TRIGGERS)
            abbench("run", "triggers.yaml")
        elif step == "ci-routing":  # the experiment docs/import-results.md creates, run as the page says
            _run(folder, env, _code(_block("docs/import-results.md:import abbench")[0]))
        elif step == "notebooks":  # a notebook two levels down, the skill path relative to it
            (folder / "notebooks").mkdir()
            shutil.copytree(DEMO / "skills", folder / "data" / "demo" / "skills")
        else:  # pragma: no cover
            raise AssertionError(step)
    return names


def _code(block: str) -> str:
    """The code of a block (after its ``page:``)."""
    return block.split(":", 1)[1]


def _run(
    folder: Path, env: dict[str, str], code: str, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd or folder, env=subprocess_env(**env), capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, (
        f"the example failed in a fresh interpreter:\n{code}\n---\n{out.stderr[-3000:]}"
    )
    return out


@pytest.mark.parametrize(
    "key",
    [pytest.param(k, marks=pytest.mark.slow) if e.slow else k for k, e in EXAMPLES.items()],
    ids=[k.split("\n")[0] for k in EXAMPLES],
)
def test_a_documented_example_runs_in_a_fresh_interpreter(key, tmp_path):
    example = EXAMPLES[key]
    folder = tmp_path / "work"
    folder.mkdir()
    env = {"ABBENCH_STORE": str(tmp_path / "store"), "TQDM_DISABLE": "1"}
    names = _setup(folder, env, example.setup)
    (block,) = _block(key)
    code = _code(block)
    for old, new in example.swap.items():
        assert old in code, f"{key}: the stand-in {old!r} is no longer in the example"
        code = code.replace(old, new.format(**names))
    prelude = example.prelude.format(**names)
    script = "\n".join(part for part in (prelude, textwrap.dedent(code), example.check) if part)
    cwd = folder / "notebooks" if "notebooks" in example.setup else folder
    _run(folder, env, script, cwd=cwd)

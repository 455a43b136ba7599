"""Offered skills for command agents, with a real child process: each run's own workspace, the skills
placed where the CLI discovers them, activation read from the SKILL.md files it read, and a no-skill
arm whose workspace holds no skill to read."""

from __future__ import annotations

import json
import sys

import pytest

from abbench.errors import ExperimentError
from abbench.runner import create_experiment, run_experiment

# A stand-in CLI: it lists the skills folder it was told about, reads the SKILL.md of the skill
# named in the query (if any), tries the paths a skill would sit at, and prints its answer as JSON.
CLI = r"""
import json, os, sys
case = json.load(sys.stdin)
workspace = os.getcwd()
skills_dir = os.environ.get("SKILLS_DIR", "skills")
read, tried = [], {}
for rel in ("skill/SKILL.md", skills_dir):
    tried[rel] = os.path.exists(os.path.join(workspace, rel))
root = os.path.join(workspace, skills_dir)
for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
    if name.replace("-", " ") in case["input"].lower().replace("-", " "):
        path = os.path.join(root, name, "SKILL.md")
        open(path, encoding="utf-8").read()
        read.append(os.path.relpath(path, workspace))
if os.environ.get("FAIL_AFTER_READ"):
    print(json.dumps({"files_read": read}))
    sys.exit(3)
print(json.dumps({"prediction": "true" if read else "false", "files_read": read,
                  "tried": tried, "workspace": workspace}))
"""


@pytest.fixture
def cli(tmp_path):
    path = tmp_path / "cli.py"
    path.write_text(CLI, encoding="utf-8")
    return path


def _definition(realdata, tmp_path, arms):
    rows = [
        {"query": "write a 3P update in the internal comms style", "should_trigger": True},
        {"query": "apply the brand guidelines to my slides", "should_trigger": False},
        {"query": "what is a semaphore", "should_trigger": False},
    ]
    data = tmp_path / "triggers.json"
    data.write_text(json.dumps(rows), encoding="utf-8")
    return {
        "name": "offered-command",
        "dataset": {
            "file": str(data),
            "mapping": {"recipe": "skill-creator-triggers", "defaults": {"expected_skill": "internal-comms"}},
        },
        "retries": 0,
        "concurrency": 3,
        "arms": arms,
    }


def _arm(cli, **more):
    return {"agent": "command", "argv": [sys.executable, str(cli)], **more}


def test_offered_skills_sit_in_each_runs_own_workspace(store, realdata, tmp_path, cli):
    skills = [str(realdata / "skills" / n) for n in ("internal-comms", "brand-guidelines")]
    arms = {
        "none": _arm(cli),
        "plugin": _arm(cli, skills=skills, skill_mode="offered", env={"SKILLS_DIR": ".claude/skills"}),
    }
    arms["plugin"]["skills_dir"] = ".claude/skills"
    exp = create_experiment(_definition(realdata, tmp_path, arms), store=store)
    run_experiment(exp.id, store=store)
    runs = {(r.arm, r.case_idx): r for r in store.runs.records(exp.id)}
    said = {k: json.loads(r.output.raw_output) for k, r in runs.items()}
    assert len({s["workspace"] for s in said.values()}) == len(runs)  # no shared discovery folder
    for i in range(3):
        none = runs[("none", i)]
        assert said[("none", i)]["tried"] == {"skill/SKILL.md": False, "skills": False}
        assert none.output.files_read == () and none.skills_loaded is None
    assert [runs[("plugin", i)].skills_loaded for i in range(3)] == [
        ("internal-comms",),
        ("brand-guidelines",),
        (),
    ]
    plugin = runs[("plugin", 0)]
    assert plugin.skills_offered == ("internal-comms", "brand-guidelines")
    assert plugin.first_load_turn == 1 and runs[("plugin", 2)].first_load_turn is None
    assert plugin.output.files_read == (".claude/skills/internal-comms/SKILL.md",)  # as it said
    assert said[("plugin", 0)]["tried"] == {"skill/SKILL.md": False, ".claude/skills": True}


def test_a_failed_command_is_an_execution_failure(store, realdata, tmp_path, cli):
    skill = str(realdata / "skills" / "internal-comms")
    arms = {"x": _arm(cli, skill=skill, skill_mode="offered", env={"FAIL_AFTER_READ": "1"})}
    exp = create_experiment(_definition(realdata, tmp_path, arms), store=store)
    run_experiment(exp.id, store=store)
    for run in store.runs.records(exp.id):
        assert run.execution_failed and run.activated is None
        assert run.skills_offered == ("internal-comms",)


def test_a_skills_dir_outside_the_workspace_is_refused(store, realdata, tmp_path, cli):
    skill = str(realdata / "skills" / "internal-comms")
    arms = {"x": _arm(cli, skill=skill, skill_mode="offered", skills_dir="../discovery")}
    with pytest.raises(ExperimentError, match="inside the run's workspace"):
        create_experiment(_definition(realdata, tmp_path, arms), store=store)


# A CLI that prints JSON lines, as generic-jsonl reads them: a read event per file, then the text.
JSONL_CLI = r"""
import json, os, sys
case = json.load(sys.stdin)
root = os.path.join(os.getcwd(), "skills")
for name in sorted(os.listdir(root)):
    if name.replace("-", " ") in case["input"].lower():
        path = os.path.join(root, name, "SKILL.md")
        open(path, encoding="utf-8").read()
        print(json.dumps({"type": "read", "path": path}))
print(json.dumps({"type": "final", "text": json.dumps({"prediction": "true"})}))
"""


def test_a_preset_cli_loads_are_read_from_its_events(store, realdata, tmp_path):
    script = tmp_path / "jsonl_cli.py"
    script.write_text(JSONL_CLI, encoding="utf-8")
    skills = [str(realdata / "skills" / n) for n in ("internal-comms", "brand-guidelines")]
    arm = {
        "agent": "command",
        "preset": "generic-jsonl",
        "argv": [sys.executable, str(script)],
        "paths": {"text": "[type=final].text", "files_read": "[type=read].path"},
        "skills": skills,
        "skill_mode": "offered",
    }
    exp = create_experiment(_definition(realdata, tmp_path, {"x": arm}), store=store)
    run_experiment(exp.id, store=store)
    runs = sorted(store.runs.records(exp.id), key=lambda r: r.case_idx)
    assert [r.skills_loaded for r in runs] == [("internal-comms",), ("brand-guidelines",), ()]
    assert runs[0].output.files_read == ("internal-comms/SKILL.md",)

"""What a message tells a person to do next, worded for each view (`abbench.errors.Action`).

One function per action, so a command, its Python call and its server request are written once, and
tests/test_actions.py checks every form against the real CLI commands, `abbench`'s names and the
server's routes.
"""

from __future__ import annotations

import shlex
from urllib.parse import quote

from abbench.errors import Action


def _arg(ref: object) -> str:
    """`ref` as a Python argument: ``3`` for an id (``#3`` too), else the quoted name."""
    text = str(ref).strip()
    return text.lstrip("#") if text.lstrip("#").isdigit() else repr(text)


def _path(ref: object) -> str:
    """`ref` in a server path: the id, or the name (URL-quoted)."""
    return quote(str(ref).strip().lstrip("#"), safe="")


def _shell(ref: object) -> str:
    """`ref` as one shell word (``'#3'``: a bare ``#`` starts a comment; a name may hold spaces)."""
    return shlex.quote(str(ref).strip())


def _on_experiment(ref: object, function: str, command: str, route: str, flag: str | None = None) -> Action:
    """`function` on one experiment in Python, `command` on the command line, ``POST`` to its `route` on
    the server; `flag` (``failed``) is a keyword set to True, an option and a query parameter alike."""
    return Action(
        f"abbench.{function}({_arg(ref)}" + (f", {flag}=True)" if flag else ")"),
        f"abbench {command} {_shell(ref)}" + (f" --{flag}" if flag else ""),
        f"POST /api/experiments/{_path(ref)}/{route}" + (f"?{flag}=true" if flag else ""),
    )


def list_experiments() -> Action:
    """List the experiments."""
    return Action("abbench.list_experiments()", "abbench experiments", "GET /api/experiments")


def create_experiment() -> Action:
    """Create an experiment from a definition."""
    return Action(
        "abbench.create_experiment('FILE.yaml')", "abbench create FILE.yaml", "POST /api/experiments"
    )


def clone_on_dataset(ref: object, dataset: str) -> Action:
    """Clone an experiment onto another dataset (the CLI's clone keeps the dataset: a definition does it)."""
    return Action(
        f"abbench.clone_experiment({_arg(ref)}, name='NEW', changes={{'dataset': {dataset!r}}})",
        f"abbench create FILE.yaml (a definition with dataset: {dataset})",
        f"POST /api/experiments (a definition with dataset: {dataset})",
    )


def run_experiment(ref: object) -> Action:
    """Run an experiment's remaining work (here, or in the server's pool)."""
    return _on_experiment(ref, "run_experiment", "run", "start")


def resume_experiment(ref: object, *, arm: str | None = None, budget: float | None = None) -> Action:
    """Resume a paused experiment (with a new budget)."""
    py = (
        [_arg(ref)]
        + ([f"arm={arm!r}"] if arm else [])
        + ([f"budget={budget:.2f}"] if budget is not None else [])
    )
    cli = (
        f"abbench resume {_shell(ref)}"
        + (f" --arm {_shell(arm)}" if arm else "")
        + (f" --budget {budget:.2f}" if budget is not None else "")
    )
    http = f"POST /api/experiments/{_path(ref)}/resume" + (
        f"?budget={budget:.2f}" if budget is not None else ""
    )
    return Action(f"abbench.resume_experiment({', '.join(py)})", cli, None if arm else http)


def resume_with_tokens(ref: object, max_tokens: int | None, *, arm: str | None = None) -> Action:
    """Resume a paused experiment with a new token limit."""
    py = [_arg(ref)] + ([f"arm={arm!r}"] if arm else []) + [f"max_tokens={max_tokens}"]
    cli = (
        f"abbench resume {_shell(ref)}"
        + (f" --arm {_shell(arm)}" if arm else "")
        + f" --max-tokens {max_tokens}"
    )
    return Action(f"abbench.resume_experiment({', '.join(py)})", cli)


def cancel_experiment(ref: object) -> Action:
    """Cancel an experiment."""
    return _on_experiment(ref, "cancel_experiment", "cancel", "cancel")


def retry_runs(ref: object, which: str = "failed") -> Action:
    """Run again an experiment's failed (``failed``) or cancelled (``cancelled``) runs."""
    return _on_experiment(ref, "retry_runs", "retry", "retry", which)


def regrade_failed(ref: object) -> Action:
    """Grade again the runs no grader reached a verdict on."""
    return _on_experiment(ref, "regrade_experiment", "regrade", "regrade", "failed")


def disagreements(ref: object) -> Action:
    """List the cases graders or arms disagree on."""
    return Action(f"abbench.disagreements({_arg(ref)})", f"abbench disagreements {_shell(ref)}")


def draw_review_sample(ref: object, size: object = 100, seed: object = 1) -> Action:
    """Draw a random sample of judged runs for people to review."""
    return Action(
        f"abbench.review.draw_review_sample({_arg(ref)}, {size}, seed={seed})",
        f"abbench review {_shell(ref)} --sample {size} --seed {seed}",
    )


def evaluate_gate(ref: object, rules: str = "FILE") -> Action:
    """Evaluate an experiment's gate with the rules of a gate file (the server takes them inline)."""
    return Action(
        f"abbench.evaluate_gate({_arg(ref)}, {rules!r})",
        f"abbench gate {_shell(ref)} --rules {rules}",
        f"POST /api/experiments/{_path(ref)}/gate (the rules inline)",
    )


def list_snapshots() -> Action:
    """List the stored skill snapshots."""
    return Action("abbench.open_store().snapshots.all()", "abbench snapshots", "GET /api/skill-snapshots")


def snapshot_skill(folder: str = "DIR") -> Action:
    """Snapshot a skill folder."""
    return Action(f"abbench.snapshot_skill({folder!r})", f"abbench snapshot {folder}")


def import_dataset(path: str = "FILE", store: object = None) -> Action:
    """Import a data file as a dataset (into the store at `store`: a new one is made there)."""
    if store is None:
        return Action(f"abbench.import_dataset({path!r})", f"abbench import {path}", "POST /api/datasets")
    return Action(
        f"abbench.import_dataset({path!r}, store={str(store)!r})",
        f"abbench --store {_shell(store)} import {path}",
    )


def save_profile(path: str = "FILE", name: str = "NAME") -> Action:
    """Import a file and save the mapping profile it used."""
    return Action(
        f"abbench.import_dataset({path!r}, save_profile_as={name!r})",
        f"abbench import {path} --save-profile {name}",
    )


def create_key(owner: str = "OWNER") -> Action:
    """Make an API key for the server."""
    return Action(f"abbench.open_store().keys.create({owner!r})", f"abbench keys create {owner}")


def list_keys() -> Action:
    """List the server's API keys."""
    return Action("abbench.open_store().keys.all()", "abbench keys list")

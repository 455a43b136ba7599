"""What a server executes: only the agents and graders its operator allowed, whoever made the experiment.

A definition sent over HTTP is checked when it is created (`abbench.server._owned`); an experiment the
CLI or a notebook created on the same store never was. The runner pool checks every experiment it is
asked to run, resume or re-grade against the same rules, so ``abbench serve`` never executes a
``python`` or ``command`` agent, a ``module:function`` grader or a judge it was not started to allow.
"""

from __future__ import annotations

from typing import Any

from abbench.server._settings import ServerSettings
from abbench.store import Experiment


def _grader_kind(spec: Any) -> str:
    if isinstance(spec, dict):
        return str(spec.get("type") or spec.get("grader") or "")
    return str(spec)


def grader_refusal(spec: Any, settings: ServerSettings) -> str | None:
    """Why this server does not run the grader `spec`, or None when it may."""
    kind = _grader_kind(spec)
    if ":" in kind:
        return f"grader {kind!r} is a function on the server's path, which a server never runs"
    if "judge" in kind and not settings.allow_judges:
        return (
            f"grader {kind!r} calls a model, which this server does not allow (abbench serve --allow-judges)"
        )
    return None


def refusal(exp: Experiment, settings: ServerSettings, *, regrade: bool = False) -> str | None:
    """Why this server does not run `exp` (an arm's agent or a grader it was not started to allow), or
    None. A re-grade runs the graders only, so only they are checked then.
    """
    problems = []
    if not regrade:
        for arm in exp.arms:
            if arm.agent not in settings.agents:
                problems.append(f"arm {arm.name!r} runs the {arm.agent!r} agent")
    problems += [p for p in (grader_refusal(g, settings) for g in exp.settings.graders) if p]
    if not problems:
        return None
    allowed = ", ".join(sorted(settings.agents))
    return (
        f"experiment {exp.name!r} (#{exp.id}) cannot run on this server: {'; '.join(problems)}. This server "
        f"runs the agents {allowed} only (abbench serve --agent NAME allows another); run it where it was "
        f"made instead (abbench run {exp.id})"
    )

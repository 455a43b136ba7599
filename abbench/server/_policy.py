"""What a caller may name over HTTP: no file or folder on the server, and only what its operator allowed.

A definition, mapping profile, grader or gate that arrives over HTTP is checked here before anything
reads it. Every field of every model that reaches the server is classified in `FIELDS` (and every
option of every grader and agent in `GRADER_OPTIONS` and `AGENT_SETTINGS`): a test fails when one is
added without a class, so nothing new slips through unread.

- ``plain``: text, numbers or names that point at nothing on the server.
- ``owned``: a reference resolved among the caller's own objects (`abbench.server._owned`).
- ``path``: a file or folder of the server's. Refused, whatever it names: one answer, the same
  words for a file that exists, one that does not, a folder or a file that does not parse, so the
  answer is no oracle of what the server holds. Nothing is read.
- ``inline``: a value given inline, or else a file (a schema, a price table): refused as a file
  unless it is inline.
- ``endpoint``: a model endpoint and the environment variables its requests carry (``base_url``,
  ``api_key_env``, ``${VAR}`` in headers), checked against `ServerSettings.endpoints` before any
  request leaves.
- ``server``: how the server itself executes (``executor: dask``, a Dask scheduler): never a
  caller's to choose.
- ``nested``: a model of its own (or a list or table of them), classified field by field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from abbench.errors import UsageError
from abbench.llm import resolve_endpoint
from abbench.server._problems import Problem
from abbench.server._settings import EndpointRule, ServerSettings

PLAIN, OWNED, PATH, INLINE, ENDPOINT, SERVER, NESTED = (
    "plain",
    "owned",
    "path",
    "inline",
    "endpoint",
    "server",
    "nested",
)

FIELDS: dict[str, dict[str, str]] = {
    "ExperimentSpec": {
        "name": PLAIN,
        "dataset": OWNED,  # a fingerprint or name of the caller's; `{file: ...}` (DatasetSource) refused
        "arms": NESTED,
        "rounds": PLAIN,
        "graders": NESTED,  # GRADER_OPTIONS
        "concurrency": PLAIN,
        "timeout_s": PLAIN,
        "retries": PLAIN,
        "priority": PLAIN,
        "executor": SERVER,
        "dask": SERVER,
        "tags": PLAIN,
        "cases": NESTED,
        "owner": PLAIN,  # must be the key's owner
        "description": PLAIN,
        "gate": PATH,  # a gate file; rules given inline (a list or a mapping) are plain
        "decision": NESTED,
        "seed": PLAIN,
        "cache": PLAIN,
        "budget": NESTED,
        "stopping": NESTED,
        "judges": PLAIN,  # two grader names of the definition, and how the second counts
    },
    "DatasetSource": dict.fromkeys(
        ("file", "mapping", "name", "sheet", "header_row", "encoding", "recipe", "skip_invalid"), PATH
    ),  # the whole `dataset: {file: ...}` form reads the server's disk
    "ArmSpec": {
        "agent": PLAIN,  # one of `ServerSettings.agents`
        "model": PLAIN,
        "skill": OWNED,
        "skills": OWNED,
        "skill_mode": PLAIN,
        "git_ref": PATH,  # snapshots a folder of the server's at a commit
        "params": NESTED,  # AGENT_SETTINGS
        "cache": PLAIN,
        "budget": NESTED,
    },
    "CaseSelection": dict.fromkeys(("ids", "domains", "labels", "tag", "limit", "sample", "seed"), PLAIN),
    "BudgetSpec": dict.fromkeys(("max_cost", "max_tokens"), PLAIN),
    "DecisionSpec": dict.fromkeys(("baseline", "candidate", "policy", "margin", "min_cases"), PLAIN),
    "StoppingSpec": dict.fromkeys(("rule", "alpha", "margin", "min_cases", "check_every"), PLAIN),
    "DaskSpec": dict.fromkeys(("scheduler", "local", "shared_store", "connect_timeout_s"), SERVER),
    "MappingProfile": {
        "name": PLAIN,
        "version": PLAIN,
        "description": PLAIN,
        "recipe": PLAIN,  # a built-in recipe's name
        "read": NESTED,
        "fields": NESTED,
        "defaults": PLAIN,
        "label_map": PLAIN,
        "label_set": PLAIN,
        "expected_kind": PLAIN,
        "normalize_input": PLAIN,
        "splits": PLAIN,
        "lookups": NESTED,
        "shape": NESTED,
        "conversation": NESTED,
        "roles": PLAIN,  # a speaker's name -> user or assistant
    },
    # keys and JSON paths inside the imported file (``turns``, ``speaker``, ``$key``), never a file of the server's
    "Conversation": dict.fromkeys(("turns", "speaker", "text", "id"), PLAIN),
    "Source": dict.fromkeys(
        (
            "column",
            "path",  # a JSON path into the row, not a file
            "const",
            "template",
            "concat",
            "join",
            "sep",
            "lookup",
            "key",
            "object",
            "columns",
            "unmapped",
            "match",
        ),
        PLAIN,
    ),
    "Lookup": {"file": PATH, "table": PLAIN, "default": PLAIN, "normalize": PLAIN},
    "ReadSpec": dict.fromkeys(("format", "sheet", "header_row", "encoding", "delimiter", "quoting"), PLAIN),
    "Shape": dict.fromkeys(("format", "columns", "splits"), PLAIN),
    "Gate": dict.fromkeys(("rules", "name", "description", "baseline", "candidate", "min_coverage"), PLAIN),
    "GateRule": dict.fromkeys(
        ("metric", "op", "value", "severity", "name", "description", "allow_missing", "margin"), PLAIN
    ),
    # rules inline: load_gate reads no file then; source only names them in messages
    "GateIn": {"rules": PLAIN, "arms": PLAIN, "vs": OWNED, "source": PLAIN, "cluster": PLAIN},
    "CompareIn": {
        "experiment": OWNED,
        "vs": OWNED,
        **dict.fromkeys(("a", "b", "all", "grader", "outcome", "cluster", "confidence", "alpha"), PLAIN),
        **dict.fromkeys(("power", "margin", "iterations", "seed", "bootstrap", "details"), PLAIN),
    },
    "ReviewIn": dict.fromkeys(("case_id", "verdict", "note", "arm", "run_id"), PLAIN),
    "TryIn": {
        "input": PLAIN,
        "skill": OWNED,
        "agent": PLAIN,
        "model": PLAIN,
        "expected": PLAIN,
        "labels": PLAIN,
    },
}
"""Every field of every model a request's body reaches, by model, with its class."""

_JUDGE = {
    "model": PLAIN,
    "base_url": ENDPOINT,
    "api_key_env": ENDPOINT,
    "timeout_s": PLAIN,
    "retries": PLAIN,
    "backoff_s": PLAIN,
    "temperature": PLAIN,
    "max_tokens": PLAIN,
    "seed": PLAIN,
    "prices": INLINE,
    "json_mode": PLAIN,
    "stream": PLAIN,
    "cache": PLAIN,
}
_JUDGED = ("rubric", "output_format", "include", "instructions", "anonymise", "name")
_TRAJECTORY = (
    "min_score",
    "pass_threshold",
    "include",
    "instructions",
    "anonymise",
    "trajectory_budget",
    "name",
)

GRADER_OPTIONS: dict[str, dict[str, str]] = {
    "label_match": {"name": PLAIN},
    "exact": dict.fromkeys(("value", "field", "case_sensitive", "name"), PLAIN),
    "contains": dict.fromkeys(("value", "field", "case_sensitive", "require", "name"), PLAIN),
    "regex": dict.fromkeys(("pattern", "field", "flags", "full_match", "negate", "name"), PLAIN),
    "json_schema": {"schema": INLINE, "field": PLAIN, "extract": PLAIN, "engine": PLAIN, "name": PLAIN},
    "numeric": dict.fromkeys(("tolerance", "relative", "value", "pick", "field", "name"), PLAIN),
    "read_skill": dict.fromkeys(("files", "min_reads", "count_skill_md", "name"), PLAIN),
    "cited_evidence": dict.fromkeys(("min_refs", "all_must_resolve", "name"), PLAIN),
    "max_tool_calls": dict.fromkeys(("n", "name"), PLAIN),
    "max_tokens": dict.fromkeys(("n", "which", "name"), PLAIN),
    "recorded": {"name": PLAIN, "grader": PLAIN},
    "llm_judge": {**dict.fromkeys((*_JUDGED, "pass_threshold", "trajectory_budget"), PLAIN), **_JUDGE},
    "pairwise_judge": {
        **dict.fromkeys(
            (
                *_JUDGED,
                "arms",
                "both_orders",
                "mask",
                "mask_patterns",
                "identities",
                "mask_paths",
                "tie_when_both_correct",
            ),
            PLAIN,
        ),
        **_JUDGE,
    },
    "task_completion": {**dict.fromkeys(_TRAJECTORY, PLAIN), **_JUDGE},
    "trace_quality": {**dict.fromkeys(_TRAJECTORY, PLAIN), **_JUDGE},
    "skill_instruction_following": {
        **dict.fromkeys(
            (*_TRAJECTORY[2:], "min_followed", "section_chars", "max_sections"),
            PLAIN,
        ),
        **_JUDGE,
    },
    "skill_following_stand_in": dict.fromkeys(("min_followed", "max_sections", "name"), PLAIN),
}
"""Every option of every grader a definition may name, with its class (``type`` aside)."""

JUDGES = ("llm_judge", "pairwise_judge", "task_completion", "trace_quality", "skill_instruction_following")
"""The graders that call a model (`ServerSettings.allow_judges`)."""

AGENT_SETTINGS: dict[str, dict[str, str]] = {
    "builtin": dict.fromkeys(
        (
            "latency_jitter",
            "price_in_per_mtok",
            "price_out_per_mtok",
            "seed",
            "top_sections",
            "labels",
            "activation_threshold",
        ),
        PLAIN,
    ),
    "external": {},  # any settings, kept as the arm's description and never read: plain
    "openai": {
        **dict.fromkeys(
            (
                "extra_body",
                "max_retries",
                "max_tokens",
                "max_turns",
                "model",
                "response_format",
                "retry",
                "seed",
                "stream",
                "temperature",
                "timeout_s",
            ),
            PLAIN,
        ),
        "api_key_env": ENDPOINT,
        "base_url": ENDPOINT,
        "headers": ENDPOINT,
        "prices": INLINE,
    },
}
"""Every setting of the agents a caller may use without running code on the server, with its class.
``command`` and ``python`` run code the caller chose: whoever allows them (``--agent``) trusts
their callers with the machine, and their settings are theirs to choose."""

_INSTEAD = {
    "dataset": "upload the file (POST /api/datasets) and name the dataset by its fingerprint or name",
    "gate": "give the rules inline (gate: {rules: [...]}) or send them to POST /api/experiments/{id}/gate",
    "git_ref": "upload the skill as it was at that commit (POST /api/skill-snapshots, or its git URL)",
    "lookup": "give the table inline (lookups: {NAME: {table: {KEY: VALUE, ...}}})",
    "schema": "give the schema inline (a mapping, or JSON text)",
    "prices": "give the prices inline (prices: {input: 2.5, output: 10}, USD per million tokens)",
}


def refused_path(where: str, kind: str) -> Problem:
    """The one answer to a field that names a file or folder on the server, whatever it names.

    It never says whether the path exists, is a folder or parses, nor echoes it: the same words for
    every path, so the answer tells the caller nothing about the server's disk.
    """
    return Problem(
        422,
        "names a server file",
        f"{where} names a file or folder; over HTTP nothing is read from the server's disk: {_INSTEAD[kind]}",
    )


def _names_file(option: str, value: Any) -> bool:
    """Whether an ``inline`` option's value is a file's name: prices given as text always are (a
    price file), a schema when it is not JSON text."""
    if not isinstance(value, str):
        return False
    return option == "prices" or not value.lstrip().startswith(("{", "["))


def _refused(detail: str) -> Problem:
    return Problem(422, "not allowed on this server", detail)


def check_endpoint(
    where: str,
    settings: ServerSettings,
    base_url: Any = None,
    api_key_env: Any = None,
    headers: Any = None,
) -> None:
    """Refuse (422) an endpoint or a key variable the operator did not allow for it.

    The URL checked is the one the client will call (`abbench.llm.resolve_endpoint`: the caller's
    ``base_url``, else the server's default), and the variables are every one whose value its
    requests would carry (the key, and ``${VAR}`` in headers). Nothing of the server's environment
    is said: a default endpoint is not named, and no variable's value or presence is checked.
    """
    if headers is not None and not isinstance(headers, Mapping):
        raise _refused(f"{where}: headers must be a mapping of header name to value")
    for name, value in (("base_url", base_url), ("api_key_env", api_key_env)):
        if value is not None and not isinstance(value, str):
            raise _refused(f"{where}: {name} must be text")
    try:
        endpoint = resolve_endpoint(base_url, api_key_env, headers)
    except UsageError as exc:
        raise _refused(f"{where}: {exc}") from None
    url = endpoint.base_url
    shown = url if base_url else "the server's default endpoint (no base_url given)"
    rules = settings.endpoints
    if not any(rule.matches(url) for rule in rules):
        raise _refused(
            f"{where}: {shown} is not an endpoint this server lets callers use ({_allowed(rules)}); "
            "whoever runs the server can allow it: abbench serve --endpoint URL (no key) or "
            "--key-env NAME=URL"
        )
    for var in endpoint.env:
        if not any(rule.key_env == var and rule.matches(url) for rule in rules):
            said = "the key variable" if var == endpoint.key_env else "the header variable"
            keys = sorted({r.key_env for r in rules if r.key_env and r.matches(url)})
            usable = f"usable there: {', '.join(keys)}" if keys else "no key variable is allowed there"
            raise _refused(
                f"{where}: {said} {var} may not be sent to {shown} ({usable}); whoever runs the server "
                f"can allow it: abbench serve --key-env {var}=URL"
            )


def _allowed(rules: Iterable[EndpointRule]) -> str:
    shown = [str(r) for r in rules]
    return "allowed: " + ", ".join(shown) if shown else "none is allowed"


def check_arm(where: str, agent: str, params: Mapping[str, Any], settings: ServerSettings) -> None:
    """Refuse an agent the server does not allow, or a setting that names a file or a refused endpoint."""
    if agent not in settings.agents:
        raise _refused(
            f"{where}: agent {agent!r} is not allowed on this server (allowed: "
            f"{', '.join(sorted(settings.agents))}); whoever runs it can allow more with abbench serve --agent"
        )
    classes = AGENT_SETTINGS.get(agent)
    if classes is None:
        return  # command, python or a registered adapter: trusted with the machine by whoever allowed it
    if _names_file("prices", params.get("prices")):
        raise refused_path(f"{where}: prices", "prices")
    if agent == "openai":
        check_endpoint(
            where, settings, params.get("base_url"), params.get("api_key_env"), params.get("headers")
        )


def check_grader(where: str, grader: Any, settings: ServerSettings) -> None:
    """Refuse a grader that runs a function of the server's, calls a model the server does not allow,
    or reads a file of the server's."""
    options = dict(grader) if isinstance(grader, Mapping) else {}
    kind = str(options.pop("type", None) or options.pop("grader", None) or "") if options else str(grader)
    if ":" in kind:
        raise _refused(
            f"{where}: grader {kind!r} is a function on the server's path; over HTTP use a named grader"
        )
    if kind in JUDGES and not settings.allow_judges:
        raise _refused(
            f"{where}: grader {kind!r} calls a model, which this server does not allow over HTTP "
            "(abbench serve --allow-judges); use rule graders"
        )
    classes = GRADER_OPTIONS.get(kind)
    if classes is None:  # a grader registered by other code: its options are not classified here
        raise _refused(
            f"{where}: grader {kind!r} is not one this server can check over HTTP; use one of "
            f"{', '.join(sorted(GRADER_OPTIONS))}"
        )
    for option, value in options.items():
        if classes.get(option) == INLINE and _names_file(option, value):
            raise refused_path(f"{where}: {option}", option)
    if kind in JUDGES:
        check_endpoint(where, settings, options.get("base_url"), options.get("api_key_env"))


def check_definition(spec: Any, settings: ServerSettings) -> None:
    """Refuse a validated definition (`abbench.store.ExperimentSpec`) that names a server file,
    chooses how the server executes, or uses an agent, grader or endpoint the server does not allow.

    Its dataset and skills are resolved among the caller's own objects before (`abbench.server._owned`).
    """
    if not isinstance(spec.dataset, str):
        raise refused_path("dataset", "dataset")
    if isinstance(spec.gate, str):
        raise refused_path("gate", "gate")
    if spec.executor == "dask" or spec.dask is not None:
        raise _refused(
            "executor: dask and dask: choose where the server runs its work, which is its operator's choice; "
            "leave them out (the server runs experiments in its own runner pool)"
        )
    check_execution(spec, settings)


def check_execution(spec: Any, settings: ServerSettings, *, arms: bool = True) -> None:
    """Refuse a definition whose arms or graders the server may not execute (checked again when a
    stored experiment is started, resumed, retried, re-graded or recorded over HTTP: an experiment
    created from the command line may use anything its local user could). `arms` False checks the
    graders alone (recorded outcomes execute no arm)."""
    for name, arm in spec.arms.items() if arms else ():
        where = f"arm {name!r}"
        if arm.git_ref and not getattr(arm, "snapshot", None):  # a stored arm keeps the snapshot it made
            raise refused_path(f"{where}: git_ref", "git_ref")
        check_arm(where, arm.agent, {"model": arm.model, **arm.params}, settings)
    for i, grader in enumerate(spec.graders):
        check_grader(f"graders[{i}]", grader, settings)


def check_profile(profile: Any) -> None:
    """Refuse a mapping profile (`abbench.dataset.MappingProfile`) whose lookup names a file."""
    for name, lookup in profile.lookups.items():
        if lookup.file is not None:
            raise refused_path(f"lookups.{name}.file", "lookup")


def check_try(agent: str, settings: ServerSettings) -> None:
    """Refuse a try with an agent the server does not allow, or whose default endpoint it does not."""
    check_arm("try", agent, {}, settings)


_SCP_URL = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?!//)(?P<path>.*)$")


def git_credentials(url: str, patterns: Iterable[str]) -> bool:
    """Whether a git snapshot of `url` may use this machine's credentials (its SSH keys and agent,
    ``~/.netrc``): only when `url` is under one of `patterns` (``host`` or ``host/path``, ``*.host``
    for any name under it), which whoever runs the server names (``--git-credentials``). Every other
    URL a caller names is cloned anonymously: a caller never borrows the server's identity elsewhere."""
    found = _SCP_URL.match(url) if "://" not in url else None
    if found is not None:
        host, path = found["host"], found["path"]
    else:
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path
    host = host.lower().rstrip(".")
    path = path.strip("/").removesuffix(".git")
    if any(seg in (".", "..") or "%" in seg for seg in path.split("/")):
        return False  # a path that climbs (or hides a climb) is under no prefix
    for pattern in patterns:
        want_host, _, want_path = pattern.strip().strip("/").partition("/")
        want_host = want_host.lower()
        if want_host.startswith("*."):
            if not host.endswith(want_host[1:]):
                continue
        elif host != want_host:
            continue
        want_path = want_path.strip("/").removesuffix(".git")
        if not want_path or path == want_path or path.startswith(want_path + "/"):
            return True
    return False

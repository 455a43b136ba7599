"""The request work that reads what a caller sent, as it runs in a work process (`abbench.server._work`).

Each job opens the store, acts for the caller's owner, and returns what the route answers (plain
data: a dataset, snapshot or experiment as the caller sees it). Every parser a caller's bytes reach
runs here: data files (CSV, Excel, JSON), mapping profiles and definitions (JSON, YAML), skill
archives and their front matter, recorded outcomes, and the regular expressions in a mapping.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from abbench._utf8 import not_utf8
from abbench.dataset import MappingProfile, preview_import
from abbench.report import render_report
from abbench.runner import RecordError, create_experiment, record_runs
from abbench.server import _owned, _policy
from abbench.server._common import dataset_view, experiment_view, taken_view
from abbench.server._documents import load_document, load_json
from abbench.server._problems import Problem
from abbench.server._settings import ServerSettings
from abbench.server._uploads import unpack_skill
from abbench.snapshot import GitFetchError, prepare_from_url
from abbench.store import Store, acting_as, open_store


@contextmanager
def _store(settings: ServerSettings) -> Iterator[Store]:
    store = open_store(settings.store)
    try:
        yield store
    finally:
        store.close()


def read_mapping(store: Store, text: str | None, owner: str) -> MappingProfile | None:
    """A mapping given as JSON or YAML text (a profile), the name of a profile the owner saved, or nothing
    (the suggestion). A profile never names a file of the server's (`abbench.server._policy`)."""
    if text is None or not text.strip():
        return None
    stripped = text.strip()
    if stripped.startswith(("{", "[")) or "\n" in stripped or ": " in stripped:
        data = load_document(stripped, "mapping")
        if not isinstance(data, str):
            profile = MappingProfile.from_dict(data, where="the mapping")
            _policy.check_profile(profile)
            return profile
    return _owned.profile(store, stripped, owner)


def import_dataset(
    settings: ServerSettings,
    owner: str,
    path: str,
    mapping: str | None,
    options: dict[str, Any],
    skip_invalid: bool,
) -> dict[str, Any]:
    """Import an uploaded file as the CLI does; the dataset as the caller sees it."""
    with _store(settings) as store, acting_as(owner):
        info = store.datasets.import_file(
            path, read_mapping(store, mapping, owner), **options, skip_invalid=skip_invalid
        )
        store.keys.grant("dataset", info.fingerprint, owner)
        held = store.keys.held("dataset", owner)  # another owner's dataset of the name is not told
        return dataset_view(
            dataclasses.replace(info, name_versions=tuple(f for f in info.name_versions if f in held))
        )


def preview(
    settings: ServerSettings, owner: str, path: str, mapping: str | None, n: int, options: dict[str, Any]
) -> dict[str, Any]:
    """The first `n` cases a stored file gives under `mapping`, with the validation report."""
    with _store(settings) as store, acting_as(owner):
        found = preview_import(path, read_mapping(store, mapping, owner), n=n, **options)
        return {
            "cases": [dataclasses.asdict(c) for c in found.cases],
            "report": found.report.to_dict(),
            "columns": list(getattr(found, "columns", ()) or ()),
        }


def snapshot_archive(settings: ServerSettings, owner: str, archive: str, stem: str) -> dict[str, Any]:
    """Unpack an uploaded skill archive (checked for traversal, links and bombs) and snapshot it."""
    skill = unpack_skill(Path(archive), Path(archive).parent / stem)
    with _store(settings) as store, acting_as(owner):
        snap = store.snapshots.freeze(skill)
        store.keys.grant("snapshot", snap.hash, owner)
        return taken_view(store, snap)


_GIT_STATUS = {
    "refused": (422, "git URL refused"),
    "unknown-ref": (422, "unknown git ref"),
    "unreachable": (502, "repository unreachable"),
    "timeout": (502, "repository too slow"),
    "too-large": (413, "repository too large"),
}


def snapshot_git(
    settings: ServerSettings, owner: str, url: str, ref: str, path: str | None, workdir: str
) -> dict[str, Any]:
    """Clone `ref` of `url` (the allowed schemes, within the timeout and size) into `workdir` (the
    request's folder) and snapshot `path` in it."""
    try:
        prepared = prepare_from_url(
            url,
            ref,
            path,
            workdir=workdir,
            schemes=settings.git_schemes,
            timeout=settings.git_timeout,
            max_fetch_bytes=settings.max_request_bytes,
            anonymous=not _policy.git_credentials(url, settings.git_credentials),
        )
    except GitFetchError as exc:
        status, title = _GIT_STATUS.get(exc.kind, (422, "invalid input"))
        raise Problem(status, title, str(exc)) from None
    with _store(settings) as store, acting_as(owner):
        snap = store.snapshots.add_prepared(prepared)
        store.keys.grant("snapshot", snap.hash, owner)
        return taken_view(store, snap)


def definition(body: bytes, content_type: str) -> Any:
    """The definition a caller sent (JSON, or YAML), read within the bounds of `load_document`."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Problem(422, "invalid definition", not_utf8("the definition", body, exc)) from None
    if "json" in content_type:
        return load_json(text, "definition")
    return load_document(text, "definition")


def create(settings: ServerSettings, owner: str, body: bytes, content_type: str) -> dict[str, Any]:
    """Create an experiment from the caller's definition; the experiment as the caller sees it."""
    raw = definition(body, content_type)
    with _store(settings) as store:
        spec = _owned.definition(store, raw, owner, settings)
        with acting_as(owner):
            exp = create_experiment(spec, store=store, owner=owner, max_runs=settings.max_runs)
        return experiment_view(exp)


def record(settings: ServerSettings, owner: str, actor: str, exp_id: int, body_path: str) -> dict[str, Any]:
    """Record the outcomes in the body (JSON, within the bounds), then grade them."""
    body = load_json(Path(body_path).read_bytes() or b"null", "outcomes")
    outcomes = body.get("outcomes") if isinstance(body, dict) else body
    if not isinstance(outcomes, list):
        raise Problem(
            422, "invalid outcomes", 'send {"outcomes": [{case_id, arm, round, prediction, ...}, ...]}'
        )
    with _store(settings) as store:
        exp = store.experiments.get(exp_id)
        _policy.check_execution(exp.spec, settings, arms=False)  # its graders run here
        try:
            with acting_as(owner):
                summary: dict[str, Any] = record_runs(store, exp.id, outcomes, recorded_by=actor).as_dict()
        except RecordError as exc:
            raise Problem(422, "invalid outcomes", str(exc), problems=exc.problems) from exc
        return summary


def report(
    settings: ServerSettings,
    exp_id: int,
    vs: int | None,
    arms: Any,
    rules: Any,
    out: str,
    grader: str | None = None,
) -> dict[str, Any]:
    """Render an experiment's report to `out` (a papermill kernel, started from this process), its
    figures `grader`'s alone when named."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with _store(settings) as store:
        data: dict[str, Any] = render_report(
            exp_id, vs=vs, arms=arms, gate=rules, out=Path(out), store=store, grader=grader
        ).as_dict()
    for k in ("html_path", "notebook_path"):
        data.pop(k, None)
    return data


JOBS: dict[str, Callable[..., Any]] = {
    "import_dataset": import_dataset,
    "preview": preview,
    "snapshot_archive": snapshot_archive,
    "snapshot_git": snapshot_git,
    "create": create,
    "record": record,
    "report": report,
}
"""Every job a work process runs, by name."""

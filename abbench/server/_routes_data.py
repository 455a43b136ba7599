"""Routes for datasets (upload with a mapping, list, show, preview a mapping) and skill snapshots."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from abbench.dataset import MappingProfile, preview_import
from abbench.server import _owned, _policy
from abbench.server._auth import Caller, require
from abbench.server._common import answer, dataset_view, settings_of, snapshot_view, store_of
from abbench.server._documents import load_document, load_json
from abbench.server._problems import Problem
from abbench.server._uploads import remove, safe_filename, save_upload, temp_folder, unpack_skill
from abbench.store import Store, acting_as

router = APIRouter(prefix="/api", tags=["data"])
Reader = Annotated[Caller, Depends(require("read"))]
Runner = Annotated[Caller, Depends(require("run"))]


def _mapping(store: Store, text: str | None, owner: str) -> MappingProfile | None:
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


def _options(**given: Any) -> dict[str, Any]:
    return {k: v for k, v in given.items() if v not in (None, "")}


@router.post("/datasets", status_code=201, summary="Upload a data file with a mapping: import it")
def upload_dataset(
    request: Request,
    caller: Runner,
    file: Annotated[UploadFile, File(description="A CSV/TSV, XLSX, JSONL or JSON file.")],
    mapping: Annotated[
        str | None, Form(description="A mapping profile as JSON, or a saved profile's name.")
    ] = None,
    name: Annotated[str | None, Form()] = None,
    sheet: Annotated[str | None, Form()] = None,
    header_row: Annotated[int | None, Form()] = None,
    encoding: Annotated[str | None, Form()] = None,
    delimiter: Annotated[str | None, Form()] = None,
    format: Annotated[str | None, Form()] = None,
    recipe: Annotated[str | None, Form()] = None,
    split: Annotated[list[str] | None, Form(description="JSON splits to import (repeat the field).")] = None,
    skip_invalid: Annotated[bool, Form()] = False,
) -> JSONResponse:
    """Import the file as the CLI does: an invalid file answers 422 with the validation report, storing nothing."""
    store = store_of(request)
    folder = temp_folder(settings_of(request).spool)
    try:
        path = save_upload(file, folder, safe_filename(file.filename, "data.csv"))
        with acting_as(caller.owner):
            info = store.import_dataset(
                path,
                _mapping(store, mapping, caller.owner),
                **_options(
                    name=name or Path(path).stem,
                    sheet=sheet,
                    header_row=header_row,
                    encoding=encoding,
                    delimiter=delimiter,
                    format=format,
                    recipe=recipe,
                    splits=[s for s in split or () if s] or None,
                ),
                skip_invalid=skip_invalid,
            )
            store.grant("dataset", info.fingerprint, caller.owner)
    finally:
        remove(folder)
    return answer(dataset_view(info), 201)


@router.get("/datasets", summary="The datasets this key's owner holds")
def list_datasets(request: Request, caller: Reader) -> JSONResponse:
    """Every dataset the owner holds, oldest first."""
    return answer([dataset_view(d) for d in _owned.datasets(store_of(request), caller.owner)])


@router.get("/datasets/{ref}", summary="One dataset")
def get_dataset(request: Request, caller: Reader, ref: str) -> JSONResponse:
    """A dataset by fingerprint, name or hash prefix."""
    return answer(dataset_view(_owned.dataset(store_of(request), ref, caller.owner)))


@router.post("/datasets/{ref}/mapping", summary="Preview a mapping on a dataset's stored file")
def preview_mapping(
    request: Request,
    caller: Reader,
    ref: str,
    mapping: Annotated[str | None, Form()] = None,
    n: Annotated[int, Form(ge=1, le=200)] = 10,
) -> JSONResponse:
    """The first `n` cases the dataset's original file gives under `mapping`, with the validation report."""
    store = store_of(request)
    info = _owned.dataset(store, ref, caller.owner)
    if not info.upload_path:
        raise Problem(
            422, "no stored file", f"dataset {info.fingerprint} keeps no copy of its file to map again"
        )
    options = {
        k: v
        for k, v in (info.read_options or {}).items()
        if k in ("format", "sheet", "encoding", "delimiter")
    }
    profile = _mapping(store, mapping, caller.owner)
    preview = preview_import(store.abspath(info.upload_path), profile, n=n, **options)
    return answer(
        {
            "cases": [dataclasses.asdict(c) for c in preview.cases],
            "report": preview.report.to_dict(),
            "columns": list(getattr(preview, "columns", ()) or ()),
        }
    )


_GIT_BODY = {
    "requestBody": {
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["git"],
                    "properties": {
                        "git": {
                            "type": "string",
                            "description": "The repository URL (https, ssh; more if allowed).",
                        },
                        "ref": {
                            "type": "string",
                            "default": "HEAD",
                            "description": "A branch, tag or commit.",
                        },
                        "path": {
                            "type": "string",
                            "description": "The skill folder inside it (default: the top).",
                        },
                    },
                }
            }
        }
    }
}

_GIT_STATUS = {
    "refused": (422, "git URL refused"),
    "unknown-ref": (422, "unknown git ref"),
    "unreachable": (502, "repository unreachable"),
    "timeout": (502, "repository too slow"),
    "too-large": (413, "repository too large"),
}


@router.post(
    "/skill-snapshots",
    status_code=201,
    summary="Snapshot a skill: a folder uploaded as a tar or zip archive, or a git URL and ref",
    openapi_extra=_GIT_BODY,
)
async def upload_snapshot(
    request: Request,
    caller: Runner,
    file: Annotated[
        UploadFile | None, File(description="The skill folder as .zip, .tar, .tar.gz (multipart).")
    ] = None,
) -> JSONResponse:
    """Snapshot an uploaded folder (checked for traversal, links, bombs and the snapshot limits), or a
    JSON body ``{"git": URL, "ref": REF, "path": SUBFOLDER}``: the server clones REF (shallow) and
    snapshots that folder with the same checks; the snapshot records the URL and the commit."""
    if file is not None:
        snap = await run_in_threadpool(_snapshot_upload, request, caller, file)
    else:
        url, ref, path = _git_body(await _json_body(request))
        snap = await run_in_threadpool(_snapshot_git, request, caller, url, ref, path)
    return answer(snapshot_view(snap), 201)


async def _json_body(request: Request) -> Any:
    if not request.headers.get("content-type", "").startswith("application/json"):
        raise Problem(
            422,
            "invalid request",
            "send the skill folder as a multipart 'file' (a .zip or .tar.gz), or a JSON body "
            '{"git": URL, "ref": REF, "path": SUBFOLDER}',
        )
    body, limit = await request.body(), settings_of(request).max_document_bytes
    if len(body) > limit:
        raise Problem(
            413, "request too large", f"a git snapshot's JSON body is over {limit:,} bytes", limit=limit
        )
    return await run_in_threadpool(load_json, body, "request")


def _git_body(body: Any) -> tuple[str, str, str | None]:
    """The URL, ref and path of a git snapshot's body; anything else is refused by name."""
    if not isinstance(body, dict) or not isinstance(body.get("git"), str):
        raise Problem(422, "invalid request", 'the JSON body needs "git": the repository URL (a string)')
    unknown = sorted(set(body) - {"git", "ref", "path"})
    if unknown:
        raise Problem(422, "invalid request", f"unknown field(s) {', '.join(unknown)}; give git, ref, path")
    ref, path = body.get("ref") or "HEAD", body.get("path")
    if not isinstance(ref, str) or not (path is None or isinstance(path, str)):
        raise Problem(422, "invalid request", '"ref" and "path" must be strings')
    return body["git"], ref, path


def _snapshot_upload(request: Request, caller: Caller, file: UploadFile) -> Any:
    store = store_of(request)
    folder = temp_folder(settings_of(request).spool)
    try:
        archive = save_upload(file, folder, "archive")
        stem = safe_filename(file.filename, "skill").split(".")[0] or "skill"
        skill = unpack_skill(archive, folder / stem)
        with acting_as(caller.owner):
            snap = store.snapshot_skill(skill)
            store.grant("snapshot", snap.hash, caller.owner)
    finally:
        remove(folder)
    return snap


def _snapshot_git(request: Request, caller: Caller, url: str, ref: str, path: str | None) -> Any:
    from abbench.snapshot import GitFetchError, prepare_from_url

    settings = settings_of(request)
    store = store_of(request)
    try:
        prepared = prepare_from_url(
            url,
            ref,
            path,
            workdir=settings.spool,
            schemes=settings.git_schemes,
            timeout=settings.git_timeout,
            max_fetch_bytes=settings.max_request_bytes,
        )
    except GitFetchError as exc:
        status, title = _GIT_STATUS.get(exc.kind, (422, "invalid input"))
        raise Problem(status, title, str(exc).replace(str(settings.spool), "(the server)")) from None
    with acting_as(caller.owner):
        snap = store.store_prepared(prepared)
        store.grant("snapshot", snap.hash, caller.owner)
    return snap


@router.get("/skill-snapshots", summary="The snapshots this key's owner holds")
def list_snapshots(request: Request, caller: Reader) -> JSONResponse:
    """Every snapshot the owner holds."""
    return answer([snapshot_view(s) for s in _owned.snapshots(store_of(request), caller.owner)])

"""Routes for datasets (upload with a mapping, list, show, preview a mapping) and skill snapshots."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from abbench.server import _owned
from abbench.server._auth import Caller, require
from abbench.server._common import answer, dataset_view, settings_of, snapshot_view, store_of, work_of
from abbench.server._documents import load_json
from abbench.server._problems import Problem
from abbench.server._uploads import remove, safe_filename, save_upload, temp_folder

router = APIRouter(prefix="/api", tags=["data"])
Reader = Annotated[Caller, Depends(require("read"))]
Runner = Annotated[Caller, Depends(require("run"))]


def _options(**given: Any) -> dict[str, Any]:
    return {k: v for k, v in given.items() if v not in (None, "")}


def _inbox(folder: Path) -> Path:
    """Where a request's file is put: three folders down in its own folder, so that nothing a reader
    looks for beside or above a data file (a recipe reads the SKILL.md of the skill folder an eval set
    lies in, up to three folders up) is ever a file of the server's."""
    inbox = folder / "in" / "in" / "in"
    inbox.mkdir(parents=True, exist_ok=True)
    return inbox


async def _on_file(
    request: Request, caller: Caller, job: str, put: Callable[[Path], Path], **kwargs: Any
) -> Any:
    """The answer of `job`, run by a work process on the file `put` places in the inbox of a folder of
    the request's own (removed after)."""
    folder = temp_folder(settings_of(request).spool)
    try:
        path = await run_in_threadpool(put, _inbox(folder))
        return await work_of(request).run(
            caller.key.key_id, job, owner=caller.owner, path=str(path), **kwargs
        )
    finally:
        await run_in_threadpool(remove, folder)


@router.post("/datasets", status_code=201, summary="Upload a data file with a mapping: import it")
async def upload_dataset(
    request: Request,
    caller: Runner,
    file: Annotated[UploadFile, File(description="A CSV/TSV, XLSX, JSONL or JSON file.")],
    mapping: Annotated[
        str | None, Form(description="A mapping profile as JSON or YAML, or a name you saved one under.")
    ] = None,
    name: Annotated[str | None, Form()] = None,
    sheet: Annotated[str | None, Form()] = None,
    header_row: Annotated[int | None, Form(ge=0, le=1_048_576)] = None,
    encoding: Annotated[str | None, Form()] = None,
    delimiter: Annotated[str | None, Form()] = None,
    quoting: Annotated[
        Literal["csv", "none"] | None,
        Form(
            description="CSV quotes: csv (quotes quote cells) or none (quotes are text); default: detected."
        ),
    ] = None,
    format: Annotated[str | None, Form()] = None,
    recipe: Annotated[str | None, Form()] = None,
    split: Annotated[list[str] | None, Form(description="JSON splits to import (repeat the field).")] = None,
    skip_invalid: Annotated[bool, Form()] = False,
) -> JSONResponse:
    """Import the file as the CLI does: an invalid file answers 422 with the validation report, storing
    nothing. The file is read in a process of its own, within this server's limits."""
    filename = safe_filename(file.filename, "data.csv")
    options = _options(
        name=name or Path(filename).stem,
        sheet=sheet,
        header_row=header_row,
        encoding=encoding,
        delimiter=delimiter,
        quoting=quoting,
        format=format,
        recipe=recipe,
        splits=[s for s in split or () if s] or None,
    )
    view = await _on_file(
        request,
        caller,
        "import_dataset",
        lambda inbox: save_upload(file, inbox, filename),
        mapping=mapping,
        options=options,
        skip_invalid=skip_invalid,
    )
    return answer(view, 201)


@router.get("/datasets", summary="The datasets this key's owner holds")
def list_datasets(request: Request, caller: Reader) -> JSONResponse:
    """Every dataset the owner holds, oldest first."""
    return answer([dataset_view(d) for d in _owned.datasets(store_of(request), caller.owner)])


@router.get("/datasets/{ref}", summary="One dataset")
def get_dataset(request: Request, caller: Reader, ref: str) -> JSONResponse:
    """A dataset by fingerprint, name or hash prefix."""
    return answer(dataset_view(_owned.dataset(store_of(request), ref, caller.owner)))


@router.post("/datasets/{ref}/mapping", summary="Preview a mapping on a dataset's stored file")
async def preview_mapping(
    request: Request,
    caller: Reader,
    ref: str,
    mapping: Annotated[str | None, Form()] = None,
    n: Annotated[int, Form(ge=1, le=200)] = 10,
) -> JSONResponse:
    """The first `n` cases the dataset's original file gives under `mapping`, with the validation report
    (read in a process of its own, within this server's limits)."""
    store = store_of(request)
    info = await run_in_threadpool(_owned.dataset, store, ref, caller.owner)
    if not info.upload_path:
        raise Problem(
            422, "no stored file", f"dataset {info.fingerprint} keeps no copy of its file to map again"
        )
    options = {
        k: v
        for k, v in (info.read_options or {}).items()
        if k in ("format", "sheet", "encoding", "delimiter", "quoting")
    }
    stored = store.abspath(info.upload_path)
    found = await _on_file(
        request,
        caller,
        "preview",
        lambda inbox: _linked(stored, inbox),
        mapping=mapping,
        n=n,
        options=options,
    )
    return answer(found)


def _linked(stored: Path, inbox: Path) -> Path:
    """The stored file, linked into a request's folder (copied where a link cannot be made)."""
    target = inbox / Path(stored).name
    try:
        os.link(stored, target)
    except OSError:
        shutil.copyfile(stored, target)
    return target


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
    work = work_of(request)
    folder = temp_folder(settings_of(request).spool)  # the request's own: removed however its job ends
    try:
        if file is None:
            url, ref, path = _git_body(await _json_body(request))
            view = await work.run(
                caller.key.key_id,
                "snapshot_git",
                owner=caller.owner,
                url=url,
                ref=ref,
                path=path,
                workdir=str(folder),
            )
            return answer(view, 201)
        archive = await run_in_threadpool(save_upload, file, folder, "archive")
        stem = safe_filename(file.filename, "skill").split(".")[0] or "skill"
        view = await work.run(
            caller.key.key_id, "snapshot_archive", owner=caller.owner, archive=str(archive), stem=stem
        )
    finally:
        await run_in_threadpool(remove, folder)
    return answer(view, 201)


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


@router.get("/skill-snapshots", summary="The snapshots this key's owner holds")
def list_snapshots(request: Request, caller: Reader) -> JSONResponse:
    """Every snapshot the owner holds."""
    return answer([snapshot_view(s) for s in _owned.snapshots(store_of(request), caller.owner)])

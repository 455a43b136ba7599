"""Errors as JSON problem details (RFC 9457): the what / where / what-to-do text, with each action worded
as a request to this server, and the error's facts (``kind``, ``name``, ``choices``, ``hint``) as
extension members."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from abbench.errors import (
    AbbenchError,
    ComparisonRefused,
    ExperimentError,
    ImportFailed,
    MappingError,
    NotFoundError,
    SnapshotError,
    UsageError,
)

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"


class Problem(Exception):
    """An error a route answers with: an HTTP status, a title, and the text a person acts on."""

    def __init__(self, status: int, title: str, detail: str, **extra: Any):
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.extra = extra
        self.headers: dict[str, str] = extra.pop("headers", {}) or {}


def not_found(what: str, ref: object, listing: str) -> Problem:
    """The one 404 for a missing object and another owner's: the same words, never a hint it exists."""
    return Problem(
        404, "not found", f"no {what} {str(ref)!r} for this key's owner; list yours with GET /api/{listing}"
    )


def refusal(status: int, title: str, exc: AbbenchError, **extra: Any) -> Problem:
    """A `Problem` from an error a route raises with a status of its own, worded for HTTP, with the
    error's facts (and `extra` members)."""
    return Problem(status, title, exc.worded("http"), **exc.facts(), **extra)


def problem_response(status: int, title: str, detail: str, instance: str, **extra: Any) -> JSONResponse:
    """A problem-details response."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, "instance": instance}
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM)


def _status(exc: AbbenchError) -> tuple[int, str]:
    if isinstance(exc, ComparisonRefused):
        return 409, "comparison refused"
    if isinstance(exc, NotFoundError):
        return 404, "not found"
    if isinstance(exc, (ImportFailed, MappingError, SnapshotError, ExperimentError, UsageError)):
        return 422, "invalid input"
    return (422, "invalid input") if exc.exit_code == 2 else (409, "refused")


def scrub_paths(settings: Any, text: str) -> str:
    """`text` without the server's folders: an upload is named as the caller sent it."""
    text = re.sub(re.escape(str(settings.spool)) + r"/req-[^/\s]+/(?:in/)*", "", text)
    text = text.replace(str(settings.spool), "(the server)")
    return text.replace(str(settings.store), "(the server's store)")


def _no_paths(request: Request, text: str) -> str:
    return scrub_paths(request.app.state.settings, text)


def abbench_problem(exc: AbbenchError) -> tuple[int, str, str, dict[str, Any]]:
    """The status, title, detail and extra members of the problem an `AbbenchError` answers with
    (the server's folders not yet taken out of the detail: `scrub_paths`)."""
    status, title = _status(exc)
    if status == 404:  # the library's words may name other owners' objects: say only what is missing
        return 404, title, "not found for this key's owner", {"kind": exc.kind} if exc.kind else {}
    extra: dict[str, Any] = exc.facts()
    report = getattr(exc, "report", None)
    if report is not None:
        extra["report"] = report.to_dict()
    problems = getattr(exc, "problems", None)
    if isinstance(problems, list):
        extra["problems"] = problems
    return status, title, exc.worded("http"), extra


def install(app: FastAPI) -> None:
    """Answer every error as problem details."""

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        response = problem_response(exc.status, exc.title, exc.detail, request.url.path, **exc.extra)
        response.headers.update(exc.headers)
        return response

    @app.exception_handler(AbbenchError)
    async def _abbench(request: Request, exc: AbbenchError) -> JSONResponse:
        status, title, detail, extra = abbench_problem(exc)
        return problem_response(status, title, _no_paths(request, detail), request.url.path, **extra)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        where = "; ".join(
            f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg')}" for e in exc.errors()[:10]
        )
        return problem_response(
            422, "invalid request", f"{where}; see /docs for what this route takes", request.url.path
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = (
            str(exc.detail) if exc.status_code != 404 else "no such route; the routes are listed at /docs"
        )
        return problem_response(exc.status_code, "error", detail, request.url.path)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.error("request %s %s failed", request.method, request.url.path, exc_info=exc)
        return problem_response(
            500, "server error", "the server failed on this request; its log says why", request.url.path
        )

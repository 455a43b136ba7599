"""JSON and YAML a caller sends, read within bounds: depth, numbers SQLite can hold, no YAML aliases.

A definition, a mapping profile, outcomes or a gate arrive as text. Before anything walks what they
hold, the text is read here: nested at most `MAX_DEPTH` deep (a document 100,000 levels deep would
exhaust the interpreter's stack), every integer within SQLite's 64-bit range (a larger one cannot be
stored), every number finite (``NaN``, ``Infinity``, ``1e999`` and YAML's ``.inf`` name no value a
run, a gate or a budget can use), and YAML read by abbench's bounded loader (`abbench._yaml`: no alias
bomb). A refusal says which limit and where, as a 422 problem.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import yaml
from starlette.concurrency import run_in_threadpool

from abbench import _yaml
from abbench.server._problems import Problem, problem_response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_DEPTH = 64
"""How deeply lists and mappings may nest in a document a caller sends (a definition nests about 6
levels, a transcript's tool call about 8; a JSON Schema given inline rarely passes 20)."""

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
"""The integers SQLite stores (64-bit signed): the range every whole number a caller sends must fit."""


def _refused(what: str, detail: str) -> Problem:
    return Problem(422, f"invalid {what}", f"the {what} {detail}")


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON can carry; send a finite number or null")


def load_json(text: str | bytes, what: str) -> Any:
    """A JSON document, read within the bounds (see the module).

    Raises:
        Problem: 422 naming the line and column of a syntax error, or the limit passed.
    """
    try:
        value = json.loads(text, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise _refused(
            what, f"is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from None
    except RecursionError:
        raise _refused(what, f"nests deeper than {MAX_DEPTH} levels; flatten it") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise _refused(what, f"cannot be read: {exc}") from None
    check_bounds(value, what)
    return value


def load_yaml(text: str, what: str) -> Any:
    """A YAML (or JSON) document, read by abbench's bounded YAML loader (`abbench._yaml`: no alias
    bomb, no value containing itself), then within the bounds (see the module).

    Raises:
        Problem: 422 naming the line of a syntax error, an alias bomb, or the limit passed.
    """
    try:
        value = _yaml.load_yaml(text)
    except yaml.YAMLError as exc:
        where = _yaml.error_at(exc, " (line {line}, column {column})")
        raise _refused(what, f"is not valid YAML{where}: {_yaml.error_problem(exc)}") from None
    except RecursionError:
        raise _refused(what, f"nests deeper than {MAX_DEPTH} levels; flatten it") from None
    check_bounds(value, what)
    return value


def load_document(text: str, what: str) -> Any:
    """JSON when it reads as JSON (an object or a list: the fast parser), else YAML."""
    if text.lstrip()[:1] in ("{", "["):
        return load_json(text, what)
    return load_yaml(text, what)


def check_bounds(value: Any, what: str) -> None:
    """Refuse (422) a value nested deeper than `MAX_DEPTH`, an integer outside SQLite's range or a
    number that is not finite: walked without recursion, so the walk itself is bounded."""
    # Each entry: (value, depth, where it sits as (parent entry, key)), the path made only for a refusal.
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        entry = stack.pop()
        node, depth, _ = entry
        kind = type(node)
        if kind is str or kind is bool or node is None:
            continue
        if kind is int or isinstance(node, int):
            if not INT_MIN <= node <= INT_MAX:
                raise _refused(
                    what,
                    f"has {_at(entry)}a whole number of {len(str(abs(node)))} digits, beyond the "
                    f"{INT_MIN:,} to {INT_MAX:,} a store can hold",
                )
        elif kind is float or isinstance(node, float):
            if not math.isfinite(node):
                raise _refused(what, f"has {_at(entry)}{node}, not a finite number")
        elif isinstance(node, (dict, list)):
            if depth >= MAX_DEPTH:
                raise _refused(what, f"nests deeper than {MAX_DEPTH} levels {_at(entry)}; flatten it")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((v, depth + 1, (entry, k)) for k, v in items)
            if isinstance(node, dict):
                stack.extend((k, depth + 1, (entry, k)) for k in node if type(k) is not str)


def _at(entry: tuple[Any, int, Any]) -> str:
    """``at arms.a.params[2] `` for the value `entry` holds (empty at the top)."""
    keys: list[Any] = []
    where = entry[2]
    while where is not None:
        parent, key = where
        keys.append(key)
        where = parent[2]
    path = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in reversed(keys)).lstrip(".")
    return f"at {path[:200]} " if path else ""


class DocumentBounds:
    """ASGI middleware: a JSON body a route reads as a model (a gate, a comparison, a review, a try)
    is checked against the bounds before the framework parses it, so a body nested 100,000 deep or
    holding a 400-digit number answers 422 with the limit instead of failing inside a route.

    Bodies of the routes in `large` (uploads and outcomes, which are read elsewhere) pass untouched;
    the others are small (`abbench.server.ServerSettings.max_document_bytes`), and are checked on a
    worker thread.
    """

    def __init__(self, app: ASGIApp, large: Callable[[Scope], bool]):
        self.app = app
        self.large = large

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        if (
            scope["type"] != "http"
            or scope.get("method") not in ("POST", "PUT", "PATCH")
            or b"json" not in headers.get(b"content-type", b"")
            or self.large(scope)
        ):
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)  # the client went away: let the app see it
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if body.strip():
            try:
                await run_in_threadpool(load_json, body, "request body")
            except Problem as exc:
                response = problem_response(exc.status, exc.title, exc.detail, scope.get("path", ""))
                await response(scope, receive, send)
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

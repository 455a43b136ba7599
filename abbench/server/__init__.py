"""The HTTP service (`abbench serve`): the public Python API over FastAPI, per-owner, for batch callers.

The server is the single writer of its store: experiments started over HTTP run in child processes it
spawns and supervises (each the store's writer while its experiment runs), and the server reads.
Every object belongs to an owner (the key's); another owner's object answers 404, exactly as a
missing one. Routes call the public API only: no SQL, statistics or prompt building here. Nothing
below this package imports it. See docs/service.md.

The names load lazily (`abbench._lazy`), so that a runner child (``python -m abbench.server._child``)
starts without FastAPI.
"""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.server._app import RedactKeys as RedactKeys, create_app, serve
    from abbench.server._settings import DEFAULT_HOST, DEFAULT_PORT, EndpointRule, ServerSettings

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "EndpointRule",
    "ServerSettings",
    "create_app",
    "serve",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.server._app": ("RedactKeys", "create_app", "serve"),
        "abbench.server._settings": ("DEFAULT_HOST", "DEFAULT_PORT", "EndpointRule", "ServerSettings"),
    },
    public=__all__,
)

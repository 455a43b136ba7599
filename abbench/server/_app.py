"""The FastAPI application: routes under /api, health, the OpenAPI schema, /docs served from local files."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from abbench import __version__
from abbench.server import _problems, _routes_analysis, _routes_data, _routes_runs
from abbench.server._auth import InFlight, KeyCache, RateLimiter
from abbench.server._common import Recent
from abbench.server._documents import DocumentBounds
from abbench.server._pool import RunnerPool
from abbench.server._settings import DEFAULT_HOST, DEFAULT_PORT, ServerSettings
from abbench.server._uploads import BodyLimit, is_large, sweep_spool
from abbench.server._work import WorkPool
from abbench.store import SCHEMA_VERSION, Store, open_store

log = logging.getLogger(__name__)
_KEY_TEXT = re.compile(r"(abk_[0-9a-f]{12}_)[A-Za-z0-9_-]+")
_BEARER = re.compile(r"(?i)(bearer\s+)\S+")


class RedactKeys(logging.Filter):
    """Replaces API keys and ``Bearer`` values in log records with ``***``."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the record's message in place; always keep the record."""
        message = record.getMessage()
        cleaned = _BEARER.sub(r"\1***", _KEY_TEXT.sub(r"\1***", message))
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def _swagger_assets() -> Path | None:
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    return Path(swagger_ui_bundle.swagger_ui_path)


def _docs(app: FastAPI) -> None:
    assets = _swagger_assets()
    if assets is not None:
        app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        if assets is None:
            return HTMLResponse(
                "<p>The interactive docs need the swagger-ui-bundle package (pip install swagger-ui-bundle); "
                "the schema is at <a href='/openapi.json'>/openapi.json</a>.</p>"
            )
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="abbench API",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/docs-assets/favicon-32x32.png",
        )


def create_app(settings: ServerSettings, store: Store | None = None) -> FastAPI:
    """The application over the store in `settings` (opened, migrated; its left-over runs resumed on start)."""
    store = store or open_store(settings.store)
    pool = RunnerPool(store, settings.workers, settings.runner_nice, settings)
    work = WorkPool(settings, store)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        work.warm()
        sweep_spool(settings.spool)  # what a killed server's requests left there (never a live one's)
        resumed = pool.resume_left_over()
        if resumed:
            log.info("resumed %d experiments left over by the last server", len(resumed))
        yield
        work.shutdown()
        pool.shutdown()

    app = FastAPI(
        title="abbench",
        version=__version__,
        description="A/B testing of agent skills: datasets, snapshots, experiments, paired comparisons, gates.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.store, app.state.settings, app.state.pool, app.state.work = store, settings, pool, work
    app.state.keys, app.state.limiter = KeyCache(store), RateLimiter(settings.rate_per_minute)
    app.state.recent = Recent()
    _problems.install(app)
    for module in (_routes_data, _routes_runs, _routes_analysis):
        app.include_router(module.router)
    _docs(app)

    @app.get("/api/health", tags=["server"], summary="Whether the server is up (no key needed)")
    def health() -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__, "schema": SCHEMA_VERSION})

    app.add_middleware(DocumentBounds, large=is_large)
    app.add_middleware(InFlight, per_key=settings.max_inflight)
    app.add_middleware(  # added last: the outermost, so a body is counted before anything reads it
        BodyLimit, limit=settings.max_request_bytes, document_limit=settings.max_document_bytes
    )
    return app


def serve(settings: ServerSettings, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Run the server in the foreground (uvicorn) until interrupted."""
    import uvicorn

    redact = RedactKeys()
    for name in ("", "uvicorn", "uvicorn.access", "uvicorn.error", "abbench"):
        logging.getLogger(name).addFilter(redact)
    config = uvicorn.Config(create_app(settings), host=host, port=port, log_level="info", proxy_headers=False)
    uvicorn.Server(config).run()

"""Debian's headless Chromium driven by Playwright, with the network off: shared by report and widget tests.

Never ``playwright install`` (it downloads a browser and fails here): the browser is Debian's
``/usr/bin/chromium`` (``make browser`` installs it), or $ABBENCH_CHROMIUM.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CHROMIUM = Path(os.environ.get("ABBENCH_CHROMIUM", "/usr/bin/chromium"))

FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Flags that work as root in this sandbox (see NOTES.md); Playwright adds --headless and a fresh profile."""

LOCAL_SCHEMES = ("file", "data", "blob", "about")


def require_chromium() -> Path:
    """The Chromium binary, or skip the test saying how to get it."""
    if not CHROMIUM.exists():
        pytest.skip(
            f"no Chromium at {CHROMIUM}: run `make browser` (apt-get install chromium) to run browser tests"
        )
    import playwright.sync_api  # noqa: F401  (in the test extra: missing is a broken install, not a skip)

    return CHROMIUM


# Playwright's waits are on conditions (a page loaded, a figure drawn); their timeout only ends a test
# that hangs, so it is long: a loaded CI machine took over 30 s (the default) to load a report from file.
HANG_MS = 600_000


@contextmanager
def chromium() -> Iterator:
    """A headless Chromium (Playwright `Browser`) with a fresh profile, closed afterwards."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=list(FLAGS))
        try:
            yield browser
        finally:
            browser.close()


class NetworkLog:
    """Requests a page attempted, and the ones that were blocked because they would leave the machine."""

    def __init__(self) -> None:
        self.requested: list[str] = []
        self.blocked: list[str] = []


def allowed(url: str, hosts: tuple[str, ...]) -> bool:
    """Whether `url` stays on the machine: a local scheme, or one of `hosts` (``127.0.0.1:8888``)."""
    parts = urlsplit(url)
    return parts.scheme in LOCAL_SCHEMES or (
        parts.netloc in hosts and parts.hostname in ("127.0.0.1", "localhost")
    )


@contextmanager
def offline_page(browser, *, allow_hosts: tuple[str, ...] = (), viewport=None, **context_options) -> Iterator:
    """``(page, network, errors)``: a page in its own context that may reach nothing but local files
    (and `allow_hosts` on 127.0.0.1). Every other request is aborted and recorded in ``network.blocked``;
    JavaScript errors land in `errors`."""
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900}, **context_options)
    context.set_default_timeout(HANG_MS)  # waits are on conditions; this only ends a hung test
    network = NetworkLog()
    errors: list[str] = []

    def route(route):
        url = route.request.url
        network.requested.append(url)
        if allowed(url, allow_hosts):
            route.continue_()
        else:
            network.blocked.append(url)
            route.abort("internetdisconnected")

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    try:
        yield page, network, errors
    finally:
        context.close()

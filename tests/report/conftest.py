"""Rendered reports for the fixture experiments: each shape is rendered once per session and shared."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from abbench.store import open_store
from tests.experiments import build_all


@dataclass
class Page:
    """A parsed report page: its elements' attributes, scripts, styles and visible text."""

    html: str
    attrs: list[tuple[str, dict[str, str | None]]]
    scripts: list[str]
    styles: list[str]
    text: str


class _Parser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.attrs, self.scripts, self.styles, self.text = [], [], [], []
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.attrs.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._in = tag
            (self.scripts if tag == "script" else self.styles).append("")

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "style":
            self.styles[-1] += data
        else:
            self.text.append(data)


def parse_page(text: str) -> Page:
    """Parse a report page."""
    p = _Parser()
    p.feed(text)
    visible = re.sub(r"\s+", " ", " ".join(p.text))
    return Page(text, p.attrs, p.scripts, p.styles, html.unescape(visible))


@pytest.fixture(scope="session")
def report_store(tmp_path_factory):
    """``(store, ids, folder)``: the fixture experiments in a store of their own."""
    folder = tmp_path_factory.mktemp("report-store")
    store = open_store(folder / "store")
    ids = build_all(store, folder / "files")
    yield store, ids, folder
    store.close()


@pytest.fixture(scope="session")
def rendered(report_store):
    """``rendered(shape, **options) -> (ReportResult, Page)``, each distinct call rendered once."""
    from abbench.report import render_report

    store, ids, folder = report_store
    cache: dict = {}

    def render(shape: str, **options):
        key = (shape, tuple(sorted((k, repr(v)) for k, v in options.items())))
        if key not in cache:
            name = shape + "".join(f"-{k}" for k, _ in key[1])
            result = render_report(
                ids[shape], store=store, out=folder / "reports" / f"{name}.html", **options
            )
            cache[key] = (result, parse_page(Path(result.html_path).read_text(encoding="utf-8")))
        return cache[key]

    return render

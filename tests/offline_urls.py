"""Every URL in a rendered page that would leave it: the static half of "a shared page fetches nothing".

`outside_urls(html)` parses a page (a report, a notebook export) and returns each address that is not
the page's own: ``src``/``href``/``srcset``/``action``/``poster``/``data``/``xlink:href`` and every other
attribute, CSS ``url()`` and ``@import`` (in ``<style>`` and ``style=""``), and every absolute or
protocol-relative address written in an inline script (what ``fetch``, ``XMLHttpRequest`` or a created
``<script>`` could be handed). Allowed: relative addresses, fragments, ``data:``, ``about:`` and
``blob:``.

How it stays strict without false alarms:

- XML namespace names (``http://www.w3.org/2000/svg`` in ``xmlns`` or ``createElementNS``) are names,
  never fetched: only the W3C's fixed few are allowed, anywhere.
- plotly.js, inlined by each page, is minified third-party code whose text carries addresses that a
  page of abbench's never reaches (licence comments, links in console messages, the map and geo
  traces' tile servers). The bundle is recognised by its exact text (`abbench._plotly.plotly_js_source`)
  and its addresses are checked against `PLOTLY_DORMANT`, a reviewed list that says why each is never
  fetched; its cloud upload address is *not* on it (abbench empties it). The map/geo addresses are
  dormant only while no figure uses a map or geo trace, so such a trace is itself a finding.
- Visible text is not checked: a URL a case's text mentions is data, not a request.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import tinycss2

NAMESPACES = frozenset(
    {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xlink",
        "http://www.w3.org/1999/xhtml",
        "http://www.w3.org/2000/xmlns/",
        "http://www.w3.org/XML/1998/namespace",
        "http://www.w3.org/1998/Math/MathML",
    }
)
"""XML namespace names: identifiers, never fetched."""

PLOTLY_DORMANT: dict[str, str] = {
    # credits and licences, in comments and strings that are never requested
    "feross.org": "licence comment (buffer, ieee754)",
    "getify.mit-license.org": "licence comment",
    "syntheti.cc": "licence comment",
    "github.com": "links in licence comments and console messages",
    "www.esri.com": "attribution text of a map layer (map traces only)",
    "maplibre.org": "attribution link of maplibre (map traces only)",
    "www.openstreetmap.org": "attribution link (map traces only)",
    "wiki.openstreetmap.org": "link in maplibre's no-WebGL message (map traces only)",
    "get.webgl.org": "link in plotly's no-WebGL message",
    "plotly.com": "the logo's link (displaylogo is off) and a docs link in a console warning",
    # fetched only by map (scattermap, choroplethmap, densitymap) traces
    "basemaps.cartocdn.com": "map styles",
    "tiles.basemaps.cartocdn.com": "map fonts",
    "fonts.openmaptiles.org": "map fonts",
    "tile.openstreetmap.org": "map tiles",
    "server.arcgisonline.com": "map tiles",
    "geoserveis.icgc.cat": "map styles and tiles",
    "tilemaps.icgc.cat": "map tiles",
    "cdn.jsdelivr.net": "map icons (maki)",
    # fetched only by geo (scattergeo, choropleth) traces
    "cdn.plot.ly": "topojson of geo traces (topojsonURL)",
}
"""Hosts named in plotly.min.js that no abbench page reaches, and why."""

PLOTLY_ORIGINS = frozenset({"file://", "resource://android"})
"""Origins maplibre's worker compares messages against (names of origins, not addresses)."""

MAP_TRACES = frozenset(
    {
        "scattergeo",
        "choropleth",
        "scattermap",
        "scattermapbox",
        "choroplethmap",
        "choroplethmapbox",
        "densitymap",
        "densitymapbox",
    }
)
"""Trace types that would fetch the map and geo addresses of `PLOTLY_DORMANT`."""

NEW_PLOT = re.compile(r"""Plotly\.(?:newPlot|react)\(\s*["'][^"']*["']\s*,\s*""")


def _trace_types(script: str) -> list[str]:
    """The type of each trace a ``Plotly.newPlot(id, data, ...)`` call in `script` draws (a template's
    per-type defaults, in the layout, are not traces)."""
    types = []
    for m in NEW_PLOT.finditer(script):
        try:
            data, _ = json.JSONDecoder().raw_decode(script, m.end())
        except ValueError:
            types.append("(unreadable figure data)")
            continue
        types += [str(t.get("type", "scatter")) for t in data if isinstance(t, dict)]
    return types


ABSOLUTE = re.compile(r"""\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'`<>)\\]*""")
PROTOCOL_RELATIVE = re.compile(r"""["'`(]\s*(//[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+[^\s"'`<>)\\]*)""")
LOCAL_SCHEMES = ("data", "about", "blob")


def _local(url: str, page_url: str | None) -> bool:
    """Whether `url`, written in an attribute or CSS, stays in the page."""
    url = url.strip()
    if not url or url.startswith("#"):
        return True
    if page_url and url.split("#")[0] == page_url.split("#")[0]:
        return True
    parts = urlsplit(url)
    if parts.scheme:
        return parts.scheme.lower() in LOCAL_SCHEMES
    return not url.startswith("//")  # relative stays; protocol-relative leaves


def _in_text(text: str) -> list[str]:
    """Absolute and protocol-relative addresses written anywhere in script (or other) text."""
    found = [m.group(0) for m in ABSOLUTE.finditer(text)]
    found += [m.group(1) for m in PROTOCOL_RELATIVE.finditer(text)]
    return [u for u in found if u not in NAMESPACES and urlsplit(u).scheme.lower() not in LOCAL_SCHEMES]


def _in_css(text: str) -> list[str]:
    urls: list[str] = []

    def walk(tokens) -> None:
        for token in tokens:
            if token.type == "url":
                urls.append(token.value)
            elif token.type == "function":
                if token.lower_name in ("url", "src"):
                    urls.extend(t.value for t in token.arguments if t.type == "string")
                walk(token.arguments)
            elif token.type in ("() block", "[] block", "{} block"):
                walk(token.content)
            elif token.type == "at-keyword" and token.lower_value == "import":
                urls.append("@import")  # resolved below from the next string, if any

    tokens = tinycss2.parse_component_value_list(text, skip_comments=True)
    walk(tokens)
    imports = [t.value for i, t in enumerate(tokens) if t.type == "string" and _after_import(tokens, i)]
    return [u for u in urls if u != "@import"] + imports


def _after_import(tokens, i: int) -> bool:
    j = i - 1
    while j >= 0 and tokens[j].type == "whitespace":
        j -= 1
    return j >= 0 and tokens[j].type == "at-keyword" and tokens[j].lower_value == "import"


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.attrs: list[tuple[str, str, str]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs += [(tag, name, value or "") for name, value in attrs]
        if tag in ("script", "style"):
            self._in = tag
            (self.scripts if tag == "script" else self.styles).append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs += [(tag, name, value or "") for name, value in attrs]

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "style":
            self.styles[-1] += data


URL_ATTRS = frozenset(
    {
        "src",
        "href",
        "action",
        "formaction",
        "poster",
        "data",
        "background",
        "cite",
        "longdesc",
        "ping",
        "manifest",
        "codebase",
        "xlink:href",
        "icon",
        "lowsrc",
        "usemap",
        "itemtype",
        "archive",
    }
)


def outside_urls(html: str, *, page_url: str | None = None, bundle: str | None = None) -> list[str]:
    """Each address in `html` that leaves the page (``where: url``), sorted; empty for an offline page.

    `bundle` is the plotly.js text the page inlines (`abbench._plotly.plotly_js_source` by default);
    `page_url` the page's own address, which it may name.
    """
    if bundle is None:
        from abbench._plotly import plotly_js_source

        bundle = plotly_js_source()
    parser = _Page()
    parser.feed(html)
    found: set[str] = set()
    for tag, name, value in parser.attrs:
        where = f"<{tag} {name}>"
        if name == "xmlns" or name.startswith("xmlns:"):
            if value not in NAMESPACES:
                found.add(f"{where}: {value}")
        elif name in URL_ATTRS:
            if not _local(value, page_url):
                found.add(f"{where}: {value}")
        elif name == "srcset":
            found |= {
                f"{where}: {u}"
                for u in (c.split()[0] for c in value.split(",") if c.strip())
                if not _local(u, page_url)
            }
        elif name == "style":
            found |= {f"{where} url(): {u}" for u in _in_css(value) if not _local(u, page_url)}
        elif name == "content" and tag == "meta" and "url=" in value.lower():
            url = value.lower().split("url=", 1)[1]
            if not _local(url, page_url):
                found.add(f"{where}: {value}")
        else:
            found |= {f"{where}: {u}" for u in _in_text(value) if not _local(u, page_url)}
    for style in parser.styles:
        found |= {f"<style> url(): {u}" for u in _in_css(style) if not _local(u, page_url)}
    for script in parser.scripts:
        if bundle and bundle in script:
            found |= {
                f"plotly.js: {u}"
                for u in _in_text(bundle)
                if urlsplit(u).hostname not in PLOTLY_DORMANT and u not in PLOTLY_ORIGINS
            }
            script = script.replace(bundle, "")
        found |= {f"<script>: {u}" for u in _in_text(script) if not _local(u, page_url)}
        found |= {f"<script>: a {t} trace fetches map data" for t in _trace_types(script) if t in MAP_TRACES}
    return sorted(found)

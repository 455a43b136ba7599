"""What report cells show: escaped HTML tables, notes, cards and plotly figures, built from typed results.

Every string that may come from data, models or judges goes through `esc` (HTML) or `label` (plotly
text, which understands a few tags of its own), so a case holding ``<script>`` shows as text. A number
that is missing shows as an em dash with the reason nearby, never as NaN or None.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from abbench._plotly import NAME_KEY
from abbench._text import clip
from abbench.formatting import MISSING, is_number, num
from abbench.report._plotly import figure_bundle, show_report_figures
from abbench.types import OUTCOME_COLOURS, outcome_word

if TYPE_CHECKING:
    from abbench.metrics import ConfusionMatrix
    from abbench.stats import Interval, PairedOutcomes


class Point(Protocol):
    """A figure with its interval, as the dot plots draw it (an `abbench.metrics.Estimate`, a pass@k point)."""

    @property
    def value(self) -> float | None:
        """The figure (None or NaN: a gap)."""

    @property
    def interval(self) -> Interval | None:
        """Its interval (None, or NaN bounds: no error bar)."""


PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d")
"""Arm colours, in arm order (control first)."""


# -- formatting -------------------------------------------------------------------------------------


def esc(value: Any) -> str:
    """`value` as HTML text: escaped, with None shown as an em dash."""
    if value is None:
        return MISSING
    if isinstance(value, float) and not math.isfinite(value):
        return MISSING
    return html.escape(str(value), quote=True)


def label(value: Any, limit: int = 60) -> str:
    """`value` as plotly text: shortened, with ``& < >`` as entities (plotly reads tags like <b> and <a>)."""
    text = MISSING if value is None else str(value)
    return html.escape(clip(text, limit), quote=False)


# -- HTML builders (pure: they return text, so they can be tested without a kernel) ---------------------


def table_html(
    rows: Iterable[Mapping[str, Any]],
    columns: Sequence[tuple[str, str] | tuple[str, str, Any]],
    *,
    caption: str | None = None,
    row_class: Callable[[Mapping[str, Any]], str | None] | None = None,
    empty: str = "Nothing to show.",
) -> str:
    """An HTML table. Each column is ``(key, header)`` or ``(key, header, fmt)``.

    `fmt` is ``"text"`` (long text, wrapped), ``"ids"`` (a list of case ids: wide, so a row stays one or
    two lines high), ``"html"`` (the cell is already safe HTML), ``"html text"`` (safe HTML shown as
    long text: a case's input with its folded history), or a
    function value → display text (the result is escaped). Numbers without a `fmt` are right-aligned.
    """
    rows = list(rows)
    if not rows:
        return note_html(empty)
    head = []
    for col in columns:
        fmt = col[2] if len(col) > 2 else None
        numeric = callable(fmt) or any(is_number(r.get(col[0])) for r in rows)
        head.append(
            f'<th class="{"n" if numeric and fmt not in ("text", "ids", "html", "html text") else ""}">'
            f"{esc(col[1])}</th>"
        )
    body = []
    for r in rows:
        cells = []
        for col in columns:
            key, fmt = col[0], (col[2] if len(col) > 2 else None)
            value = r.get(key)
            if fmt == "html":
                cells.append(f"<td>{value if value is not None else MISSING}</td>")
            elif fmt == "html text":
                cells.append(f'<td class="text">{value if value is not None else MISSING}</td>')
            elif fmt in ("text", "ids"):
                cells.append(f'<td class="{fmt}">{esc(value)}</td>')
            elif callable(fmt):
                cells.append(f'<td class="n">{esc(fmt(value))}</td>')
            elif is_number(value):
                cells.append(f'<td class="n">{esc(num(value))}</td>')
            elif isinstance(value, bool):
                cells.append(f"<td>{'yes' if value else 'no'}</td>")
            else:
                cells.append(f"<td>{esc(value)}</td>")
        cls = row_class(r) if row_class else None
        body.append(f'<tr class="{esc(cls)}">' if cls else "<tr>")
        body.append("".join(cells) + "</tr>")
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (
        f'<div class="abb-table-wrap"><table class="abb-table">{cap}<thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def note_html(text: str, kind: str = "note") -> str:
    """A sentence in place of a section that has nothing to show (``kind``: note or warn)."""
    return f'<p class="abb-{esc(kind)}">{esc(text)}</p>'


def kv_html(pairs: Iterable[tuple[str, Any]]) -> str:
    """A definition list: label → value (values escaped; a value given as `Safe` is kept as is)."""
    items = []
    for key, value in pairs:
        shown = value.html if isinstance(value, Safe) else esc(value)
        items.append(f"<dt>{esc(key)}</dt><dd>{shown}</dd>")
    return f'<dl class="abb-kv">{"".join(items)}</dl>'


class Safe:
    """HTML that was built from escaped parts and must not be escaped again."""

    __slots__ = ("html",)

    def __init__(self, text: str):
        self.html = text

    def __str__(self) -> str:
        return self.html


def tag_html(text: str, kind: str = "") -> str:
    """A small pill (``draft`` marks a skill that is not a clean commit)."""
    return f'<span class="abb-tag {esc(kind)}">{esc(text)}</span>'


def title_html(title: str, subtitle: str | None = None) -> str:
    """The page's heading."""
    sub = f'<p class="abb-subtitle">{esc(subtitle)}</p>' if subtitle else ""
    return f"<h1>{esc(title)}</h1>{sub}"


def card_html(heading: str, big: str, text: str = "", tone: str = "flat") -> str:
    """One card of the at-a-glance row (``tone``: good, bad or flat).

    The headline wraps between its `` · ``-separated parts (``+1394% mean · +1398% median``), never
    inside one, so a long one stays in its card.
    """
    parts = " · ".join(f'<span class="abb-num">{esc(part)}</span>' for part in big.split(" · "))
    return (
        f'<div class="abb-card {esc(tone)}"><h4>{esc(heading)}</h4><div class="abb-big">{parts}</div>'
        f"<p>{esc(text)}</p></div>"
    )


def cards_html(cards: Iterable[str]) -> str:
    """A responsive row of cards built with `card_html`."""
    return f'<div class="abb-cards">{"".join(cards)}</div>'


VERDICT_WORDS = {
    "pass": "PASS",
    "block": "BLOCK",
    "warn": "PASS WITH WARNINGS",
    "incomplete": "INCOMPLETE",
    "inconclusive": "INCONCLUSIVE",
    "refused": "NO DECISION",
    "empty": "NO VERDICT YET",
}


def decision_html(verdict: str | None, headline: str, details: str = "", pair: str | None = None) -> str:
    """The decision banner: ``pass``, ``block``, ``warn``, ``incomplete``, ``inconclusive``, ``refused``,
    ``empty`` (nothing has run) or None (no gate), opening with the pair it is about when there is one."""
    tone = verdict if verdict in VERDICT_WORDS else "none"
    word = VERDICT_WORDS.get(tone, "NO GATE")
    extra = f"<div>{details}</div>" if details else ""
    named = f'<span class="abb-pair">{esc(pair)}:</span> ' if pair else ""
    return (
        f'<div class="abb-decision {tone}"><div class="abb-verdict">{named}<span>{word}</span></div>'
        f"<div>{esc(headline)}</div>{extra}</div>"
    )


# -- figures ---------------------------------------------------------------------------------------------


def base_layout(**overrides: Any) -> dict[str, Any]:
    """A light plotly layout without plotly's 8 KB default template: readable fonts, small margins."""
    layout: dict[str, Any] = {
        "template": "none",
        "font": {
            "family": "system-ui, -apple-system, Segoe UI, Roboto, PingFang SC, Microsoft YaHei, sans-serif",
            "size": 13,
            "color": "#1f2328",
        },
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "margin": {"l": 48, "r": 16, "t": 36, "b": 48},
        "height": 360,
        # Above the plot, left-aligned: below it a legend runs into the axis title and rotated tick labels
        # whenever a narrow screen wraps it onto a second line; above, plotly makes room for it.
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
        "xaxis": {"gridcolor": "#eaeef2", "zerolinecolor": "#d0d7de", "automargin": True},
        "yaxis": {"gridcolor": "#eaeef2", "zerolinecolor": "#d0d7de", "automargin": True},
        "hoverlabel": {"align": "left"},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(layout.get(key), dict):
            layout[key] = {**layout[key], **value}
        else:
            layout[key] = value
    return layout


def figure(data: list[dict[str, Any]], *, name: str = "", **layout: Any) -> Any:
    """A plotly figure from trace dicts and layout overrides (strings must already go through `label`);
    `name` is what screen readers call it (`abbench._plotly.figure_title`)."""
    import plotly.graph_objects as go

    if name:
        layout["meta"] = {NAME_KEY: name}
    return go.Figure(data=data, layout=base_layout(**layout))


# -- showing things in the notebook ---------------------------------------------------------------------


def setup() -> None:
    """Prepare a report kernel: figures display as the report renderer shows them (`figure_bundle`),
    without importing plotly's renderers (see `abbench.report._plotly.show_report_figures`)."""
    show_report_figures()


def show(text: str) -> None:
    """Display HTML built by the ``*_html`` functions."""
    from IPython.display import HTML, display

    display(HTML(text))


SUMMARY_MIMETYPE = "application/vnd.abbench.report+json"
"""The output a report notebook leaves for `render_report` to read (the decision); never shown on the page."""


def summary(data: Mapping[str, Any]) -> None:
    """Leave the report's headline (decision, verdict, figures) in the executed notebook for the caller."""
    from IPython.display import display

    display({SUMMARY_MIMETYPE: dict(data)}, raw=True)


def show_figure(fig: Any) -> None:
    """Display a plotly figure: a div and a ``Plotly.newPlot`` call in the page, the plotly mimetype for
    JupyterLab (`abbench.report._plotly.figure_bundle`)."""
    from IPython.display import display

    display(figure_bundle(fig), raw=True)


def table(
    rows: Iterable[Mapping[str, Any]],
    columns: Sequence[tuple[str, str] | tuple[str, str, Any]],
    **kw: Any,
) -> None:
    """Display `table_html`."""
    show(table_html(rows, columns, **kw))


def note(text: str, kind: str = "note") -> None:
    """Display `note_html`."""
    show(note_html(text, kind))


def kv(pairs: Iterable[tuple[str, Any]]) -> None:
    """Display `kv_html`."""
    show(kv_html(pairs))


def states_figure(states: Mapping[str, Mapping[str, int]]) -> Any:
    """Runs per arm and outcome as stacked horizontal bars (arms top to bottom in their order).

    `states` maps arm -> outcome key (`abbench.types.run_outcome`: ``fail`` is graded wrong, runs
    without a verdict are ``execution_failed``/``grading_failed``) or open state -> runs; the legend
    says them in `abbench.types.OUTCOME_WORDS`' words.
    """
    arms = list(states)
    data = []
    for state, colour in OUTCOME_COLOURS.items():
        counts = [states[a].get(state, 0) for a in arms]
        if any(counts):
            data.append(
                {
                    "type": "bar",
                    "orientation": "h",
                    "name": outcome_word(state),
                    "y": [label(a) for a in arms],
                    "x": counts,
                    "marker": {"color": colour},
                    "hovertemplate": "%{y}: %{x} " + outcome_word(state) + "<extra></extra>",
                }
            )
    return figure(
        data,
        name="Runs of each arm by outcome",
        barmode="stack",
        height=max(160, 70 + 42 * len(arms)),
        yaxis={"autorange": "reversed"},
        xaxis={"title": {"text": "runs"}},
        legend={"traceorder": "normal"},
        margin={"t": 12},
    )


# -- figures of analysis results (plain dicts from `.as_dict()`) -----------------------------------------


def colour(index: int) -> str:
    """The colour of the arm at `index` (control first)."""
    return PALETTE[index % len(PALETTE)]


def _errors(
    estimates: Sequence[Point | None],
) -> tuple[list[float | None], list[float | None], list[float | None]]:
    """Values and the distances to their interval ends (plotly's asymmetric error bars); None stays a gap."""
    values: list[float | None] = []
    plus: list[float | None] = []
    minus: list[float | None] = []
    for e in estimates:
        value = e.value if e is not None else None
        iv = e.interval if e is not None else None
        high, low = (iv.high, iv.low) if iv is not None else (None, None)
        if is_number(value):
            v = cast(float, value)
            values.append(v)
            plus.append(max(0.0, cast(float, high) - v) if is_number(high) else 0.0)
            minus.append(max(0.0, v - cast(float, low)) if is_number(low) else 0.0)
        else:
            values.append(None)
            plus.append(None)
            minus.append(None)
    return values, plus, minus


def _error_bars(
    estimates: Sequence[Point | None], scale: float, thickness: float, width: int
) -> tuple[list[float | None], dict[str, Any]]:
    """The values times `scale` (100 for a share) and plotly's asymmetric error bars around them."""
    values, plus, minus = _errors(estimates)

    def scaled(xs: list[float | None]) -> list[float | None]:
        return [None if x is None else x * scale for x in xs]

    bars = {"type": "data", "symmetric": False, "array": scaled(plus), "arrayminus": scaled(minus)}
    return scaled(values), bars | {"thickness": thickness, "width": width}


def estimate_figure(
    names: Sequence[str],
    estimates: Sequence[Point | None],
    *,
    share: bool = True,
    title: str = "",
) -> Any:
    """One dot per arm with its interval (a share on a 0–100% axis, or a score)."""
    values, bars = _error_bars(estimates, 100.0 if share else 1.0, thickness=2, width=6)
    data = [
        {
            "type": "scatter",
            "mode": "markers",
            "x": values,
            "y": [label(n) for n in names],
            "error_x": bars,
            "marker": {"size": 12, "color": [colour(i) for i in range(len(names))]},
            "cliponaxis": False,  # a dot at 0% or 100% stays whole
            "hovertemplate": "%{y}: %{x:.1f}" + ("%" if share else "") + "<extra></extra>",
            "showlegend": False,
        }
    ]
    axis: dict[str, Any] = {"title": {"text": title}}
    if share:
        axis.update(range=[0, 100], ticksuffix="%")
    return figure(
        data,
        name=f"{title or 'value'} of each arm, with its 95% interval",
        xaxis=axis,
        yaxis={"autorange": "reversed"},
        height=max(170, 80 + 44 * len(names)),
        margin={"t": 12},
    )


def grouped_figure(
    groups: Sequence[str],
    series: Mapping[str, Sequence[Point | None]],
    *,
    share: bool = True,
    title: str = "",
    lines: bool = False,
    name: str = "",
) -> Any:
    """Per group (domain or round), one dot per arm with its interval; `lines` joins the dots (rounds).

    Rounds run left to right; domains are rows (one per domain, top to bottom in their order), so their
    names never collide however many there are and however narrow the screen. `name` is what screen
    readers call the figure (by default `title` per arm and group).
    """
    name = name or f"{title or 'value'} of each arm by {'round' if lines else 'group'}, with 95% intervals"
    scale = 100.0 if share else 1.0
    rows = not lines
    value_key, group_key = ("x", "y") if rows else ("y", "x")
    data = []
    for i, (arm, estimates) in enumerate(series.items()):
        values, bars = _error_bars(estimates, scale, thickness=1.5, width=4)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers" if lines else "markers",
                "name": label(arm),
                group_key: [label(g) for g in groups],
                value_key: values,
                f"error_{value_key}": bars,
                "orientation": "h" if rows else "v",  # scattermode "group" offsets the arms along it
                "marker": {"size": 9 if rows else 10, "color": colour(i)},
                "line": {"color": colour(i)},
                "cliponaxis": False,
                "hovertemplate": f"%{{{group_key}}}: %{{{value_key}:.1f}}"
                + ("%" if share else "")
                + "<extra>"
                + label(arm)
                + "</extra>",
            }
        )
    axis: dict[str, Any] = {"title": {"text": title}}
    if share:
        axis.update(range=[0, 105], ticksuffix="%")
    if rows:
        return figure(
            data,
            name=name,
            xaxis=axis,
            yaxis={"type": "category", "autorange": "reversed"},
            scattermode="group",
            height=max(220, 90 + (14 + 10 * len(series)) * len(groups)),
        )
    return figure(
        data,
        name=name,
        yaxis=axis,
        xaxis={"type": "category", "tickangle": -30 if len(groups) > 6 else 0},
        scattermode="group",
        height=380,
    )


def confusion_figure(confusion: ConfusionMatrix, *, title: str = "") -> Any:
    """A confusion matrix as a heatmap: rows gold, columns predicted; colour by row share, text the counts."""
    counts = [list(row) for row in confusion.counts]
    rows = [label(x, 24) for x in confusion.labels]
    cols = [label(x, 24) for x in confusion.columns]
    shares = []
    for row in counts:
        total = sum(row)
        shares.append([(c / total) if total else 0.0 for c in row])
    data = [
        {
            "type": "heatmap",
            "z": shares,
            "x": cols,
            "y": rows,
            "text": [[f"{c:,}" for c in row] for row in counts],
            "texttemplate": "%{text}",
            "colorscale": [[0, "#f6f8fa"], [1, "#4c78a8"]],
            "zmin": 0,
            "zmax": 1,
            "showscale": False,
            "hovertemplate": "gold %{y} → predicted %{x}: %{text} runs (%{z:.0%} of the row)<extra></extra>",
        }
    ]
    side = 60 + 44 * max(1, len(rows))
    return figure(
        data,
        name=f"Confusion matrix, gold rows by predicted columns: {title}" if title else "Confusion matrix",
        title={"text": label(title), "font": {"size": 14}},
        xaxis={"title": {"text": "predicted"}, "side": "bottom", "type": "category"},
        yaxis={"title": {"text": "gold"}, "autorange": "reversed", "type": "category"},
        height=min(560, max(240, side + 90)),
        margin={"t": 40},
    )


def bars_figure(
    names: Sequence[str], values: Mapping[str, Sequence[Any]], *, title: str = "", suffix: str = ""
) -> Any:
    """Grouped bars: for each measure in `values` (``{"p50": [...], "p95": [...]}``) one bar per arm."""
    data = []
    for j, (measure, numbers) in enumerate(values.items()):
        data.append(
            {
                "type": "bar",
                "name": label(measure),
                "x": [label(n) for n in names],
                "y": [v if is_number(v) else None for v in numbers],
                "marker": {"color": PALETTE[(j + 3) % len(PALETTE)]},
                "hovertemplate": "%{x}: %{y:,.4~f}" + suffix + "<extra>" + label(measure) + "</extra>",
            }
        )
    return figure(
        data,
        name=f"{title or 'value'} of each arm: {', '.join(values)}",
        barmode="group",
        yaxis={"title": {"text": title}, "ticksuffix": suffix},
        height=320,
    )


def show_text(text: str) -> str:
    """A paragraph of plain words (escaped)."""
    return f"<p>{esc(text)}</p>"


def outcome_figure(outcomes: PairedOutcomes, a: str, b: str) -> Any:
    """How cases moved from A to B: fixed, regressed, right in both, wrong in both (one stacked bar)."""
    parts = (
        ("fixed", outcomes.fixed, "#54a24b"),
        ("regressed", outcomes.regressed, "#e45756"),
        ("right in both", outcomes.both_pass, "#c9e3c5"),
        ("wrong in both", outcomes.both_fail, "#f2c4c4"),
    )
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": name,
            "y": [label(f"{b} vs {a}")],
            "x": [n],
            "marker": {"color": c},
            "text": [f"{n:,}" if n else ""],
            "textposition": "inside",
            "hovertemplate": name + ": %{x} cases<extra></extra>",
        }
        for name, n, c in parts
    ]
    # The legend sits under the axis title (at y -0.6 it covered "cases"), in reading order.
    return figure(
        data,
        name=f"Cases of {b} vs {a}: fixed, regressed, right in both, wrong in both",
        barmode="stack",
        height=170,
        margin={"t": 36, "b": 40},
        xaxis={"title": {"text": "cases"}},
        # above the bar, in the bar's order: below it, the legend ran into the axis title
        # all of it, however many rows a phone wraps it to (by default a legend stops at half the
        # figure's height and scrolls, over the bar)
        legend={"traceorder": "normal", "maxheight": 1},
    )


# -- the names the report notebook calls these by (`abbench.report`) ------------------------------------

escape = esc
leave_summary = summary
setup_kernel = setup
show_html = show
show_note = note

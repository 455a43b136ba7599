"""A confusion matrix of many labels as a plotly heatmap at a fixed cell size, shared by the widget and the report.

A matrix of 77 intents squeezed into a page-wide figure has cells of a few pixels and axis labels
drawn over each other. Here each cell keeps `CELL` pixels, every label is written (rows on the left,
predictions along the top, turned upright), the most frequent gold labels come first, and the figure is
as large as it needs to be: the page puts it in a box that scrolls (see `SCROLL_STYLE`). plotly is
imported lazily: this module is loaded by views only.
"""

from __future__ import annotations

import html
from typing import Any

from abbench._text import clip
from abbench.metrics import ConfusionMatrix

CELL = 18
"""Pixels per cell, however many labels."""
LARGE = 12
"""Above this many labels, a matrix gets this view (one figure per arm, scrolling) instead of the
side-by-side figures that fit a page."""
TOP_CONFUSIONS = 20
"""Confusions listed in the sorted table above the matrix."""
SCROLL_STYLE = "overflow:auto; max-height:720px; max-width:100%; border:1px solid #e5e5e5"
"""The CSS of the box a large matrix scrolls in."""
LABEL_CHARS = 40
"""Axis labels longer than this are shortened (the hover and the tables have them whole)."""
_FONT = 10
_CHAR = 6.2  # pixels per character of a tick label at `_FONT` (sans-serif, on average)
_COLOURS = [[0.0, "#eef4fb"], [0.05, "#c6dbef"], [0.2, "#6baed6"], [0.5, "#2171b5"], [1.0, "#08306b"]]


def _text(value: Any, limit: int | None = None) -> str:
    """A label as plotly text, with ``& < >`` as entities (plotly reads tags such as <b>); shortened to
    `limit` characters when given."""
    text = str(value) if limit is None else clip(str(value), limit)
    return html.escape(text, quote=False)


def _margin(labels: list[str]) -> int:
    return int(min(300, 24 + _CHAR * max((len(x) for x in labels), default=4)))


def large_matrix_figure(confusion: ConfusionMatrix, *, title: str = "") -> Any:
    """The full matrix as one heatmap: rows gold and columns predicted, most frequent gold labels first.

    Colour is the share of the gold row (empty cells stay white), the text of a cell its run count; the
    hover says both. The figure's width and height follow from `CELL`, so it never shrinks to fit.
    """
    import plotly.graph_objects as go

    cm = confusion.by_frequency()
    rows, cols = [_text(x) for x in cm.labels], [_text(x) for x in cm.columns]
    short_rows, short_cols = (
        [_text(x, LABEL_CHARS) for x in cm.labels],
        [_text(x, LABEL_CHARS) for x in cm.columns],
    )
    shares = cm.normalised()
    z = [
        [share if count else None for share, count in zip(share_row, count_row, strict=True)]
        for share_row, count_row in zip(shares, cm.counts, strict=True)
    ]
    text = [[f"{c}" if c else "" for c in row] for row in cm.counts]
    support = [sum(row) for row in cm.counts]
    custom = [[[c, support[i]] for c in row] for i, row in enumerate(cm.counts)]
    left, top = _margin(short_rows), _margin(short_cols)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cols,
            y=rows,
            text=text,
            texttemplate="%{text}",
            textfont={"size": 9},
            customdata=custom,
            colorscale=_COLOURS,
            zmin=0,
            zmax=1,
            xgap=1,
            ygap=1,
            showscale=False,
            hoverongaps=False,
            hovertemplate=(
                "gold %{y} → predicted %{x}: %{customdata[0]} of %{customdata[1]} runs"
                " (%{z:.0%})<extra></extra>"
            ),
        )
    )
    heading = {
        "text": _text(title),
        "x": 0,
        "xanchor": "left",
        "yref": "container",
        "y": 1,
        "yanchor": "top",
        "pad": {"t": 8, "l": 4},
        "font": {"size": 14},
    }
    fig.update_layout(
        title=heading if title else None,
        width=left + CELL * len(cols) + 30,
        height=top + CELL * len(rows) + 40 + (30 if title else 0),
        margin={"l": left, "r": 20, "t": top + (30 if title else 0), "b": 20, "autoexpand": False},
        template="plotly_white",
        font={"size": _FONT},
        plot_bgcolor="#ffffff",
    )
    fig.update_xaxes(
        side="top", type="category", tickangle=-90, tickmode="array", tickvals=cols, ticktext=short_cols,
        tickfont={"size": _FONT}, showgrid=False, title=None, automargin=False,
    )  # fmt: skip
    fig.update_yaxes(
        type="category", autorange="reversed", tickmode="array", tickvals=rows, ticktext=short_rows,
        tickfont={"size": _FONT}, showgrid=False, title=None, automargin=False,
    )  # fmt: skip
    return fig

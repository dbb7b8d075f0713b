"""Plotly figures of the pages, built with the ``plotly`` package from plain series (pure).

Every name that comes from a monitored system (group, topic, member id) is HTML-escaped
before it enters a figure: Plotly.js reads titles, legends and hover text as its own small
HTML dialect, so ``<script>`` must arrive as ``&lt;script&gt;`` to be drawn as text.
Times are naive UTC strings: Plotly.js has no time zones, the axes say UTC.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

import plotly.graph_objects as go

from dashboard.ui.params import SEVERITY, STATUSES_WORST_FIRST

COLORS = {
    "OK": "#2e7d32",
    "WARN": "#f9a825",
    "STALL": "#ef6c00",
    "STOP": "#c62828",
    "REWIND": "#8e24aa",
    "ERR": "#6d0f0f",
    "UNKNOWN": "#9e9e9e",
}
LINE_COLORS = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00")
HEIGHT = 260
# A chart with a legend is taller by the legend's row, below the axis title (``_layout``).
LEGEND_HEIGHT = 300
LEGEND_MARGIN_B = 80
LEGEND_Y = -0.33


def t(at: datetime) -> str:
    """A UTC time as Plotly.js reads it."""
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return at.isoformat(sep=" ", timespec="seconds")


def _layout(title: str, y_title: str = "", **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "template": "none",
        "title": {"text": title, "font": {"size": 14}, "x": 0.01},
        "height": HEIGHT,
        "margin": {"l": 60, "r": 20, "t": 36, "b": 40},
        "xaxis": {"title": {"text": "UTC"}, "showgrid": True, "gridcolor": "#eee"},
        "yaxis": {"title": {"text": y_title}, "gridcolor": "#eee", "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25},
        "hovermode": "x unified",
    }
    layout.update(extra)
    return layout


def _time_legend(layout: dict[str, Any]) -> dict[str, Any]:
    """A time series' legend goes under its x axis's two-line dates and "UTC", not on them:
    the chart grows by the legend's row."""
    layout["height"] = LEGEND_HEIGHT
    layout["margin"] = {**layout["margin"], "b": LEGEND_MARGIN_B}
    layout["legend"] = {"orientation": "h", "x": 0, "y": LEGEND_Y, "yanchor": "top"}
    return layout


def _dict(fig: go.Figure) -> dict[str, Any]:
    return fig.to_plotly_json()


def series_figure(
    title: str,
    x: Sequence[datetime],
    lines: dict[str, Sequence[float | None]],
    y_title: str = "",
    stale: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """Lines over time sharing one axis; stale points (a source was unreachable) are marked
    with hollow grey markers on the first line, so old figures are not read as fresh."""
    xs = [t(a) for a in x]
    layout = _layout(escape(title), escape(y_title))
    if len(lines) > 1 or (stale and any(stale) and lines):
        _time_legend(layout)
    fig = go.Figure(layout=layout)
    for i, (name, ys) in enumerate(lines.items()):
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=list(ys),
                name=escape(name),
                mode="lines",
                line={"color": LINE_COLORS[i % len(LINE_COLORS)], "width": 2},
                connectgaps=False,
            )
        )
    if stale and any(stale) and lines:
        first = next(iter(lines.values()))
        fig.add_trace(
            go.Scatter(
                x=[x_ for x_, s in zip(xs, stale, strict=True) if s],
                y=[y for y, s in zip(first, stale, strict=True) if s],
                name="stale (source unreachable)",
                mode="markers",
                marker={"color": "#9e9e9e", "symbol": "circle-open", "size": 7},
            )
        )
    return _dict(fig)


def _lines_figure(
    title: str,
    lines: Sequence[tuple[str, Sequence[datetime], Sequence[float | None], str]],
    y_title: str,
) -> dict[str, Any]:
    """Lines with x values of their own; ``dash`` per line ("solid", "dash", ...). Names are
    escaped here, as in ``series_figure``."""
    layout = _layout(escape(title), escape(y_title))
    if len(lines) > 1:
        _time_legend(layout)
    fig = go.Figure(layout=layout)
    for i, (name, x, ys, dash) in enumerate(lines):
        fig.add_trace(
            go.Scatter(
                x=[t(a) for a in x],
                y=list(ys),
                name=escape(name),
                mode="lines",
                line={"color": LINE_COLORS[i % len(LINE_COLORS)], "width": 2, "dash": dash},
                connectgaps=False,
            )
        )
    return _dict(fig)


def spout_counts_figure(
    title: str,
    x: Sequence[datetime],
    acked_per_s: Sequence[float | None],
    failed_per_s: Sequence[float | None],
    pending: Sequence[float | None],
) -> dict[str, Any] | None:
    """A spout's pushed counts read as what they are: acked and failed are counters since the
    spout started (thousands, growing for ever), so they are drawn as rates per second on the
    left axis; pending is a gauge (a handful of tuples), drawn on its own right-hand axis, so
    neither flattens the other. None when nothing is known."""
    lines = [("acked/s", acked_per_s, "y", "solid", LINE_COLORS[2]),
             ("failed/s", failed_per_s, "y", "solid", LINE_COLORS[1]),
             ("pending (right axis)", pending, "y2", "dot", LINE_COLORS[0])]  # fmt: skip
    if not any(v is not None for _, ys, *_ in lines for v in ys):
        return None
    layout = _layout(
        escape(title),
        "tuples/s",
        yaxis2={
            "title": {"text": "pending (tuples)"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
        },
    )
    _time_legend(layout)
    layout["margin"] = {**layout["margin"], "r": 60}
    known = [v for v in pending if v is not None]
    if not known or max(known) < 5:
        # A gauge at 0 or a few tuples: whole numbers on the axis, not 0.363 of a tuple.
        layout["yaxis2"].update(range=[0, 5], dtick=1, autorange=False)
    xs = [t(a) for a in x]
    fig = go.Figure(layout=layout)
    for name, ys, axis, dash, color in lines:
        fig.add_trace(
            go.Scatter(
                x=xs, y=list(ys), name=name, mode="lines", yaxis=axis, connectgaps=False,
                line={"color": color, "width": 2, "dash": dash},
            )
        )  # fmt: skip
    return _dict(fig)


def spout_figures(
    label: str, history: dict[str, dict[str, Sequence[Any]]]
) -> dict[str, dict[str, Any] | None]:
    """A Storm spout's own charts from ``queries.series.spout_history``: Storm UI's emitted,
    acked and failed rates; its complete latency; the task's tuples in flight against
    ``max.spout.pending`` (BACKPRESSURE is in flight at the cap). A chart with nothing to
    draw is None. With several spouts in the topology each line names its spout."""
    several = len(history) > 1

    def name(spout_id: str, what: str) -> str:
        return f"{spout_id} {what}" if several else what

    def known(lines: list) -> bool:
        return any(v is not None for line in lines for v in line[2])

    rates, latency, pending = [], [], []
    for spout_id, h in sorted(history.items()):
        x = h["x"]
        for key, what in (("emitted_per_s", "emitted/s"), ("acked_per_s", "acked/s"),
                          ("failed_per_s", "failed/s")):  # fmt: skip
            rates.append((name(spout_id, what), x, h[key], "solid"))
        latency.append(
            (name(spout_id, "complete latency (ms)"), x, h["complete_latency_ms"], "solid")
        )
        pending.append((name(spout_id, "in flight"), x, h["pending"], "solid"))
        pending.append((name(spout_id, "max.spout.pending"), x, h["max_spout_pending"], "dash"))
    return {
        "spout_rates": _lines_figure(f"Storm UI throughput of {label}", rates, "tuples/s")
        if known(rates) else None,
        "spout_latency": _lines_figure(f"Complete latency of {label}", latency, "ms")
        if known(latency) else None,
        "spout_pending": _lines_figure(f"Tuples in flight of {label}", pending, "tuples")
        if known(pending) else None,
    }  # fmt: skip


def heatmap_figure(
    rows: Sequence[tuple[str, Sequence[tuple[str, str]]]], title: str
) -> dict[str, Any] | None:
    """Partitions by status: one row per group, one cell per partition (worst status first).

    ``rows`` = [(group label, [(partition label, status), …]), …]. Cells beyond a row's
    partitions are empty. Colours are the status colours on a discrete scale.
    """
    if not rows:
        return None
    width = max(len(cells) for _, cells in rows)
    levels = len(SEVERITY) - 1
    z, text = [], []
    for label, cells in rows:
        z.append([SEVERITY[s] for _, s in cells] + [None] * (width - len(cells)))
        text.append(
            [f"{escape(label)}<br>{escape(p)}: {s}" for p, s in cells] + [""] * (width - len(cells))
        )
    scale = []
    for status in sorted(SEVERITY, key=SEVERITY.get):
        lo, hi = SEVERITY[status] / (levels + 1), (SEVERITY[status] + 1) / (levels + 1)
        scale += [[lo, COLORS[status]], [hi, COLORS[status]]]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            y=[escape(label) for label, _ in rows],
            text=text,
            hovertemplate="%{text}<extra></extra>",
            colorscale=scale,
            zmin=-0.5,
            zmax=levels + 0.5,
            xgap=1,
            ygap=1,
            showscale=True,
            colorbar={
                "tickvals": [SEVERITY[s] for s in STATUSES_WORST_FIRST],
                "ticktext": list(STATUSES_WORST_FIRST),
                "thickness": 12,
            },
        ),
        layout=_layout(
            escape(title),
            height=max(HEIGHT, 22 * len(rows) + 80),
            hovermode="closest",
            xaxis={
                "title": {"text": "partition (worst first)"},
                "showticklabels": False,
                "showgrid": False,
            },
            yaxis={"automargin": True, "autorange": "reversed", "type": "category"},
        ),
    )
    return _dict(fig)


def assignment_figure(members: Sequence[tuple[str, dict[str, int]]]) -> dict[str, Any] | None:
    """Partitions per member, stacked by status: ``members`` = [(label, {status: count})]."""
    if not members:
        return None
    labels = [escape(label) for label, _ in members]
    fig = go.Figure(
        layout=_layout(
            "Partitions per member",
            barmode="stack",
            height=max(HEIGHT, 26 * len(members) + 90),
            hovermode="closest",
            xaxis={"title": {"text": "partitions"}},
            yaxis={"automargin": True, "type": "category", "autorange": "reversed"},
        )
    )
    for status in STATUSES_WORST_FIRST:
        counts = [c.get(status, 0) for _, c in members]
        if any(counts):
            fig.add_trace(
                go.Bar(
                    y=labels,
                    x=counts,
                    name=status,
                    orientation="h",
                    marker={"color": COLORS[status]},
                )
            )
    return _dict(fig)


def rebalance_figure(events: Sequence[dict[str, Any]], since: datetime, until: datetime):
    """Generation and rebalance timeline: one marker per event, on the row of its cause,
    labelled with the generation it led to (``gen 7``) so it reads without hovering."""
    if not events:
        return None
    fig = go.Figure(
        go.Scatter(
            x=[t(e["at"]) for e in events],
            y=[escape(e["cause"]) for e in events],
            mode="markers+text",
            marker={"size": 10, "color": "#6a1b9a", "symbol": "diamond"},
            text=[_generation_label(e["generation"]) for e in events],
            textposition="top center",
            textfont={"size": 11, "color": "#4a148c"},
            customdata=[
                escape(f"generation {e['generation'] if e['generation'] is not None else '?'}")
                + (f"<br>{escape(', '.join(e['causes']))}" if e.get("causes") else "")
                for e in events
            ],
            hovertemplate="%{x}<br>%{y}<br>%{customdata}<extra></extra>",
            name="rebalance",
        ),
        layout=_layout(
            "Rebalances by cause (labelled with the generation they led to)",
            hovermode="closest",
            height=max(200, 30 * len({e["cause"] for e in events}) + 110),
            xaxis={"title": {"text": "UTC"}, "range": [t(since), t(until)]},
            yaxis={"automargin": True, "type": "category"},
        ),
    )
    return _dict(fig)


def _generation_label(generation: int | None) -> str:
    return "gen ?" if generation is None else f"gen {generation}"


def sparkline_points(values: Sequence[float | None], width: int = 100, height: int = 24) -> str:
    """An SVG polyline's ``points`` for a trend; unknown values are skipped. Cheap enough for
    every row of a list (a Plotly figure per row would not be)."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(known) < 2:
        return ""
    lo = min(v for _, v in known)
    hi = max(v for _, v in known)
    span = (hi - lo) or 1.0
    step = width / max(len(values) - 1, 1)
    return " ".join(
        f"{i * step:.1f},{height - 2 - (v - lo) / span * (height - 4):.1f}" for i, v in known
    )

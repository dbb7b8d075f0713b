"""Template filters and tags of the dashboard pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html, json_script
from plotly.utils import PlotlyJSONEncoder

from dashboard import formatting

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    return formatting.duration(seconds)


@register.filter
def arrow(direction: str | None) -> str:
    return formatting.arrow(direction)


@register.filter
def rate(per_s: float | None) -> str:
    return formatting.rate(per_s)


@register.filter
def num(value: float | None) -> str:
    return formatting.number(value)


@register.filter
def ago(at, missing: str = "never") -> str:
    """``3m 2s ago``; ``missing`` when there is no time (``|ago:"unknown"`` where a source
    does not say, rather than "never")."""
    return missing if at is None else formatting.age(at, timezone.now())


@register.filter
def elapsed(at) -> str:
    """How long since ``at``, without "ago": "STOP for 3m 2s"."""
    return "—" if at is None else formatting.duration((timezone.now() - at).total_seconds())


@register.filter
def status_class(status: str) -> str:
    return formatting.status_class(status)


@register.filter
def percent(share: float | None) -> str:
    return formatting.percent(share)


@register.simple_tag
def figure(fig: dict[str, Any] | None, element_id: str, css: str = "chart") -> str:
    """A Plotly figure as a ``<div>`` plus its JSON in a ``json_script`` block (``<``, ``>``
    and ``&`` escaped there), drawn by ``charts.js``; the data never passes through ``|safe``."""
    if fig is None:
        return ""
    data_id = f"{element_id}-data"
    return format_html(
        '<div id="{}" class="{}" data-figure="{}"></div>{}',
        element_id,
        css,
        data_id,
        json_script(fig, data_id, encoder=PlotlyJSONEncoder),
    )

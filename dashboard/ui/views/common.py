"""What every page view shares: bad parameters as 400 naming the field, and live updates.

A page asked with ``?live=1`` answers JSON holding its live regions re-rendered from the
same partial templates (so escaping is the templates' own); ``?live=charts`` answers its
Plotly figures. ``live.js`` swaps them in without a reload.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from plotly.utils import PlotlyJSONEncoder

from dashboard.ui.params import BadParam

LIVE_MODES = ("1", "charts")


def live_mode(request: HttpRequest) -> str:
    """``""`` for the page itself; raises BadParam for a mode that does not exist."""
    mode = request.GET.get("live", "")
    if mode and mode not in LIVE_MODES:
        raise BadParam("live", f"must be one of {', '.join(LIVE_MODES)}")
    return mode


def bad_request(error: BadParam) -> HttpResponse:
    return HttpResponseBadRequest(
        f"Bad parameter {error.field!r}: {error.message}\n", content_type="text/plain"
    )


def live_regions(request: HttpRequest, regions: dict[str, tuple[str, dict[str, Any]]]):
    html = {
        name: render_to_string(template, context, request)
        for name, (template, context) in regions.items()
    }
    return JsonResponse({"generated_at": timezone.now().isoformat(), "regions": html})


def live_figures(figures: dict[str, dict | None]) -> JsonResponse:
    return JsonResponse(
        {"generated_at": timezone.now().isoformat(), "figures": figures},
        encoder=PlotlyJSONEncoder,
    )


def url_for_pk(name: str):
    """``pk -> URL`` of a ``<int:pk>`` route, reversed once: a table of 200 rows would spend
    longer in ``reverse`` than in its query."""
    prefix = reverse(name, args=[0])[: -len("0/")]
    return lambda pk: f"{prefix}{pk}/"


def page_context(**extra: Any) -> dict[str, Any]:
    return {"refresh_s": settings.LAGWATCH_UI_REFRESH_S, "now": timezone.now(), **extra}

"""The overview (SPEC §8): clusters, groups by status, top groups, open alerts, heat map."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.alerts.summary import open_alerts, open_alerts_count
from dashboard.monitoring.health import health_report
from dashboard.ui import charts
from dashboard.ui.params import BadParam
from dashboard.ui.queries import overview as q
from dashboard.ui.queries.common import unreachable_sources
from dashboard.ui.views.common import (
    bad_request,
    live_figures,
    live_mode,
    live_regions,
    page_context,
)

OPEN_ALERTS_SHOWN = 8


def _live_context() -> dict:
    # Three missed heartbeats before the pipeline is called late: one can be lost to a restart.
    max_age = 3 * settings.CELERY_BEAT_SCHEDULE["heartbeat"]["schedule"]
    return page_context(
        **q.summary(),
        alerts=open_alerts(OPEN_ALERTS_SHOWN),
        alerts_count=open_alerts_count(),
        unreachable=unreachable_sources(),
        health=health_report(timezone.now(), max_age),
    )


def _heatmap():
    return charts.heatmap_figure(q.heatmap_rows(), "Partitions by status (worst groups)")


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    try:
        mode = live_mode(request)
    except BadParam as e:
        return bad_request(e)
    if mode == "charts":
        return live_figures({"heatmap": _heatmap()})
    context = _live_context()
    if mode == "1":
        return live_regions(request, {"overview": ("ui/partials/overview_live.html", context)})
    return render(request, "ui/overview.html", {**context, "heatmap": _heatmap()})

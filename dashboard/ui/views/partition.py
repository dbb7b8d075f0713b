"""One partition (SPEC §8): offsets and lag over time, status changes, diagnosis + evidence."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.monitoring.models import PartitionState
from dashboard.monitoring.share_state import share_state_document
from dashboard.ui import charts
from dashboard.ui.params import RANGES, BadParam, range_param
from dashboard.ui.queries import partition as q
from dashboard.ui.queries.common import unreachable_sources
from dashboard.ui.queries.series import counter_rates, partition_series
from dashboard.ui.views.common import (
    bad_request,
    live_figures,
    live_mode,
    live_regions,
    page_context,
)
from spark_jobs.evaluator.retention import at_risk


def _figures(p: PartitionState, rng, now) -> dict:
    s = partition_series(p, rng, now)
    where = f"{p.topic}/{p.partition}"
    figs = {
        "offsets": charts.series_figure(
            f"Offsets of {where}", s["x"],
            {"latest": s["latest"], "committed": s["committed"]}, "offset", s["stale"],
        )
        if "committed" in s
        else None,
        "lag": charts.series_figure(
            f"Lag of {where} ({s['kind']})", s["x"], {"lag": s["lag"]}, "messages", s["stale"]
        ),
        "time_lag": charts.series_figure(
            f"Time lag of {where} ({s['kind']})", s["x"], {"time lag (s)": s["time_lag"]},
            "seconds",
        ),
    }  # fmt: skip
    pending = s.get("pending") or []
    # Without a push (a real Storm's UI alone) a partition carries its whole spout's counters
    # and no pending of its own: the title says whose counts they are.
    whose = where if any(v is not None for v in pending) else "its whole spout"
    figs["spout"] = charts.spout_counts_figure(
        f"Spout counts of {whose}: acked and failed per second, pending", s["x"],
        counter_rates(s["x"], s.get("acked") or []),
        counter_rates(s["x"], s.get("failed") or []), pending,
    )  # fmt: skip
    return {"figures": figs, "series_kind": s["kind"]}


@require_GET
def partition(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        mode = live_mode(request)
        rng = range_param(request.GET)
    except BadParam as e:
        return bad_request(e)
    try:
        p = q.partition(pk)
    except PartitionState.DoesNotExist:
        raise Http404("No such partition") from None
    now = page_context()["now"]
    if mode == "charts":
        return live_figures(_figures(p, rng, now)["figures"])
    context = page_context(
        p=p,
        g=p.group,
        rng=rng,
        diagnosis=q.diagnosis(p),
        retention_risk=at_risk(p.retention_left_s, p.group.cluster.retention_risk_s),
        share_state=share_state_document(p),
        **q.trend_and_retention(p, now),
        unreachable=unreachable_sources([p.group.cluster_id]),
    )
    if mode == "1":
        return live_regions(request, {"partition": ("ui/partials/partition_live.html", context)})
    return render(
        request,
        "ui/partition.html",
        {
            **context,
            **_figures(p, rng, now),
            "changes": q.status_changes(p),
            "ranges": [
                {"key": r.key, "label": r.label, "active": r.key == rng.key}
                for r in RANGES.values()
            ],
        },
    )

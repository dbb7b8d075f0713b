"""One group (SPEC §8): lag and time-lag charts over a chosen range, partition table,
members and their assignment, assignment balance and what-if, rebalance timeline, spout
counts, status changes."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.ingest.store import stored_producers
from dashboard.monitoring.models import ConsumerGroup
from dashboard.monitoring.producers import expiry_rows, topic_expiry
from dashboard.ui import charts
from dashboard.ui.params import PARTITION_SORTS, RANGES, STATUSES_WORST_FIRST, BadParam, group_view
from dashboard.ui.queries import group as q
from dashboard.ui.queries.common import unreachable_sources
from dashboard.ui.queries.series import counter_rates, group_series, spout_history
from dashboard.ui.views.common import (
    bad_request,
    live_figures,
    live_mode,
    live_regions,
    page_context,
)
from spark_jobs.evaluator.retention import at_risk


def _figures(g: ConsumerGroup, view, rows, now) -> dict[str, Any]:
    s = group_series(g, view.range, now, [r["id"] for r in rows])
    label = f"{g.name}"
    figs: dict[str, Any] = {
        "lag": charts.series_figure(
            f"Lag of {label} ({s['kind']})", s["x"], {"lag (messages)": s["lag"]}, "messages",
            s["stale"],
        ),
        "time_lag": charts.series_figure(
            f"Time lag of {label} ({s['kind']})", s["x"], {"max time lag (s)": s["time_lag"]},
            "seconds",
        ),
    }  # fmt: skip
    # The partitions' sums are per-partition figures a spout pushed (with its pending). Without
    # a push (a real Storm's UI alone) every partition carries the whole spout's counters, and
    # their sum would count the spout once per partition: the spout's own charts below show it.
    pending = s.get("pending") or []
    figs["spout"] = (
        charts.spout_counts_figure(
            f"Spout counts of {label}: acked and failed per second, pending", s["x"],
            counter_rates(s["x"], s.get("acked") or []),
            counter_rates(s["x"], s.get("failed") or []), pending,
        )
        if any(v is not None for v in pending)
        else None
    )  # fmt: skip
    # A Storm 2 spout's Kafka group too: its topology's spouts, where a Storm UI gives them.
    spouts = spout_history(g, s["since"]) if g.source == "storm" or g.topology_id else {}
    figs.update(charts.spout_figures(label, spouts))
    members = q.assignment(g, rows)
    figs["assignment"] = charts.assignment_figure([(m["member"], m["by_status"]) for m in members])
    events = q.rebalances(g, s["since"])
    figs["rebalances"] = charts.rebalance_figure(events, s["since"], now)
    return {
        "figures": figs,
        "series_kind": s["kind"],
        "members": members,
        "events": events,
        "streams": q.streams(g),
    }


def _producer_expiry(g: ConsumerGroup, rows) -> list[dict[str, Any]]:
    """PRODUCER_EXPIRY of each topic the group reads: records it will never see, which its
    lag cannot show."""
    topics = {r["topic"] for r in rows}
    stored = stored_producers(g.cluster.name)
    return [e for e in expiry_rows(topic_expiry(stored)) if e["topic"] in topics]


def _live(g: ConsumerGroup, view, rows) -> dict[str, Any]:
    t = q.table(rows, view, g.cluster.name)
    threshold = g.cluster.retention_risk_s
    for r in t["rows"]:
        r["retention_risk"] = at_risk(r["retention_left_s"], threshold)
    totals = q.totals(rows)
    context = page_context(
        g=g,
        view=view,
        totals=totals,
        retention_risk=at_risk(totals["retention_left"], threshold),
        membership=q.membership(g),
        table=t,
        unreachable=unreachable_sources([g.cluster_id]),
        producer_expiry=_producer_expiry(g, rows),
        sorts=[
            {
                "key": k,
                "label": label,
                "qs": view.query_string(sort=k, page=1),
                "active": k == view.sort,
            }
            for k, label in PARTITION_SORTS.items()
        ],  # fmt: skip
        status_chips=[
            {
                "status": s,
                "active": s in view.statuses,
                "qs": view.query_string(
                    statuses=tuple(x for x in view.statuses if x != s)
                    if s in view.statuses
                    else (*view.statuses, s),
                    page=1,
                ),
            }
            for s in STATUSES_WORST_FIRST
        ],
        prev_qs=view.query_string(page=t["page"] - 1) if t["page"] > 1 else None,
        next_qs=view.query_string(page=t["page"] + 1) if t["page"] < t["pages"] else None,
    )
    context["trend"] = q.trend(g, context["now"])
    return context


@require_GET
def group(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        mode = live_mode(request)
        view = group_view(request.GET)
    except BadParam as e:
        return bad_request(e)
    try:
        g = q.group(pk)
    except ConsumerGroup.DoesNotExist:
        raise Http404("No such group") from None
    rows = q.partitions(g)
    if mode == "charts":
        return live_figures(_figures(g, view, rows, page_context()["now"])["figures"])
    context = _live(g, view, rows)
    if mode == "1":
        return live_regions(
            request,
            {
                "group-head": ("ui/partials/group_head.html", context),
                "partitions": ("ui/partials/group_partitions.html", context),
            },
        )
    extra = _figures(g, view, rows, context["now"])
    return render(
        request,
        "ui/group.html",
        {
            **context,
            **extra,
            "changes": q.status_changes(g),
            "balance": q.balance(g, rows),
            "ranges": [
                {
                    "key": r.key,
                    "label": r.label,
                    "qs": view.query_string(range=r, page=1),
                    "active": r.key == view.range.key,
                }
                for r in RANGES.values()
            ],  # fmt: skip
        },
    )

"""The overview: clusters, groups by status, top groups, partitions heat map (SPEC §8).

One pass over the partitions (grouped by group and status) gives the partition counts, the
per-cluster figures and both top lists: the live update of the overview stays one table scan.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Max, Sum
from django.urls import reverse

from dashboard.monitoring.models import (
    Cluster,
    ConsumerGroup,
    PartitionState,
    SourceHealth,
    SparkJobOutcome,
    SparkJobRun,
)
from dashboard.ui.params import SEVERITY, STATUSES_WORST_FIRST
from dashboard.ui.queries.common import severity

TOP = 10
HEAT_GROUPS = 30
HEAT_CELLS = 64


def _status_counts(counts: dict[str, int]) -> dict[str, int]:
    return {s: counts.get(s, 0) for s in STATUSES_WORST_FIRST}


def top(totals: dict[int, float], n: int = TOP) -> list[tuple[int, float]]:
    """The ``n`` largest positive totals, largest first, ties by id (pure)."""
    ranked = sorted(
        ((v, gid) for gid, v in totals.items() if v and v > 0), key=lambda x: (-x[0], x[1])
    )
    return [(gid, v) for v, gid in ranked[:n]]


def summary() -> dict[str, Any]:
    """Everything of the overview but its heat map: what the live updates send."""
    clusters = {c["id"]: c for c in Cluster.objects.values("id", "name", "enabled")}
    for c in clusters.values():
        c.update(groups=0, partitions=0, not_ok=0, stale=0, sources=[])
    cluster_of: dict[int, int] = {}
    by_status: dict[str, int] = defaultdict(int)
    for gid, cid, status, stale in ConsumerGroup.objects.order_by().values_list(
        "id", "cluster_id", "status", "stale"
    ):
        cluster_of[gid] = cid
        by_status[status] += 1
        c = clusters[cid]
        c["groups"] += 1
        c["not_ok"] += status not in ("OK", "UNKNOWN")
        c["stale"] += stale
    partitions_by_status: dict[str, int] = defaultdict(int)
    lag: dict[int, int] = defaultdict(int)
    time_lag: dict[int, float] = {}
    for gid, status, n, lag_sum, time_lag_max in (
        PartitionState.objects.order_by()
        .values_list("group_id", "status")
        .annotate(n=Count("id"), lag_sum=Sum("lag"), time_lag_max=Max("time_lag_s"))
    ):
        partitions_by_status[status] += n
        if gid in cluster_of:
            clusters[cluster_of[gid]]["partitions"] += n
        lag[gid] += lag_sum or 0
        if time_lag_max is not None:
            time_lag[gid] = max(time_lag.get(gid, 0.0), time_lag_max)
    for h in SourceHealth.objects.order_by("source"):
        if h.cluster_id in clusters:
            clusters[h.cluster_id]["sources"].append(h)
    for c in clusters.values():
        polls = [h.last_success_at for h in c["sources"] if h.last_success_at]
        c["last_poll"] = max(polls) if polls else None
    top_lag, top_time_lag = top(lag), top(time_lag)
    groups = ConsumerGroup.objects.select_related("cluster").in_bulk(
        {gid for gid, _ in top_lag + top_time_lag}
    )
    return {
        "clusters": sorted(clusters.values(), key=lambda c: c["name"]),
        "groups_by_status": _status_counts(by_status),
        "partitions_by_status": _status_counts(partitions_by_status),
        # The statuses some partition has, worst first: the summary line lists only those.
        "partitions_present": [
            (s, n) for s, n in _status_counts(partitions_by_status).items() if n
        ],
        "groups_total": sum(by_status.values()),
        "partitions_total": sum(partitions_by_status.values()),
        "top_lag": _rows(top_lag, groups),
        "top_time_lag": _rows(top_time_lag, groups),
        "status_run": SparkJobRun.objects.filter(job="status", outcome=SparkJobOutcome.OK)
        .order_by("-started_at")
        .only("finished_at", "duration_s")
        .first(),
    }


def _rows(ranked: list[tuple[int, float]], groups: dict) -> list[dict[str, Any]]:
    prefix = reverse("ui:group", args=[0])[: -len("0/")]
    return [
        {"group": groups[gid], "value": v, "url": f"{prefix}{gid}/"}
        for gid, v in ranked
        if gid in groups
    ]


def heatmap_rows() -> list[tuple[str, list[tuple[str, str]]]]:
    """The worst groups, each with its partitions' statuses, worst first (capped)."""
    groups = list(
        ConsumerGroup.objects.select_related("cluster")
        .annotate(sev=severity())
        .order_by("-sev", "cluster__name", "name")
        .only("id", "name", "source", "cluster__name")[:HEAT_GROUPS]
    )
    cells = defaultdict(list)
    for gid, topic, partition, status in PartitionState.objects.filter(
        group_id__in=[g.id for g in groups]
    ).values_list("group_id", "topic", "partition", "status"):
        cells[gid].append((f"{topic}/{partition}", status))
    rows = []
    for g in groups:
        parts = sorted(cells[g.id], key=lambda c: (-SEVERITY.get(c[1], 1), c[0]))[:HEAT_CELLS]
        if parts:
            rows.append((f"{g.name} · {g.source} · {g.cluster.name}", parts))
    return rows

"""The overview: clusters, groups by status, top groups, partitions heat map (SPEC §8).

The partition figures are the groups' totals (``dashboard/monitoring/group_totals.py``),
aggregated in SQL: the live update reads no partition row.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Q, Sum
from django.urls import reverse

from dashboard.monitoring import group_totals
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


def _top_groups(field: str, n: int = TOP) -> tuple[list[tuple[int, float]], list[ConsumerGroup]]:
    """The ``n`` groups of largest positive ``field``, largest first, ties by id."""
    groups = list(
        ConsumerGroup.objects.select_related("cluster")
        .filter(**{f"{field}__gt": 0})
        .order_by(f"-{field}", "id")[:n]
    )
    return [(g.id, getattr(g, field)) for g in groups], groups


def summary() -> dict[str, Any]:
    """Everything of the overview but its heat map: what the live updates send.

    Aggregates of the groups' rows (their partition totals: ``group_totals``), so it costs
    the same at 100,000 partitions as at 100."""
    clusters = {c["id"]: c for c in Cluster.objects.values("id", "name", "enabled")}
    for c in clusters.values():
        c.update(groups=0, partitions=0, not_ok=0, stale=0, sources=[])
    by_status: dict[str, int] = defaultdict(int)
    partitions_by_status: dict[str, int] = defaultdict(int)
    statuses = group_totals.STATUS_FIELDS
    for row in (
        ConsumerGroup.objects.order_by()
        .values("cluster_id", "status")
        .annotate(
            n=Count("id"),
            n_stale=Count("id", filter=Q(stale=True)),
            partitions=Sum("partitions_total"),
            **{f"sum_{f}": Sum(f) for f in statuses.values()},
        )
    ):
        n, status = row["n"], row["status"]
        by_status[status] += n
        c = clusters[row["cluster_id"]]
        c["groups"] += n
        c["not_ok"] += n if status not in ("OK", "UNKNOWN") else 0
        c["stale"] += row["n_stale"]
        c["partitions"] += row["partitions"] or 0
        for s, f in statuses.items():
            partitions_by_status[s] += row[f"sum_{f}"] or 0
    for h in SourceHealth.objects.order_by("source"):
        if h.cluster_id in clusters:
            clusters[h.cluster_id]["sources"].append(h)
    for c in clusters.values():
        polls = [h.last_success_at for h in c["sources"] if h.last_success_at]
        c["last_poll"] = max(polls) if polls else None
    top_lag, lag_groups = _top_groups("lag_sum")
    top_time_lag, time_lag_groups = _top_groups("time_lag_max_s")
    groups = {g.id: g for g in lag_groups + time_lag_groups}
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

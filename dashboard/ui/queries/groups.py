"""The groups list: filter, search, sort and paginate in SQL; sparklines for the page only."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, F

from dashboard.monitoring import trends
from dashboard.monitoring.membership import GROUP_TYPES
from dashboard.monitoring.models import ConsumerGroup, GroupSample, LagRollup
from dashboard.ui.params import GroupFilter
from dashboard.ui.queries.common import JsonArrayLength, severity

SPARK_SPAN = timedelta(hours=1)
RAW_SPARK_SPAN = timedelta(minutes=15)
SPARK_POINTS = 30

ORDER = {
    "status": ("-sev", "-lag_total", "cluster__name", "name"),
    "lag": ("-lag_total", "cluster__name", "name"),
    "time_lag": ("-time_lag", "cluster__name", "name"),
    "name": ("name", "cluster__name", "source"),
    "cluster": ("cluster__name", "name", "source"),
    "source": ("source", "cluster__name", "name"),
    "members": ("-n_members", "cluster__name", "name"),
    "generation": ("-generation", "cluster__name", "name"),
}


def filtered(f: GroupFilter):
    qs = ConsumerGroup.objects.select_related("cluster")
    if f.q:
        qs = qs.filter(name__icontains=f.q)
    if f.statuses:
        qs = qs.filter(status__in=f.statuses)
    if f.source:
        qs = qs.filter(source=f.source)
    if f.cluster:
        qs = qs.filter(cluster__name=f.cluster)
    if f.group_type in GROUP_TYPES:
        qs = qs.filter(source="kafka", group_type=f.group_type)
    elif f.group_type == "none":
        qs = qs.exclude(source="kafka", group_type__in=GROUP_TYPES)
    return qs


def page(f: GroupFilter) -> Page:
    qs = (
        filtered(f)
        .annotate(
            sev=severity(),
            # The group's partition totals, kept on its row (group_totals): sorting the
            # whole list by them reads no partition row.
            lag_total=F("lag_sum"),
            time_lag=F("time_lag_max_s"),
            retention_left=F("retention_left_min_s"),
            n_partitions=F("partitions_total"),
            n_members=JsonArrayLength("members"),
        )
        .defer("coordinator", "assignor", "topology_id", "topology")
        .order_by(*ORDER[f.sort])
    )
    return Paginator(qs, f.per_page).get_page(f.page)


def status_counts(f: GroupFilter) -> dict[str, int]:
    """How many groups of each status match the other filters: the status chips' counts."""
    rows = filtered(
        GroupFilter(q=f.q, source=f.source, cluster=f.cluster, group_type=f.group_type)
    ).order_by()
    return dict(rows.values_list("status").annotate(n=Count("id")))


def sparklines(groups: list[ConsumerGroup], now: datetime) -> dict[int, list[float | None]]:
    """Lag trend per group of the page: the group rollups of the last hour, or where there is
    none yet, the raw history of the last minutes (both one query for the whole page)."""
    if not groups:
        return {}
    key = {(g.cluster.name, g.source, g.name): g.id for g in groups}
    series: dict[int, list[float | None]] = defaultdict(list)
    rollups = (
        LagRollup.objects.filter(
            level="group",
            resolution="1m",
            cluster__in={k[0] for k in key},
            group__in={k[2] for k in key},
            bucket_start__gte=now - SPARK_SPAN,
        )
        # The series index's own order (and no datetimes to convert: only the order matters).
        .order_by("cluster", "group", "bucket_start")
        .values_list("cluster", "source", "group", "lag")
    )
    for cluster, source, group, lag in rollups:
        gid = key.get((cluster, source, group))
        if gid is not None:
            series[gid].append(lag)
    missing = [gid for gid in key.values() if gid not in series]
    if missing:
        raw = (
            GroupSample.objects.filter(group_id__in=missing, at__gte=now - RAW_SPARK_SPAN)
            .order_by("at")
            .values_list("group_id", "lag")
        )
        for gid, lag in raw:
            series[gid].append(lag)
    return {gid: _thin(values) for gid, values in series.items()}


def group_trends(groups: list[ConsumerGroup], now: datetime) -> dict[int, trends.Trend]:
    """The newest rollup of each group of the page (one query): the trend and ETA columns."""
    found = trends.group_trends(((g.cluster.name, g.source, g.name) for g in groups), now)
    return {
        g.id: t for g in groups if (t := found.get((g.cluster.name, g.source, g.name)))
    }


def _thin(values: list[float | None], points: int = SPARK_POINTS) -> list[float | None]:
    if len(values) <= points:
        return values
    step = len(values) / points
    return [values[int(i * step)] for i in range(points - 1)] + [values[-1]]


def row(g: ConsumerGroup, spark: list[float | None] | None) -> dict[str, Any]:
    return {"group": g, "spark": spark or []}

"""Time series of the charts: raw history (``GroupSample``) for short ranges, the rollup
history (``LagRollup``) for long ones; one aggregate query per chart whatever the partitions."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from dashboard.monitoring.models import (
    ConsumerGroup,
    GroupSample,
    LagRollup,
    PartitionState,
    SpoutSample,
)
from dashboard.store import raw_history
from dashboard.ui.params import Range

# The raw history is kept 6 h (LAGWATCH_RAW_HISTORY_HOURS). Groups read it for an hour at most,
# and at most ROW_BUDGET partition figures' worth of polls: a group of 1,000 partitions gets
# every few polls (the figures at those polls are exact, not averaged), a group of 20 every
# poll, as when the history was a row per partition and poll.
GROUP_RAW_MAX = timedelta(hours=1)
PARTITION_RAW_MAX = timedelta(hours=6)
ROW_BUDGET = 20_000
MIN_POINTS = 15


def resolution(span: timedelta) -> str:
    """Minute buckets up to a day (kept two days), hour buckets beyond."""
    return "1m" if span <= timedelta(days=1) else "1h"


def thin(times: list, points: int) -> list:
    """Evenly spaced picks keeping the newest (pure)."""
    if len(times) <= points:
        return times
    step = (len(times) - 1) / (points - 1)
    return [times[round(i * step)] for i in range(points)]


def group_series(
    group: ConsumerGroup,
    rng: Range,
    now: datetime,
    partition_ids: list[int] | None = None,
) -> dict[str, Any]:
    """``partition_ids``: the group's partitions, known to the caller (one query less)."""
    since = now - rng.span
    if rng.span <= GROUP_RAW_MAX:
        if partition_ids is None:
            partition_ids = list(group.partitions.values_list("id", flat=True))
        # The group's sums at each poll are columns of its history rows: every poll, thinned
        # to the points a group of its size gets.
        rows = list(
            GroupSample.objects.filter(group_id=group.id, at__gte=since)
            .order_by("at")
            .values_list("at", "lag", "max_time_lag_s", "pending", "failed", "acked", "stale")
        )
        rows = thin(rows, max(MIN_POINTS, ROW_BUDGET // max(len(partition_ids), 1)))
        cols = list(zip(*rows, strict=True)) if rows else [[]] * 7
        names = ("x", "lag", "time_lag", "pending", "failed", "acked")
        out: dict[str, Any] = {n: list(c) for n, c in zip(names, cols, strict=False)}
        out.update(kind="raw", since=since, stale=[bool(v) for v in cols[6]])
        return out
    res = resolution(rng.span)
    rows = list(
        LagRollup.objects.filter(
            level="group",
            resolution=res,
            cluster=group.cluster.name,
            source=group.source,
            group=group.name,
            bucket_start__gte=since,
        )
        .order_by("bucket_start")
        .values_list("bucket_start", "lag", "max_time_lag_s")
    )
    return {
        "kind": f"rollup {res}",
        "since": since,
        "x": [r[0] for r in rows],
        "lag": [r[1] for r in rows],
        "time_lag": [r[2] for r in rows],
        "stale": None,
    }


def partition_series(p: PartitionState, rng: Range, now: datetime) -> dict[str, Any]:
    since = now - rng.span
    if rng.span <= PARTITION_RAW_MAX:
        points = raw_history.partition_points(p.group_id, p.topic, p.partition, since)
        cols = list(zip(*points, strict=True)) if points else [[]] * 9
        names = ("x", "committed", "latest", "lag", "time_lag", "pending", "failed", "acked")
        out = {n: list(c) for n, c in zip(names, cols, strict=False)}
        out.update(kind="raw", since=since, stale=list(cols[8]))
        return out
    g = p.group
    rows = list(
        LagRollup.objects.filter(
            level="partition",
            resolution="1h",
            cluster=g.cluster.name,
            source=g.source,
            group=g.name,
            topic=p.topic,
            partition=p.partition,
            bucket_start__gte=since,
        )
        .order_by("bucket_start")
        .values_list("bucket_start", "lag", "max_time_lag_s")
    )
    return {
        "kind": "rollup 1h",
        "since": since,
        "x": [r[0] for r in rows],
        "lag": [r[1] for r in rows],
        "time_lag": [r[2] for r in rows],
        "stale": None,
    }


# --- a Storm spout's own figures (``SpoutSample``: Storm UI's, with its push) ----------------

SPOUT_POINTS = 600  # per spout and chart: a few hours of 5-s polls, thinned


def counter_rates(
    times: list[datetime], values: list[int | None]
) -> list[float | None]:
    """Per-second rates of a cumulative counter between consecutive points (pure); the first
    point, an unknown value and a decrease (the worker restarted, its counters began again)
    give None, never a negative rate."""
    out: list[float | None] = [None] * len(values)
    for i in range(1, len(values)):
        a, b = values[i - 1], values[i]
        seconds = (times[i] - times[i - 1]).total_seconds()
        if a is None or b is None or b < a or seconds <= 0:
            continue
        out[i] = round((b - a) / seconds, 3)
    return out


def spout_history(group: ConsumerGroup, since: datetime) -> dict[str, dict[str, list[Any]]]:
    """A Storm spout group's whole-spout figures since ``since``, per spout of its topology
    instance (one query): ``{spout_id: {"x", "emitted_per_s", "acked_per_s", "failed_per_s",
    "complete_latency_ms", "pending", "max_spout_pending"}}``, oldest first. Rates come from
    the counters between the points kept."""
    rows = SpoutSample.objects.filter(cluster_id=group.cluster_id, at__gte=since)
    if group.topology_id:
        rows = rows.filter(topology_id=group.topology_id)
    else:
        rows = rows.filter(spout_id=group.name)
    columns = ("spout_id", "at", "emitted", "acked", "failed", "complete_latency_ms", "pending",
               "max_spout_pending")  # fmt: skip
    by_spout: dict[str, list[tuple]] = {}
    for row in rows.order_by("spout_id", "at").values_list(*columns):
        by_spout.setdefault(row[0], []).append(row[1:])
    out = {}
    for spout_id, points in by_spout.items():
        points = thin(points, SPOUT_POINTS)
        x = [p[0] for p in points]
        out[spout_id] = {
            "x": x,
            "emitted_per_s": counter_rates(x, [p[1] for p in points]),
            "acked_per_s": counter_rates(x, [p[2] for p in points]),
            "failed_per_s": counter_rates(x, [p[3] for p in points]),
            "complete_latency_ms": [p[4] for p in points],
            "pending": [p[5] for p in points],
            "max_spout_pending": [p[6] for p in points],
        }
    return out

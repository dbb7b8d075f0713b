"""Lag history of a partition or a group: raw samples for recent ranges, rollups for longer.

The raw history (``GroupSample``, one row per group per poll) is kept
``LAGWATCH_RAW_HISTORY_HOURS``; the rollups (``LagRollup``) keep groups at a minute for
``LAGWATCH_ROLLUP_MINUTES_DAYS`` and everything at an hour for ``LAGWATCH_ROLLUP_HOURS_DAYS``,
partitions at an hour only. ``auto`` picks the finest source that covers the range, so a
history works right after the first collection (before any rollups run) and a month of
history is a few hundred points, not a few hundred thousand.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from dashboard.api.serializers import iso
from dashboard.monitoring.models import ConsumerGroup, GroupSample, LagRollup, PartitionState
from dashboard.store import raw_history

RESOLUTIONS = ("auto", "raw", "1m", "1h")
ROLLUP_FIELDS = ("lag", "max_lag", "avg_lag", "max_time_lag_s", "produce_per_s",
                 "consume_per_s", "lag_slope_per_s", "eta_s")  # fmt: skip


class ResolutionError(ValueError):
    """The resolution asked for cannot cover the range (says which one would)."""


@dataclass(frozen=True)
class Retention:
    raw: timedelta
    minutes: timedelta
    hours: timedelta

    @classmethod
    def from_settings(cls) -> Retention:
        return cls(
            raw=timedelta(hours=settings.LAGWATCH_RAW_HISTORY_HOURS),
            minutes=timedelta(days=getattr(settings, "LAGWATCH_ROLLUP_MINUTES_DAYS", 2)),
            hours=timedelta(days=getattr(settings, "LAGWATCH_ROLLUP_HOURS_DAYS", 30)),
        )


def pick_resolution(
    level: str, requested: str, since: datetime, now: datetime, keep: Retention
) -> str:
    """The resolution to serve ``level`` ("partition" or "group") from ``since`` to now."""
    raw_covers = since >= now - keep.raw
    if requested == "auto":
        if raw_covers:
            return "raw"
        if level == "group" and since >= now - keep.minutes:
            return "1m"
        return "1h"
    if requested == "raw" and not raw_covers:
        hours = keep.raw.total_seconds() / 3600
        raise ResolutionError(
            f"raw samples are kept {hours:g} h and this range starts before that; "
            "use resolution=1h (or auto)"
        )
    if requested == "1m" and level == "partition":
        raise ResolutionError(
            "partition rollups are kept at 1h only; use raw (recent ranges), 1h or auto"
        )
    return requested


def partition_points(p: PartitionState, resolution: str, since: datetime, until: datetime):
    if resolution == "raw":
        points = raw_history.partition_points(p.group_id, p.topic, p.partition, since, until)
        return [
            {"time": iso(x.at), "committed": x.committed, "latest": x.latest, "lag": x.lag,
             "time_lag_s": x.time_lag_s, "pending": x.pending, "failed": x.failed,
             "acked": x.acked, "stale": x.stale}
            for x in points
        ]  # fmt: skip
    group = p.group
    rows = LagRollup.objects.filter(
        level="partition", resolution=resolution, cluster=group.cluster.name,
        source=group.source, group=group.name, topic=p.topic, partition=p.partition,
        bucket_start__gte=since, bucket_start__lt=until,
    )  # fmt: skip
    return _rollup_points(rows)


def group_points(g: ConsumerGroup, resolution: str, since: datetime, until: datetime):
    if resolution == "raw":
        rows = (
            GroupSample.objects.filter(group=g, at__gte=since, at__lt=until)
            .order_by("at")
            .values_list("at", "lag", "max_time_lag_s", "partitions", "stale")
        )
        return [
            {"time": iso(at), "lag": lag, "max_time_lag_s": t, "partitions": n, "stale": stale}
            for at, lag, t, n, stale in rows
        ]
    rows = LagRollup.objects.filter(
        level="group", resolution=resolution, cluster=g.cluster.name, source=g.source,
        group=g.name, bucket_start__gte=since, bucket_start__lt=until,
    )  # fmt: skip
    return _rollup_points(rows)


def _rollup_points(rows) -> list[dict]:
    return [
        {"time": iso(values[0]), **dict(zip(ROLLUP_FIELDS, values[1:], strict=True))}
        for values in rows.order_by("bucket_start").values_list("bucket_start", *ROLLUP_FIELDS)
    ]

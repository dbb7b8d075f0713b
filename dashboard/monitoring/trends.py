"""Trends as the pages, the API and ``/metrics`` show them: the newest Spark rollup of a group
or partition (produce and consume rates, lag slope, ETA to drain), never re-computed here.

The rollups job (``spark_jobs/rollups.py``) computes the figures from consecutive samples and
``dashboard.status.rollups`` keeps them as ``LagRollup``. A group's trend is its newest minute
bucket, a partition's its newest hour bucket (partitions are kept at an hour only, see
``models/rollups.py``). A bucket older than ``MAX_AGE`` is not a trend any more (the rollups job
stopped, or the group went away): no trend, shown as "—", rather than an old one as if current. The
newest bucket may be partial (the rollups run every few minutes): its rates are those of the part of
the bucket the run saw, which is what "now" means for a rate.

The retention forecast's own figure is on the partition row (``retention_left_s``, set when a
status run is applied); ``topic_retention`` reads the topic settings it came from, for showing.

Each reader is one query for any number of subjects, so a page's query count stays constant.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from django.db.models import Max, Q

from dashboard.monitoring.models import LagRollup, TopicConfig

__all__ = [
    "FLAT_SLOPE_PER_S",
    "MAX_AGE",
    "Trend",
    "direction",
    "everyone_s_trends",
    "group_trends",
    "partition_trends",
    "retention_dict",
    "topic_retention",
]

FIELDS: Final = ("produce_per_s", "consume_per_s", "lag_slope_per_s", "eta_s")
# How old the newest bucket may be and still be "the trend": a few rollups runs (every 10 min).
MAX_AGE: Final = {"1m": timedelta(minutes=30), "1h": timedelta(hours=2)}
# A lag that moves by less than one message a minute either way is flat: rates are averages
# over a bucket, and a consumer keeping pace shows a slope of a few hundredths either side.
FLAT_SLOPE_PER_S: Final = 1 / 60

GroupKey = tuple[str, str, str]  # cluster, source, group
PartitionKey = tuple[str, str, str, str, int]  # cluster, source, group, topic, partition


@dataclass(frozen=True)
class Trend:
    produce_per_s: float | None
    consume_per_s: float | None
    lag_slope_per_s: float | None
    eta_s: float | None
    bucket_start: datetime
    resolution: str

    @property
    def direction(self) -> str | None:
        return direction(self.lag_slope_per_s)

    def as_dict(self) -> dict[str, Any]:
        return {
            "produce_per_s": self.produce_per_s,
            "consume_per_s": self.consume_per_s,
            "lag_slope_per_s": self.lag_slope_per_s,
            "direction": self.direction,
            "eta_s": self.eta_s,
            "bucket_start": self.bucket_start.isoformat().replace("+00:00", "Z"),
            "resolution": self.resolution,
        }


def direction(slope_per_s: float | None, flat: float = FLAT_SLOPE_PER_S) -> str | None:
    """``"rising"``, ``"falling"`` or ``"flat"`` for a lag slope; None when unknown."""
    if slope_per_s is None:
        return None
    if slope_per_s > flat:
        return "rising"
    if slope_per_s < -flat:
        return "falling"
    return "flat"


def _newest(rows: Iterable[tuple], width: int) -> dict[tuple, Trend]:
    """Rows ordered by bucket: the last one of each key (the key is the first ``width``)."""
    out: dict[tuple, Trend] = {}
    for row in rows:
        key, values = row[:width], row[width:]
        out[key] = Trend(*values)
    return out


def group_trends(keys: Iterable[GroupKey], now: datetime) -> dict[GroupKey, Trend]:
    """The newest minute bucket of each group in ``keys`` (one query)."""
    keys = set(keys)
    if not keys:
        return {}
    rows = (
        LagRollup.objects.filter(
            level="group", resolution="1m",
            cluster__in={k[0] for k in keys}, group__in={k[2] for k in keys},
            bucket_start__gte=now - MAX_AGE["1m"],
        )  # fmt: skip
        .order_by("bucket_start")
        .values_list("cluster", "source", "group", *FIELDS, "bucket_start", "resolution")
    )
    return {k: t for k, t in _newest(rows, 3).items() if k in keys}


def partition_trends(keys: Iterable[PartitionKey], now: datetime) -> dict[PartitionKey, Trend]:
    """The newest hour bucket of each partition in ``keys`` (one query)."""
    keys = set(keys)
    if not keys:
        return {}
    rows = (
        LagRollup.objects.filter(
            level="partition", resolution="1h",
            cluster__in={k[0] for k in keys}, group__in={k[2] for k in keys},
            topic__in={k[3] for k in keys}, bucket_start__gte=now - MAX_AGE["1h"],
        )  # fmt: skip
        .order_by("bucket_start")
        .values_list(
            "cluster", "source", "group", "topic", "partition", *FIELDS, "bucket_start",
            "resolution",
        )
    )
    return {k: t for k, t in _newest(rows, 5).items() if k in keys}


def everyone_s_trends(level: str, now: datetime) -> dict[tuple, Trend]:
    """Every group's (``level="group"``) or partition's (``"partition"``) trend from each
    cluster's newest bucket, for ``/metrics`` (two queries whatever the number of subjects).

    A rollups run writes every subject's buckets of a cluster at once, so the cluster's newest
    bucket is everyone's newest; a subject missing from it had no samples then, and has no
    current trend. Reading only that bucket keeps a scrape from reading 30 minutes of rows.
    """
    resolution = "1m" if level == "group" else "1h"
    recent = LagRollup.objects.filter(
        level=level, resolution=resolution, bucket_start__gte=now - MAX_AGE[resolution]
    ).order_by()
    newest = dict(recent.values_list("cluster").annotate(at=Max("bucket_start")))
    if not newest:
        return {}
    keys = ("cluster", "source", "group") if level == "group" else (
        "cluster", "source", "group", "topic", "partition")  # fmt: skip
    where = Q()
    for cluster, at in newest.items():
        where |= Q(cluster=cluster, bucket_start=at)
    rows = recent.filter(where).values_list(*keys, *FIELDS, "bucket_start", "resolution")
    return _newest(rows, len(keys))


def topic_retention(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], TopicConfig]:
    """The stored retention settings of each (cluster, topic) in ``pairs`` (one query)."""
    pairs = set(pairs)
    if not pairs:
        return {}
    rows = TopicConfig.objects.select_related("cluster").filter(
        cluster__name__in={c for c, _ in pairs}, topic__in={t for _, t in pairs}
    )
    return {(r.cluster.name, r.topic): r for r in rows if (r.cluster.name, r.topic) in pairs}


def retention_dict(seconds_left: float | None, config: TopicConfig | None) -> dict[str, Any]:
    """The retention forecast of a partition as the API and the page give it."""
    return {
        "seconds_left": seconds_left,
        "retention_ms": None if config is None else config.retention_ms,
        "retention_bytes": None if config is None else config.retention_bytes,
        "cleanup_policy": None if config is None else config.cleanup_policy,
        "config_read_at": None
        if config is None
        else config.read_at.isoformat().replace("+00:00", "Z"),
    }

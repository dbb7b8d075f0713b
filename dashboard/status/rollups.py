"""Keeps the Spark rollups as history (SPEC §3, §5): each rollups run holds only its own
window, while long-range charts and old reports need days of buckets.

**What is kept.** Topic, group and cluster buckets at a minute and an hour; partition buckets
at an hour only (``models/rollups.py`` says why). Minutes are kept
``LAGWATCH_ROLLUP_MINUTES_DAYS`` (2), hours ``LAGWATCH_ROLLUP_HOURS_DAYS`` (30).

**Idempotent and cheap.** A run's newest buckets are partial (the current minute and hour);
a later run has them whole. So, per level, resolution and cluster, a run replaces the stored
buckets from the newest one stored onwards and adds nothing older: a run re-applied changes
nothing, and each run writes its last few minutes, not its whole two-hour window.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from dashboard.monitoring.models import LagRollup
from dashboard.status.results import read_table
from dashboard.times import ms_to_dt

__all__ = ["apply_rollup_results", "prune_rollups"]

# Table of a rollups run -> level (as spark_jobs.jobs.ROLLUP_TABLES, without importing pyspark).
TABLES = {"partitions": "partition", "topics": "topic", "groups": "group", "clusters": "cluster"}
# Resolutions kept per level.
KEPT = {"partition": ("1h",), "topic": ("1m", "1h"), "group": ("1m", "1h"), "cluster": ("1m", "1h")}
VALUES = ("lag", "max_lag", "avg_lag", "max_time_lag_s", "produce_per_s", "consume_per_s",
          "lag_slope_per_s", "eta_s")  # fmt: skip
BATCH = 5000


def _row(level: str, r: dict[str, Any]) -> LagRollup:
    return LagRollup(
        cluster=r["cluster"],
        level=level,
        source=r.get("source") or "",
        group=r.get("group") or "",
        topic=r.get("topic") or "",
        partition=r.get("partition"),
        resolution=r["resolution"],
        bucket_start=ms_to_dt(r["bucket_start_ms"]),
        **{name: r.get(name) for name in VALUES},
    )


def apply_rollup_results(run_path: str) -> int:
    """Add the rollups run at ``run_path`` to ``LagRollup``; returns the rows written.

    The tables are read before the transaction, so a bad run changes nothing.
    """
    wanted: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for table, level in TABLES.items():
        for r in read_table(run_path, table).to_pylist():
            if r["resolution"] in KEPT[level]:
                wanted[(level, r["resolution"], r["cluster"])].append(r)

    written = 0
    with transaction.atomic():
        newest = {
            (level, resolution, cluster): at
            for level, resolution, cluster, at in LagRollup.objects.values_list(
                "level", "resolution", "cluster"
            )
            .annotate(at=Max("bucket_start"))
            .order_by()
        }
        rows: list[LagRollup] = []
        for key, found in wanted.items():
            level, resolution, cluster = key
            since = newest.get(key)
            if since is not None:
                found = [r for r in found if ms_to_dt(r["bucket_start_ms"]) >= since]
                LagRollup.objects.filter(
                    level=level, resolution=resolution, cluster=cluster, bucket_start__gte=since
                ).delete()
            rows.extend(_row(level, r) for r in found)
        LagRollup.objects.bulk_create(rows, batch_size=BATCH)
        written = len(rows)
    return written


def prune_rollups() -> int:
    """Forget buckets past their resolution's retention; returns the rows deleted."""
    now = timezone.now()
    keep = {
        "1m": timedelta(days=settings.LAGWATCH_ROLLUP_MINUTES_DAYS),
        "1h": timedelta(days=settings.LAGWATCH_ROLLUP_HOURS_DAYS),
    }
    deleted = 0
    for resolution, age in keep.items():
        count, _ = LagRollup.objects.filter(
            resolution=resolution, bucket_start__lt=now - age
        ).delete()
        deleted += count
    return deleted

"""Source health per cluster (SPEC §10: every source failure visible) and Spark job runs."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from django.db.models import Count, Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from dashboard.monitoring.models import (
    Cluster,
    ClusterEvent,
    CollectedCycle,
    CollectionError,
    ConsumerGroup,
    SourceHealth,
    SparkJobRun,
)
from dashboard.monitoring.status_report import spark_job_runs
from dashboard.ui.queries.common import SOURCE_LABEL
from spark_jobs.evaluator.types import COLLECTION_GAP_POLLS

ERRORS_SHOWN = 100
RUNS_SHOWN = 50


def collection_stopped(
    cluster: Cluster, last_cycle_at: datetime | None, now: datetime
) -> bool:
    """No cycle stored for more than ``COLLECTION_GAP_POLLS`` poll intervals: collection
    itself has stopped (collectors, beat or Redis down), which no source's row can show,
    since nobody is there to record a failure. Never polled is "not polled yet" instead."""
    if not cluster.enabled or last_cycle_at is None:
        return False
    return (now - last_cycle_at).total_seconds() > COLLECTION_GAP_POLLS * cluster.poll_interval_s


def sources(cluster: str = "") -> dict[str, Any]:
    now = timezone.now()
    clusters = Cluster.objects.order_by("name")
    if cluster:
        clusters = clusters.filter(name=cluster)
    clusters = list(clusters)
    ids = [c.id for c in clusters]
    health = defaultdict(list)
    for h in SourceHealth.objects.filter(cluster_id__in=ids).order_by("source"):
        h.label = SOURCE_LABEL.get(h.source, h.source)
        health[h.cluster_id].append(h)
    stale = defaultdict(dict)
    for cid, source, n in (
        ConsumerGroup.objects.filter(cluster_id__in=ids, stale=True)
        .order_by()
        .values_list("cluster_id", "source")
        .annotate(n=Count("id"))
    ):
        stale[cid][source] = n
    for cid, rows in health.items():
        for h in rows:
            h.stale_groups = stale[cid].get(h.source, 0)
    last_cycle = dict(
        CollectedCycle.objects.filter(cluster_id__in=ids)
        .order_by()
        .values_list("cluster_id")
        .annotate(last=Max("at"))
    )
    errors = defaultdict(list)
    error_counts = dict(
        CollectionError.objects.filter(cluster_id__in=ids)
        .order_by()
        .values_list("cluster_id")
        .annotate(n=Count("id"))
    )
    for e in CollectionError.objects.filter(cluster_id__in=ids).order_by("-at", "source")[
        :ERRORS_SHOWN
    ]:
        errors[e.cluster_id].append(e)
    rebuilt = {}
    for event in ClusterEvent.objects.filter(
        cluster_id__in=ids, kind=ClusterEvent.REBUILT
    ).order_by("at"):
        rebuilt[event.cluster_id] = event  # the newest wins
    return {
        "clusters": [
            {
                "cluster": c,
                "last_cycle_at": last_cycle.get(c.id),
                "collection_stopped": collection_stopped(c, last_cycle.get(c.id), now),
                "health": health[c.id],
                "stale_groups": stale[c.id],
                "errors": errors[c.id],
                "error_count": error_counts.get(c.id, 0),
                "rebuilt": rebuilt.get(c.id),
            }
            for c in clusters
        ]
    }


def jobs(job: str = "") -> dict[str, Any]:
    runs = SparkJobRun.objects.order_by("-started_at")
    if job:
        runs = runs.filter(job=job)
    latest = spark_job_runs()
    for row in latest:  # the status document's ISO strings, as datetimes for the template
        for key in ("finished_at", "last_ok_at"):
            row[key] = parse_datetime(row[key]) if row[key] else None
    return {"latest": latest, "runs": list(runs[:RUNS_SHOWN])}

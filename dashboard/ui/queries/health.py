"""Source health per cluster (SPEC §10: every source failure visible) and Spark job runs."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count
from django.utils.dateparse import parse_datetime

from dashboard.monitoring.models import (
    Cluster,
    CollectionError,
    ConsumerGroup,
    SourceHealth,
    SparkJobRun,
)
from dashboard.monitoring.status_report import spark_job_runs
from dashboard.ui.queries.common import SOURCE_LABEL

ERRORS_SHOWN = 100
RUNS_SHOWN = 50


def sources(cluster: str = "") -> dict[str, Any]:
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
    return {
        "clusters": [
            {
                "cluster": c,
                "health": health[c.id],
                "stale_groups": stale[c.id],
                "errors": errors[c.id],
                "error_count": error_counts.get(c.id, 0),
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

"""The current state as one JSON-ready document: ``lagwatch_status --json`` and the API.

Read-only, a handful of queries whatever the number of partitions. Group totals are computed
from the partitions' latest figures, so they agree with the partition rows printed beside them.
Statuses, diagnoses, reasons and ``complete`` are the status job's (SPEC §4, §6), as of its
``evaluated_at``; UNKNOWN with no ``evaluated_at`` means no status run has judged it yet.
``spark_jobs`` lists each job's latest finished run and when it last succeeded. ``brokers``
lists each broker's delayed operations (purgatory, DOMAIN §5) from its metrics endpoint, with
``as_of`` (when they were read) and ``error`` (the latest scrape failed: the figures are the
last known). ``spouts`` holds each Storm spout's latest whole figures (Storm UI's emitted,
acked, failed and complete latency; the tuples in flight and ``max_spout_pending`` from its
push, else Storm UI's), by cluster and topology instance: a spout group's ``topology_id``
finds its own. ``cluster_events`` lists what happened to whole clusters (``cluster_rebuilt``:
a source's identity changed, and the cluster's offsets history started over at ``at``).

A group's ``last_commit_at`` is the newest of its partitions' (so a group whose consumers all
stopped shows when they last committed), ``type`` and ``member_details`` are read through
``membership`` like the APIs', so old member rows without KIP-848's keys read as unknowns.
``member_details`` is null, like the ``members`` count, where the source does not report
members. ``topology`` is a streams group's (KIP-1071: its subtopologies and their topics),
null for every other group.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from dashboard.monitoring.membership import group_type, member_details, topology_detail
from dashboard.monitoring.models import (
    BrokerPurgatory,
    ClusterEvent,
    CollectionError,
    ConsumerGroup,
    PartitionState,
    RebalanceEvent,
    SparkJobOutcome,
    SparkJobRun,
)
from dashboard.monitoring.producers import producers_document
from dashboard.monitoring.share_state import SHARE_STATE_COLUMNS, share_state_document
from dashboard.monitoring.spouts import latest_spouts, spout_document
from dashboard.status.runs import JOBS


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat().replace("+00:00", "Z")


def status_document(
    cluster: str | None = None, rebalances_since: timedelta = timedelta(hours=1)
) -> dict[str, Any]:
    now = timezone.now()
    groups = ConsumerGroup.objects.select_related("cluster").order_by(
        "cluster__name", "source", "name"
    )
    partitions = PartitionState.objects.order_by(
        "group__cluster__name", "group__source", "group__name", "topic", "partition"
    ).values(
        "group_id", "topic", "partition", "committed", "earliest", "latest", "lag",
        "lag_upper_bound", "time_lag_s", "owner", "alive", "pending", "failed", "acked",
        "status", "diagnosis", "last_commit_at", "stale", "reason", "complete", "evaluated_at",
        "retention_left_s", *SHARE_STATE_COLUMNS,
    )  # fmt: skip
    errors = CollectionError.objects.select_related("cluster").order_by(
        "cluster__name", "source", "where"
    )
    events = RebalanceEvent.objects.filter(at__gte=now - rebalances_since).select_related(
        "group__cluster"
    )
    brokers = BrokerPurgatory.objects.select_related("cluster").order_by("cluster__name", "broker")
    cluster_events = ClusterEvent.objects.select_related("cluster").order_by("at")
    if cluster is not None:
        cluster_events = cluster_events.filter(cluster__name=cluster)
        brokers = brokers.filter(cluster__name=cluster)
        groups = groups.filter(cluster__name=cluster)
        partitions = partitions.filter(group__cluster__name=cluster)
        errors = errors.filter(cluster__name=cluster)
        events = events.filter(group__cluster__name=cluster)

    by_id = {g.id: g for g in groups}
    totals: dict[int, list] = {gid: [0, None, False] for gid in by_id}
    last_commit: dict[int, datetime] = {}
    partition_rows = []
    for p in partitions:
        group = by_id.get(p["group_id"])
        if group is None:
            continue
        total = totals[group.id]
        if p["lag"] is not None:
            total[0] += p["lag"]
            total[2] = True
        if p["time_lag_s"] is not None:
            total[1] = max(total[1] or 0.0, p["time_lag_s"])
        if (at := p["last_commit_at"]) is not None:
            last_commit[group.id] = max(at, last_commit.get(group.id, at))
        partition_rows.append(
            {
                "cluster": group.cluster.name,
                "source": group.source,
                "group": group.name,
                "topic": p["topic"],
                "partition": p["partition"],
                "committed": p["committed"],
                "earliest": p["earliest"],
                "latest": p["latest"],
                "lag": p["lag"],
                # A share group's progress is its start offset (also ``committed``, where the
                # store keeps it), and its lag from a broker before KIP-1226 an upper bound.
                "start_offset": p["committed"] if group.group_type == "share" else None,
                "lag_upper_bound": p["lag_upper_bound"],
                "time_lag_s": p["time_lag_s"],
                "owner": p["owner"] or None,
                "status": p["status"],
                "diagnosis": p["diagnosis"],
                "reason": p["reason"] or None,
                "complete": p["complete"],
                "evaluated_at": _iso(p["evaluated_at"]),
                "last_commit_at": _iso(p["last_commit_at"]),
                "stale": p["stale"],
                "alive": p["alive"],
                "pending": p["pending"],
                "failed": p["failed"],
                "acked": p["acked"],
                "retention_left_s": p["retention_left_s"],
                # A share group's deliveries and archived records (__share_group_state).
                "share_state": share_state_document(p),
            }  # fmt: skip
        )
    group_rows = [
        {
            "cluster": g.cluster.name,
            "source": g.source,
            "group": g.name,
            "type": group_type(g.source, g.group_type),
            "state": g.state or None,
            "generation": g.generation,
            "assignment_epoch": g.assignment_epoch,
            "members": len(g.members) if g.members_known else None,
            "member_details": member_details(g.members) if g.members_known else None,
            "topology": topology_detail(g.topology),
            "status": g.status,
            "complete": g.complete,
            "evaluated_at": _iso(g.evaluated_at),
            "total_lag": totals[g.id][0] if totals[g.id][2] else None,
            "max_time_lag_s": totals[g.id][1],
            "owner": g.owner or None,
            "topology_id": g.topology_id or None,
            "stale": g.stale,
            "last_seen_at": _iso(g.last_seen_at),
            "last_commit_at": _iso(last_commit.get(g.id)),
        }  # fmt: skip
        for g in groups
    ]
    return {
        "generated_at": _iso(now),
        "partitions": partition_rows,
        "groups": group_rows,
        "rebalances": [
            {
                "cluster": e.group.cluster.name,
                "source": e.group.source,
                "group": e.group.name,
                "at": _iso(e.at),
                "generation": e.generation,
                "cause": e.cause,
                "detail": e.detail,
            }  # fmt: skip
            for e in events.order_by("at")
        ],
        "cluster_events": [
            {"cluster": e.cluster.name, "at": _iso(e.at), "kind": e.kind, "text": e.text}
            for e in cluster_events
        ],
        "errors": [
            {"cluster": e.cluster.name, "source": e.source, "where": e.where, "error": e.error}
            for e in errors
        ],
        "brokers": [{"cluster": b.cluster.name, **b.document()} for b in brokers],
        "spouts": [
            {"cluster": row["cluster__name"], **spout_document(row)}
            for row in latest_spouts(now)
            if cluster is None or row["cluster__name"] == cluster
        ],
        "spark_jobs": spark_job_runs(),
        # Per producer client and topic, and the topics under PRODUCER_EXPIRY (DOMAIN §4).
        **producers_document(cluster),
    }


def spark_job_runs() -> list[dict[str, Any]]:
    """Per job that ever ran: its latest finished run (ok, failed or skipped) and the finish
    time of its latest successful one, so a string of failures or skips shows how stale the
    results have become."""
    finished = SparkJobRun.objects.exclude(outcome=SparkJobOutcome.RUNNING).order_by("-started_at")
    rows = []
    for job in JOBS:
        run = finished.filter(job=job).first()
        if run is None:
            continue
        last_ok = finished.filter(job=job, outcome=SparkJobOutcome.OK).first()
        rows.append(
            {
                "job": job,
                "finished_at": _iso(run.finished_at),
                "duration_s": None if run.duration_s is None else round(run.duration_s, 3),
                "input_rows": run.input_rows,
                "output_rows": run.output_rows,
                "outcome": run.outcome,
                "error": run.error or None,
                "last_ok_at": _iso(last_ok.finished_at) if last_ok else None,
            }
        )
    return rows

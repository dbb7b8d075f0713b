"""Rows as JSON-ready dicts: plain functions, one per resource, no framework.

Times are ISO 8601 in UTC with a ``Z``; numbers stay numbers (null when unknown, never a
made-up 0). Names from the monitored systems are returned as they are: JSON escapes them,
and a client that renders them into HTML must escape them itself.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dashboard.monitoring.membership import group_type, member_details
from dashboard.monitoring.models import (
    Cluster,
    ConsumerGroup,
    PartitionState,
    RebalanceEvent,
    SourceHealth,
    seen_at,
)
from dashboard.monitoring.trends import retention_dict
from dashboard.whatif import group_report


def iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat().replace("+00:00", "Z")


def cluster_dict(cluster: Cluster, groups_by_status: dict[str, int] | None = None) -> dict:
    return {
        "name": cluster.name,
        "enabled": cluster.enabled,
        "poll_interval_s": cluster.poll_interval_s,
        "sources": {
            "kafka": bool(cluster.kafka_bootstrap_servers),
            "zookeeper_consumers": cluster.zk_consumers,
            "storm_spout_roots": list(cluster.storm_spout_roots or []),
            "storm_ui": bool(cluster.storm_ui_url),
            "consumer_offsets_topic": cluster.read_consumer_offsets_topic,
        },
        "groups_by_status": groups_by_status or {},
        "updated_at": iso(cluster.updated_at),
    }


def source_health_dict(health: SourceHealth) -> dict:
    return {
        "source": health.source,
        "reachable": health.reachable,
        "last_attempt_at": iso(health.last_attempt_at),
        "last_success_at": iso(health.last_success_at),
        "last_error_at": iso(health.last_error_at),
        "last_error": health.last_error,
        "last_duration_s": health.last_duration_s,
        "consecutive_failures": health.consecutive_failures,
    }


def group_dict(group: ConsumerGroup, figures: dict[str, Any] | None = None) -> dict:
    """``figures``: the partitions' current totals (``partitions``, ``total_lag``,
    ``max_time_lag_s``, ``last_commit_at``), fresher than the status job's copy on the group
    row. ``member_details`` is the same document as ``lagwatch_status --json``'s (null where
    the source does not report members), so a script can move between the two."""
    figures = figures or {}
    return {
        "id": group.pk,
        "cluster": group.cluster.name,
        "source": group.source,
        "name": group.name,
        "status": group.status,
        "status_since": iso(group.status_since),
        "evaluated_at": iso(group.evaluated_at),
        "complete": group.complete,
        "stale": group.stale,
        "partitions": figures.get("partitions"),
        "total_lag": figures.get("total_lag", group.total_lag),
        "max_time_lag_s": figures.get("max_time_lag_s", group.max_time_lag_s),
        "type": group_type(group.source, group.group_type),
        "state": group.state,
        "generation": group.generation,
        "assignment_epoch": group.assignment_epoch,
        "members": len(group.members or []),
        "member_details": member_details(group.members) if group.members_known else None,
        "owner": group.owner,
        "topology_id": group.topology_id,
        "first_seen_at": iso(group.first_seen_at),
        "last_seen_at": iso(group.last_seen_at),
        "last_commit_at": iso(figures.get("last_commit_at")),
        "trend": _trend(group),
        # The soonest retention deadline of its partitions (spark_jobs/evaluator/retention.py).
        "retention_left_s": getattr(group, "retention_left_min", None),
    }


def _trend(row: object) -> dict | None:
    """The newest rollup's rates, slope and ETA, where the view attached one (``trend``)."""
    trend = getattr(row, "trend", None)
    return None if trend is None else trend.as_dict()


def group_detail_dict(group: ConsumerGroup, figures: dict[str, Any], partitions: list) -> dict:
    body = group_dict(group, figures)
    body.update(
        {
            "assignor": group.assignor,
            "coordinator": group.coordinator,
            "members_known": group.members_known,
            "member_list": [
                {
                    "member_id": m.get("member_id"),
                    "client_id": m.get("client_id"),
                    "host": m.get("host"),
                    "assignment": m.get("assignment"),
                }
                for m in (group.members or [])
                if isinstance(m, dict)
            ],
            "partition_list": [partition_dict(p, group) for p in partitions],
            **assignment_dict(group, partitions),
        }
    )
    return body


def assignment_dict(group: ConsumerGroup, partitions: list) -> dict:
    """``balance``, ``what_if`` and ``what_if_subscriptions`` (docs/API.md): computed from the
    group and the partitions already read, no query."""
    return group_report(
        group,
        [
            {
                "topic": p.topic,
                "partition": p.partition,
                "lag": p.lag,
                "time_lag_s": p.time_lag_s,
                "owner": p.owner,
            }
            for p in partitions
        ],
    )


def partition_dict(p: PartitionState, group: ConsumerGroup | None = None) -> dict:
    group = group or p.group
    return {
        "id": p.pk,
        "group_id": group.pk,
        "cluster": group.cluster.name,
        "source": group.source,
        "group": group.name,
        "topic": p.topic,
        "partition": p.partition,
        "committed": p.committed,
        "earliest": p.earliest,
        "latest": p.latest,
        "lag": p.lag,
        "time_lag_s": p.time_lag_s,
        "time_lag_kind": p.time_lag_kind,
        "owner": p.owner,
        "alive": p.alive,
        "last_commit_at": iso(p.last_commit_at),
        "pending": p.pending,
        "failed": p.failed,
        "acked": p.acked,
        "status": p.status,
        "status_since": iso(p.status_since),
        "diagnosis": p.diagnosis or [],
        "reason": p.reason,
        "complete": p.complete,
        "evaluated_at": iso(p.evaluated_at),
        "stale": p.stale,
        "sampled_at": iso(seen_at(p.present, p.sampled_at, group.last_seen_at)),
        "present": p.present,
        "trend": _trend(p),
        "retention": retention_dict(p.retention_left_s, getattr(p, "topic_config", None)),
    }


def rebalance_dict(event: RebalanceEvent) -> dict:
    group = event.group
    return {
        "id": event.pk,
        "group_id": group.pk,
        "cluster": group.cluster.name,
        "source": group.source,
        "group": group.name,
        "at": iso(event.at),
        "generation": event.generation,
        "cause": event.cause,
        "detail": event.detail,
    }


def status_change_dict(change) -> dict:
    group = change.group
    return {
        "id": change.pk,
        "group_id": group.pk,
        "cluster": group.cluster.name,
        "source": group.source,
        "group": group.name,
        "topic": change.topic or None,
        "partition": change.partition,
        "level": "group" if change.partition is None else "partition",
        "at": iso(change.at),
        "old_status": change.old_status,
        "new_status": change.new_status,
        "diagnosis": change.diagnosis or [],
        "reason": change.reason,
    }

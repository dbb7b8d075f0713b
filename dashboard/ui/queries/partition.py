"""One partition: its latest figures, status history and the diagnosis with its evidence."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dashboard.monitoring import trends
from dashboard.monitoring.models import PartitionState, StatusChange
from dashboard.ui.queries.common import diagnosis_codes
from spark_jobs.evaluator.retention import time_to_retention

CHANGES_SHOWN = 50


def partition(pk: int) -> PartitionState:
    return PartitionState.objects.select_related("group__cluster").get(pk=pk)


def diagnosis(p: PartitionState) -> list[dict[str, Any]]:
    """Each diagnosis with its evidence as (name, value) pairs, for a definition list."""
    out = []
    for d in p.diagnosis or []:
        if not isinstance(d, dict):
            continue
        evidence = d.get("evidence")
        items = sorted(evidence.items()) if isinstance(evidence, dict) else []
        out.append({"code": str(d.get("code", "?")), "evidence": items})
    return out


def status_changes(p: PartitionState) -> list[dict[str, Any]]:
    rows = StatusChange.objects.filter(
        group_id=p.group_id, topic=p.topic, partition=p.partition
    ).order_by("-at", "-id")[:CHANGES_SHOWN]  # ties (one status run): the later write first
    out = []
    for c in rows.values("at", "old_status", "new_status", "diagnosis", "reason"):
        c["codes"] = diagnosis_codes(c["diagnosis"])
        out.append(c)
    return out


def trend_and_retention(p: PartitionState, now: datetime) -> dict[str, Any]:
    """The newest hourly rollup's rates, slope and ETA, and the topic's retention settings
    behind ``p.retention_left_s`` (two queries)."""
    cluster = p.group.cluster.name
    key = (cluster, p.group.source, p.group.name, p.topic, p.partition)
    config = trends.topic_retention([(cluster, p.topic)]).get((cluster, p.topic))
    # Why there is no figure, if there is none: the forecast's kind, from the same rule.
    kind = (
        time_to_retention(config.retention_ms, config.cleanup_policy, p.time_lag_s, p.lag).kind
        if config is not None
        else "unknown"
    )
    return {
        "trend": trends.partition_trends([key], now).get(key),
        "retention_kind": kind,
        "topic_config": config,
        "retention_s": None
        if config is None or config.retention_ms is None or config.retention_ms < 0
        else config.retention_ms / 1000,
    }

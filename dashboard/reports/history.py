"""Loads the partitions' status history a report needs from ``StatusChange``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dashboard.monitoring.models import StatusChange
from dashboard.reports.samples import Scope
from dashboard.reports.spec import ReportSpec
from dashboard.reports.status import StatusHistory

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def load_status_history(spec: ReportSpec) -> StatusHistory:
    """Partition-level changes of the cluster's groups in scope, up to the range's end.

    Changes before the range are kept too: the one in force when the range starts decides
    the first rows' status. Only changes are stored, so this is small next to the samples.
    Group-level changes (``partition`` null) are not used: rows are partitions.
    """
    scope = Scope(spec)
    query = StatusChange.objects.filter(
        group__cluster__name=spec.cluster, partition__isnull=False, at__lt=spec.end
    ).order_by()
    changes = []
    for source, group, topic, partition, at, status in query.values_list(
        "group__source", "group__name", "topic", "partition", "at", "new_status"
    ).iterator(chunk_size=10_000):
        if not (scope.matches("group", group) and scope.matches("topic", topic)):
            continue
        if not scope.matches("source", source):
            continue
        at_ms = (at.astimezone(UTC) - _EPOCH) // timedelta(milliseconds=1)
        changes.append((source, group, topic, partition, at_ms, status))
    return StatusHistory(changes)

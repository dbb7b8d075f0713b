"""The latest whole-spout figures (``SpoutSample``: Storm UI's, with the spout's push), as the
API, ``/metrics`` and ``lagwatch_status --json`` show them: one reader, so they agree.

Only spouts reported lately count (``FRESH``): a killed topology's rows stay in the short
history for hours and must not be exported as if it were still running.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Max, OuterRef, Subquery

from dashboard.monitoring.models import SpoutSample

__all__ = ["FRESH", "SPOUT_FIELDS", "group_spouts", "latest_spouts", "spout_document"]

FRESH = timedelta(minutes=10)
SPOUT_FIELDS = ("topology_id", "spout_id", "at", "emitted", "acked", "failed",
                "complete_latency_ms", "pending", "max_spout_pending")  # fmt: skip


def latest_spouts(
    now: datetime,
    cluster_id: int | None = None,
    topology_id: str | None = None,
    spout_id: str | None = None,
) -> list[dict[str, Any]]:
    """The newest row of every spout reported within ``FRESH`` of ``now`` (one query), with
    ``cluster_id``; of one cluster, topology instance or spout id when given. Sorted by
    cluster, topology, spout."""
    rows = SpoutSample.objects.filter(at__gte=now - FRESH)
    if cluster_id is not None:
        rows = rows.filter(cluster_id=cluster_id)
    if topology_id is not None:
        rows = rows.filter(topology_id=topology_id)
    if spout_id is not None:
        rows = rows.filter(spout_id=spout_id)
    newest = (
        SpoutSample.objects.filter(
            cluster_id=OuterRef("cluster_id"),
            topology_id=OuterRef("topology_id"),
            spout_id=OuterRef("spout_id"),
        )
        .order_by()
        .values("cluster_id", "topology_id", "spout_id")
        .annotate(last=Max("at"))
        .values("last")
    )
    return list(
        rows.filter(at=Subquery(newest))
        .order_by("cluster__name", "topology_id", "spout_id")
        .values("cluster_id", "cluster__name", *SPOUT_FIELDS)
    )


def spout_document(row: dict[str, Any]) -> dict[str, Any]:
    """A row of ``latest_spouts`` as JSON: the time in ISO 8601, no database ids."""
    doc = {k: row[k] for k in SPOUT_FIELDS}
    doc["at"] = row["at"].isoformat().replace("+00:00", "Z")
    return doc


def group_spouts(group: Any, now: datetime) -> list[dict[str, Any]]:
    """The latest figures of a Storm spout group's topology instance (its spouts, as Storm UI
    names them), or of its spout id when the topology is not known; those of a Storm 2
    spout's Kafka group's topology (named by its commits' metadata) where a Storm UI gives
    any; [] for other groups."""
    if group.source != "storm" and not group.topology_id:
        return []
    if group.topology_id:
        rows = latest_spouts(now, group.cluster_id, topology_id=group.topology_id)
    else:
        rows = latest_spouts(now, group.cluster_id, spout_id=group.name)
    return [spout_document(r) for r in rows]

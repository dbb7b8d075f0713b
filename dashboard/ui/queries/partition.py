"""One partition: its latest figures, status history and the diagnosis with its evidence."""

from __future__ import annotations

from typing import Any

from dashboard.monitoring.models import PartitionState, StatusChange
from dashboard.ui.queries.common import diagnosis_codes

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
    ).order_by("-at")[:CHANGES_SHOWN]
    out = []
    for c in rows.values("at", "old_status", "new_status", "diagnosis", "reason"):
        c["codes"] = diagnosis_codes(c["diagnosis"])
        out.append(c)
    return out

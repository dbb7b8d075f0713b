"""Pieces several pages share: status ordering in SQL, which sources feed a group, banners."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, F, Func, IntegerField, Value, When

from dashboard.monitoring.models import SourceHealth
from dashboard.ui.params import SEVERITY

# Whose unreachability leaves a group's figures stale
# (collectors.cycle.stale.STALE_WHEN_UNREACHABLE read the other way round); Kafka's brokers
# give every group its latest offsets.
FED_BY = {
    "kafka": ("kafka",),
    "zookeeper": ("zookeeper", "kafka"),
    "storm": ("zookeeper", "storm", "kafka"),
}
SOURCE_LABEL = {
    "kafka": "Kafka",
    "zookeeper": "ZooKeeper",
    "storm": "Storm UI",
    "broker_metrics": "Broker metrics",
}


def severity() -> Case:
    """The status as a number, worst highest, for ``ORDER BY``."""
    return Case(
        *(When(status=s, then=Value(n)) for s, n in SEVERITY.items()),
        default=Value(1),
        output_field=IntegerField(),
    )


class JsonArrayLength(Func):
    """Members of a group: length of its JSON list, in SQL so the list can sort by it."""

    function = "JSON_ARRAY_LENGTH"
    output_field = IntegerField()

    def __init__(self, field: str) -> None:
        super().__init__(F(field))

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="JSONB_ARRAY_LENGTH", **extra)


def unreachable_sources(cluster_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """Sources that failed their latest poll: what the pages warn about (never a stuck
    consumer: SPEC §4 says an unreachable source keeps last figures, marked stale)."""
    qs = SourceHealth.objects.filter(reachable=False).select_related("cluster")
    if cluster_ids is not None:
        qs = qs.filter(cluster_id__in=cluster_ids)
    return [
        {
            "cluster": h.cluster.name,
            "cluster_id": h.cluster_id,
            "source": h.source,
            "label": SOURCE_LABEL.get(h.source, h.source),
            "since": h.last_success_at,
            "failing_since": h.last_error_at,
            "failures": h.consecutive_failures,
            "error": h.last_error,
        }
        for h in qs.order_by("cluster__name", "source")
    ]


def diagnosis_codes(diagnosis: list | None) -> list[str]:
    return [d.get("code", "?") for d in diagnosis or [] if isinstance(d, dict)]

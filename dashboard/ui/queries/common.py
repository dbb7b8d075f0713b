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
    "sample_log": "Sample log store",
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


def no_forecast_reason(
    config: Any, lag: int | None, time_lag_s: float | None, stale: bool, evaluated: bool
) -> str:
    """Why a partition has no "retention left" (the page's "—"), in the forecast's own terms
    (``spark_jobs.evaluator.retention.time_to_retention`` on the stored figures); ``config``
    is the topic's stored ``TopicConfig`` or None.

    The figure is the status job's, made from its window when it last judged the partition;
    the lag shown beside it is the latest poll's. A partition whose lag comes and goes (a
    healthy consumer a few records behind) can show lag now and have had nothing unread
    then: that is said as such, not as an unknown time lag."""
    from spark_jobs.evaluator.retention import CAUGHT_UP, COMPACT, INFINITE, time_to_retention

    if stale:
        return "its source is unreachable: no forecast from last known figures"
    if config is None:
        return "the topic's retention settings have not been read yet (DescribeConfigs)"
    kind = time_to_retention(config.retention_ms, config.cleanup_policy, time_lag_s, lag).kind
    if kind == INFINITE:
        return "the topic's retention is infinite (retention.ms = -1)"
    if kind == COMPACT:
        return "the topic is compacted, not deleted by time"
    if kind == CAUGHT_UP:
        return "nothing is waiting to be read"
    if not evaluated:
        return "the status job has not judged this partition yet"
    if time_lag_s is None:
        return "the time lag is unknown"
    return ("at the status job's last judgement nothing was waiting to be read, or the "
            "figures were not current")  # fmt: skip

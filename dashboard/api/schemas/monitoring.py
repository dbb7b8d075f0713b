"""Answers about what is monitored besides the groups themselves (``schemas/groups.py``):
clusters, the status overview and its changes, rebalances, lag history.

Read from the ORM rows as the group schemas are; the status and history views hand dicts
for what they compute (summary, series).
"""

from typing import Any

from pydantic import Field

from dashboard.api import history
from dashboard.api.schemas.common import Closed, Counts, Number, Time, TimeText, one_of, page_of
from dashboard.api.schemas.documents import BrokerFigures
from dashboard.api.schemas.groups import (
    Diagnoses,
    Group,
    GroupRow,
    PartitionRef,
    Source,
    StatusName,
    diagnosis_list,
)
from dashboard.monitoring.models import SparkJobOutcome


class Sources(Closed):
    kafka: bool
    zookeeper_consumers: bool
    storm_spout_roots: list[str]
    storm_ui: bool
    consumer_offsets_topic: bool


class Cluster(Closed):
    """A monitored cluster; ``groups_by_status`` is attached by the view (one query a page)."""

    name: str
    enabled: bool
    poll_interval_s: int
    sources: Sources
    groups_by_status: Counts = Field(
        description="Groups per status; statuses with none are left out."
    )
    updated_at: Time

    @staticmethod
    def resolve_sources(cluster: Any) -> dict:
        return {
            "kafka": bool(cluster.kafka_bootstrap_servers),
            "zookeeper_consumers": cluster.zk_consumers,
            "storm_spout_roots": list(cluster.storm_spout_roots or []),
            "storm_ui": bool(cluster.storm_ui_url),
            "consumer_offsets_topic": cluster.read_consumer_offsets_topic,
        }

    @staticmethod
    def resolve_groups_by_status(cluster: Any) -> dict:
        return getattr(cluster, "groups_by_status", None) or {}


class SourceHealth(Closed):
    source: str
    reachable: bool
    last_attempt_at: Time | None
    last_success_at: Time | None
    last_error_at: Time | None
    last_error: str
    last_duration_s: Number | None
    consecutive_failures: int


class CollectionError(Closed):
    source: str
    where: str
    error: str
    at: Time


class ClusterDetail(Cluster):
    """The view attaches ``source_health``, ``collection_errors`` and ``brokers``."""

    source_health: list[SourceHealth]
    collection_errors: list[CollectionError]
    brokers: list[BrokerFigures] = Field(
        description="Each broker's delayed operations (purgatory), as its metrics endpoint "
        "(broker_metrics_urls) last said. error set: the latest scrape failed and the figures "
        "are those of as_of."
    )


class PartitionStatus(Closed):
    id: int
    topic: str
    partition: int
    status: StatusName
    status_since: Time | None
    diagnosis: Diagnoses
    reason: str
    complete: Number | None
    lag: int | None
    time_lag_s: Number | None
    stale: bool
    evaluated_at: Time | None

    @staticmethod
    def resolve_diagnosis(p: Any) -> list:
        return diagnosis_list(p["diagnosis"])


class StatusGroup(Group):
    """``partition_statuses`` is left out with ``?partitions=none``."""

    partition_statuses: list[PartitionStatus] = None  # type: ignore[assignment]


class SparkJobRun(Closed):
    id: int
    job: str
    started_at: TimeText
    finished_at: TimeText | None
    duration_s: Number | None
    window_s: int
    as_of_ms: int | None
    input_rows: int | None
    output_rows: int | None
    outcome: one_of(SparkJobOutcome.values)
    error: str
    output_path: str


class StatusSummary(Closed):
    groups: Counts
    partitions: Counts
    last_status_run: SparkJobRun | None


class StatusChange(GroupRow):
    topic: str | None
    partition: int | None
    level: one_of(("group", "partition"))
    at: Time
    old_status: StatusName
    new_status: StatusName
    diagnosis: Diagnoses
    reason: str

    @staticmethod
    def resolve_topic(change: Any) -> str | None:
        return change.topic or None

    @staticmethod
    def resolve_level(change: Any) -> str:
        return "group" if change.partition is None else "partition"

    @staticmethod
    def resolve_diagnosis(change: Any) -> list:
        return diagnosis_list(change.diagnosis)


class Rebalance(GroupRow):
    at: Time
    generation: int | None
    cause: str
    detail: Any = Field(description="Evidence of the cause (members joined and left, ...).")


_HISTORY_FIELDS = ("committed", "latest", "lag", "time_lag_s", "pending", "failed", "acked",
                   "max_time_lag_s", "partitions", *history.ROLLUP_FIELDS)  # fmt: skip


class HistoryPoint(Closed):
    """One point of the series: raw samples of a partition (committed, latest, lag,
    time_lag_s, pending, failed, acked, stale), of a group (lag, max_time_lag_s, partitions,
    stale), or rollups (lag, max_lag, avg_lag, max_time_lag_s, produce_per_s, consume_per_s,
    lag_slope_per_s, eta_s). Only the keys of its kind are written."""

    time: TimeText
    committed: Number | None = None
    latest: Number | None = None
    lag: Number | None = None
    time_lag_s: Number | None = None
    pending: Number | None = None
    failed: Number | None = None
    acked: Number | None = None
    max_time_lag_s: Number | None = None
    partitions: Number | None = None
    max_lag: Number | None = None
    avg_lag: Number | None = None
    produce_per_s: Number | None = None
    consume_per_s: Number | None = None
    lag_slope_per_s: Number | None = None
    eta_s: Number | None = None
    stale: bool = None  # type: ignore[assignment]


assert set(_HISTORY_FIELDS) <= set(HistoryPoint.model_fields), "a history field has no schema"


class HistoryRange(Closed):
    since: Time
    until: Time
    resolution: one_of(r for r in history.RESOLUTIONS if r != "auto")
    source: str = Field(description="raw samples, or <resolution> rollups")
    count: int
    points: list[HistoryPoint]


class GroupRef(Closed):
    id: int
    cluster: str = Field(alias="cluster.name")
    source: Source
    name: str


class PartitionHistory(HistoryRange):
    partition: PartitionRef


class GroupHistory(HistoryRange):
    group: GroupRef


ClusterPage = page_of(Cluster, "ClusterPage")
StatusChangePage = page_of(StatusChange, "StatusChangePage")
RebalancePage = page_of(Rebalance, "RebalancePage")
StatusPage = page_of(
    StatusGroup,
    "StatusPage",
    summary=(StatusSummary, ...),
    as_of=(Time, ...),
)
StatusPage.__doc__ = (
    "A page of groups, worst first, with the summary of all the filtered groups and the time "
    "of the answer."
)

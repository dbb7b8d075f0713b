"""The collection cycle's store over the ORM, and the one call that runs a cycle from Django.

``collectors.cycle.runner`` coordinates a cycle without knowing Django; this module is the
other side of its port (``collectors.cycle.store_port.CycleStore``): the reads it needs from
the database and the database half of a cycle's write. The Celery task and
``manage.py collect`` call :func:`run_cluster_cycle`, which turns a ``Cluster`` row and the
settings into what the runner takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.conf import settings

from collectors.client_reports import ClientReport
from collectors.cluster_sources import ClusterSettings
from collectors.cycle.runner import CycleReport, run_cycle
from collectors.cycle.stale import Staleness
from collectors.cycle.store_port import BrokerOffsetPoint, StoredCycle
from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome
from collectors.rebalance import GROUP_DELETED
from collectors.records import GroupMember, GroupSnapshot, Source, SpoutFigures, StreamsTasks
from collectors.sample_log import SampleLog
from collectors.sample_log.spool import SpooledLog
from dashboard.ingest.store import recent_reports
from dashboard.monitoring.models import (
    BrokerOffsets,
    Cluster,
    CollectedCycle,
    ConsumerGroup,
    PartitionState,
    RebalanceEvent,
)
from dashboard.store import raw_history
from dashboard.store.rows import store_cycle
from dashboard.times import ms_to_dt

__all__ = [
    "OrmCycleStore", "cluster_settings", "cycle_sample_log", "run_cluster_cycle",
    "source_timeout_s",
]  # fmt: skip

# The share of a poll interval a source may take: the rest is the cycle's write and the slack
# that keeps a cycle whose source hangs (a network fault) inside its slot. With the whole
# interval, such a cycle overran it, the next slots were collected late or skipped, and the
# evaluator read the healthy sources' groups as a collection gap (UNKNOWN) too.
SOURCE_SHARE_OF_POLL = 0.6


def run_cluster_cycle(cluster: Cluster, cycle_ms: int | None = None) -> CycleReport:
    """One cycle of ``cluster`` into the database and the configured sample log."""
    return run_cycle(
        cluster_settings(cluster),
        OrmCycleStore(cluster),
        cycle_sample_log(),
        poll_interval_s=cluster.poll_interval_s,
        cycle_ms=cycle_ms,
    )


def cycle_sample_log() -> SampleLog | SpooledLog:
    """The configured sample log; on an object store, with the local spool that keeps a
    cycle's batch while the store does not answer (``LAGWATCH_SAMPLE_LOG_SPOOL_DIR``)."""
    log = SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL, settings.LAGWATCH_S3)
    if log.store is None:
        return log
    return SpooledLog(log, settings.LAGWATCH_SAMPLE_LOG_SPOOL_DIR)


def cluster_settings(cluster: Cluster) -> ClusterSettings:
    return ClusterSettings(
        name=cluster.name,
        kafka_bootstrap_servers=cluster.kafka_bootstrap_servers,
        kafka_config=dict(cluster.kafka_config or {}),
        read_consumer_offsets_topic=cluster.read_consumer_offsets_topic,
        zk_hosts=cluster.zk_hosts,
        storm_spout_roots=tuple(cluster.storm_spout_roots or ()),
        zk_consumers=cluster.zk_consumers,
        storm_ui_url=cluster.storm_ui_url or None,
        broker_metrics_urls=tuple(cluster.broker_metrics_urls or ()),
        timeout_s=source_timeout_s(cluster.poll_interval_s, settings.LAGWATCH_SOURCE_TIMEOUT_S),
        topic_config_refresh_s=float(settings.LAGWATCH_TOPIC_CONFIG_REFRESH_S),
    )


def source_timeout_s(poll_interval_s: int, configured_s: float) -> float:
    """A source's deadline in one cycle: ``configured_s``, but within its share of the poll
    interval (at least 1 s), so that a cycle finishes within its interval even when a source
    takes all of its time; otherwise the next one is late or skipped."""
    return float(min(configured_s, max(1.0, SOURCE_SHARE_OF_POLL * poll_interval_s)))


class OrmCycleStore:
    """``CycleStore`` for one ``Cluster`` row."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def broker_offsets_since(self, since_ms: int) -> Iterator[BrokerOffsetPoint]:
        rows = (
            BrokerOffsets.objects.filter(cluster=self.cluster, read_until__gt=ms_to_dt(since_ms))
            .order_by("at")
            .values_list("figures", flat=True)
        )
        # Streamed: a process starting on a busy cluster reads an hour of every partition.
        for data in rows.iterator(chunk_size=50):
            for topic, partition, time_ms, _earliest, latest in raw_history.broker_points(data):
                if time_ms > since_ms and latest is not None:
                    yield topic, partition, time_ms, latest

    def last_cycle(self) -> StoredCycle | None:
        row = (
            CollectedCycle.objects.filter(cluster=self.cluster)
            .order_by("-at")
            .values_list("at", "collected_by")
            .first()
        )
        return None if row is None else (_ms(row[0]), row[1])

    def group_snapshots(self) -> list[GroupSnapshot]:
        deleted = dict(
            RebalanceEvent.objects.filter(group__cluster=self.cluster, cause=GROUP_DELETED)
            .order_by("group_id", "at")
            .values_list("group_id", "at")
        )  # the newest deletion of each group wins
        rows = ConsumerGroup.objects.filter(cluster=self.cluster, topics__isnull=False).values_list(
            "id", "source", "name", "state", "group_type", "generation", "assignment_epoch",
            "assignor", "coordinator", "members", "members_known", "topics", "last_seen_at",
        )  # fmt: skip
        return [
            _snapshot(row) for row in rows if not (row[0] in deleted and deleted[row[0]] >= row[-1])
        ]

    def recent_reports(
        self, now_ms: int, max_age_s: float
    ) -> tuple[list[ClientReport], list[SpoutFigures]]:
        return recent_reports(self.cluster, ms_to_dt(now_ms), max_age_s)

    def last_known(self, sources: frozenset[str]) -> list[PartitionFigure]:
        """Each partition's last stored figures; liveness and spout counts are left unknown,
        since no source told them this cycle. Not those of partitions that had left their
        group before the outage (``present``): an outage brings nothing back."""
        states = PartitionState.objects.filter(
            group__cluster=self.cluster, group__source__in=sources, committed__isnull=False,
            present=True,
        ).values_list(
            "group__source", "group__name", "topic", "partition", "committed", "earliest",
            "latest", "lag", "time_lag_s", "time_lag_kind", "last_commit_at", "commit_version",
            "owner", "group__topology_id", "time_lag_from_ms",
        )  # fmt: skip
        return [_last_known(row) for row in states]

    def write_cycle(self, outcome: CycleOutcome, stale: Staleness) -> None:
        store_cycle(self.cluster, outcome, stale)


def _snapshot(row: tuple) -> GroupSnapshot:
    """A stored group as the source's snapshot was (``store.member_document`` reversed)."""
    _, source, name, state, group_type, generation, epoch, assignor, coordinator = row[:9]
    members, members_known, topics = row[9:12]
    return GroupSnapshot(
        source=Source(source), group=name, state=state or None, generation=generation,
        assignor=assignor or None, coordinator=coordinator or None,
        protocol_type=group_type or None, assignment_epoch=epoch,
        members=tuple(_member(m) for m in members or ()), members_known=members_known,
        topics=tuple(topics),
    )  # fmt: skip


def _member(doc: dict) -> GroupMember:
    target = doc.get("target_assignment")
    subscription = doc.get("subscription")
    return GroupMember(
        member_id=doc["member_id"], client_id=doc.get("client_id"), host=doc.get("host"),
        assignment=tuple((t, p) for t, p in doc.get("assignment") or ()),
        instance_id=doc.get("instance_id"), member_epoch=doc.get("member_epoch"),
        target_assignment=None if target is None else tuple((t, p) for t, p in target),
        subscription=None if subscription is None else tuple(subscription),
        process_id=doc.get("process_id"), tasks=_tasks(doc.get("tasks")),
        target_tasks=_tasks(doc.get("target_tasks")),
    )  # fmt: skip


def _tasks(doc: dict | None) -> StreamsTasks | None:
    """A streams member's stored tasks (``documents._tasks_document`` reversed)."""
    if doc is None:
        return None
    return StreamsTasks(
        *(tuple((s, p) for s, p in doc.get(kind) or ()) for kind in ("active", "standby", "warmup"))
    )


def _last_known(row: tuple) -> PartitionFigure:
    source, group, topic, partition, committed, earliest, latest, lag, time_lag_s = row[:9]
    time_lag_kind, commit_at, commit_version, owner, topology_id, from_ms = row[9:]
    return PartitionFigure(
        source=Source(source), group=group, topic=topic, partition=partition,
        committed=committed, earliest=earliest, latest=latest, lag=lag, time_lag_s=time_lag_s,
        time_lag_kind=time_lag_kind, out_of_range=None,
        commit_time_ms=_ms(commit_at) if commit_at else None, commit_version=commit_version,
        owner=owner or None, topology_id=topology_id or None, where="", time_lag_from_ms=from_ms,
    )  # fmt: skip


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)

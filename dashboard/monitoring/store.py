"""The sample store's database side: writes one cycle's outcome, idempotently (SPEC §5).

Every row written here is keyed by the cycle's time, so a retried task rewrites the same
rows. A source that could not be reached leaves its groups' last known figures in place,
marked stale: nothing already stored is lost or overwritten with zeros.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import transaction

from collectors.cycle import CycleOutcome
from collectors.figures import PartitionFigure
from dashboard.monitoring.models import (
    BrokerOffsetSample,
    Cluster,
    CollectionError,
    ConsumerGroup,
    OffsetSample,
    PartitionState,
    RebalanceEvent,
    SourceHealth,
)

GROUP_FIELDS = [
    "state", "generation", "assignor", "coordinator", "members", "members_known", "owner",
    "topology_id", "stale", "last_seen_at",
]
PARTITION_FIELDS = [
    "committed", "earliest", "latest", "lag", "time_lag_s", "time_lag_kind", "owner", "alive",
    "last_commit_at", "commit_version", "stale", "sampled_at",
]


def ms_to_dt(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def store_cycle(cluster: Cluster, outcome: CycleOutcome) -> None:
    at = ms_to_dt(outcome.cycle_ms)
    unreachable = {s.source for s in outcome.sources if not s.reachable}
    with transaction.atomic():
        groups = _upsert_groups(cluster, outcome, at)
        partitions = _upsert_partitions(groups, outcome.figures, at)
        _insert_samples(groups, partitions, outcome.figures, at)
        _insert_broker_offsets(cluster, outcome, at)
        _insert_rebalances(groups, outcome)
        if unreachable:
            _mark_stale(cluster, unreachable)
        _record_health(cluster, outcome, at)


def _upsert_groups(cluster: Cluster, outcome: CycleOutcome, at: datetime) -> dict:
    rows: dict[tuple[str, str], ConsumerGroup] = {}
    for snap in outcome.groups:
        rows[(str(snap.source), snap.group)] = ConsumerGroup(
            cluster=cluster, source=str(snap.source), name=snap.group, state=snap.state or "",
            generation=snap.generation, assignor=snap.assignor or "",
            coordinator=snap.coordinator or "",
            members=[
                {"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                 "assignment": [list(tp) for tp in m.assignment]}
                for m in snap.members
            ],
            members_known=snap.members_known, stale=False, first_seen_at=at, last_seen_at=at,
        )
    for fig in outcome.figures:
        key = (str(fig.source), fig.group)
        if key not in rows:
            rows[key] = ConsumerGroup(
                cluster=cluster, source=key[0], name=fig.group, members_known=False,
                stale=False, first_seen_at=at, last_seen_at=at,
            )
        if fig.topology_id:
            rows[key].owner = fig.owner or ""
            rows[key].topology_id = fig.topology_id
    if rows:
        ConsumerGroup.objects.bulk_create(
            rows.values(), update_conflicts=True,
            unique_fields=["cluster", "source", "name"], update_fields=GROUP_FIELDS,
        )
    return {
        (g.source, g.name): g
        for g in ConsumerGroup.objects.filter(cluster=cluster).only("id", "source", "name")
    }


def _upsert_partitions(groups: dict, figures: list[PartitionFigure], at: datetime) -> dict:
    rows = []
    for fig in figures:
        group = groups[(str(fig.source), fig.group)]
        rows.append(
            PartitionState(
                group=group, topic=fig.topic, partition=fig.partition, committed=fig.committed,
                earliest=fig.earliest, latest=fig.latest, lag=fig.lag,
                time_lag_s=fig.time_lag_s, time_lag_kind=fig.time_lag_kind,
                owner=fig.owner or "", alive=None,
                last_commit_at=ms_to_dt(fig.commit_time_ms), commit_version=fig.commit_version,
                stale=False, sampled_at=at,
            )
        )
    if rows:
        PartitionState.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["group", "topic", "partition"],
            update_fields=PARTITION_FIELDS, batch_size=2000,
        )
    group_ids = {g.id for g in groups.values()}
    return {
        (p.group_id, p.topic, p.partition): p.id
        for p in PartitionState.objects.filter(group_id__in=group_ids).only(
            "id", "group_id", "topic", "partition"
        )
    }


def _insert_samples(
    groups: dict, partitions: dict, figures: list[PartitionFigure], at: datetime
) -> None:
    rows = [
        OffsetSample(
            partition_id=partitions[(groups[(str(f.source), f.group)].id, f.topic, f.partition)],
            at=at, committed=f.committed, latest=f.latest, lag=f.lag, time_lag_s=f.time_lag_s,
        )
        for f in figures
    ]
    OffsetSample.objects.bulk_create(rows, ignore_conflicts=True, batch_size=2000)


def _insert_broker_offsets(cluster: Cluster, outcome: CycleOutcome, at: datetime) -> None:
    rows = [
        BrokerOffsetSample(
            cluster=cluster, topic=o.topic, partition=o.partition, at=at,
            earliest=o.earliest, latest=o.latest,
        )
        for o in outcome.offsets
    ]
    BrokerOffsetSample.objects.bulk_create(rows, ignore_conflicts=True, batch_size=2000)


def _insert_rebalances(groups: dict, outcome: CycleOutcome) -> None:
    rows = [
        RebalanceEvent(
            group=groups[(r.source, r.group)], at=ms_to_dt(r.time_ms), generation=r.generation,
            cause=r.cause, detail=r.detail,
        )
        for r in outcome.rebalances
        if (r.source, r.group) in groups
    ]
    RebalanceEvent.objects.bulk_create(rows, ignore_conflicts=True)


def _mark_stale(cluster: Cluster, sources: set[str]) -> None:
    ConsumerGroup.objects.filter(cluster=cluster, source__in=sources).update(stale=True)
    PartitionState.objects.filter(group__cluster=cluster, group__source__in=sources).update(
        stale=True
    )


def _record_health(cluster: Cluster, outcome: CycleOutcome, at: datetime) -> None:
    for s in outcome.sources:
        health, _ = SourceHealth.objects.get_or_create(cluster=cluster, source=s.source)
        health.last_attempt_at = at
        health.last_duration_s = max(0.0, (s.finished_ms - s.started_ms) / 1000)
        health.reachable = s.reachable
        if s.reachable:
            health.last_success_at = at
            health.consecutive_failures = 0
        else:
            health.last_error_at = at
            health.last_error = s.error
            health.consecutive_failures += 1
        health.save()
    # The errors listed are those of the latest cycle of each source that ran in it.
    ran = {s.source for s in outcome.sources}
    CollectionError.objects.filter(cluster=cluster, source__in=ran).delete()
    CollectionError.objects.bulk_create(
        CollectionError(cluster=cluster, source=str(e.source), where=e.where, error=e.error, at=at)
        for e in outcome.errors
    )


def prune_history(older_than: timedelta, now: datetime) -> int:
    """Drop raw history past its retention (the Parquet log keeps the long history)."""
    cutoff = now - older_than
    deleted, _ = OffsetSample.objects.filter(at__lt=cutoff).delete()
    deleted_b, _ = BrokerOffsetSample.objects.filter(at__lt=cutoff).delete()
    return deleted + deleted_b

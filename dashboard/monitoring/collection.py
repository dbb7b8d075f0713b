"""One collection cycle of one cluster, end to end: sources → assembly → database → sample log.

The Celery task and ``manage.py collect`` both call :func:`run_cycle`; it is the only place
that knows the order. Everything it calls is either a pure function (``collectors``) or the
store; what it adds is the per-process memory between cycles and the idempotency key.

Idempotency (SPEC §5): every row of a cycle is keyed by ``cycle_ms``, the cycle's *scheduled*
time (the start of its poll-interval slot), not the time it ran. A retried task carries the
same ``cycle_ms`` and rewrites the same rows and the same sample-log file.

Memory: adapters (their connections), the latest-offset history behind time lag and the
previous group snapshots behind rebalance events live in this process, per cluster. Run one
collector process per set of clusters (the ``collectors`` queue); a second process collecting
the same cluster stays correct (its offset history catches up from the database before each
cycle) but sees only its own cycles' group changes.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from collectors.assemble import CycleMemory, assemble_cycle, sample_rows
from collectors.cluster_sources import ClusterSettings, ClusterSources
from collectors.figures import TimeTables
from collectors.rebalance import RebalanceTracker
from collectors.records import STALE_WHEN_UNREACHABLE, Source
from collectors.sample_log import SampleLog
from collectors.timelag import Point
from dashboard.monitoring.ingest_store import recent_reports
from dashboard.monitoring.models import BrokerOffsetSample, Cluster, PartitionState
from dashboard.monitoring.store import ms_to_dt, store_cycle

log = logging.getLogger(__name__)

__all__ = ["CycleReport", "cycle_slot", "forget_clusters", "run_cycle"]

# Points of latest-offset history per partition: an hour at a 10 s poll once flat stretches
# are folded (OffsetTimeTable keeps a flat line as its two ends).
TIME_TABLE_POINTS = 360


@dataclass
class CycleReport:
    cluster: str
    cycle_ms: int
    duration_s: float
    partitions: int
    groups: int
    errors: int
    unreachable: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "cluster": self.cluster, "cycle_ms": self.cycle_ms,
            "duration_s": round(self.duration_s, 3), "partitions": self.partitions,
            "groups": self.groups, "errors": self.errors, "unreachable": self.unreachable,
        }  # fmt: skip


@dataclass
class _ClusterMemory:
    fingerprint: tuple
    sources: ClusterSources
    memory: CycleMemory
    offsets_seen_until: datetime | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_memories: dict[str, _ClusterMemory] = {}
_memories_lock = threading.Lock()


def cycle_slot(now_ms: int, poll_interval_s: int) -> int:
    """The start of the poll-interval slot ``now_ms`` falls in: a cycle's idempotency key."""
    step = max(1, poll_interval_s) * 1000
    return now_ms - now_ms % step


def cluster_settings(cluster: Cluster) -> ClusterSettings:
    return ClusterSettings(
        name=cluster.name,
        kafka_bootstrap_servers=cluster.kafka_bootstrap_servers,
        kafka_config=dict(cluster.kafka_config or {}),
        zk_hosts=cluster.zk_hosts,
        storm_spout_roots=tuple(cluster.storm_spout_roots or ()),
        zk_consumers=cluster.zk_consumers,
        storm_ui_url=cluster.storm_ui_url or None,
        # A cycle must finish within its interval, or the next one is skipped.
        timeout_s=float(min(settings.LAGWATCH_SOURCE_TIMEOUT_S, max(1, cluster.poll_interval_s))),
    )


def _memory_for(cluster: Cluster) -> _ClusterMemory:
    wanted = cluster_settings(cluster)
    with _memories_lock:
        held = _memories.get(cluster.name)
        if held is not None and held.fingerprint == wanted.fingerprint():
            return held
        if held is not None:
            held.sources.close()  # the configuration changed: new adapters, same history
            memory = held.memory
        else:
            memory = CycleMemory(TimeTables(TIME_TABLE_POINTS), RebalanceTracker())
        held = _ClusterMemory(wanted.fingerprint(), ClusterSources(wanted), memory)
        _memories[cluster.name] = held
        return held


def forget_clusters() -> None:
    """Close every adapter of this process (tests, and a worker shutting down)."""
    with _memories_lock:
        for held in _memories.values():
            held.sources.close()
        _memories.clear()


def _catch_up_offsets(cluster: Cluster, held: _ClusterMemory, now: datetime) -> None:
    """Feed the time tables what other processes stored since this one last looked."""
    since = held.offsets_seen_until or now - timedelta(hours=1)
    rows = (
        BrokerOffsetSample.objects.filter(cluster=cluster, at__gt=since, latest__isnull=False)
        .order_by("at")
        .values_list("topic", "partition", "at", "latest")
    )
    tables = held.memory.tables
    last = None
    for topic, partition, at, latest in rows.iterator(chunk_size=5000):
        table = tables.table(topic, partition)
        point = Point(latest, int(at.timestamp() * 1000))
        if not table.add(point) and table.points and latest < table.points[-1].offset:
            table.clear()
            table.add(point)
        last = at
    if last is not None:
        held.offsets_seen_until = last


def _stale_rows(cluster: Cluster, hidden: set[str], cycle_ms: int) -> list[dict]:
    """Last known figures of partitions an unreachable source hides, marked stale.

    Written to the sample log so the status job sees the outage itself (SOURCE_UNREACHABLE)
    instead of a gap it would read as a consumer that stopped committing.
    """
    if not hidden:
        return []
    states = PartitionState.objects.filter(
        group__cluster=cluster, group__source__in=hidden, committed__isnull=False
    ).values_list(
        "group__source", "group__name", "topic", "partition", "committed", "earliest", "latest",
        "lag", "time_lag_s", "last_commit_at", "commit_version", "owner", "group__topology_id",
    )  # fmt: skip
    return [
        {
            "ts_ms": cycle_ms,
            "source": source,
            "group": group,
            "topic": topic,
            "partition": partition,
            "committed": committed,
            "earliest": earliest,
            "latest": latest,
            "lag": lag,
            "time_lag_s": time_lag_s,
            "commit_time_ms": int(commit_at.timestamp() * 1000) if commit_at else None,
            "commit_version": commit_version,
            "owner": owner or None,
            "topology_id": topology_id or None,
            "stale": True,
        }  # fmt: skip
        for (
            source,
            group,
            topic,
            partition,
            committed,
            earliest,
            latest,
            lag,
            time_lag_s,
            commit_at,
            commit_version,
            owner,
            topology_id,
        ) in states  # fmt: skip
    ]


def run_cycle(cluster: Cluster, cycle_ms: int | None = None) -> CycleReport:
    """Collect, store and log one cycle of ``cluster``.

    Raises only when the cycle itself failed (the database or the sample log could not be
    written); an unreachable source is recorded in the outcome, not raised.
    """
    started = time.monotonic()
    now_ms = int(time.time() * 1000)
    if cycle_ms is None:
        cycle_ms = cycle_slot(now_ms, cluster.poll_interval_s)
    held = _memory_for(cluster)
    with held.lock:
        now = ms_to_dt(now_ms)
        _catch_up_offsets(cluster, held, now)
        results = held.sources.collect(now_ms)
        max_age_s = max(30.0, 3.0 * cluster.poll_interval_s)
        reports, pushed = recent_reports(cluster, now, max_age_s)
        outcome = assemble_cycle(
            cluster.name, cycle_ms, now_ms, results, held.memory, reports, pushed
        )
        store_cycle(cluster, outcome)
        held.offsets_seen_until = max(held.offsets_seen_until or now, ms_to_dt(cycle_ms) or now)

    unreachable = sorted(s.source for s in outcome.sources if not s.reachable)
    hidden = {str(h) for s in unreachable for h in STALE_WHEN_UNREACHABLE.get(Source(s), ())}
    rows = sample_rows(outcome) + _stale_rows(cluster, hidden, cycle_ms)
    SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL).write_batch(
        cluster.name, f"{cluster.name}@{cycle_ms}", rows
    )
    report = CycleReport(
        cluster=cluster.name, cycle_ms=cycle_ms, duration_s=time.monotonic() - started,
        partitions=len(outcome.figures), groups=len(outcome.groups),
        errors=len(outcome.errors), unreachable=unreachable,
    )  # fmt: skip
    log.info("collection cycle done", extra={"cycle": report.as_dict()})
    return report

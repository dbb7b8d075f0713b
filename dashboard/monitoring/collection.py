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

Garbage collection: the cycles own the collector's garbage collector (see
:func:`_cycle_gc`): no collection runs during a cycle, one runs at its end.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pyarrow as pa
from django.conf import settings

from collectors.assemble import CycleMemory, assemble_cycle, sample_columns
from collectors.cluster_sources import ClusterSettings, ClusterSources
from collectors.figures import TimeTables
from collectors.rebalance import RebalanceTracker
from collectors.records import STALE_WHEN_UNREACHABLE, Source
from collectors.sample_log import SampleLog
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
        read_consumer_offsets_topic=cluster.read_consumer_offsets_topic,
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
        at_ms = int(at.timestamp() * 1000)
        if not table.add_at(latest, at_ms):
            newest = table.last_offset  # refused: the table holds a point
            if newest is not None and latest < newest:
                table.clear()
                table.add_at(latest, at_ms)
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


def _write_sample_log(log: SampleLog, cluster: str, cycle_id: str, columns: dict) -> None:
    log.write_batch(cluster, cycle_id, pa.table(columns))


class _Background:
    """A call run on a thread of its own; ``wait`` returns its exception (None if none)."""

    def __init__(self, fn: Callable[..., object], *args: object) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="sample-log")
        self._thread.start()

    def _run(self, fn: Callable[..., object], args: tuple) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # handed to the cycle's thread by wait()
            self._error = exc

    def wait(self) -> BaseException | None:
        self._thread.join()
        return self._error


# -- garbage collection around cycles -------------------------------------------------------
#
# Why: a cycle of 10,000 partitions allocates a few hundred thousand objects (records,
# figures, rows), most of them alive until the cycle ends. Left to itself, the collector
# runs a collection every 700 net allocations, and a full one whenever the survivors reach a
# quarter of everything alive, walking the whole worker (Django, the clients, the offset
# history): 1 to 5 full collections per cycle, 0.08 s of a 0.7 s Kafka cycle and 0.6 s of a
# 2.5 s ZooKeeper + broker cycle (benchmarks/RESULTS.md), none of which finds garbage worth
# the walk, since nearly everything a cycle makes is freed by reference counting.
#
# So during a cycle the collector is off, and each cycle ends with one explicit full
# collection, once the cycle's own objects are gone (``run_cycle`` returns from
# ``_run_cycle`` first). And the first cycle of the process ends with ``gc.freeze()``: what
# is alive then (Django, the modules, the clients, the first offset history) is long-lived,
# and leaving it out of every later collection makes the end-of-cycle collection cost
# milliseconds, not a walk of the whole heap.
#
# Memory stays bounded: reference counting frees everything acyclic at once, as before; what
# only the collector can free (reference cycles) is at most one cycle's worth, freed by the
# collection at its end, also when cycles of several clusters overlap (the collector queue
# runs a thread pool), since every cycle collects at its end whether or not another is still
# running. The frozen objects are frozen once per process and never again, so the frozen set
# cannot grow: the most it can hold back is cyclic garbage among what was alive after the
# first cycle. Between cycles, the collector runs as usual. Measured with
# ``benchmarks/bench_cycle.py --worker-cycles N`` (the worker's private RSS per cycle).
_gc_lock = threading.Lock()
_gc_cycles_running = 0
_gc_was_enabled = True
_gc_frozen = False


@contextmanager
def _cycle_gc() -> Iterator[None]:
    global _gc_cycles_running, _gc_was_enabled, _gc_frozen
    with _gc_lock:
        if _gc_cycles_running == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_cycles_running += 1
    try:
        yield
    finally:
        gc.collect()
        with _gc_lock:
            _gc_cycles_running -= 1
            if _gc_cycles_running == 0:
                if not _gc_frozen:
                    gc.freeze()  # after a full collection, with no other cycle's objects alive
                    _gc_frozen = True
                if _gc_was_enabled:
                    gc.enable()


def run_cycle(cluster: Cluster, cycle_ms: int | None = None) -> CycleReport:
    """Collect, store and log one cycle of ``cluster``.

    Raises only when the cycle itself failed (the database or the sample log could not be
    written); an unreachable source is recorded in the outcome, not raised.
    """
    with _cycle_gc():
        return _run_cycle(cluster, cycle_ms)


def _run_cycle(cluster: Cluster, cycle_ms: int | None) -> CycleReport:
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
        unreachable = sorted(s.source for s in outcome.sources if not s.reachable)
        hidden = {str(h) for s in unreachable for h in STALE_WHEN_UNREACHABLE.get(Source(s), ())}
        # Read before the store's transaction, which leaves these rows' figures as they are
        # (it only marks them stale, and the log's rows say stale themselves).
        stale = _stale_rows(cluster, hidden, cycle_ms)
        columns = sample_columns(outcome)
        for name, column in columns.items():
            column.extend(row.get(name) for row in stale)
        # The sample log's micro-batch is written on a thread of its own while the database
        # transaction runs: both spend most of their time outside the interpreter (SQLite,
        # Arrow and Parquet), so the cycle takes the longer of the two instead of their sum.
        # Either failing fails the cycle (after both have ended); a retry with the same
        # cycle_ms rewrites the same rows and replaces the same micro-batch file.
        log_write = _Background(
            _write_sample_log, SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL),
            cluster.name, f"{cluster.name}@{cycle_ms}", columns,
        )  # fmt: skip
        try:
            store_cycle(cluster, outcome)
        except BaseException:
            if (error := log_write.wait()) is not None:
                log.error("sample log write of %s@%d failed too: %r", cluster.name, cycle_ms, error)
            raise
        held.offsets_seen_until = max(held.offsets_seen_until or now, ms_to_dt(cycle_ms) or now)
        if (error := log_write.wait()) is not None:
            raise error

    report = CycleReport(
        cluster=cluster.name, cycle_ms=cycle_ms, duration_s=time.monotonic() - started,
        partitions=len(outcome.figures), groups=len(outcome.groups),
        errors=len(outcome.errors), unreachable=unreachable,
    )  # fmt: skip
    log.info("collection cycle done", extra={"cycle": report.as_dict()})
    return report

"""One collection cycle of one cluster, end to end: sources → assembly → store.

The Celery task and ``manage.py collect`` both call :func:`run_cycle` (through the web app's
``dashboard/store/cycle.py``, which gives it the ORM store); it is the only place that
knows the order. Everything it calls is either a pure function or the store; what it
adds is the per-process memory between cycles and the idempotency key.

Idempotency (SPEC §5): every row of a cycle is keyed by ``cycle_ms``, the cycle's *scheduled*
time (the start of its poll-interval slot), not the time it ran. A retried task carries the
same ``cycle_ms`` and rewrites the same rows and the same sample-log file.

Memory: adapters (their connections), the latest-offset history behind time lag and the
previous group snapshots behind rebalance events live in this process, per cluster. Several
collector processes may share a cluster's cycles (the ``collectors`` queue; the Celery task
makes each slot run once, one at a time): before each cycle the offset history catches up on
what the store got since this process last looked, and when the newest stored cycle is not
this process's own last one, the rebalance tracker starts again from the groups the store
holds (:meth:`RebalanceTracker.restore`), so that a change another process already reported
is not reported again, nor one it did not see missed.

Garbage collection: the cycles own the collector's garbage collector
(:mod:`collectors.cycle.gc_policy`): no collection runs during a cycle, one runs at its end.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field

from collectors.assemble import CycleMemory, assemble_cycle
from collectors.cluster_sources import ClusterSettings, ClusterSources
from collectors.cycle.gc_policy import cycle_gc
from collectors.cycle.store_port import CycleStore
from collectors.cycle.write import SampleBatches, write_cycle
from collectors.figures import TimeTables
from collectors.rebalance import RebalanceTracker

log = logging.getLogger(__name__)

__all__ = [
    "TIME_TABLE_POINTS",
    "CycleReport",
    "collector_id",
    "cycle_slot",
    "forget_clusters",
    "run_cycle",
]

# Points of latest-offset history per partition: an hour at a 10 s poll once flat stretches
# are folded (OffsetTimeTable keeps a flat line as its two ends).
TIME_TABLE_POINTS = 360
# How far back a process without offset history reads the store's.
CATCH_UP_MS = 3_600_000


@dataclass
class CycleReport:
    """What a cycle did, for the task's result and the log line; an unreachable source is
    reported here, not raised."""

    cluster: str
    cycle_ms: int
    duration_s: float
    partitions: int
    groups: int
    errors: int
    unreachable: list[str] = field(default_factory=list)
    collected_by: str = ""
    groups_rebuilt: bool = False  # the tracker started from the store's groups

    def as_dict(self) -> dict:
        return {
            "cluster": self.cluster, "cycle_ms": self.cycle_ms,
            "duration_s": round(self.duration_s, 3), "partitions": self.partitions,
            "groups": self.groups, "errors": self.errors, "unreachable": self.unreachable,
            "collected_by": self.collected_by, "groups_rebuilt": self.groups_rebuilt,
        }  # fmt: skip


@dataclass
class _ClusterMemory:
    fingerprint: tuple
    sources: ClusterSources
    memory: CycleMemory
    offsets_seen_until_ms: int | None = None
    # The last cycle the tracker observed here: when the store's newest is another, the
    # tracker's memory is not the store's.
    observed_slot: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_memories: dict[str, _ClusterMemory] = {}
_memories_lock = threading.Lock()


def collector_id() -> str:
    """This collector process, as stored with each cycle it runs (host and pid: the memory
    the runner keeps is a process's; read at each call, so a forked child is itself)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def cycle_slot(now_ms: int, poll_interval_s: int) -> int:
    """The start of the poll-interval slot ``now_ms`` falls in: a cycle's idempotency key."""
    step = max(1, poll_interval_s) * 1000
    return now_ms - now_ms % step


def _memory_for(wanted: ClusterSettings) -> _ClusterMemory:
    with _memories_lock:
        held = _memories.get(wanted.name)
        if held is not None and held.fingerprint == wanted.fingerprint():
            return held
        if held is not None:
            held.sources.close()  # the configuration changed: new adapters, same history
            memory = held.memory
        else:
            memory = CycleMemory(TimeTables(TIME_TABLE_POINTS), RebalanceTracker())
        held = _ClusterMemory(wanted.fingerprint(), ClusterSources(wanted), memory)
        _memories[wanted.name] = held
        return held


def forget_clusters() -> None:
    """Close every adapter of this process (tests, and a worker shutting down)."""
    with _memories_lock:
        for held in _memories.values():
            held.sources.close()
        _memories.clear()


def _catch_up_offsets(store: CycleStore, held: _ClusterMemory, now_ms: int) -> None:
    """Feed the time tables what other processes stored since this one last looked."""
    since_ms = held.offsets_seen_until_ms or now_ms - CATCH_UP_MS
    tables = held.memory.tables
    last_ms = None
    for topic, partition, at_ms, latest in store.broker_offsets_since(since_ms):
        table = tables.table(topic, partition)
        if not table.add_at(latest, at_ms):
            newest = table.last_offset  # refused: the table holds a point
            if newest is not None and latest < newest:
                table.clear()
                table.add_at(latest, at_ms)
        last_ms = at_ms
    if last_ms is not None:
        held.offsets_seen_until_ms = last_ms


def _catch_up_groups(store: CycleStore, held: _ClusterMemory, name: str, me: str) -> bool:
    """Rebuild the rebalance tracker from the store when its newest cycle is not the one this
    process observed last (another process ran cycles since, or this one's write failed).
    Returns whether it did."""
    last = store.last_cycle()
    if last is None or last == (held.observed_slot, me):
        return False
    held.memory.tracker.restore(store.group_snapshots())
    log.info(
        "cluster %s: rebalance memory rebuilt from the store (newest cycle %d by %s)",
        name,
        *last,
    )
    return True


def run_cycle(
    cluster: ClusterSettings,
    store: CycleStore,
    sample_log: SampleBatches,
    *,
    poll_interval_s: int,
    cycle_ms: int | None = None,
) -> CycleReport:
    """Collect, store and log one cycle of ``cluster``.

    Raises only when the cycle itself failed (the database or the sample log could not be
    written); an unreachable source is recorded in the outcome, not raised.
    """
    with cycle_gc():
        return _run_cycle(cluster, store, sample_log, poll_interval_s, cycle_ms)


def _run_cycle(
    cluster: ClusterSettings,
    store: CycleStore,
    sample_log: SampleBatches,
    poll_interval_s: int,
    cycle_ms: int | None,
) -> CycleReport:
    started = time.monotonic()
    now_ms = int(time.time() * 1000)
    slot = cycle_slot(now_ms, poll_interval_s) if cycle_ms is None else cycle_ms
    held = _memory_for(cluster)
    me = collector_id()
    with held.lock:
        _catch_up_offsets(store, held, now_ms)
        rebuilt = _catch_up_groups(store, held, cluster.name, me)
        results = held.sources.collect(now_ms)
        max_age_s = max(30.0, 3.0 * poll_interval_s)
        reports, pushed = store.recent_reports(now_ms, max_age_s)
        outcome = assemble_cycle(cluster.name, slot, now_ms, results, held.memory, reports, pushed)
        outcome.collected_by = me
        if (log_source := getattr(sample_log, "source_outcome", None)) is not None:
            outcome.sources.append(log_source(now_ms))  # a store-backed log's spool (SpooledLog)
        held.observed_slot = slot

        def stored() -> None:
            held.offsets_seen_until_ms = max(held.offsets_seen_until_ms or now_ms, slot)

        write_cycle(store, sample_log, outcome, stored)

    report = CycleReport(
        cluster=cluster.name, cycle_ms=slot, duration_s=time.monotonic() - started,
        partitions=len(outcome.figures), groups=len(outcome.groups),
        errors=len(outcome.errors),
        unreachable=sorted(s.source for s in outcome.sources if not s.reachable),
        collected_by=me, groups_rebuilt=rebuilt,
    )  # fmt: skip
    log.info("collection cycle done", extra={"cycle": report.as_dict()})
    return report

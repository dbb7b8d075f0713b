"""The simulated spouts' per-partition figures as lagwatch_client's spout reports.

Storm UI's REST API gives only whole-spout counts; per-partition pending and failed counts
and the smallest failed offset exist only inside the spout, which is why a real topology
would push them (SPEC §2.3, format in docs/INGEST.md). The workload samples every spout's
published snapshot (`KafkaSpoutSim.stats()`, a copy under a lock, so a spout never waits)
every few seconds and pushes the reports through the client package's `SpoutPusher`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from lagwatch_client import IngestSender, SpoutPartition, SpoutPusher, SpoutReport

from lab.storm.spout import KafkaSpoutSim


def spout_report(spout: KafkaSpoutSim, time_ms: int | None = None) -> SpoutReport | None:
    """The push for one spout, or None before it has partitions to report.

    ``pending`` is storm-kafka's per-partition pending set (emitted, not yet acked,
    failed-and-waiting included), the figure ``max_offset_behind`` and commits depend on;
    emitted/acked/failed are what the executor saw, as Storm UI counts them. The top-level
    ``pending`` is the spout task's tuples in flight, what ``max_spout_pending`` caps: the
    figure BACKPRESSURE compares with the cap (a leaked offset stays in a partition's pending
    set, but its tuple is long gone from the task).
    """
    stats = spout.stats()
    if not stats.partitions:
        return None
    return SpoutReport(
        topology_id=spout.topology_id,
        spout_id=spout.spout_id,
        topology_name=spout.topology_name,
        time_ms=time_ms if time_ms is not None else int(time.time() * 1000),
        max_spout_pending=stats.max_spout_pending,
        pending=stats.pending,
        max_offset_behind=spout.pm_config.max_offset_behind,
        partitions=[
            SpoutPartition(
                topic=spout.topic,
                partition=p.partition,
                pending=p.manager.pending,
                failed=p.failed,
                acked=p.acked,
                emitted=p.emitted,
                smallest_failed_offset=p.manager.smallest_failed,
            )
            for p in stats.partitions
        ],
    )


def spout_pusher(
    ingest: IngestSender, spouts: Callable[[], list[KafkaSpoutSim]], interval_s: float = 5.0
) -> SpoutPusher:
    """Every ``interval_s``, one report per running spout that has partitions."""

    def sample() -> list[SpoutReport]:
        reports = (spout_report(spout) for spout in spouts())
        return [r for r in reports if r is not None]

    return SpoutPusher(ingest, sample, interval_s)

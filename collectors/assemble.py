"""One cycle's adapter results joined into a ``CycleOutcome`` (SPEC §2, §3). Pure.

The sources are read independently (ZooKeeper, Kafka, Storm UI, and what clients pushed to
the ingest endpoint); this is where they meet: commits are joined with broker offsets into
lag and time lag, Kafka groups get the assignments their clients reported when the broker did
not give them, rebalance events are derived, and each partition gets the liveness evidence
the evaluator needs (SPEC §4: alive decides STALL versus STOP).

Liveness, per kind of consumer:

- Kafka group: alive when a member owns the partition; not alive when the group is known to
  have no members (Empty); unknown when nobody reported assignments.
- ZooKeeper consumer: alive when an owner node names a consumer thread.
- Storm spout: alive when its topology is listed by a reachable Storm UI, or it pushed its
  figures recently; not alive when a reachable Storm UI does not list its topology.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from collectors.client_stats import ClientReport, apply_client_reports
from collectors.cycle import CycleOutcome, SourceOutcome
from collectors.figures import PartitionFigure, TimeTables, partition_figures
from collectors.rebalance import RebalanceTracker
from collectors.records import (
    CollectionResult,
    GroupSnapshot,
    PartitionOffsets,
    Source,
    SpoutFigures,
)

__all__ = ["CycleMemory", "assemble_cycle", "sample_rows"]


@dataclass
class CycleMemory:
    """What a collector keeps between cycles of one cluster: offset history and last groups.

    Lost on a worker restart, at the cost of a few cycles: the time tables are re-seeded from
    stored broker offsets, and the rebalance tracker's first cycle reports no events.
    """

    tables: TimeTables
    tracker: RebalanceTracker


def assemble_cycle(
    cluster: str,
    cycle_ms: int,
    now_ms: int,
    results: list[CollectionResult],
    memory: CycleMemory,
    client_reports: Iterable[ClientReport] = (),
    pushed_spouts: Iterable[SpoutFigures] = (),
) -> CycleOutcome:
    """Join one cycle's results; ``results`` holds at most one result per adapter."""
    outcome = CycleOutcome(cluster=cluster, cycle_ms=cycle_ms)
    reports = list(client_reports)
    pushed = list(pushed_spouts)

    offsets = _merge_offsets(r.offsets for r in results)
    memory.tables.observe(offsets)
    outcome.offsets = offsets

    storm_ui: CollectionResult | None = None
    for result in results:
        outcome.sources.append(_source_outcome(result))
        outcome.errors.extend(result.errors)
        if result.source is Source.STORM:
            storm_ui = result
        if result.source is Source.KAFKA and result.groups:
            result = _with_groups(result, apply_client_reports(result.groups, reports))
        outcome.groups.extend(result.groups)
        outcome.rebalances.extend(memory.tracker.observe(result, now_ms))

    commits = [c for r in results if r.reachable for c in r.commits]
    figures = partition_figures(commits, offsets, memory.tables, now_ms)
    outcome.figures = _with_liveness(figures, outcome.groups, storm_ui, pushed)
    outcome.spouts = (storm_ui.spouts if storm_ui else []) + pushed
    return outcome


def _merge_offsets(batches: Iterable[list[PartitionOffsets]]) -> list[PartitionOffsets]:
    """One entry per partition: the newest reading wins (two adapters may ask for one topic)."""
    merged: dict[tuple[str, int], PartitionOffsets] = {}
    for batch in batches:
        for o in batch:
            key = (o.topic, o.partition)
            if key not in merged or o.time_ms > merged[key].time_ms:
                merged[key] = o
    return sorted(merged.values(), key=lambda o: (o.time_ms, o.topic, o.partition))


def _source_outcome(result: CollectionResult) -> SourceOutcome:
    error = "" if result.reachable else "; ".join(e.error for e in result.errors)[:2000]
    return SourceOutcome(
        source=str(result.source),
        reachable=result.reachable,
        started_ms=result.started_ms,
        finished_ms=result.finished_ms or result.started_ms,
        error=error,
    )


def _with_groups(result: CollectionResult, groups: list[GroupSnapshot]) -> CollectionResult:
    return CollectionResult(
        source=result.source, started_ms=result.started_ms, finished_ms=result.finished_ms,
        reachable=result.reachable, commits=result.commits, offsets=result.offsets,
        groups=groups, spouts=result.spouts, errors=result.errors,
        partition_counts=result.partition_counts,
    )  # fmt: skip


def _with_liveness(
    figures: list[PartitionFigure],
    groups: list[GroupSnapshot],
    storm_ui: CollectionResult | None,
    pushed: list[SpoutFigures],
) -> list[PartitionFigure]:
    owners: dict[tuple[str, str, int], str] = {}
    assignments_known: set[str] = set()
    empty: set[str] = set()
    for snap in groups:
        if snap.source is not Source.KAFKA:
            continue
        for member in snap.members:
            if member.assignment:
                assignments_known.add(snap.group)
            for topic, partition in member.assignment:
                owners[(snap.group, topic, partition)] = member.member_id
        if snap.state == "Empty":
            empty.add(snap.group)

    listed = (
        {s.topology_id for s in storm_ui.spouts}
        if storm_ui is not None and storm_ui.reachable
        else None
    )
    by_partition: dict[tuple[str, str, int], SpoutFigures] = {}
    for s in pushed:
        if s.topic is not None and s.partition is not None:
            by_partition[(s.spout_id, s.topic, s.partition)] = s

    out = []
    for f in figures:
        changes: dict[str, Any] = {}
        if f.source is Source.KAFKA:
            owner = owners.get((f.group, f.topic, f.partition))
            if owner is not None:
                changes = {"alive": True, "owner": f.owner or owner}
            elif f.group in empty or f.group in assignments_known:
                changes = {"alive": False}
        elif f.source is Source.ZOOKEEPER:
            changes = {"alive": f.owner is not None}
        elif f.source is Source.STORM:
            spout = by_partition.get((f.group, f.topic, f.partition))
            if spout is not None:
                changes = {
                    "pending": spout.pending, "failed": spout.failed, "acked": spout.acked,
                    "alive": True,
                }  # fmt: skip
            elif listed is not None and f.topology_id:
                changes = {"alive": f.topology_id in listed}
        out.append(replace(f, **changes) if changes else f)
    return out


def sample_rows(outcome: CycleOutcome) -> list[dict[str, Any]]:
    """The cycle's rows of the Parquet sample log (``collectors.sample_log.SAMPLE_SCHEMA``).

    A partition without broker offsets because the broker was unreachable is written stale:
    its committed offset is fresh but its lag is not known, and the status job must not read
    the gap as a stuck consumer.
    """
    broker_down = any(s.source == Source.KAFKA and not s.reachable for s in outcome.sources)
    return [
        {
            "ts_ms": outcome.cycle_ms,
            "source": str(f.source),
            "group": f.group,
            "topic": f.topic,
            "partition": f.partition,
            "committed": f.committed,
            "earliest": f.earliest,
            "latest": f.latest,
            "lag": f.lag,
            "time_lag_s": f.time_lag_s,
            "commit_time_ms": f.commit_time_ms,
            "commit_version": f.commit_version,
            "owner": f.owner,
            "topology_id": f.topology_id,
            "alive": f.alive,
            "pending": f.pending,
            "failed": f.failed,
            "acked": f.acked,
            "stale": broker_down and f.latest is None,
        }  # fmt: skip
        for f in outcome.figures
    ]

"""One cycle's adapter results joined into a ``CycleOutcome`` (SPEC §2, §3). Pure.

The sources are read independently (ZooKeeper, Kafka, Storm UI, and what clients pushed to
the ingest endpoint); this is where they meet: commits are joined with broker offsets into
lag and time lag, Kafka groups get the assignments their clients reported when the broker did
not give them, rebalance events are derived, and each partition gets the liveness evidence
the evaluator needs (SPEC §4: alive decides STALL versus STOP).

Liveness, per kind of consumer:

- Kafka group: alive when a member owns the partition; not alive when the group is known to
  have no members (Empty); unknown when nobody reported assignments. A Storm 2 spout's group
  (its commits name a topology, ``collectors/storm_commit_metadata.py``) assigns partitions
  without group membership and is always Empty: it is judged as a spout, alive when a
  reachable Storm UI lists its topology, not alive when it does not, unknown without a UI.
- ZooKeeper consumer: alive when an owner node names a consumer thread.
- Storm spout: alive when its topology is listed by a reachable Storm UI, or it pushed its
  figures recently; not alive when a reachable Storm UI does not list its topology; unknown
  when no Storm UI answered and nothing was pushed. "Its topology" is the instance the znode
  names, or, when the UI no longer lists that one, the running instance of the same topology
  name (a resubmitted topology: storm-kafka rewrites a partition's znode only when its offset
  moves, so a frozen partition keeps naming the killed instance).
- Storm spout's counts: the partition's pushed figures (docs/INGEST.md) when the spout pushes
  them. Otherwise, and a real Storm without a push is that case, the whole spout's as a
  reachable Storm UI lists them for the commit's topology instance: the component whose id is
  the commit's group (``SpoutConfig.id``, the znode path element), or, when none is and the
  topology has exactly one spout component, that one (users often name the component other
  than ``SpoutConfig.id``); with several spouts and none of that id, none. Every partition of
  the spout then carries the same counters (emitted, acked, failed; in flight and its cap,
  when Storm gave them): what liveness and POISON_MESSAGE read as "the spout's failed count
  rises", and BACKPRESSURE as "the spout's tuples in flight sit at the cap". Storm has no
  per-partition pending nor smallest failed offset: those stay unknown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from collectors.client_assignments import apply_client_reports
from collectors.client_reports import ClientReport
from collectors.figures import Liveness, TimeTables, partition_figures
from collectors.outcome import CycleOutcome, SourceOutcome
from collectors.rebalance import RebalanceTracker
from collectors.records import (
    CollectionResult,
    CommittedOffset,
    GroupSnapshot,
    PartitionOffsets,
    Source,
    SpoutFigures,
)

__all__ = ["CycleMemory", "assemble_cycle"]


@dataclass
class CycleMemory:
    """What a collector keeps between cycles of one cluster: offset history and last groups.

    Lost on a worker restart, and stale in a worker that another one relieved: the time
    tables are re-seeded from stored broker offsets, and the rebalance tracker from the stored
    groups (``collectors.cycle.runner``).
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
        outcome.topic_configs.extend(result.topic_configs)
        if result.reachable and result.identity:
            outcome.identities[str(result.source)] = dict(result.identity)
        if result.source is Source.STORM:
            storm_ui = result
        if result.source is Source.KAFKA and result.groups:
            result = _with_groups(result, apply_client_reports(result.groups, reports))
        outcome.groups.extend(result.groups)
        outcome.brokers.extend(result.brokers)
        outcome.rebalances.extend(memory.tracker.observe(result, now_ms))

    commits = [c for r in results if r.reachable for c in r.commits]
    liveness = _liveness(outcome.groups, storm_ui, pushed)
    outcome.figures = partition_figures(commits, offsets, memory.tables, now_ms, liveness)
    outcome.figures_ms = now_ms
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
    """The result with its groups replaced and every other field kept: the tracker reads the
    recorded generation changes and deletions from the same result (a copy field by field
    once dropped them, so __consumer_offsets' rebalances never reached the timeline)."""
    return dataclasses.replace(result, groups=groups)


def _liveness(
    groups: list[GroupSnapshot],
    storm_ui: CollectionResult | None,
    pushed: list[SpoutFigures],
) -> Callable[[CommittedOffset], Liveness]:
    """The owner, liveness and spout counts of each commit's partition (the rules above),
    for ``partition_figures`` to build each figure with them at once."""
    owners: dict[tuple[str, str, int], str] = {}
    assignments_known: set[str] = set()
    empty: set[str] = set()
    storm2: dict[str, str] = {}  # Kafka group -> the Storm 2 topology its commits name
    for snap in groups:
        if snap.source is not Source.KAFKA:
            continue
        if snap.topology_id:
            # A Storm 2 spout assigns its partitions itself: its group has no members and
            # reads Empty while the spout runs. Its topology tells liveness, as a spout's.
            storm2[snap.group] = snap.topology_id
            continue
        for member in snap.members:
            if member.assignment:
                assignments_known.add(snap.group)
            for topic, partition in member.assignment:
                owners[(snap.group, topic, partition)] = member.member_id
        if snap.state == "Empty":
            empty.add(snap.group)
    not_alive = empty | assignments_known

    # The whole-spout figures of each topology instance a reachable Storm UI lists, and which
    # instance of each topology name runs (a page that failed: listed, figures unknown).
    whole: dict[str, list[SpoutFigures]] | None = None
    running: dict[str, str] = {}  # topology name -> the instance the UI lists now
    listed: set[str] = set()
    if storm_ui is not None and storm_ui.reachable:
        whole = {}
        for s in storm_ui.spouts:
            if s.partition is None:
                whole.setdefault(s.topology_id, []).append(s)
                listed.add(s.topology_id)
                if s.topology_name:
                    running[s.topology_name] = s.topology_id
        for topology_id, name in storm_ui.topologies.items():
            listed.add(topology_id)
            if name:
                running[name] = topology_id

    def instance(topology_id: str | None, name: str | None) -> str | None:
        """The listed instance a commit's spout runs in: the one its record names, else the
        running instance of the same topology name (a resubmitted topology: storm-kafka
        rewrites a partition's znode only when its offset moves, so a frozen partition keeps
        naming the killed instance); None: not listed."""
        if topology_id and topology_id in listed:
            return topology_id
        return running.get(name) if name else None

    by_partition: dict[tuple[str, str, int], SpoutFigures] = {}
    for s in pushed:
        if s.topic is not None and s.partition is not None:
            by_partition[(s.spout_id, s.topic, s.partition)] = s

    kafka, zookeeper, storm = Source.KAFKA, Source.ZOOKEEPER, Source.STORM

    def liveness(c: CommittedOffset) -> Liveness:
        source = c.source
        if source is kafka and c.group in storm2:
            if whole is None:
                return c.owner, None, None
            runs_in = instance(storm2[c.group], None)
            if runs_in is None:
                return c.owner, False, None
            return c.owner, True, _spout_of(whole.get(runs_in, []), c.group)
        if source is kafka:
            owner = owners.get((c.group, c.topic, c.partition))
            if owner is not None:
                return c.owner or owner, True, None
            if c.group in not_alive:
                return c.owner, False, None
        elif source is zookeeper:
            return c.owner, c.owner is not None, None
        elif source is storm:
            spout = by_partition.get((c.group, c.topic, c.partition))
            if spout is not None:
                return c.owner, True, spout
            if whole is not None and c.topology_id:
                runs_in = instance(c.topology_id, c.owner)
                if runs_in is None:
                    return c.owner, False, None
                return c.owner, True, _spout_of(whole.get(runs_in, []), c.group)
        return c.owner, None, None

    return liveness


def _spout_of(components: list[SpoutFigures], spout_id: str) -> SpoutFigures | None:
    """The whole-spout figures standing for spout ``spout_id``'s partitions: the component of
    that id, else the topology's only spout component, else none (the rule above)."""
    for s in components:
        if s.spout_id == spout_id:
            return s
    return components[0] if len(components) == 1 else None

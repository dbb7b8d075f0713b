"""Per-partition figures of one cycle: offsets joined with broker offsets, lag, time lag.

Pure. The cycle runner feeds it what the adapters read; the store writes what it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from collectors.records import (
    CommittedOffset,
    PartitionOffsets,
    ShareStateFigures,
    Source,
    SpoutFigures,
)
from collectors.timelag import OffsetTimeTable, time_lag

# What the cycle's assembly adds to a commit's figure (SPEC §4), in this order: owner, alive,
# and the spout's figures for the partition: pushed for it, or the whole spout's from Storm UI
# (None: neither). ``partition_figures`` takes a function giving them per commit, so that each
# figure is built once, with them, rather than built and then copied.
Liveness = tuple[str | None, bool | None, SpoutFigures | None]


@dataclass(slots=True, unsafe_hash=True)
class PartitionFigure:
    """One partition of one group at one cycle. Built once and never changed afterwards
    (``dataclasses.replace`` makes another), but not declared frozen: a frozen dataclass's
    ``__init__`` sets each of these 29 fields through ``object.__setattr__``: with it, a
    100,000-partition cycle's assembly took 1.6 s, without it 0.9-1.1 s (benchmarks/RESULTS.md,
    "Rows written only where a figure changed, figures built without `frozen`"). It hashes as
    the frozen class did."""

    source: Source
    group: str
    topic: str
    partition: int
    committed: int
    earliest: int | None
    latest: int | None
    lag: int | None
    time_lag_s: float | None
    time_lag_kind: str
    out_of_range: str | None  # "behind_earliest" | "ahead_of_latest": an ERR finding
    commit_time_ms: int | None
    commit_version: int | None
    owner: str | None
    topology_id: str | None
    where: str
    # Liveness and spout counts, filled by the cycle's assembly when a source tells them.
    alive: bool | None = None
    pending: int | None = None
    failed: int | None = None
    acked: int | None = None
    # The spout's pushed figures beyond the counts (DOMAIN §1-§2), for the status job's
    # BACKPRESSURE and POISON_MESSAGE: the sample log carries them.
    emitted: int | None = None
    smallest_failed_offset: int | None = None
    max_offset_behind: int | None = None
    max_spout_pending: int | None = None
    spout_pending: int | None = None
    # Where a growing time lag counts from (``TimeLag.from_ms``); None when it does not grow.
    time_lag_from_ms: float | None = None
    # A share group's lag computed from its start offset because the broker reported none
    # (before KIP-1226): the real lag is at most this (acknowledged records above the start
    # offset are counted too). False for every other figure, exact or unknown.
    lag_upper_bound: bool = False
    # A share group's partition (KIP-932): ``committed`` is its start offset, not a commit;
    # and what ``__share_group_state`` says of its records' deliveries (None: not read).
    share: bool = False
    share_state: ShareStateFigures | None = None


def lag_of(
    committed: int, earliest: int | None, latest: int | None
) -> tuple[int | None, str | None]:
    """Lag and out-of-range finding (SPEC §3): never negative, never silently clamped."""
    if latest is None:
        return None, None
    if committed > latest:
        return None, "ahead_of_latest"
    lag = latest - committed
    if earliest is not None and committed < earliest:
        return lag, "behind_earliest"
    return lag, None


class TimeTables:
    """One OffsetTimeTable per (topic, partition) of a cluster, fed every cycle.

    A latest offset that goes backwards means the topic was re-created: its history no
    longer describes the new log, so the table starts again.
    """

    def __init__(self, limit: int = 60) -> None:
        self.limit = limit
        self._tables: dict[tuple[str, int], OffsetTimeTable] = {}

    def table(self, topic: str, partition: int) -> OffsetTimeTable:
        key = (topic, partition)
        if key not in self._tables:
            self._tables[key] = OffsetTimeTable(self.limit)
        return self._tables[key]

    def observe(self, offsets: list[PartitionOffsets]) -> None:
        for o in offsets:
            if o.latest is None:
                continue
            table = self.table(o.topic, o.partition)
            last = table.last_offset
            if last is not None and o.latest < last:
                table.clear()
            table.add_at(o.latest, o.time_ms)


def partition_figures(
    commits: list[CommittedOffset],
    offsets: list[PartitionOffsets],
    tables: TimeTables,
    now_ms: int,
    liveness: Callable[[CommittedOffset], Liveness] | None = None,
) -> list[PartitionFigure]:
    """One figure per commit. ``liveness``: owner, alive and spout counts of a commit's
    partition (see ``Liveness``); without it, the commit's own owner and nothing else."""
    by_tp = {(o.topic, o.partition): o for o in offsets}
    # A partition's time lag depends on its table and the committed offset alone: groups at
    # the same offset of a partition (every caught-up group of a topic) share one lookup.
    time_lags: dict[tuple[str, int, int], tuple[float | None, str, float | None]] = {}
    figures = []
    for c in commits:
        owner, alive, spout = (c.owner, None, None) if liveness is None else liveness(c)
        topic, partition, committed = c.topic, c.partition, c.offset
        broker = by_tp.get((topic, partition))
        earliest = broker.earliest if broker else None
        latest = broker.latest if broker else None
        lag, out_of_range = lag_of(committed, earliest, latest)
        upper_bound = False
        if c.share:
            # The broker's own count wins; without it, start offset to log end bounds it.
            if c.reported_lag is not None:
                lag, out_of_range = c.reported_lag, None
            else:
                upper_bound = lag is not None
        if lag is None:
            seconds, kind, from_ms = None, "unknown", None
        else:
            key = (topic, partition, committed)
            known = time_lags.get(key)
            if known is None:
                at = time_lag(tables.table(topic, partition), committed, now_ms)
                known = time_lags[key] = (at.seconds, str(at.kind), at.from_ms)
            seconds, kind, from_ms = known
        figures.append(
            PartitionFigure(
                source=c.source, group=c.group, topic=topic, partition=partition,
                committed=committed, earliest=earliest, latest=latest, lag=lag,
                time_lag_s=seconds, time_lag_kind=kind, out_of_range=out_of_range,
                commit_time_ms=c.commit_time_ms, commit_version=c.commit_version, owner=owner,
                topology_id=c.topology_id, where=c.where, alive=alive, time_lag_from_ms=from_ms,
                lag_upper_bound=upper_bound, share=c.share, share_state=c.share_state,
                **(_spout_fields(spout) if spout is not None else {}),
            )
        )  # fmt: skip
    return figures


def _spout_fields(s: SpoutFigures) -> dict[str, int | None]:
    """A partition's spout figures from a pushed partition's (``s.partition`` set), or from
    the whole spout's (Storm UI's, ``s.partition`` None): then only the spout's counters, in
    flight and cap. A partition's pending set, smallest failed offset and offset bound are not
    the whole spout's to give: they stay unknown, never the spout's figure under their name."""
    own = s.partition is not None
    return {
        "pending": s.pending if own else None, "failed": s.failed, "acked": s.acked,
        "emitted": s.emitted,
        "smallest_failed_offset": s.smallest_failed_offset if own else None,
        "max_offset_behind": s.max_offset_behind if own else None,
        "max_spout_pending": s.max_spout_pending, "spout_pending": s.spout_pending,
    }  # fmt: skip

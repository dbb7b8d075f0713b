"""``__share_group_state`` folded record by record: each share-partition's state, as its share
coordinator holds it, and the records it archived.

The share coordinator (KIP-932) writes a snapshot of a share-partition now and then and an
update at each acknowledgement, release or lock timeout between them; it rebuilds the state
the same way when it takes over a partition of the topic, and so does this fold:

* a snapshot replaces the share-partition's state;
* an update moves the start offset (unless it says -1) and lays its batches over the ones
  held. Where two batches overlap, the one with the higher delivery count wins, then the
  higher state (Kafka's ``PersisterStateBatchCombiner``: counts only grow, and a terminal
  state, acknowledged or archived, outranks "available" at the same count);
* batches wholly below the start offset are dropped, one that straddles it is cut at it;
* a tombstone (the group deleted) drops the share-partition.

What the topic does not hold: which records are *acquired* right now (delivered and not yet
acknowledged). A share-partition leader keeps acquisitions in memory and writes a record's
state only when it is acknowledged, released, rejected or its acquisition lock times out, so
"in flight" here is what was delivered and came back (available again, its delivery count
raised), not what members hold. DescribeShareGroupOffsets' lag (KIP-1226) counts both.

Archived records are remembered apart (``ArchivedRecord``, a bounded number per
share-partition): once the start offset passes them the coordinator prunes them from the
state, and a monitor polling every few seconds could otherwise never see one. A record seen
archived again (the next snapshot repeats it) keeps the time it was first seen archived.

Pure (no I/O, no clock), fed in offset order per partition of the topic by the reader, which
owns the positions it tracks here (``positions``, ``advance``) as ``OffsetsTopicState`` does.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from collectors.consumer_offsets.cursor import DecodeError
from collectors.records import ShareStateFigures
from collectors.share_state.decode import (
    ARCHIVED,
    AVAILABLE,
    SNAPSHOT,
    ShareStateRecord,
    StateBatch,
    decode_share_state,
)

__all__ = ["ArchivedRecord", "ShareStateFigures", "ShareStateTopic", "SharePartitionState"]

# Archived records remembered per share-partition: the newest ones, by when they were seen.
MAX_ARCHIVED_KEPT: Final = 32
Key = tuple[str, uuid.UUID, int]  # group, topic id, partition


@dataclass(frozen=True, slots=True)
class ArchivedRecord:
    """Records ``first_offset`` to ``last_offset`` archived after ``delivery_count``
    deliveries, first seen so in a state record written at ``time_ms``."""

    first_offset: int
    last_offset: int
    delivery_count: int
    time_ms: int


class SharePartitionState:
    """One share-partition: start offset, state epoch, batches (sorted, disjoint), archived."""

    __slots__ = ("archived", "batches", "start_offset", "state_epoch")

    def __init__(self) -> None:
        self.start_offset: int | None = None
        self.state_epoch: int | None = None
        self.batches: list[StateBatch] = []
        self.archived: dict[tuple[int, int], ArchivedRecord] = {}

    def apply(self, record: ShareStateRecord, time_ms: int) -> None:
        if record.kind == SNAPSHOT:
            self.start_offset = record.start_offset
            self.state_epoch = record.state_epoch
            batches = sorted(record.batches, key=lambda b: b.first_offset)
        else:
            if record.start_offset is not None:
                self.start_offset = record.start_offset
            batches = combine(self.batches, record.batches)
        self.batches = prune(batches, self.start_offset)
        for b in record.batches:
            if b.delivery_state == ARCHIVED:
                self._remember(b, time_ms)

    def _remember(self, batch: StateBatch, time_ms: int) -> None:
        span = (batch.first_offset, batch.last_offset)
        if span in self.archived:
            return
        self.archived[span] = ArchivedRecord(*span, batch.delivery_count, time_ms)
        if len(self.archived) > MAX_ARCHIVED_KEPT:
            del self.archived[next(iter(self.archived))]  # the oldest seen

    def figures(self) -> ShareStateFigures:
        counts = [b.delivery_count for b in self.batches]
        back = [b for b in self.batches if b.delivery_state == AVAILABLE and b.delivery_count]
        again = max(back, key=lambda b: (b.delivery_count, -b.first_offset), default=None)
        archived = self.archived.values()
        newest = max(archived, key=lambda a: (a.time_ms, a.first_offset), default=None)
        return ShareStateFigures(
            max_deliveries=max(counts, default=None),
            redelivered_offset=again.first_offset if again else None,
            redelivered_count=again.delivery_count if again else None,
            archived=sum(a.last_offset - a.first_offset + 1 for a in archived),
            archived_offset=newest.first_offset if newest else None,
            archived_count=newest.delivery_count if newest else None,
            archived_ms=newest.time_ms if newest else None,
        )


def _rank(b: StateBatch) -> tuple[int, int]:
    return (b.delivery_count, b.delivery_state)


def combine(held: Sequence[StateBatch], new: Sequence[StateBatch]) -> list[StateBatch]:
    """``held`` with ``new`` laid over it: each offset takes the batch of higher rank
    (delivery count, then state); the result sorted, disjoint, neighbours of one kind joined."""
    pieces = list(held)
    for n in sorted(new, key=lambda b: b.first_offset):
        out: list[StateBatch] = []
        rest = [(n.first_offset, n.last_offset)]  # the parts of ``n`` no held batch covers
        for o in pieces:
            lo, hi = max(o.first_offset, n.first_offset), min(o.last_offset, n.last_offset)
            if lo > hi:
                out.append(o)
                continue
            if o.first_offset < lo:
                out.append(_cut(o, o.first_offset, lo - 1))
            out.append(_cut(max(o, n, key=_rank), lo, hi))
            if hi < o.last_offset:
                out.append(_cut(o, hi + 1, o.last_offset))
            rest = [r for a, b in rest for r in _minus(a, b, lo, hi)]
        out.extend(_cut(n, a, b) for a, b in rest)
        pieces = out
    return _joined(sorted(pieces, key=lambda b: b.first_offset))


def prune(batches: list[StateBatch], start: int | None) -> list[StateBatch]:
    """The batches at or above the start offset, one straddling it cut there."""
    if start is None:
        return batches
    return [
        b if b.first_offset >= start else _cut(b, start, b.last_offset)
        for b in batches
        if b.last_offset >= start
    ]


def _cut(b: StateBatch, first: int, last: int) -> StateBatch:
    return StateBatch(first, last, b.delivery_state, b.delivery_count)


def _minus(a: int, b: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """[a, b] without [lo, hi]."""
    if hi < a or lo > b:
        return [(a, b)]
    return [r for r in ((a, lo - 1), (hi + 1, b)) if r[0] <= r[1]]


def _joined(batches: list[StateBatch]) -> list[StateBatch]:
    out: list[StateBatch] = []
    for b in batches:
        last = out[-1] if out else None
        if last is not None and last.last_offset + 1 == b.first_offset and _rank(last) == _rank(b):
            out[-1] = _cut(last, last.first_offset, b.last_offset)
        else:
            out.append(b)
    return out


class ShareStateTopic:
    """Every share-partition of a cluster, from its ``__share_group_state`` records.

    Feed it with :meth:`apply` in offset order per partition of the topic; read
    :meth:`figures` at any time. Undecodable records are counted in ``skipped`` by
    ``DecodeError.kind`` and change nothing. The reader's bookkeeping (``positions``,
    ``advance``, the counters) has the names ``OffsetsTopicState`` gives it."""

    def __init__(self) -> None:
        self.partitions: dict[Key, SharePartitionState] = {}
        self.positions: dict[int, int] = {}
        self.records_decoded = 0
        self.records_stale = 0
        self.bytes_read = 0
        self.skipped: Counter[str] = Counter()
        self.read_to_end = False

    def advance(self, partition: int, offset: int) -> None:
        """Nothing below ``offset`` of the topic's ``partition`` is left to read."""
        if offset > self.positions.get(partition, 0):
            self.positions[partition] = offset

    def apply(
        self, partition: int, offset: int, time_ms: int, key: bytes | None, value: bytes | None
    ) -> None:
        if offset < self.positions.get(partition, 0):
            self.records_stale += 1
            return
        self.positions[partition] = offset + 1
        self.bytes_read += len(key or b"") + len(value or b"")
        try:
            record = decode_share_state(key, value)  # type: ignore[arg-type]
        except DecodeError as exc:
            self.skipped[exc.kind] += 1
            return
        self.records_decoded += 1
        where = (record.group, record.topic_id, record.partition)
        if record.deleted:
            self.partitions.pop(where, None)
            return
        self.partitions.setdefault(where, SharePartitionState()).apply(record, time_ms)

    def figures(self, group: str, topic_id: uuid.UUID, partition: int) -> ShareStateFigures | None:
        """The share-partition's figures; None when the topic holds nothing of it."""
        state = self.partitions.get((group, topic_id, partition))
        return state.figures() if state is not None else None

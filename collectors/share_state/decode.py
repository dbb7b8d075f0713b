"""Decoding one record of ``__share_group_state``, where share coordinators keep each
share-partition's state (KIP-932): its start offset and, per batch of records above it, their
delivery state and delivery count.

It is the only place a client can read how often a record was delivered and whether it was
archived (given up after ``group.share.delivery.count.limit`` deliveries, or rejected):
DescribeShareGroupOffsets answers the start offset and the lag only, and ReadShareGroupState
is an inter-broker API. A consumer with Read on the topic reads it as the ``__consumer_offsets``
reader reads that one. The bytes follow Kafka's own schemas (``ShareSnapshotKey/Value`` and
``ShareUpdateKey/Value`` in ``share-coordinator``, Kafka 4.4.0): a key is its record type
(int16: 0 snapshot, 1 update) then group, topic id and partition; a value is its version
(int16, 0) then flexible fields, ``DeliveryCompleteCount`` (KIP-1226, Kafka 4.2) a tagged one.
A snapshot states the whole share-partition; an update the batches that changed since (its
start offset -1 when it did not move). A null value is a tombstone (the group deleted).

Pure (no I/O), bounds-checked through the ``__consumer_offsets`` reader's cursor: anything
else raises its ``DecodeError``.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Final

from collectors.consumer_offsets.cursor import (
    UNKNOWN_VERSION,
    UNSUPPORTED_RECORD_TYPE,
    Cursor,
    DecodeError,
)

__all__ = [
    "ACKNOWLEDGED",
    "ARCHIVED",
    "AVAILABLE",
    "ShareStateRecord",
    "StateBatch",
    "decode_share_state",
    "given_up",
]

# DeliveryState as the schema names them ("0:Available,2:Acked,4:Archived").
AVAILABLE: Final = 0
ACKNOWLEDGED: Final = 2
ARCHIVED: Final = 4
_STATES: Final = frozenset({AVAILABLE, ACKNOWLEDGED, ARCHIVED})
SNAPSHOT: Final = "snapshot"
UPDATE: Final = "update"
_KINDS: Final = {0: SNAPSHOT, 1: UPDATE}
_DELIVERY_COMPLETE_TAG: Final = 0


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Records ``first_offset`` to ``last_offset`` (inclusive), all in one delivery state and
    delivered ``delivery_count`` times."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    @property
    def archived(self) -> bool:
        return self.delivery_state == ARCHIVED


@dataclass(frozen=True, slots=True)
class ShareStateRecord:
    """One record: a share-partition's state (``kind`` snapshot) or a change to it (update).

    ``start_offset`` is None in an update that does not move it, and in a snapshot of a
    share-partition not initialised yet (Kafka writes -1 for both); ``state_epoch``,
    ``create_timestamp_ms`` and ``write_timestamp_ms`` are a snapshot's only;
    ``delivery_complete_count`` is None where the record does not carry it (before Kafka
    4.2, or -1). ``deleted``: a tombstone, only the key's fields are known."""

    kind: str
    group: str
    topic_id: uuid.UUID
    partition: int
    deleted: bool = False
    snapshot_epoch: int | None = None
    state_epoch: int | None = None
    leader_epoch: int | None = None
    start_offset: int | None = None
    delivery_complete_count: int | None = None
    create_timestamp_ms: int | None = None
    write_timestamp_ms: int | None = None
    batches: tuple[StateBatch, ...] = ()


def decode_share_state(key: bytes, value: bytes | None) -> ShareStateRecord:
    """Decode one ``__share_group_state`` record, or raise ``DecodeError``."""
    if key is None:
        raise DecodeError("key: missing (null) key", field="record_type")
    kc = Cursor(bytes(key), "share state key")
    record_type = kc.int16("record_type")
    kind = _KINDS.get(record_type)
    if kind is None:
        raise DecodeError(
            f"share state key: record type {record_type} is not a share-partition record",
            kind=UNSUPPORTED_RECORD_TYPE,
            field="record_type",
        )
    group = kc.string("group_id")
    topic_id = uuid.UUID(bytes=kc.buf[kc.take(16, "topic_id") : kc.pos])
    partition = kc.int32("partition")
    kc.finish()
    if value is None:
        return ShareStateRecord(kind, group, topic_id, partition, deleted=True)

    vc = Cursor(bytes(value), f"share {kind} value")
    version = vc.int16("version")
    if version != 0:
        raise DecodeError(
            f"share {kind} value: version {version} unknown (Kafka 4.4 writes 0)",
            kind=UNKNOWN_VERSION,
            field="version",
        )
    snapshot_epoch = vc.int32("snapshot_epoch")
    state_epoch = vc.int32("state_epoch") if kind == SNAPSHOT else None
    leader_epoch = vc.int32("leader_epoch")
    start_offset: int | None = vc.int64("start_offset")
    created = written = None
    if kind == SNAPSHOT:
        created = vc.int64("create_timestamp")
        written = vc.int64("write_timestamp")
    if start_offset == -1:
        start_offset = None  # not initialised yet (a snapshot), or not moved (an update)
    batches = tuple(_batch(vc) for _ in range(vc.compact_array_count("state_batches", 20)))
    complete = _delivery_complete_count(vc)
    vc.finish()
    return ShareStateRecord(
        kind, group, topic_id, partition, False, snapshot_epoch, state_epoch, leader_epoch,
        start_offset, complete, created, written, batches,
    )  # fmt: skip


def _batch(c: Cursor) -> StateBatch:
    first = c.int64("first_offset")
    last = c.int64("last_offset")
    state = _INT8(c.buf, c.take(1, "delivery_state"))[0]
    count = c.int16("delivery_count")
    c.skip_tagged_fields()
    if state not in _STATES:
        raise DecodeError(f"{c.where}: delivery state {state} unknown", field="delivery_state")
    if last < first:
        raise DecodeError(f"{c.where}: batch {first}..{last} ends before it starts")
    return StateBatch(first, last, state, count)


def _delivery_complete_count(c: Cursor) -> int | None:
    """The value's tagged fields: tag 0 is KIP-1226's count; others are skipped."""
    found = None
    for _ in range(c.uvarint("tagged_fields")):
        tag = c.uvarint("tagged_fields")
        size = c.uvarint(f"tagged field {tag}")
        if tag == _DELIVERY_COMPLETE_TAG and size == 4:
            found = c.int32("delivery_complete_count")
        else:
            c.take(size, f"tagged field {tag}")
    return None if found is None or found < 0 else found


def given_up(record: ShareStateRecord, limit: int = 2) -> list[tuple[int, int, int]]:
    """The archived records of a state record delivered at least ``limit`` times, as
    (first offset, last offset, delivery count): records redelivered until the delivery count
    limit archived them (a poison record in a queue). A record rejected at its first delivery
    is archived with count 1 (``limit=1`` finds those too)."""
    return [
        (b.first_offset, b.last_offset, b.delivery_count)
        for b in record.batches
        if b.archived and b.delivery_count >= limit
    ]


_INT8: Final = struct.Struct(">b").unpack_from

"""OffsetFetch (API 9): every group's committed offsets, many groups per request.

Spoken because librdkafka 2.16's ``list_consumer_group_offsets`` crashes the process when a
coordinator moves (see ``collectors.kafka_wire``). Only the batched versions: 8 (KIP-709,
Kafka 3.0: many groups in one request) and 9 (KIP-848: adds the member id and epoch, which an
admin leaves null and -1, so the broker skips member validation). Version 10 names topics by
id instead of by name; Kafka 4.1 marks it ``latestVersionUnstable`` (not advertised by
default) and it would need a Metadata round trip to name the topics, so it is left out. From
``OffsetFetchRequest.json``/``OffsetFetchResponse.json`` of Kafka 4.1.1.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

from collectors.kafka_wire.codec.framing import (
    NO_TAGGED_FIELDS,
    OFFSET_FETCH,
    ErrorCoded,
    check_version,
    compact_string,
    error_name,
    uvarint,
)
from collectors.kafka_wire.codec.reader import Reader

__all__ = [
    "NO_OFFSET",
    "GroupOffsets",
    "OffsetFetchResult",
    "PartitionOffset",
    "decode_offset_fetch_response",
    "encode_offset_fetch_request",
]

# CommittedOffset of a partition without a commit (OffsetFetchResponse.INVALID_OFFSET), and
# the CommittedLeaderEpoch of a commit that did not say (the schema's default).
NO_OFFSET = -1
_NO_LEADER_EPOCH = -1
# PartitionIndex, CommittedOffset, CommittedLeaderEpoch: read at once (answers hold many).
_PARTITION_HEAD = struct.Struct(">iqi")
# The common partition, read in two steps: the fields above with Metadata's length as one
# byte (a string under 127 bytes), then after the string ErrorCode and a tagged-field count
# of 0. Anything else is read field by field.
_SHORT_HEAD = struct.Struct(">iqiB")
_SHORT_TAIL = struct.Struct(">hB")
_BY_PARTITION = attrgetter("topic", "partition")


class PartitionOffset(NamedTuple):
    """One partition's committed offset in a group, as its coordinator answers OffsetFetch.

    ``offset`` is ``NO_OFFSET`` (-1) where there is no commit to report: kept rather than
    dropped, so that the answer is what the broker said, but ``has_commit`` is False and the
    offset must not be used as a position. ``leader_epoch`` is None when the commit carried
    none (-1 on the wire). ``metadata`` is the committing client's string as the broker stores
    it: "" when the client gave none; librdkafka 2.16 writes it with a trailing NUL ("m\\x00"),
    which it strips when reading it back.

    A named tuple, not a frozen dataclass: answers hold one per partition of every group
    (100,000 in a large cluster's cycle), and a frozen dataclass's ``__init__`` costs several
    times a tuple's.
    """

    topic: str
    partition: int
    offset: int
    leader_epoch: int | None = None
    metadata: str | None = ""
    error_code: int = 0

    @property
    def has_commit(self) -> bool:
        """Whether ``offset`` is a real commit: no error, and not ``NO_OFFSET``."""
        return self.error_code == 0 and self.offset >= 0

    @property
    def error_name(self) -> str:
        return error_name(self.error_code)


@dataclass(frozen=True)
class GroupOffsets(ErrorCoded):
    """One group's committed offsets, or why there are none.

    ``offsets`` is sorted by (topic, partition). A group-level error (``error_code != 0``:
    NOT_COORDINATOR, GROUP_AUTHORIZATION_FAILED...) comes without offsets from Kafka;
    ``error_message`` is ours (the protocol carries none), saying where the error came from.
    Kafka answers a group it does not know (never existed, deleted, expired) with no error
    and no offsets.
    """

    group: str
    error_code: int
    offsets: tuple[PartitionOffset, ...]
    error_message: str | None = None

    @property
    def committed(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> offset of every real commit (see ``PartitionOffset``)."""
        return {(p.topic, p.partition): p.offset for p in self.offsets if p.has_commit}

    @classmethod
    def failed(cls, group: str, error_code: int, message: str | None) -> GroupOffsets:
        return cls(group, error_code, (), message)


@dataclass(frozen=True)
class OffsetFetchResult:
    throttle_time_ms: int
    groups: tuple[GroupOffsets, ...]


def encode_offset_fetch_request(
    version: int, groups: Sequence[str], require_stable: bool = False
) -> bytes:
    """OffsetFetch v8/v9 body: every partition of every topic (``Topics`` null) of each group.

    v9's MemberId/MemberEpoch are sent as an admin does (null, -1): the broker validates them
    only for a member of a KIP-848 group asking its own offsets. ``require_stable`` asks the
    broker to answer UNSTABLE_OFFSET_COMMIT for partitions with a pending transactional commit
    rather than the last stable one (librdkafka's ``require_stable_offsets``, off by default).
    """
    check_version(OFFSET_FETCH, version)
    items = []
    for i, group in enumerate(groups):
        item = compact_string(group, f"Groups[{i}].GroupId")
        if version >= 9:
            item += b"\x00" + struct.pack(">i", -1)  # MemberId null, MemberEpoch -1
        items.append(item + b"\x00" + NO_TAGGED_FIELDS)  # Topics null: all of them
    return (
        uvarint(len(items) + 1)
        + b"".join(items)
        + (b"\x01" if require_stable else b"\x00")
        + NO_TAGGED_FIELDS
    )


def decode_offset_fetch_response(body: bytes, version: int) -> OffsetFetchResult:
    """OffsetFetch v8/v9 answer (the same layout), every field read (unknown tags skipped)."""
    check_version(OFFSET_FETCH, version)
    reader = Reader(body, f"OffsetFetchResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    groups = reader.compact_array("Groups", lambda: _group_offsets(reader), 5)
    reader.tagged_fields()
    reader.end()
    return OffsetFetchResult(throttle, tuple(groups))


def _group_offsets(reader: Reader) -> GroupOffsets:
    group = reader.compact_string("GroupId")
    offsets: list[PartitionOffset] = []

    def topic() -> None:
        name = reader.compact_string("Name")
        reader.compact_array("Partitions", lambda: offsets.append(_partition(reader, name)), 20)
        reader.tagged_fields()

    reader.compact_array("Topics", topic, 3)
    error_code = reader.int16("ErrorCode")
    reader.tagged_fields()
    offsets.sort(key=_BY_PARTITION)
    return GroupOffsets(group, error_code, tuple(offsets))


def _partition(reader: Reader, topic: str) -> PartitionOffset:
    start = reader.pos
    short = reader.unpack(_SHORT_HEAD)
    if short is not None and 0 < short[3] < 0x80:
        partition, offset, leader_epoch, length = short
        metadata = reader.text(length - 1, "Metadata")
        tail = reader.unpack(_SHORT_TAIL)
        if tail is not None and tail[1] == 0:
            return PartitionOffset(
                topic,
                partition,
                offset,
                None if leader_epoch == _NO_LEADER_EPOCH else leader_epoch,
                metadata,
                tail[0],
            )
    reader.pos = start
    head = reader.unpack(_PARTITION_HEAD)
    if head is None:  # truncated: read field by field, to name the one cut short
        head = (
            reader.int32("PartitionIndex"),
            reader.int64("CommittedOffset"),
            reader.int32("CommittedLeaderEpoch"),
        )
    partition, offset, leader_epoch = head
    metadata = reader.compact_nullable_string("Metadata")
    error_code = reader.int16("ErrorCode")
    reader.tagged_fields()
    return PartitionOffset(
        topic=topic,
        partition=partition,
        offset=offset,
        leader_epoch=None if leader_epoch == _NO_LEADER_EPOCH else leader_epoch,
        metadata=metadata,
        error_code=error_code,
    )

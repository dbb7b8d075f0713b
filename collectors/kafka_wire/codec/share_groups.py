"""Share groups (KIP-932): ShareGroupDescribe (API 77) and DescribeShareGroupOffsets (API 90).

Spoken because confluent-kafka 2.16's AdminClient has neither call, and a share group's
progress is not a committed offset: the coordinator keeps, per partition, the *share-partition
start offset* (every record below it is delivered and acknowledged, or given up) and, from
Kafka 4.2 (KIP-1226, DescribeShareGroupOffsets v1), the lag the broker counts itself: the
records from the start offset to the log end not yet acknowledged. Before KIP-1226 the answer
has no lag; ``SharePartitionOffset.lag`` is then None and the caller may bound it from above
with the log end (``lag_upper_bound``): records acknowledged above the start offset (a
consumer acknowledging out of order) are counted as waiting, never the other way round.

ShareGroupDescribe v1 only (v0 was Kafka 4.0's early access, removed in 4.1) and
DescribeShareGroupOffsets v0 and v1, from ``ShareGroupDescribeRequest.json``,
``ShareGroupDescribeResponse.json``, ``DescribeShareGroupOffsetsRequest.json`` and
``DescribeShareGroupOffsetsResponse.json`` of Kafka 4.4.0 (``kafka-clients-4.4.0.jar``,
``common/message/``). Both are asked of the group's coordinator, as the admin client does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectors.kafka_wire.codec.consumer_group_describe import BrokerGroup
from collectors.kafka_wire.codec.framing import (
    DESCRIBE_SHARE_GROUP_OFFSETS,
    NO_TAGGED_FIELDS,
    SHARE_GROUP_DESCRIBE,
    ErrorCoded,
    check_version,
    compact_string,
    compact_string_array,
    uvarint,
)
from collectors.kafka_wire.codec.reader import Reader

__all__ = [
    "ShareGroupDescribeResult",
    "ShareGroupDescription",
    "ShareGroupOffsets",
    "ShareGroupOffsetsResult",
    "ShareMember",
    "SharePartitionOffset",
    "decode_describe_share_group_offsets_response",
    "decode_share_group_describe_response",
    "encode_describe_share_group_offsets_request",
    "encode_share_group_describe_request",
    "lag_upper_bound",
]

# AuthorizedOperations when the request did not ask for them (the schema's default).
_OPERATIONS_NOT_REQUESTED = -(2**31)


@dataclass(frozen=True)
class ShareMember:
    """One member of a share group. Several members may hold the same partition: a share
    group spreads records, not partitions, so ``assignment`` (sorted (topic, partition)
    pairs) says where a member fetches, not that it alone does. There is no target
    assignment: a share member takes what the coordinator gives it at its next heartbeat."""

    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ShareGroupDescription(BrokerGroup):
    """One group's ShareGroupDescribe answer, or why there is none (the other fields are then
    None/empty: the broker fills them with defaults that are not facts). ``state`` ("Empty",
    "Stable", "Dead") and ``assignor`` are None where the broker sent ""."""

    members: tuple[ShareMember, ...]


@dataclass(frozen=True)
class ShareGroupDescribeResult:
    throttle_time_ms: int
    groups: tuple[ShareGroupDescription, ...]


@dataclass(frozen=True)
class SharePartitionOffset(ErrorCoded):
    """One partition of a share group's offsets. ``start_offset`` None: the broker sent -1
    (the share partition is not initialised yet: nobody fetched it since the group came).
    ``lag`` None: not reported (a v0 answer, before KIP-1226) or unknown to the broker (-1).
    ``leader_epoch`` None where the broker sent -1."""

    topic: str
    topic_id: str
    partition: int
    start_offset: int | None
    leader_epoch: int | None
    lag: int | None
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True)
class ShareGroupOffsets(ErrorCoded):
    """One group's DescribeShareGroupOffsets answer, partitions sorted; on a group error no
    partitions. ``lag_reported``: the answer's version carries the broker's lag (v1)."""

    group: str
    partitions: tuple[SharePartitionOffset, ...]
    error_code: int = 0
    error_message: str | None = None
    lag_reported: bool = False

    @classmethod
    def failed(cls, group: str, error_code: int, message: str | None) -> ShareGroupOffsets:
        return cls(group, (), error_code, message)


@dataclass(frozen=True)
class ShareGroupOffsetsResult:
    throttle_time_ms: int
    groups: tuple[ShareGroupOffsets, ...]


def lag_upper_bound(start_offset: int | None, log_end: int | None) -> int | None:
    """What a broker without KIP-1226 leaves to the reader: the records from the start offset
    to the log end, acknowledged or not, so never less than the real lag. None when either is
    unknown; 0 when the start offset is at or past the end (records deleted meanwhile)."""
    if start_offset is None or log_end is None:
        return None
    return max(0, log_end - start_offset)


def encode_share_group_describe_request(
    version: int, groups: Sequence[str], include_authorized_operations: bool = False
) -> bytes:
    """ShareGroupDescribe body."""
    check_version(SHARE_GROUP_DESCRIBE, version)
    return (
        compact_string_array(groups, "GroupIds")
        + (b"\x01" if include_authorized_operations else b"\x00")
        + NO_TAGGED_FIELDS
    )


def decode_share_group_describe_response(body: bytes, version: int) -> ShareGroupDescribeResult:
    """ShareGroupDescribe v1 answer, every field read (unknown tags skipped)."""
    check_version(SHARE_GROUP_DESCRIBE, version)
    reader = Reader(body, f"ShareGroupDescribeResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    groups = reader.compact_array("Groups", lambda: _described_group(reader), 20)
    reader.tagged_fields()
    reader.end()
    return ShareGroupDescribeResult(throttle, tuple(groups))


def _described_group(reader: Reader) -> ShareGroupDescription:
    error_code = reader.int16("ErrorCode")
    error_message = reader.compact_nullable_string("ErrorMessage")
    group = reader.compact_string("GroupId")
    state = reader.compact_string("GroupState")
    group_epoch = reader.int32("GroupEpoch")
    assignment_epoch = reader.int32("AssignmentEpoch")
    assignor = reader.compact_string("AssignorName")
    topic_ids: dict[str, str] = {}
    members = reader.compact_array("Members", lambda: _member(reader, topic_ids), 12)
    operations = reader.int32("AuthorizedOperations")
    reader.tagged_fields()
    if error_code:
        return ShareGroupDescription.failed(group, error_code, error_message)
    return ShareGroupDescription(
        group=group,
        state=state or None,
        group_epoch=group_epoch,
        assignment_epoch=assignment_epoch,
        assignor=assignor or None,
        members=tuple(sorted(members, key=lambda m: m.member_id)),
        error_message=error_message,
        topic_ids=tuple(sorted(topic_ids.items())),
        authorized_operations=None if operations == _OPERATIONS_NOT_REQUESTED else operations,
    )


def _member(reader: Reader, topic_ids: dict[str, str]) -> ShareMember:
    member_id = reader.compact_string("MemberId")
    rack_id = reader.compact_nullable_string("RackId")
    member_epoch = reader.int32("MemberEpoch")
    client_id = reader.compact_string("ClientId")
    client_host = reader.compact_string("ClientHost")
    subscribed = reader.string_array("SubscribedTopicNames")
    pairs: list[tuple[str, int]] = []

    def topic_partitions() -> None:
        topic_id = reader.uuid("TopicId")
        topic = reader.compact_string("TopicName")
        partitions = reader.int32_array("Partitions")
        reader.tagged_fields()
        topic_ids[topic] = topic_id
        pairs.extend((topic, p) for p in partitions)

    reader.enter("Assignment")
    reader.compact_array("TopicPartitions", topic_partitions, 19)
    reader.tagged_fields()
    reader.leave()
    reader.tagged_fields()
    return ShareMember(
        member_id=member_id,
        rack_id=rack_id or None,
        member_epoch=member_epoch,
        client_id=client_id,
        client_host=client_host,
        subscribed_topics=tuple(subscribed),
        assignment=tuple(sorted(pairs)),
    )


def encode_describe_share_group_offsets_request(
    version: int,
    groups: Sequence[str],
    topics: Sequence[tuple[str, Sequence[int]]] | None = None,
) -> bytes:
    """DescribeShareGroupOffsets body: each group's ``topics`` ((name, partitions) pairs), or
    null for every partition the group has state for (what a monitor asks: it does not know
    them beforehand)."""
    check_version(DESCRIBE_SHARE_GROUP_OFFSETS, version)
    if topics is None:
        wanted = b"\x00"  # null: all topic-partitions
    else:
        wanted = uvarint(len(topics) + 1) + b"".join(
            compact_string(name, f"Topics[{i}].TopicName")
            + uvarint(len(parts) + 1)
            + b"".join(p.to_bytes(4, "big", signed=True) for p in parts)
            + NO_TAGGED_FIELDS
            for i, (name, parts) in enumerate(topics)
        )
    items = [
        compact_string(g, f"Groups[{i}].GroupId") + wanted + NO_TAGGED_FIELDS
        for i, g in enumerate(groups)
    ]
    return uvarint(len(items) + 1) + b"".join(items) + NO_TAGGED_FIELDS


def decode_describe_share_group_offsets_response(
    body: bytes, version: int
) -> ShareGroupOffsetsResult:
    """DescribeShareGroupOffsets v0/v1 answer, every field read (unknown tags skipped)."""
    check_version(DESCRIBE_SHARE_GROUP_OFFSETS, version)
    reader = Reader(body, f"DescribeShareGroupOffsetsResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    groups = reader.compact_array("Groups", lambda: _offsets_group(reader, version), 6)
    reader.tagged_fields()
    reader.end()
    return ShareGroupOffsetsResult(throttle, tuple(groups))


def _offsets_group(reader: Reader, version: int) -> ShareGroupOffsets:
    group = reader.compact_string("GroupId")
    partitions: list[SharePartitionOffset] = []

    def topic() -> None:
        name = reader.compact_string("TopicName")
        topic_id = reader.uuid("TopicId")

        def partition() -> None:
            index = reader.int32("PartitionIndex")
            start = reader.int64("StartOffset")
            epoch = reader.int32("LeaderEpoch")
            lag = reader.int64("Lag") if version >= 1 else -1
            code = reader.int16("ErrorCode")
            message = reader.compact_nullable_string("ErrorMessage")
            reader.tagged_fields()
            partitions.append(
                SharePartitionOffset(
                    topic=name,
                    topic_id=topic_id,
                    partition=index,
                    start_offset=None if start < 0 else start,
                    leader_epoch=None if epoch < 0 else epoch,
                    lag=None if lag < 0 else lag,
                    error_code=code,
                    error_message=message,
                )
            )

        reader.compact_array("Partitions", partition, 28 if version >= 1 else 20)
        reader.tagged_fields()

    reader.compact_array("Topics", topic, 19)
    error_code = reader.int16("ErrorCode")
    error_message = reader.compact_nullable_string("ErrorMessage")
    reader.tagged_fields()
    if error_code:
        return ShareGroupOffsets.failed(group, error_code, error_message)
    return ShareGroupOffsets(
        group=group,
        partitions=tuple(sorted(partitions, key=lambda p: (p.topic, p.partition))),
        error_message=error_message,
        lag_reported=version >= 1,
    )

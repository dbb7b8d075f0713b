"""ConsumerGroupDescribe (API 69, KIP-848): the epochs of "consumer" protocol groups.

Spoken because confluent-kafka describes these groups but drops the group epoch, the
assignment epoch and the member epochs, which are what tell a finished rebalance from one in
progress. Versions 0 and 1 (KIP-1099, adds ``MemberType``), from
``ConsumerGroupDescribeRequest.json``/``ConsumerGroupDescribeResponse.json`` of Kafka 4.1.1:
v1 is newer than 2024 copies of the repository, which have v0 only, and an early draft of the
response (``MemberId`` as uuid, assignment metadata bytes) was never released.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

from collectors.kafka_wire.codec.framing import (
    CONSUMER_GROUP_DESCRIBE,
    NO_TAGGED_FIELDS,
    ErrorCoded,
    check_version,
    compact_string_array,
)
from collectors.kafka_wire.codec.reader import Reader

__all__ = [
    "ConsumerGroupDescribeResult",
    "ConsumerGroupEpochs",
    "MemberEpochs",
    "decode_consumer_group_describe_response",
    "encode_consumer_group_describe_request",
]

# MemberType of ConsumerGroupDescribe v1: -1 unknown, 0 classic, 1 consumer. Spelled as Kafka's
# GroupType names, which is how the rest of Lagwatch names group protocols.
_MEMBER_TYPES = {0: "classic", 1: "consumer"}

# AuthorizedOperations when the request did not ask for them (the schema's default).
_OPERATIONS_NOT_REQUESTED = -(2**31)


@dataclass(frozen=True)
class MemberEpochs:
    """One member of a KIP-848 group as its coordinator describes it.

    A member is reconciled when its ``member_epoch`` is the group's assignment epoch *and* its
    ``assignment`` is its ``target_assignment``: the epoch alone is not enough, as Kafka moves
    a member to the new epoch while partitions it is to get are still being released by
    others ("Reconciling", with part of the target missing from the assignment).
    Assignments are sorted (topic, partition) pairs. ``member_type``
    is "consumer" or "classic" (a classic client in a consumer group, KIP-1099); None when
    the broker answered version 0 or said "unknown". The nullable strings are None when unset
    whether the broker sent null or "": Kafka 4.1 sends "" for a member without a regex.
    """

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[tuple[str, int], ...]
    target_assignment: tuple[tuple[str, int], ...]
    member_type: str | None = None


@dataclass(frozen=True)
class BrokerGroup(ErrorCoded):
    """A group whose coordinator assigns its partitions (KIP-848's consumer groups, KIP-932's
    share groups), as its describe answer gives it: epochs, assignor and members, or why there
    are none. Each describe message answers these same fields; only its members differ."""

    group: str
    state: str | None
    group_epoch: int | None
    assignment_epoch: int | None
    assignor: str | None
    members: tuple[Any, ...]
    error_code: int = 0
    error_message: str | None = None
    topic_ids: tuple[tuple[str, str], ...] = ()
    authorized_operations: int | None = None

    @classmethod
    def failed(cls, group: str, error_code: int, message: str | None) -> Self:
        return cls(group, None, None, None, None, (), error_code, message)


@dataclass(frozen=True)
class ConsumerGroupEpochs(BrokerGroup):
    """One group's ConsumerGroupDescribe answer, or why there is none.

    On an error (``error_code != 0``) the broker fills the other fields with the schema's
    defaults, which are not facts about the group, so they are None/empty here. A classic
    group is such an error: GROUP_ID_NOT_FOUND, "Group ... is not a consumer group".
    ``state`` and ``assignor`` are None where the broker sent the empty string ("did not say").
    ``topic_ids`` maps every topic named in an assignment to its id (Kafka's base64 form).
    """

    members: tuple[MemberEpochs, ...]


@dataclass(frozen=True)
class ConsumerGroupDescribeResult:
    throttle_time_ms: int
    groups: tuple[ConsumerGroupEpochs, ...]


def encode_consumer_group_describe_request(
    version: int, groups: Sequence[str], include_authorized_operations: bool = False
) -> bytes:
    """ConsumerGroupDescribe body (v0 and v1 are the same request; v1 answers MemberType)."""
    check_version(CONSUMER_GROUP_DESCRIBE, version)
    return (
        compact_string_array(groups, "GroupIds")
        + (b"\x01" if include_authorized_operations else b"\x00")
        + NO_TAGGED_FIELDS
    )


def decode_consumer_group_describe_response(
    body: bytes, version: int
) -> ConsumerGroupDescribeResult:
    """ConsumerGroupDescribe v0/v1 answer, every field read (unknown tags skipped)."""
    check_version(CONSUMER_GROUP_DESCRIBE, version)
    reader = Reader(body, f"ConsumerGroupDescribeResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    groups = reader.compact_array("Groups", lambda: _described_group(reader, version), 20)
    reader.tagged_fields()
    reader.end()
    return ConsumerGroupDescribeResult(throttle, tuple(groups))


def _described_group(reader: Reader, version: int) -> ConsumerGroupEpochs:
    error_code = reader.int16("ErrorCode")
    error_message = reader.compact_nullable_string("ErrorMessage")
    group = reader.compact_string("GroupId")
    state = reader.compact_string("GroupState")
    group_epoch = reader.int32("GroupEpoch")
    assignment_epoch = reader.int32("AssignmentEpoch")
    assignor = reader.compact_string("AssignorName")
    topic_ids: dict[str, str] = {}
    members = reader.compact_array("Members", lambda: _member(reader, version, topic_ids), 16)
    operations = reader.int32("AuthorizedOperations")
    reader.tagged_fields()
    if error_code:
        return ConsumerGroupEpochs.failed(group, error_code, error_message)
    return ConsumerGroupEpochs(
        group=group,
        state=state or None,
        group_epoch=group_epoch,
        assignment_epoch=assignment_epoch,
        assignor=assignor or None,
        members=tuple(sorted(members, key=lambda m: m.member_id)),
        error_code=0,
        error_message=error_message,
        topic_ids=tuple(sorted(topic_ids.items())),
        authorized_operations=None if operations == _OPERATIONS_NOT_REQUESTED else operations,
    )


def _member(reader: Reader, version: int, topic_ids: dict[str, str]) -> MemberEpochs:
    member_id = reader.compact_string("MemberId")
    instance_id = reader.compact_nullable_string("InstanceId")
    rack_id = reader.compact_nullable_string("RackId")
    member_epoch = reader.int32("MemberEpoch")
    client_id = reader.compact_string("ClientId")
    client_host = reader.compact_string("ClientHost")
    subscribed = reader.string_array("SubscribedTopicNames")
    regex = reader.compact_nullable_string("SubscribedTopicRegex")
    assignment = _assignment(reader, "Assignment", topic_ids)
    target = _assignment(reader, "TargetAssignment", topic_ids)
    member_type = reader.int8("MemberType") if version >= 1 else -1
    reader.tagged_fields()
    return MemberEpochs(
        member_id=member_id,
        instance_id=instance_id or None,
        rack_id=rack_id or None,
        member_epoch=member_epoch,
        client_id=client_id,
        client_host=client_host,
        subscribed_topics=tuple(subscribed),
        subscribed_topic_regex=regex or None,
        assignment=assignment,
        target_assignment=target,
        member_type=_MEMBER_TYPES.get(member_type),
    )


def _assignment(
    reader: Reader, leaf: str, topic_ids: dict[str, str]
) -> tuple[tuple[str, int], ...]:
    """An ``Assignment`` struct: its TopicPartitions array, then its own tagged fields."""
    pairs: list[tuple[str, int]] = []

    def topic_partitions() -> None:
        topic_id = reader.uuid("TopicId")
        topic = reader.compact_string("TopicName")
        partitions = reader.int32_array("Partitions")
        reader.tagged_fields()
        topic_ids[topic] = topic_id
        pairs.extend((topic, p) for p in partitions)

    reader.enter(leaf)
    reader.compact_array("TopicPartitions", topic_partitions, 19)
    reader.tagged_fields()
    reader.leave()
    return tuple(sorted(pairs))

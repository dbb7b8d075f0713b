"""DescribeGroups (API 15): classic groups' state, assignor and members with assignments.

Spoken because ``AdminClient.describe_consumer_groups``, which asks the same, aborts the
process in librdkafka 2.16 when a coordinator's connection drops mid-call (see
``collectors.kafka_wire``). Versions 5 (the first flexible one) and 6 (KIP-1043: an
``ErrorMessage`` per group, and GROUP_ID_NOT_FOUND for a group the coordinator does not have
as a classic group, where v5 answered state "Dead" without an error), from
``DescribeGroupsRequest.json``/``DescribeGroupsResponse.json`` of Kafka 4.1.1. A member's
assignment is the consumer protocol's own ``ConsumerProtocolAssignment`` bytes, read by the
same decoder as the ``__consumer_offsets`` records, so both sources agree on every layout rule.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from collectors.consumer_offsets import (
    DecodeError,
    decode_consumer_assignment,
    decode_consumer_subscription,
)
from collectors.kafka_wire.codec.framing import (
    DESCRIBE_GROUPS,
    NO_TAGGED_FIELDS,
    ErrorCoded,
    check_version,
    compact_string_array,
)
from collectors.kafka_wire.codec.reader import Reader

__all__ = [
    "ClassicGroup",
    "ClassicMember",
    "DescribeGroupsResult",
    "decode_describe_groups_response",
    "encode_describe_groups_request",
]

# The ProtocolType of groups whose members' assignments are ConsumerProtocolAssignment bytes.
_CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class ClassicMember:
    """One member of a classic group, as DescribeGroups gives it.

    ``assignment`` is the member's sorted (topic, partition) pairs, read from its
    ConsumerProtocolAssignment bytes; () when the broker sent none (Kafka sends them only for
    a Stable group; the admin clients read that as no partitions too). It is None when there
    is nothing to read it as (the group's protocol type is not "consumer": Connect and others
    have formats of their own) and when the bytes are not a valid assignment: then
    ``assignment_error`` says why, and the member is kept, because one client's garbled
    assignment is no reason to lose the rest of the group. ``instance_id`` (static
    membership) is None when unset, whether the broker sent null or "".
    """

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[tuple[str, int], ...] | None
    assignment_error: str | None = None
    # The topics the member asked for (its MemberMetadata, a ConsumerProtocolSubscription):
    # None where there is nothing to read it as or its bytes are not one. The leader's
    # assignor assigned from these, not from the group's topics.
    subscription: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ClassicGroup(ErrorCoded):
    """One group's DescribeGroups answer, or why there is none.

    ``state`` is the coordinator's name for it ("Stable", "PreparingRebalance",
    "CompletingRebalance", "Empty", "Dead"); ``protocol_type`` is "consumer" for consumer
    clients; ``protocol`` is the chosen protocol, which for consumers is the assignor's name
    ("range", "cooperative-sticky"...), and Kafka fills it only in state Stable. Any of the
    three is None where the broker sent "" (did not say), or where no coordinator answered.
    On an error the broker's fields are kept as it sent them: Kafka 4.1 answers v6 with
    GROUP_ID_NOT_FOUND and state "Dead" for a group it has no classic group of (unknown,
    deleted, or a KIP-848 "consumer" group); v5 with the same, minus the error.
    ``error_message`` is the broker's (v6), or ours, saying where an error came from.
    """

    group: str
    error_code: int
    error_message: str | None
    state: str | None
    protocol_type: str | None
    protocol: str | None
    members: tuple[ClassicMember, ...]

    @classmethod
    def failed(cls, group: str, error_code: int, message: str | None) -> ClassicGroup:
        return cls(group, error_code, message, None, None, None, ())


@dataclass(frozen=True)
class DescribeGroupsResult:
    throttle_time_ms: int
    groups: tuple[ClassicGroup, ...]


def encode_describe_groups_request(
    version: int, groups: Sequence[str], include_authorized_operations: bool = False
) -> bytes:
    """DescribeGroups v5/v6 body (the same request; v6 only changes the answer)."""
    check_version(DESCRIBE_GROUPS, version)
    return (
        compact_string_array(groups, "Groups")
        + (b"\x01" if include_authorized_operations else b"\x00")
        + NO_TAGGED_FIELDS
    )


def decode_describe_groups_response(body: bytes, version: int) -> DescribeGroupsResult:
    """DescribeGroups v5/v6 answer, every field read (unknown tags skipped); members'
    assignments decoded where the group's protocol type is "consumer" (see ``ClassicMember``).
    """
    check_version(DESCRIBE_GROUPS, version)
    reader = Reader(body, f"DescribeGroupsResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    min_size = 13 if version >= 6 else 12
    groups = reader.compact_array("Groups", lambda: _classic_group(reader, version), min_size)
    reader.tagged_fields()
    reader.end()
    return DescribeGroupsResult(throttle, tuple(groups))


def _classic_group(reader: Reader, version: int) -> ClassicGroup:
    error_code = reader.int16("ErrorCode")
    error_message = reader.compact_nullable_string("ErrorMessage") if version >= 6 else None
    group = reader.compact_string("GroupId")
    state = reader.compact_string("GroupState")
    protocol_type = reader.compact_string("ProtocolType")
    protocol = reader.compact_string("ProtocolData")
    consumer = protocol_type == _CONSUMER_PROTOCOL_TYPE
    members = reader.compact_array("Members", lambda: _classic_member(reader, consumer), 7)
    reader.int32("AuthorizedOperations")  # not asked for: the schema's default
    reader.tagged_fields()
    return ClassicGroup(
        group=group,
        error_code=error_code,
        error_message=error_message,
        state=state or None,
        protocol_type=protocol_type or None,
        protocol=protocol or None,
        members=tuple(sorted(members, key=lambda m: m.member_id)),
    )


def _classic_member(reader: Reader, consumer: bool) -> ClassicMember:
    member_id = reader.compact_string("MemberId")
    instance_id = reader.compact_nullable_string("GroupInstanceId")
    client_id = reader.compact_string("ClientId")
    client_host = reader.compact_string("ClientHost")
    metadata = reader.compact_bytes("MemberMetadata")
    raw = reader.compact_bytes("MemberAssignment")
    start = reader.pos - len(raw)  # where the assignment's own byte positions count from
    reader.tagged_fields()
    assignment: tuple[tuple[str, int], ...] | None = None
    problem = None
    if consumer and not raw:
        assignment = ()
    elif consumer:
        try:
            decoded = decode_consumer_assignment(raw, f"MemberAssignment of {member_id}")
        except DecodeError as exc:
            problem = f"{exc} (assignment at byte {start} of the answer)"
        else:
            assignment = tuple(sorted((t, p) for t, ps in decoded.items() for p in ps))
    subscription = None
    if consumer and metadata:
        # Only the what-if reads it; a garbled one is "not said", not a lost member.
        with contextlib.suppress(DecodeError):
            subscription = decode_consumer_subscription(metadata, f"MemberMetadata of {member_id}")
    return ClassicMember(
        member_id=member_id,
        instance_id=instance_id or None,
        client_id=client_id,
        client_host=client_host,
        assignment=assignment,
        assignment_error=problem,
        subscription=subscription,
    )

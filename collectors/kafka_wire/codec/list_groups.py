"""ListGroups (API 16): the groups a broker coordinates, with their state and type.

Spoken for share groups (KIP-932): ``AdminClient.list_consumer_groups`` in confluent-kafka
2.16 knows the types "classic" and "consumer" only, so a share group cannot be asked for by
type there. Versions 3 (the first flexible one), 4 (KIP-518: ``StatesFilter`` and each group's
``GroupState``) and 5 (KIP-848: ``TypesFilter`` and ``GroupType``), from
``ListGroupsRequest.json``/``ListGroupsResponse.json`` of Kafka 4.4.0 (unchanged since 3.7).
A filter the broker's version cannot carry is refused rather than dropped: a listing asked for
share groups that silently listed every group would be read as a cluster full of share groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectors.kafka_wire.codec.framing import (
    LIST_GROUPS,
    NO_TAGGED_FIELDS,
    ErrorCoded,
    check_version,
    compact_string_array,
)
from collectors.kafka_wire.codec.reader import Reader

__all__ = [
    "ListGroupsResult",
    "ListedGroup",
    "decode_list_groups_response",
    "encode_list_groups_request",
]


@dataclass(frozen=True)
class ListedGroup:
    """One group as ListGroups names it. ``state`` (v4+) and ``group_type`` (v5+: "classic",
    "consumer", "share", "streams") are None where the version does not carry them or the
    broker sent ""; ``protocol_type`` is the classic protocol type ("consumer", "connect"…),
    "" for groups that have none (share groups answer "share")."""

    group: str
    protocol_type: str
    state: str | None = None
    group_type: str | None = None


@dataclass(frozen=True)
class ListGroupsResult(ErrorCoded):
    """One broker's answer: its error (COORDINATOR_LOAD_IN_PROGRESS while it loads
    ``__consumer_offsets``: the groups it lists are then a part of its own) and its groups."""

    throttle_time_ms: int
    error_code: int
    groups: tuple[ListedGroup, ...]


def encode_list_groups_request(
    version: int, states: Sequence[str] = (), types: Sequence[str] = ()
) -> bytes:
    """ListGroups body; empty filters list every group. A filter older versions cannot carry
    raises ValueError (states need v4, types v5)."""
    check_version(LIST_GROUPS, version)
    if states and version < 4:
        raise ValueError(f"ListGroups v{version} cannot filter by state (v4+)")
    if types and version < 5:
        raise ValueError(f"ListGroups v{version} cannot filter by type (v5+)")
    body = b""
    if version >= 4:
        body += compact_string_array(states, "StatesFilter")
    if version >= 5:
        body += compact_string_array(types, "TypesFilter")
    return body + NO_TAGGED_FIELDS


def decode_list_groups_response(body: bytes, version: int) -> ListGroupsResult:
    """ListGroups v3-v5 answer, every field read (unknown tags skipped)."""
    check_version(LIST_GROUPS, version)
    reader = Reader(body, f"ListGroupsResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    error_code = reader.int16("ErrorCode")

    def group() -> ListedGroup:
        group_id = reader.compact_string("GroupId")
        protocol_type = reader.compact_string("ProtocolType")
        state = reader.compact_string("GroupState") if version >= 4 else ""
        group_type = reader.compact_string("GroupType") if version >= 5 else ""
        reader.tagged_fields()
        return ListedGroup(group_id, protocol_type, state or None, group_type or None)

    # The smallest group: two one-byte strings' lengths (empty id), no state, no tags.
    groups = reader.compact_array("Groups", group, 3)
    reader.tagged_fields()
    reader.end()
    return ListGroupsResult(throttle, error_code, tuple(groups))

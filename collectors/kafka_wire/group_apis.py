"""What differs between the per-group APIs asked of coordinators, and how each group's result
is made; ``client`` does the rest.

ConsumerGroupDescribe, OffsetFetch, DescribeGroups, ShareGroupDescribe,
DescribeShareGroupOffsets and StreamsGroupDescribe are asked the same way (find each
group's coordinator, send it its groups, read one result per group), so the client has one
path for all of them and each API is a row of this table: its codec functions, its batch size,
how a group's failure is written, what is said of a broker without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Generic, TypeVar

from collectors.kafka_wire.codec import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    OFFSET_FETCH,
    OUR_VERSIONS,
    SHARE_GROUP_DESCRIBE,
    STREAMS_GROUP_DESCRIBE,
    UNKNOWN_SERVER_ERROR,
    ClassicGroup,
    ConsumerGroupEpochs,
    Coordinator,
    GroupOffsets,
    ShareGroupDescription,
    ShareGroupOffsets,
    StreamsGroupDescription,
    decode_consumer_group_describe_response,
    decode_describe_groups_response,
    decode_describe_share_group_offsets_response,
    decode_offset_fetch_response,
    decode_share_group_describe_response,
    decode_streams_group_describe_response,
    encode_consumer_group_describe_request,
    encode_describe_groups_request,
    encode_describe_share_group_offsets_request,
    encode_offset_fetch_request,
    encode_share_group_describe_request,
    encode_streams_group_describe_request,
    error_name,
)
from collectors.kafka_wire.connection import Connection

__all__ = [
    "DESCRIBE",
    "DESCRIBE_GROUPS_BATCH",
    "OFFSET_FETCH_BATCH",
    "SHARE_DESCRIBE",
    "SHARE_OFFSETS",
    "STREAMS_DESCRIBE",
    "Failure",
    "GroupApi",
    "R",
    "by_group",
    "coordinator_or_error",
    "describe_classic",
    "offset_fetch",
    "unsupported",
]

R = TypeVar(
    "R",
    ConsumerGroupEpochs,
    GroupOffsets,
    ClassicGroup,
    ShareGroupDescription,
    ShareGroupOffsets,
    StreamsGroupDescription,
)
# A group's error code and why, where no coordinator could be asked about it.
Failure = tuple[int, str]

# Groups per OffsetFetch request. It bounds one answer (500 groups of 50 partitions is about
# 700 kB) and one coordinator's work per request; a coordinator's batches are all in flight
# at once anyway, on one connection.
OFFSET_FETCH_BATCH = 500
# Groups per DescribeGroups request, for the same reasons (an answer carries every member's
# subscription and assignment bytes: 500 groups of 10 members is a few hundred kB).
DESCRIBE_GROUPS_BATCH = 500


@dataclass(frozen=True)
class GroupApi(Generic[R]):
    """What differs between the per-group APIs asked of coordinators; the rest is shared."""

    api_key: int
    name: str
    encode: Callable[[int, list[str]], bytes]
    decode: Callable[[bytes, int], Sequence[R]]
    failed: Callable[[str, int, str | None], R]
    # Groups per request (None: all of a coordinator's groups in one).
    batch: int | None
    # Said of a broker that lacks the API altogether.
    absent: str
    # The result kept for a group the broker answered, given the coordinator's name.
    annotate: Callable[[R, str], R] = lambda result, _coordinator: result


def _describe_body(version: int, groups: list[str]) -> bytes:
    return encode_consumer_group_describe_request(version, groups)


def _describe_groups(body: bytes, version: int) -> Sequence[ConsumerGroupEpochs]:
    return decode_consumer_group_describe_response(body, version).groups


def _offsets_body(version: int, groups: list[str], require_stable: bool) -> bytes:
    return encode_offset_fetch_request(version, groups, require_stable)


def _offsets_groups(body: bytes, version: int) -> Sequence[GroupOffsets]:
    return decode_offset_fetch_response(body, version).groups


def _classic_body(version: int, groups: list[str]) -> bytes:
    return encode_describe_groups_request(version, groups)


def _classic_groups(body: bytes, version: int) -> Sequence[ClassicGroup]:
    return decode_describe_groups_response(body, version).groups


def _name_the_coordinator(result: R, coordinator: str) -> R:
    """OffsetFetch (and DescribeGroups before v6) carry codes without messages: say which
    coordinator gave the error."""
    if result.ok or result.error_message is not None:
        return result
    return replace(result, error_message=f"coordinator {coordinator}: {result.error_name}")


DESCRIBE = GroupApi(
    api_key=CONSUMER_GROUP_DESCRIBE,
    name="ConsumerGroupDescribe",
    encode=_describe_body,
    decode=_describe_groups,
    failed=ConsumerGroupEpochs.failed,
    batch=None,
    absent=": no KIP-848 groups there",
)


def offset_fetch(require_stable: bool) -> GroupApi[GroupOffsets]:
    return GroupApi(
        api_key=OFFSET_FETCH,
        name="OffsetFetch",
        encode=partial(_offsets_body, require_stable=require_stable),
        decode=_offsets_groups,
        failed=GroupOffsets.failed,
        batch=OFFSET_FETCH_BATCH,
        absent=" (batched OffsetFetch is v8+, Kafka 3.0+)",
        annotate=_name_the_coordinator,
    )


def describe_classic() -> GroupApi[ClassicGroup]:
    return GroupApi(
        api_key=DESCRIBE_GROUPS,
        name="DescribeGroups",
        encode=_classic_body,
        decode=_classic_groups,
        failed=ClassicGroup.failed,
        batch=DESCRIBE_GROUPS_BATCH,
        absent="",
        annotate=_name_the_coordinator,
    )


def _share_describe_body(version: int, groups: list[str]) -> bytes:
    return encode_share_group_describe_request(version, groups)


def _share_described(body: bytes, version: int) -> Sequence[ShareGroupDescription]:
    return decode_share_group_describe_response(body, version).groups


def _share_offsets_body(version: int, groups: list[str]) -> bytes:
    return encode_describe_share_group_offsets_request(version, groups, None)


def _share_offsets(body: bytes, version: int) -> Sequence[ShareGroupOffsets]:
    return decode_describe_share_group_offsets_response(body, version).groups


# Share groups (KIP-932): their coordinator is the group coordinator, found as any group's.
SHARE_DESCRIBE = GroupApi(
    api_key=SHARE_GROUP_DESCRIBE,
    name="ShareGroupDescribe",
    encode=_share_describe_body,
    decode=_share_described,
    failed=ShareGroupDescription.failed,
    batch=DESCRIBE_GROUPS_BATCH,
    absent=": no share groups there (Kafka 4.1+)",
)
SHARE_OFFSETS = GroupApi(
    api_key=DESCRIBE_SHARE_GROUP_OFFSETS,
    name="DescribeShareGroupOffsets",
    encode=_share_offsets_body,
    decode=_share_offsets,
    failed=ShareGroupOffsets.failed,
    batch=OFFSET_FETCH_BATCH,
    absent=": no share groups there (Kafka 4.1+)",
    annotate=_name_the_coordinator,
)


def _streams_describe_body(version: int, groups: list[str]) -> bytes:
    return encode_streams_group_describe_request(version, groups)


def _streams_described(body: bytes, version: int) -> Sequence[StreamsGroupDescription]:
    return decode_streams_group_describe_response(body, version).groups


# Streams groups (KIP-1071): their coordinator is the group coordinator too. Their committed
# offsets are a consumer group's, read with OffsetFetch.
STREAMS_DESCRIBE = GroupApi(
    api_key=STREAMS_GROUP_DESCRIBE,
    name="StreamsGroupDescribe",
    encode=_streams_describe_body,
    decode=_streams_described,
    failed=StreamsGroupDescription.failed,
    batch=DESCRIBE_GROUPS_BATCH,
    absent=": no streams groups there (Kafka 4.1+, served by default from 4.2)",
)


def coordinator_or_error(found: Coordinator | None, asked: str) -> Coordinator | Failure:
    """A group's coordinator as FindCoordinator named it, or the failure that is its result."""
    if found is None:
        return UNKNOWN_SERVER_ERROR, f"{asked} left the group out of FindCoordinator"
    if found.error_code:
        why = found.error_message or error_name(found.error_code)
        return found.error_code, f"FindCoordinator: {why}"
    return found


def by_group(
    api: GroupApi[R], groups: list[str], answered: Sequence[R], coordinator: str
) -> dict[str, R]:
    found = {result.group: result for result in answered}
    missing = f"{coordinator} left the group out of its answer"
    return {
        g: api.annotate(found[g], coordinator)
        if g in found
        else api.failed(g, UNKNOWN_SERVER_ERROR, missing)
        for g in groups
    }


def unsupported(api: GroupApi[Any], conn: Connection) -> str:
    theirs = conn.api_versions.get(api.api_key)
    low, high = OUR_VERSIONS[api.api_key]
    if theirs is None:
        return f"{conn.name} does not offer {api.name} (API {api.api_key}){api.absent}"
    return f"{conn.name} offers {api.name} v{theirs[0]}-{theirs[1]}, not v{low}-{high}"

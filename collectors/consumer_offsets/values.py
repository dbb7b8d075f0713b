"""The value layouts of ``__consumer_offsets`` records, and a short path for commits.

Values are where the versions are: offset commits in five layouts (v0-v4), classic group
metadata in five, and inside a "consumer" group's members the consumer protocol's
``ConsumerProtocolAssignment`` (see ``docs/CONSUMER_OFFSETS_LAYOUT.md`` for the
layouts with their citations). Newer assignment versions are read with the v3 layout and
their extra bytes ignored, exactly as ``ConsumerProtocol.deserializeAssignment`` does,
because the consumer protocol only ever appends fields; within the versions known here,
trailing bytes are an error.

The short path (:func:`fast_commit`) is here because it is a second reading of the same
layouts: a busy cluster's topic holds millions of offset commits, nearly all in one of five
fixed layouts, and reading those with a few ``struct`` calls instead of the cursor is most of
a catch-up's speed. It gives the same fields as :func:`offset_commit_value` for every value it
accepts, and declines (None) every byte string it has the slightest doubt about (a length
that does not add up, a null, a multi-byte varint); the tests check that on every version and
on mutated bytes.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from collectors.consumer_offsets.cursor import UNKNOWN_VERSION, Cursor, DecodeError

__all__ = [
    "Record",
    "decode_consumer_assignment",
    "fast_commit",
    "fast_commit_key",
    "group_metadata_value",
    "offset_commit_value",
]

Record = dict[str, Any]

_HIGHEST_OFFSET_VALUE_VERSION: Final = 4
_HIGHEST_GROUP_VALUE_VERSION: Final = 4
_HIGHEST_ASSIGNMENT_VERSION: Final = 3
_CONSUMER_PROTOCOL_TYPE: Final = "consumer"

# Error-message prefixes, built once: formatting them per record shows up at millions of records.
_OFFSET_VALUE_WHERE: Final = tuple(
    f"offset commit value v{v}" for v in range(_HIGHEST_OFFSET_VALUE_VERSION + 1)
)
_GROUP_VALUE_WHERE: Final = tuple(
    f"group metadata value v{v}" for v in range(_HIGHEST_GROUP_VALUE_VERSION + 1)
)

_I64 = struct.Struct(">q").unpack_from
_I32 = struct.Struct(">i").unpack_from
# Offset commit value layouts, up to the metadata string (see CONSUMER_OFFSETS_LAYOUT.md).
_V0_HEAD = struct.Struct(">hqh").unpack_from  # v0, v1, v2: version, offset, metadata length
_V3_HEAD = struct.Struct(">hqih").unpack_from  # v3: version, offset, leader epoch, length
_V4_HEAD = struct.Struct(">hqiB").unpack_from  # v4: ..., first byte of the compact length
_V4_EMPTY = struct.Struct(">hqiBqB").unpack_from  # v4 without metadata: 24 bytes
# v4's tagged fields as Kafka 4.2+ writes them: one field, tag 0 (the topic's id), 16 bytes.
_V4_TOPIC_ID_TAG: Final = b"\x01\x00\x10"
_V4_TOPIC_ID_SIZE: Final = 1 + 1 + 1 + 16  # count, tag, size, UUID


def offset_commit_value(value: bytes) -> Record:
    c = Cursor(value, "offset commit value")
    version = c.int16("value_version")
    if not 0 <= version <= _HIGHEST_OFFSET_VALUE_VERSION:
        raise DecodeError(
            f"offset commit value: unknown value version {version} "
            f"(known: 0-{_HIGHEST_OFFSET_VALUE_VERSION})",
            kind=UNKNOWN_VERSION,
            offset=0,
            field="value_version",
        )
    c.where = _OFFSET_VALUE_WHERE[version]
    offset = c.int64("offset")
    leader_epoch = c.int32("leader_epoch") if version >= 3 else -1
    metadata = c.compact_string("metadata") if version >= 4 else c.string("metadata")
    commit_timestamp = c.int64("commit_timestamp")
    expire_timestamp = c.int64("expire_timestamp") if version == 1 else -1
    if version >= 4:
        c.skip_tagged_fields()
    c.finish()
    # -1 is the schemas' "not set" default for both; Kafka's OffsetAndMetadata turns it into
    # an empty Optional, and None says the same thing here.
    return {
        "type": "offset_commit",
        "offset": offset,
        "commit_timestamp_ms": commit_timestamp,
        "metadata": metadata,
        "leader_epoch": None if leader_epoch == -1 else leader_epoch,
        "expire_timestamp_ms": None if expire_timestamp == -1 else expire_timestamp,
        "value_version": version,
        "deleted": False,
    }


def group_metadata_value(value: bytes) -> Record:
    c = Cursor(value, "group metadata value")
    version = c.int16("value_version")
    if not 0 <= version <= _HIGHEST_GROUP_VALUE_VERSION:
        raise DecodeError(
            f"group metadata value: unknown value version {version} "
            f"(known: 0-{_HIGHEST_GROUP_VALUE_VERSION})",
            kind=UNKNOWN_VERSION,
            offset=0,
            field="value_version",
        )
    where = c.where = _GROUP_VALUE_WHERE[version]
    flexible = version >= 4
    nullable_string = c.nullable_compact_string if flexible else c.nullable_string
    protocol_type = (c.compact_string if flexible else c.string)("protocol_type")
    generation = c.int32("generation")
    protocol = nullable_string("protocol")
    leader = nullable_string("leader")
    current_state_timestamp = c.int64("current_state_timestamp") if version >= 2 else -1
    count = (c.compact_array_count if flexible else c.array_count)("members")
    decode_assignment = protocol_type == _CONSUMER_PROTOCOL_TYPE
    members = []
    for index in range(count):
        c.where = f"{where} member {index}"
        members.append(_member(c, version, decode_assignment))
    c.where = where
    if flexible:
        c.skip_tagged_fields()
    c.finish()
    return {
        "type": "group_metadata",
        "generation": generation,
        "protocol_type": protocol_type,
        "protocol": protocol,
        "leader": leader,
        "current_state_timestamp_ms": (
            None if current_state_timestamp == -1 else current_state_timestamp
        ),
        "members": members,
        "value_version": version,
        "deleted": False,
    }


def _member(c: Cursor, version: int, decode_assignment: bool) -> Record:
    flexible = version >= 4
    string = c.compact_string if flexible else c.string
    blob = c.compact_bytes_span if flexible else c.bytes_span
    member_id = string("member_id")
    group_instance_id = (
        (c.nullable_compact_string if flexible else c.nullable_string)("group_instance_id")
        if version >= 3
        else None
    )
    client_id = string("client_id")
    client_host = string("client_host")
    rebalance_timeout = c.int32("rebalance_timeout") if version >= 1 else None
    session_timeout = c.int32("session_timeout")
    blob("subscription")  # opaque here: the assignment, not the subscription, says who owns what
    start, end = blob("assignment")
    if flexible:
        c.skip_tagged_fields()
    # Only the "consumer" protocol embeds ConsumerProtocolAssignment; Connect and other
    # protocol types use their own formats, which say nothing about partition ownership.
    # Empty bytes mean "no assignment yet" (a member between join and sync, or a group stored
    # with an empty assignment), which Kafka's admin client also reads as no partitions.
    assignment = (
        _assignment(c.buf, start, end, f"{c.where} assignment")
        if decode_assignment and start != end
        else {}
    )
    return {
        "member_id": member_id,
        "group_instance_id": group_instance_id,
        "client_id": client_id,
        "client_host": client_host,
        # Kafka's v0 loader used the session timeout as the rebalance timeout (KIP-62 added it).
        "rebalance_timeout_ms": session_timeout if rebalance_timeout is None else rebalance_timeout,
        "session_timeout_ms": session_timeout,
        "assignment": assignment,
    }


def decode_consumer_assignment(
    data: bytes, where: str = "consumer protocol assignment"
) -> dict[str, list[int]]:
    """Decode a whole ConsumerProtocolAssignment (a classic member's assignment bytes, as
    DescribeGroups also gives them) into topic -> partitions, or raise :class:`DecodeError`.

    The same reader as for ``__consumer_offsets`` records, so both sources agree on every
    layout rule; ``where`` starts the error messages. Callers decide what empty bytes mean
    (here they are truncated: an assignment has at least a version).
    """
    return _assignment(data, 0, len(data), where)


def decode_consumer_subscription(
    data: bytes, where: str = "consumer protocol subscription"
) -> tuple[str, ...]:
    """The topics of a ConsumerProtocolSubscription (a classic member's metadata, as
    DescribeGroups gives it): what the member asked the group's leader for, sorted, or raise
    :class:`DecodeError`.

    The topics come first in every version (Version, Topics, UserData, then v1's
    OwnedPartitions, v2's GenerationId, v3's RackId), so only they are read; the leader's
    assignor saw exactly these names. A member lists only topics its client knew to exist
    when it joined (librdkafka leaves out one not yet in its metadata), which is why the
    what-if must not assume every member asked for every topic of the group.
    """
    c = Cursor(data, where, 0, len(data))
    version = c.int16("version")
    if version < 0:
        raise DecodeError(
            f"{where}: unsupported subscription version {version} at byte 0",
            kind=UNKNOWN_VERSION, offset=0, field="version",
        )  # fmt: skip
    return tuple(sorted({c.string("topic") for _ in range(c.array_count("topics", 2))}))


def _assignment(buf: bytes, start: int, end: int, where: str) -> dict[str, list[int]]:
    """Decode ConsumerProtocolAssignment bytes into topic -> partitions.

    Topics listed twice are merged rather than overwritten, so no partition is lost.
    """
    c = Cursor(buf, where, start, end)
    version = c.int16("version")
    if version < 0:
        raise DecodeError(
            f"{where}: unsupported assignment version {version} at byte {start}",
            kind=UNKNOWN_VERSION,
            offset=start,
            field="version",
        )
    result: dict[str, list[int]] = {}
    for _ in range(c.array_count("topics", elem_size=6)):
        topic = c.string("topic")
        n = c.array_count("partitions", elem_size=4)
        partitions = list(struct.unpack_from(f">{n}i", buf, c.take(4 * n, "partitions")))
        known = result.get(topic)
        if known is None:
            result[topic] = partitions
        else:
            known.extend(partitions)
    c.bytes_span("user_data", nullable=True)
    if version <= _HIGHEST_ASSIGNMENT_VERSION:
        c.finish()
    return result


def fast_commit(value: bytes, timestamp_ms: int, partition: int, offset: int) -> tuple | None:
    """The commit an offset-commit value holds (CommitInfo's fields), or None when this short
    path is not sure.

    None sends the record to ``decode_record``, which either decodes the value or says exactly
    what is wrong with it. A value is accepted only if its length is exactly what its
    version's layout gives for the metadata length it states, so trailing bytes, truncation,
    nulls and negative lengths all fall through. Called once per commit, millions of times.
    """
    size = len(value)
    if size < 20 or value[0] != 0:
        return None
    version = value[1]
    if (
        version == 4
        and value[14] == 1
        and (
            (size == 24 and value[23] == 0)
            or (size == 23 + _V4_TOPIC_ID_SIZE and value[23:26] == _V4_TOPIC_ID_TAG)
        )
    ):
        # What Kafka 4 writes for a commit without metadata (4.2 and later with the topic's
        # id as its one tagged field), read in one call.
        _, committed, epoch, _, commit_ts, _ = _V4_EMPTY(value, 0)
        metadata = ""
    elif version == 4:
        _, committed, epoch, head = _V4_HEAD(value)
        # One-byte compact length (0 would be null), metadata, timestamp, then no tagged
        # field or only the topic's id.
        end = 14 + head
        if head == 0 or head >= 0x80:
            return None
        tail = size - end - 8
        if not (
            (tail == 1 and value[-1] == 0)
            or (tail == _V4_TOPIC_ID_SIZE and value[end + 8 : end + 11] == _V4_TOPIC_ID_TAG)
        ):
            return None
        metadata = value[15:end].decode("utf-8", "replace") if head > 1 else ""
        commit_ts = _I64(value, end)[0]
    elif version == 3:
        _, committed, epoch, n = _V3_HEAD(value)
        end = 16 + n
        if n < 0 or size != end + 8:
            return None
        metadata = value[16:end].decode("utf-8", "replace") if n else ""
        commit_ts = _I64(value, end)[0]
    elif version <= 2:
        _, committed, n = _V0_HEAD(value)
        end = 12 + n
        epoch = -1
        # v1 carries an expire timestamp after the commit timestamp.
        if n < 0 or size != end + (16 if version == 1 else 8):
            return None
        metadata = value[12:end].decode("utf-8", "replace") if n else ""
        commit_ts = _I64(value, end)[0]
    else:
        return None
    return (
        committed,
        commit_ts if commit_ts >= 0 else timestamp_ms,
        metadata,
        timestamp_ms,
        None if epoch == -1 else epoch,
        partition,
        offset,
    )


def fast_commit_key(key: bytes) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an offset-commit key (versions 0 and 1 share a layout), or
    None when this short path is not sure; ``decode_record`` then decides. Accepted only if
    both lengths are non-negative and the key ends exactly after the partition. Called once
    per key a reader meets."""
    size = len(key)
    if size < 10 or key[0] != 0 or key[1] > 1 or key[2] & 0x80:
        return None
    topic_at = 4 + ((key[2] << 8) | key[3])
    if topic_at + 6 > size or key[topic_at] & 0x80:
        return None
    end = topic_at + 2 + ((key[topic_at] << 8) | key[topic_at + 1])
    if end + 4 != size:
        return None
    return (
        key[4:topic_at].decode("utf-8", "replace"),
        key[topic_at + 2 : end].decode("utf-8", "replace"),
        _I32(key, end)[0],
    )

"""Decoder for records of Kafka's internal ``__consumer_offsets`` topic.

Real Apache Kafka clusters let a group-less consumer read this topic, and it is the only
place where every offset commit arrives with its commit timestamp and every generation change
of a classic group is visible (SPEC §2.2). The bytes follow Kafka's own message schemas
(``OffsetCommitKey/Value``, ``GroupMetadataKey/Value`` in ``group-coordinator`` and, inside a
group's members, ``ConsumerProtocolAssignment``); see
``../shared/testdata/CONSUMER_OFFSETS_LAYOUT.md`` for the layouts with their citations.

Where Burrow and Kafka disagree, this module follows Kafka:

* offset-commit value v2 is a valid layout (Burrow rejects it);
* flexible versions (v4) must end with their tagged-field section (Burrow never reads it);
* key versions 3-15 are KIP-848 consumer/share-group records, reported as an unsupported
  record type rather than as garbage;
* a null in a non-nullable field is an error (Burrow maps every null string to ``""``).

It is stricter than Kafka's Java readers in three ways, because a monitoring reader should
notice corruption rather than guess: trailing bytes after a record, string/bytes lengths below
-1, and trailing bytes inside a consumer-protocol assignment of a version this module knows
(0-3) are all errors. Newer assignment versions are read with the v3 layout and their extra
bytes ignored, exactly as ``ConsumerProtocol.deserializeAssignment`` does, because the
consumer protocol only ever appends fields.

The module is pure (no I/O, no Django) so the collector, a Celery task and the tests can all
call it; a reader loop uses :class:`DecodeStats` to count and skip what cannot be decoded.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

__all__ = [
    "MALFORMED",
    "TRUNCATED",
    "UNKNOWN_VERSION",
    "UNSUPPORTED_RECORD_TYPE",
    "DecodeError",
    "DecodeStats",
    "decode_consumer_assignment",
    "decode_record",
]

Record = dict[str, Any]

# DecodeError.kind values: a reader counts skipped records by these, so that "the topic holds
# KIP-848 records we do not read" is not confused with "the topic holds corrupt bytes".
TRUNCATED: Final = "truncated"
MALFORMED: Final = "malformed"
UNKNOWN_VERSION: Final = "unknown_version"
UNSUPPORTED_RECORD_TYPE: Final = "unsupported_record_type"

_I16: Final = struct.Struct(">h").unpack_from
_I32: Final = struct.Struct(">i").unpack_from
_I64: Final = struct.Struct(">q").unpack_from

_MAX_STRING_LENGTH: Final = 0x7FFF  # Kafka's generated readers reject longer compact strings.
_HIGHEST_OFFSET_VALUE_VERSION: Final = 4
_HIGHEST_GROUP_VALUE_VERSION: Final = 4
_HIGHEST_ASSIGNMENT_VERSION: Final = 3
_CONSUMER_PROTOCOL_TYPE: Final = "consumer"

# Error-message prefixes, built once: formatting them per record shows up at millions of records.
_OFFSET_KEY_WHERE: Final = ("offset commit key v0", "offset commit key v1")
_OFFSET_VALUE_WHERE: Final = tuple(
    f"offset commit value v{v}" for v in range(_HIGHEST_OFFSET_VALUE_VERSION + 1)
)
_GROUP_VALUE_WHERE: Final = tuple(
    f"group metadata value v{v}" for v in range(_HIGHEST_GROUP_VALUE_VERSION + 1)
)


class DecodeError(ValueError):
    """Bytes that Kafka's schemas do not allow, with the reason and the byte where it happened.

    ``kind`` lets a reader tell corruption from records it merely does not read; ``offset`` is
    the byte position in the key or value (the message says which) for a hex dump; ``field``
    is the schema field being read when decoding stopped (None for trailing bytes).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = MALFORMED,
        offset: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.offset = offset
        self.field = field


class _Cursor:
    """Bounds-checked reads over one buffer, so no IndexError or struct.error can escape.

    ``where`` names the structure being read; every error message starts with it. Offsets are
    absolute within ``buf`` even for a sub-range (an embedded assignment), so they line up with
    a hex dump of the whole value.
    """

    __slots__ = ("buf", "end", "pos", "where")

    def __init__(self, buf: bytes, where: str, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.where = where

    def _truncated(self, pos: int, name: str, n: int) -> NoReturn:
        left = self.end - pos
        raise DecodeError(
            f"{self.where}: truncated at byte {pos} reading {name} (needs {n} bytes, {left} left)",
            kind=TRUNCATED,
            offset=pos,
            field=name,
        )

    def take(self, n: int, name: str) -> int:
        """Claim n bytes and return where they start; for runs of fixed-size items."""
        pos = self.pos
        if pos + n > self.end:
            self._truncated(pos, name, n)
        self.pos = pos + n
        return pos

    # The readers below inline take(): they run several times per record, millions of times.

    def int16(self, name: str) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            self._truncated(pos, name, 2)
        self.pos = pos + 2
        return _I16(self.buf, pos)[0]

    def int32(self, name: str) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            self._truncated(pos, name, 4)
        self.pos = pos + 4
        return _I32(self.buf, pos)[0]

    def int64(self, name: str) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            self._truncated(pos, name, 8)
        self.pos = pos + 8
        return _I64(self.buf, pos)[0]

    def _negative_length(self, n: int, name: str, pos: int, nullable: bool) -> None:
        """Accept -1 as null where the schema allows it; anything else negative is corrupt."""
        if n == -1:
            if nullable:
                return
            raise DecodeError(
                f"{self.where}: null {name} at byte {pos}, but {name} is not nullable",
                offset=pos,
                field=name,
            )
        raise DecodeError(
            f"{self.where}: negative length {n} at byte {pos} for {name}", offset=pos, field=name
        )

    def _text(self, n: int, name: str) -> str:
        start = self.pos
        stop = start + n
        if stop > self.end:
            self._truncated_text(start, name, n)
        self.pos = stop
        # Java's new String(bytes, UTF_8) replaces bad sequences instead of failing; so do we.
        return self.buf[start:stop].decode("utf-8", "replace")

    def _truncated_text(self, start: int, name: str, n: int) -> NoReturn:
        raise DecodeError(
            f"{self.where}: truncated at byte {start} reading {name} "
            f"(length {n}, {self.end - start} bytes left)",
            kind=TRUNCATED,
            offset=start,
            field=name,
        )

    def string(self, name: str) -> str:
        buf = self.buf
        pos = self.pos
        if pos + 2 > self.end:
            self._truncated(pos, name, 2)
        n = _I16(buf, pos)[0]
        if n < 0:
            self._negative_length(n, name, pos, nullable=False)
        start = pos + 2
        stop = start + n
        if stop > self.end:
            self._truncated_text(start, name, n)
        self.pos = stop
        return buf[start:stop].decode("utf-8", "replace")

    def nullable_string(self, name: str) -> str | None:
        pos = self.pos
        n = self.int16(name)
        if n < 0:
            self._negative_length(n, name, pos, nullable=True)
            return None
        return self._text(n, name)

    def bytes_span(self, name: str, nullable: bool = False) -> tuple[int, int]:
        """Return (start, end) of a bytes field instead of copying it: most are skipped.

        A null (nullable fields only) comes back as an empty span; no caller needs to tell
        null from empty.
        """
        pos = self.pos
        n = _I32(self.buf, self.take(4, name))[0]
        if n < 0:
            self._negative_length(n, name, pos, nullable)
            return pos + 4, pos + 4
        start = self.take(n, name)
        return start, start + n

    def array_count(self, name: str, elem_size: int = 1) -> int:
        """Read a non-nullable array count, refusing counts the remaining bytes cannot hold.

        The check mirrors Kafka's "Tried to allocate a collection of size N" guard and keeps a
        corrupt count from driving a loop of billions of iterations.
        """
        pos = self.pos
        n = _I32(self.buf, self.take(4, name))[0]
        if n < 0:
            self._negative_length(n, name, pos, nullable=False)
        self._check_count(n, name, pos, elem_size)
        return n

    def _check_count(self, n: int, name: str, pos: int, elem_size: int) -> None:
        left = self.end - self.pos
        if n * elem_size > left:
            raise DecodeError(
                f"{self.where}: truncated at byte {pos}: {name} count {n} needs at least "
                f"{n * elem_size} bytes, {left} left",
                kind=TRUNCATED,
                offset=pos,
                field=name,
            )

    # Flexible versions (v4, KIP-915): unsigned varints, compact types, tagged fields.

    def uvarint(self, name: str) -> int:
        buf = self.buf
        pos = start = self.pos
        end = self.end
        value = 0
        for shift in (0, 7, 14, 21, 28):
            if pos >= end:
                raise DecodeError(
                    f"{self.where}: truncated at byte {start} reading {name} (varint)",
                    kind=TRUNCATED,
                    offset=start,
                    field=name,
                )
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return value
        raise DecodeError(
            f"{self.where}: varint longer than 5 bytes at byte {start} reading {name}",
            offset=start,
            field=name,
        )

    def _compact_length(self, name: str, nullable: bool) -> int:
        """Read an N+1 length; return N, with -1 only for a null the schema allows."""
        pos = self.pos
        n = self.uvarint(name) - 1
        if n < 0:
            self._negative_length(n, name, pos, nullable)
        return n

    def compact_string(self, name: str) -> str:
        pos = self.pos
        return self._compact_text(self._compact_length(name, False), name, pos)

    def nullable_compact_string(self, name: str) -> str | None:
        pos = self.pos
        n = self._compact_length(name, True)
        return None if n < 0 else self._compact_text(n, name, pos)

    def _compact_text(self, n: int, name: str, pos: int) -> str:
        if n > _MAX_STRING_LENGTH:
            raise DecodeError(
                f"{self.where}: {name} length {n} at byte {pos} exceeds {_MAX_STRING_LENGTH}",
                offset=pos,
                field=name,
            )
        return self._text(n, name)

    def compact_bytes_span(self, name: str, nullable: bool = False) -> tuple[int, int]:
        n = self._compact_length(name, nullable)
        if n < 0:
            return self.pos, self.pos
        start = self.take(n, name)
        return start, start + n

    def compact_array_count(self, name: str, elem_size: int = 1) -> int:
        pos = self.pos
        n = self._compact_length(name, nullable=False)
        self._check_count(n, name, pos, elem_size)
        return n

    def skip_tagged_fields(self) -> None:
        """Skip the mandatory tagged-field section; no tag of these records carries data we use."""
        count = self.uvarint("tagged_fields")
        for _ in range(count):
            tag = self.uvarint("tagged_fields")
            size = self.uvarint(f"tagged field {tag}")
            self.take(size, f"tagged field {tag}")

    def finish(self) -> None:
        if self.pos != self.end:
            raise DecodeError(
                f"{self.where}: {self.end - self.pos} trailing bytes at byte {self.pos}",
                offset=self.pos,
            )


def decode_record(key: bytes, value: bytes | None) -> Record:
    """Decode one ``__consumer_offsets`` record, or raise :class:`DecodeError`.

    A ``None`` value is a tombstone (offsets deleted or expired, group deleted) and yields the
    key's fields with ``deleted: True``; an empty, non-null value is not a tombstone in Kafka
    and fails as truncated. ``bytearray``/``memoryview`` are accepted (copied once) because
    client libraries differ in what they hand out.
    """
    if key is None:
        raise DecodeError("key: missing (null) key", field="key_version")
    if type(key) is not bytes:
        key = bytes(key)
    if value is not None and type(value) is not bytes:
        value = bytes(value)

    kc = _Cursor(key, "key")
    key_version = kc.int16("key_version")
    if key_version == 0 or key_version == 1:
        kc.where = _OFFSET_KEY_WHERE[key_version]
        group = kc.string("group")
        topic = kc.string("topic")
        partition = kc.int32("partition")
        kc.finish()
        if value is None:
            return {
                "type": "offset_commit",
                "group": group,
                "topic": topic,
                "partition": partition,
                "key_version": key_version,
                "deleted": True,
            }
        record = _offset_commit_value(value)
        record["group"] = group
        record["topic"] = topic
        record["partition"] = partition
        record["key_version"] = key_version
        return record
    if key_version == 2:
        kc.where = "group metadata key v2"
        group = kc.string("group")
        kc.finish()
        if value is None:
            return {"type": "group_metadata", "group": group, "key_version": 2, "deleted": True}
        record = _group_metadata_value(value)
        record["group"] = group
        record["key_version"] = 2
        return record
    if 3 <= key_version <= 15:
        # GroupCoordinatorRecordSerde maps these to KIP-848 records (3 = ConsumerGroupMetadataKey
        # and so on); they describe the new consumer/share-group protocols, not classic groups.
        raise DecodeError(
            f"key: key version {key_version} is a KIP-848 consumer/share-group record type, "
            "not an offset commit or classic group metadata; not decoded",
            kind=UNSUPPORTED_RECORD_TYPE,
            offset=0,
            field="key_version",
        )
    raise DecodeError(
        f"key: unknown key version {key_version} (known: 0-2 decoded, 3-15 KIP-848)",
        kind=UNKNOWN_VERSION,
        offset=0,
        field="key_version",
    )


def _offset_commit_value(value: bytes) -> Record:
    c = _Cursor(value, "offset commit value")
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


def _group_metadata_value(value: bytes) -> Record:
    c = _Cursor(value, "group metadata value")
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


def _member(c: _Cursor, version: int, decode_assignment: bool) -> Record:
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


def _assignment(buf: bytes, start: int, end: int, where: str) -> dict[str, list[int]]:
    """Decode ConsumerProtocolAssignment bytes into topic -> partitions.

    Topics listed twice are merged rather than overwritten, so no partition is lost.
    """
    c = _Cursor(buf, where, start, end)
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


@dataclass
class DecodeStats:
    """Counts for a reader loop that must never stop on one bad record (SPEC §2.2).

    Use :meth:`decode` in place of :func:`decode_record`: it returns ``None`` for a record it
    skipped and keeps the counts (by record type, and skipped by ``DecodeError.kind``) that a
    collector exports as metrics, plus the last error for a log line.
    """

    decoded: Counter[str] = field(default_factory=Counter)
    deleted: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    last_error: str | None = None

    def decode(self, key: bytes, value: bytes | None) -> Record | None:
        try:
            record = decode_record(key, value)
        except DecodeError as exc:
            self.skipped[exc.kind] += 1
            self.last_error = str(exc)
            return None
        self.decoded[record["type"]] += 1
        if record["deleted"]:
            self.deleted += 1
        return record

    @property
    def total_decoded(self) -> int:
        return sum(self.decoded.values())

    @property
    def total_skipped(self) -> int:
        return sum(self.skipped.values())

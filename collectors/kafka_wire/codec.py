"""The bytes of the Kafka messages the group client exchanges, and nothing else (pure).

Encoders build request frames; decoders turn response bodies into frozen dataclasses. No
sockets here, so every rule of the format is tested with hand-built byte vectors
(``tests/collectors/test_kafka_wire.py``), including answers no local broker gives.

Written from Apache Kafka's message schemas, ``clients/src/main/resources/common/message/``
in apache/kafka: ``RequestHeader.json``, ``ResponseHeader.json``, ``ApiVersionsRequest.json``,
``ApiVersionsResponse.json``, ``FindCoordinatorRequest.json``, ``FindCoordinatorResponse.json``,
``ConsumerGroupDescribeRequest.json``, ``ConsumerGroupDescribeResponse.json``,
``OffsetFetchRequest.json``, ``OffsetFetchResponse.json``, ``DescribeGroupsRequest.json``,
``DescribeGroupsResponse.json``, as released in Kafka 4.1.1 (the
same files ship inside ``kafka-clients-4.1.1.jar`` under ``common/message/``; the lab's jar is
what they were checked against). ConsumerGroupDescribe v1 (KIP-1099, adds ``MemberType``) is
newer than 2024 copies of the repository, which have v0 only; an early draft of the response
(``MemberId`` as uuid, assignment metadata bytes) was never released.

OffsetFetch is spoken in its batched versions only, 8 (KIP-709, Kafka 3.0: many groups in one
request) and 9 (KIP-848: adds the member id and epoch, which an admin leaves null and -1, so
the broker skips member validation). Version 10 names topics by id instead of by name; Kafka
4.1 marks it ``latestVersionUnstable`` (not advertised by default) and it would need a
Metadata round trip to name the topics, so it is left out.

DescribeGroups (API 15, classic groups) is spoken in versions 5 (the first flexible one) and 6
(KIP-1043: an ``ErrorMessage`` per group, and GROUP_ID_NOT_FOUND for a group the coordinator
does not have as a classic group, where v5 answered state "Dead" without an error). It is what
``AdminClient.describe_consumer_groups`` asks for classic groups; a member's assignment is the
consumer protocol's own ``ConsumerProtocolAssignment`` bytes, read by the same decoder as the
``__consumer_offsets`` records (``collectors.consumer_offsets``).

Format rules the decoders follow, and why they are strict:

* "Flexible" versions (ConsumerGroupDescribe 0+, FindCoordinator 3+, ApiVersions 3+,
  OffsetFetch 6+, DescribeGroups 5+) use compact strings and arrays (unsigned-varint length
  + 1, 0 meaning null) and end every struct with tagged fields. Unknown tags are skipped: that
  is how Kafka adds optional fields without a new version, so skipping them is the
  forward-compatible reading.
* Every read is bounds-checked and names the field it was reading, so a truncated or garbled
  answer raises ``WireError`` ("... reading Groups[0].Members[1].ClientId"), never
  ``IndexError`` or ``struct.error``. Bytes left over after a complete message are an error
  too: we asked for one exact version, so extra bytes mean we misread it.
* A null where the schema does not allow one is an error, as it is in Kafka's own reader.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from collectors.consumer_offsets import DecodeError, decode_consumer_assignment

__all__ = [
    "API_VERSIONS",
    "CONSUMER_GROUP_DESCRIBE",
    "DESCRIBE_GROUPS",
    "ERROR_NAMES",
    "FIND_COORDINATOR",
    "NO_OFFSET",
    "OFFSET_FETCH",
    "OUR_VERSIONS",
    "ApiVersionsResult",
    "ClassicGroup",
    "ClassicMember",
    "ConsumerGroupDescribeResult",
    "ConsumerGroupEpochs",
    "Coordinator",
    "DescribeGroupsResult",
    "FindCoordinatorResult",
    "GroupOffsets",
    "MemberEpochs",
    "OffsetFetchResult",
    "PartitionOffset",
    "WireError",
    "choose_version",
    "decode_api_versions_response",
    "decode_consumer_group_describe_response",
    "decode_describe_groups_response",
    "decode_find_coordinator_response",
    "decode_offset_fetch_response",
    "decode_response_header",
    "encode_api_versions_request",
    "encode_consumer_group_describe_request",
    "encode_describe_groups_request",
    "encode_find_coordinator_request",
    "encode_offset_fetch_request",
    "encode_request",
    "error_name",
    "is_flexible",
    "read_uvarint",
    "request_header_version",
    "response_header_version",
    "uuid_str",
    "uvarint",
]

T = TypeVar("T")

OFFSET_FETCH = 9
API_VERSIONS = 18
FIND_COORDINATOR = 10
CONSUMER_GROUP_DESCRIBE = 69
DESCRIBE_GROUPS = 15

# The versions this module can write and read, per API key. FindCoordinator starts at 4, the
# first that batches keys; 5 and 6 only add error codes and key types, same layout.
# ApiVersions 4 is laid out as 3 (it only lifts a restriction on feature versions).
OUR_VERSIONS: dict[int, tuple[int, int]] = {
    API_VERSIONS: (0, 4),
    FIND_COORDINATOR: (4, 6),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
    OFFSET_FETCH: (8, 9),
    DESCRIBE_GROUPS: (5, 6),
}
# First flexible version of each API (the schemas' "flexibleVersions").
_FIRST_FLEXIBLE = {
    API_VERSIONS: 3,
    FIND_COORDINATOR: 3,
    CONSUMER_GROUP_DESCRIBE: 0,
    OFFSET_FETCH: 6,
    DESCRIBE_GROUPS: 5,
}

# Kafka's error names (org.apache.kafka.common.protocol.Errors) for the codes these APIs answer.
ERROR_NAMES: dict[int, str] = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    7: "REQUEST_TIMED_OUT",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    24: "INVALID_GROUP_ID",
    25: "UNKNOWN_MEMBER_ID",
    29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION",
    42: "INVALID_REQUEST",
    69: "GROUP_ID_NOT_FOUND",
    88: "UNSTABLE_OFFSET_COMMIT",
    100: "UNKNOWN_TOPIC_ID",
    113: "STALE_MEMBER_EPOCH",
}

# MemberType of ConsumerGroupDescribe v1: -1 unknown, 0 classic, 1 consumer. Spelled as Kafka's
# GroupType names, which is how the rest of Lagwatch names group protocols.
_MEMBER_TYPES = {0: "classic", 1: "consumer"}

# The ProtocolType of groups whose members' assignments are ConsumerProtocolAssignment bytes.
_CONSUMER_PROTOCOL_TYPE = "consumer"

# AuthorizedOperations when the request did not ask for them (the schema's default).
_OPERATIONS_NOT_REQUESTED = -(2**31)
_MAX_STRING = 0x7FFF  # Kafka strings are at most 32767 bytes, compact or not

# CommittedOffset of a partition without a commit (OffsetFetchResponse.INVALID_OFFSET), and
# the CommittedLeaderEpoch of a commit that did not say (the schema's default).
NO_OFFSET = -1
_NO_LEADER_EPOCH = -1
# PartitionIndex, CommittedOffset, CommittedLeaderEpoch: read at once (answers hold many).
_PARTITION_HEAD = struct.Struct(">iqi")


class WireError(ValueError):
    """Bytes that are not the Kafka message they should be (truncated, garbled, misframed)."""


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"ERROR_{code}")


def is_flexible(api_key: int, version: int) -> bool:
    return version >= _FIRST_FLEXIBLE[api_key]


def request_header_version(api_key: int, version: int) -> int:
    """RequestHeader v2 (tagged fields) for flexible requests, v1 otherwise."""
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """ResponseHeader v1 for flexible responses, v0 otherwise; always v0 for ApiVersions.

    The exception is the schema's own (ApiVersionsResponse.json): a client does not yet know
    what the broker speaks when it reads this answer, so its header must never change.
    """
    if api_key == API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, version) else 0


def choose_version(api_key: int, broker: Mapping[int, tuple[int, int]]) -> int | None:
    """The highest version both sides speak, or None (the broker lacks the API, or overlap)."""
    if api_key not in broker:
        return None
    ours_lo, ours_hi = OUR_VERSIONS[api_key]
    theirs_lo, theirs_hi = broker[api_key]
    best = min(ours_hi, theirs_hi)
    return best if best >= max(ours_lo, theirs_lo) else None


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiVersionsResult:
    error_code: int
    api_versions: Mapping[int, tuple[int, int]] = field(hash=False)
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class Coordinator:
    key: str
    node_id: int
    host: str
    port: int
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True)
class FindCoordinatorResult:
    throttle_time_ms: int
    coordinators: tuple[Coordinator, ...]


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
class ConsumerGroupEpochs:
    """One group's ConsumerGroupDescribe answer, or why there is none.

    On an error (``error_code != 0``) the broker fills the other fields with the schema's
    defaults, which are not facts about the group, so they are None/empty here. A classic
    group is such an error: GROUP_ID_NOT_FOUND, "Group ... is not a consumer group".
    ``state`` and ``assignor`` are None where the broker sent the empty string ("did not say").
    ``topic_ids`` maps every topic named in an assignment to its id (Kafka's base64 form).
    """

    group: str
    state: str | None
    group_epoch: int | None
    assignment_epoch: int | None
    assignor: str | None
    members: tuple[MemberEpochs, ...]
    error_code: int = 0
    error_message: str | None = None
    topic_ids: tuple[tuple[str, str], ...] = ()
    authorized_operations: int | None = None

    @property
    def error_name(self) -> str:
        return error_name(self.error_code)

    @property
    def ok(self) -> bool:
        return self.error_code == 0

    @classmethod
    def failed(cls, group: str, error_code: int, message: str | None) -> ConsumerGroupEpochs:
        return cls(group, None, None, None, None, (), error_code, message)


@dataclass(frozen=True)
class ConsumerGroupDescribeResult:
    throttle_time_ms: int
    groups: tuple[ConsumerGroupEpochs, ...]


@dataclass(frozen=True)
class PartitionOffset:
    """One partition's committed offset in a group, as its coordinator answers OffsetFetch.

    ``offset`` is ``NO_OFFSET`` (-1) where there is no commit to report: kept rather than
    dropped, so that the answer is what the broker said, but ``has_commit`` is False and the
    offset must not be used as a position. ``leader_epoch`` is None when the commit carried
    none (-1 on the wire). ``metadata`` is the committing client's string as the broker stores
    it: "" when the client gave none; librdkafka 2.16 writes it with a trailing NUL ("m\\x00"),
    which it strips when reading it back.
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
class GroupOffsets:
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
    def ok(self) -> bool:
        return self.error_code == 0

    @property
    def error_name(self) -> str:
        return error_name(self.error_code)

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


@dataclass(frozen=True)
class ClassicGroup:
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

    @property
    def ok(self) -> bool:
        return self.error_code == 0

    @property
    def error_name(self) -> str:
        return error_name(self.error_code)

    @classmethod
    def failed(cls, group: str, error_code: int, message: str | None) -> ClassicGroup:
        return cls(group, error_code, message, None, None, None, ())


@dataclass(frozen=True)
class DescribeGroupsResult:
    throttle_time_ms: int
    groups: tuple[ClassicGroup, ...]


# --- primitives -----------------------------------------------------------------------------


def uvarint(value: int) -> bytes:
    """Kafka's unsigned varint: 7 bits per byte, least significant first, high bit = more."""
    if not 0 <= value <= 0xFFFFFFFF:
        raise WireError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(data: bytes, what: str = "unsigned varint") -> tuple[int, int]:
    """(value, bytes used) of the unsigned varint at the start of ``data``."""
    reader = _Reader(data, what)
    value = reader.uvarint("value")
    return value, reader.pos


def uuid_str(raw: bytes) -> str:
    """Kafka's text form of a Uuid (``Uuid.toString``): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _utf8(value: str, what: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > _MAX_STRING:
        raise WireError(f"{what} is {len(raw)} bytes; Kafka strings hold at most {_MAX_STRING}")
    return raw


def _compact_string(value: str, what: str) -> bytes:
    raw = _utf8(value, what)
    return uvarint(len(raw) + 1) + raw


def _legacy_nullable_string(value: str | None, what: str) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = _utf8(value, what)
    return struct.pack(">h", len(raw)) + raw


def _compact_string_array(values: Iterable[str], what: str) -> bytes:
    items = [_compact_string(v, f"{what}[{i}]") for i, v in enumerate(values)]
    return uvarint(len(items) + 1) + b"".join(items)


_NO_TAGGED_FIELDS = b"\x00"


# --- encoders -------------------------------------------------------------------------------


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None, body: bytes
) -> bytes:
    """A whole request frame: int32 size, the header for this API version, the body.

    The header's ClientId keeps the old int16 length even in header v2 (RequestHeader.json:
    any broker must be able to read it before it knows what the client speaks).
    """
    header = struct.pack(">hhi", api_key, version, correlation_id)
    header += _legacy_nullable_string(client_id, "ClientId")
    if request_header_version(api_key, version) >= 2:
        header += _NO_TAGGED_FIELDS
    return struct.pack(">i", len(header) + len(body)) + header + body


def encode_api_versions_request(
    version: int, software_name: str = "lagwatch", software_version: str = "0.1.0"
) -> bytes:
    """ApiVersions body. v0-2 are empty; v3+ name the client software, which the broker
    checks against ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` (else INVALID_REQUEST)."""
    _check_version(API_VERSIONS, version)
    if version < 3:
        return b""
    return (
        _compact_string(software_name, "ClientSoftwareName")
        + _compact_string(software_version, "ClientSoftwareVersion")
        + _NO_TAGGED_FIELDS
    )


def encode_find_coordinator_request(version: int, keys: Sequence[str], key_type: int = 0) -> bytes:
    """FindCoordinator v4+ body: one request for many keys (KIP-699); key type 0 = group."""
    _check_version(FIND_COORDINATOR, version)
    return (
        struct.pack(">b", key_type)
        + _compact_string_array(keys, "CoordinatorKeys")
        + _NO_TAGGED_FIELDS
    )


def encode_consumer_group_describe_request(
    version: int, groups: Sequence[str], include_authorized_operations: bool = False
) -> bytes:
    """ConsumerGroupDescribe body (v0 and v1 are the same request; v1 answers MemberType)."""
    _check_version(CONSUMER_GROUP_DESCRIBE, version)
    return (
        _compact_string_array(groups, "GroupIds")
        + (b"\x01" if include_authorized_operations else b"\x00")
        + _NO_TAGGED_FIELDS
    )


def encode_describe_groups_request(
    version: int, groups: Sequence[str], include_authorized_operations: bool = False
) -> bytes:
    """DescribeGroups v5/v6 body (the same request; v6 only changes the answer)."""
    _check_version(DESCRIBE_GROUPS, version)
    return (
        _compact_string_array(groups, "Groups")
        + (b"\x01" if include_authorized_operations else b"\x00")
        + _NO_TAGGED_FIELDS
    )


def encode_offset_fetch_request(
    version: int, groups: Sequence[str], require_stable: bool = False
) -> bytes:
    """OffsetFetch v8/v9 body: every partition of every topic (``Topics`` null) of each group.

    v9's MemberId/MemberEpoch are sent as an admin does (null, -1): the broker validates them
    only for a member of a KIP-848 group asking its own offsets. ``require_stable`` asks the
    broker to answer UNSTABLE_OFFSET_COMMIT for partitions with a pending transactional commit
    rather than the last stable one (librdkafka's ``require_stable_offsets``, off by default).
    """
    _check_version(OFFSET_FETCH, version)
    items = []
    for i, group in enumerate(groups):
        item = _compact_string(group, f"Groups[{i}].GroupId")
        if version >= 9:
            item += b"\x00" + struct.pack(">i", -1)  # MemberId null, MemberEpoch -1
        items.append(item + b"\x00" + _NO_TAGGED_FIELDS)  # Topics null: all of them
    return (
        uvarint(len(items) + 1)
        + b"".join(items)
        + (b"\x01" if require_stable else b"\x00")
        + _NO_TAGGED_FIELDS
    )


def _check_version(api_key: int, version: int) -> None:
    low, high = OUR_VERSIONS[api_key]
    if not low <= version <= high:
        raise ValueError(f"API {api_key} version {version} not implemented ({low}-{high})")


# --- the reader -----------------------------------------------------------------------------


class _Reader:
    """Bounds-checked reads over one message; every failure names the field being read."""

    __slots__ = ("_data", "_path", "_what", "pos")

    def __init__(self, data: bytes, what: str) -> None:
        self._data = memoryview(data)
        self._what = what
        # Names of the structs being read; array elements as (array, index), formatted only
        # on failure, as answers can hold tens of thousands of them.
        self._path: list[str | tuple[str, int]] = []
        self.pos = 0

    def fail(self, leaf: str, problem: str, at: int | None = None) -> NoReturn:
        """Raise, naming the field and the byte its value starts at."""
        names = [p if isinstance(p, str) else f"{p[0]}[{p[1]}]" for p in self._path]
        where = ".".join([*names, leaf])
        at = self.pos if at is None else at
        raise WireError(f"{self._what}: {problem} at byte {at} reading {where}")

    def _take(self, n: int, leaf: str) -> memoryview:
        left = len(self._data) - self.pos
        if n > left:
            self.fail(leaf, f"truncated (needs {n} bytes, {left} left)")
        chunk = self._data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int8(self, leaf: str) -> int:
        return int.from_bytes(self._take(1, leaf), "big", signed=True)

    def int16(self, leaf: str) -> int:
        return int.from_bytes(self._take(2, leaf), "big", signed=True)

    def int32(self, leaf: str) -> int:
        return int.from_bytes(self._take(4, leaf), "big", signed=True)

    def int64(self, leaf: str) -> int:
        return int.from_bytes(self._take(8, leaf), "big", signed=True)

    def boolean(self, leaf: str) -> bool:
        return self._take(1, leaf)[0] != 0

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...] | None:
        """Several fixed-size fields at once, or None if fewer bytes are left than they take
        (the caller then reads them one by one, so that the error names the field)."""
        if layout.size > len(self._data) - self.pos:
            return None
        values = layout.unpack_from(self._data, self.pos)
        self.pos += layout.size
        return values

    def uvarint(self, leaf: str) -> int:
        if self.pos < len(self._data) and self._data[self.pos] < 0x80:  # one byte: most are
            self.pos += 1
            return self._data[self.pos - 1]
        start, value = self.pos, 0
        for i in range(5):
            byte = self._take(1, leaf)[0]
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                return value
        self.fail(leaf, "unsigned varint longer than 5 bytes", start)

    def uuid(self, leaf: str) -> str:
        return uuid_str(bytes(self._take(16, leaf)))

    def _text(self, length: int, leaf: str) -> str:
        start = self.pos
        raw = self._take(length, leaf)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            self.fail(leaf, f"invalid UTF-8 ({exc.reason})", start)

    def compact_string(self, leaf: str) -> str:
        start = self.pos
        value = self.compact_nullable_string(leaf)
        if value is None:
            self.fail(leaf, "null in a non-nullable string", start)
        return value

    def compact_nullable_string(self, leaf: str) -> str | None:
        length = self.uvarint(leaf) - 1
        return None if length < 0 else self._text(length, leaf)

    def compact_array(self, leaf: str, item: Callable[[], T], min_size: int) -> list[T]:
        start = self.pos
        count = self.uvarint(leaf) - 1
        if count < 0:
            self.fail(leaf, "null in a non-nullable array", start)
        return self._items(leaf, start, count, item, min_size)

    def array(self, leaf: str, item: Callable[[], T], min_size: int) -> list[T]:
        """Non-flexible array: int32 count (-1 = null)."""
        start = self.pos
        count = self.int32(leaf)
        if count < 0:
            self.fail(leaf, "null in a non-nullable array", start)
        return self._items(leaf, start, count, item, min_size)

    def _items(
        self, leaf: str, start: int, count: int, item: Callable[[], T], min_size: int
    ) -> list[T]:
        # Refuse a count the remaining bytes cannot hold before allocating anything for it.
        left = len(self._data) - self.pos
        if count * min_size > left:
            self.fail(leaf, f"truncated ({count} elements cannot fit in {left} bytes)", start)
        items = []
        path = self._path
        for i in range(count):
            path.append((leaf, i))
            items.append(item())
            path.pop()
        return items

    def enter(self, name: str) -> None:
        """Read a nested struct: failures inside name it in their path."""
        self._path.append(name)

    def leave(self) -> None:
        self._path.pop()

    def compact_bytes(self, leaf: str) -> bytes:
        start = self.pos
        length = self.uvarint(leaf) - 1
        if length < 0:
            self.fail(leaf, "null in non-nullable bytes", start)
        return bytes(self._take(length, leaf))

    def int32_array(self, leaf: str) -> list[int]:
        return self.compact_array(leaf, lambda: self.int32("value"), 4)

    def string_array(self, leaf: str) -> list[str]:
        return self.compact_array(leaf, lambda: self.compact_string("value"), 1)

    def tagged_fields(self, leaf: str = "TaggedFields") -> dict[int, bytes]:
        """Every tagged field, as raw bytes by tag; callers take the tags they know."""
        fields: dict[int, bytes] = {}
        for i in range(self.uvarint(leaf)):
            tag = self.uvarint(f"{leaf}[{i}].tag")
            size = self.uvarint(f"{leaf}[{i}].size")
            fields[tag] = bytes(self._take(size, f"{leaf}[{i}].data"))
        return fields

    def end(self) -> None:
        extra = len(self._data) - self.pos
        if extra:
            self.fail("end of message", f"{extra} unexpected bytes")


# --- decoders -------------------------------------------------------------------------------


def decode_response_header(frame: bytes, header_version: int) -> tuple[int, bytes]:
    """(correlation id, body) of one response frame without its size prefix."""
    reader = _Reader(frame, f"ResponseHeader v{header_version}")
    correlation_id = reader.int32("CorrelationId")
    if header_version >= 1:
        reader.tagged_fields()
    return correlation_id, bytes(frame[reader.pos :])


def decode_api_versions_response(body: bytes, version: int) -> ApiVersionsResult:
    """ApiVersions answer. A broker that does not speak ``version`` answers
    UNSUPPORTED_VERSION in the v0 layout (KIP-511), whatever was asked: read as such."""
    if version > 0 and body[:2] == b"\x00\x23":  # 35, UNSUPPORTED_VERSION
        try:
            return _api_versions(body, 0)
        except WireError:
            pass  # not the v0 fallback after all: read it as asked
    return _api_versions(body, version)


def _api_versions(body: bytes, version: int) -> ApiVersionsResult:
    reader = _Reader(body, f"ApiVersionsResponse v{version}")
    flexible = is_flexible(API_VERSIONS, version)
    error_code = reader.int16("ErrorCode")

    def api_key() -> tuple[int, tuple[int, int]]:
        key = reader.int16("ApiKey")
        versions = (reader.int16("MinVersion"), reader.int16("MaxVersion"))
        if flexible:
            reader.tagged_fields()
        return key, versions

    if flexible:
        keys = reader.compact_array("ApiKeys", api_key, 7)
    else:
        keys = reader.array("ApiKeys", api_key, 6)
    throttle = reader.int32("ThrottleTimeMs") if version >= 1 else 0
    if flexible:
        reader.tagged_fields()  # SupportedFeatures, FinalizedFeatures...: not needed here
    reader.end()
    return ApiVersionsResult(error_code, dict(keys), throttle)


def decode_find_coordinator_response(body: bytes, version: int) -> FindCoordinatorResult:
    """FindCoordinator v4+ answer: one coordinator (or error) per key asked."""
    _check_version(FIND_COORDINATOR, version)
    reader = _Reader(body, f"FindCoordinatorResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")

    def coordinator() -> Coordinator:
        found = Coordinator(
            key=reader.compact_string("Key"),
            node_id=reader.int32("NodeId"),
            host=reader.compact_string("Host"),
            port=reader.int32("Port"),
            error_code=reader.int16("ErrorCode"),
            error_message=reader.compact_nullable_string("ErrorMessage"),
        )
        reader.tagged_fields()
        return found

    coordinators = reader.compact_array("Coordinators", coordinator, 14)
    reader.tagged_fields()
    reader.end()
    return FindCoordinatorResult(throttle, tuple(coordinators))


def decode_consumer_group_describe_response(
    body: bytes, version: int
) -> ConsumerGroupDescribeResult:
    """ConsumerGroupDescribe v0/v1 answer, every field read (unknown tags skipped)."""
    _check_version(CONSUMER_GROUP_DESCRIBE, version)
    reader = _Reader(body, f"ConsumerGroupDescribeResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    groups = reader.compact_array("Groups", lambda: _described_group(reader, version), 20)
    reader.tagged_fields()
    reader.end()
    return ConsumerGroupDescribeResult(throttle, tuple(groups))


def _described_group(reader: _Reader, version: int) -> ConsumerGroupEpochs:
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


def _member(reader: _Reader, version: int, topic_ids: dict[str, str]) -> MemberEpochs:
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
    reader: _Reader, leaf: str, topic_ids: dict[str, str]
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


def decode_offset_fetch_response(body: bytes, version: int) -> OffsetFetchResult:
    """OffsetFetch v8/v9 answer (the same layout), every field read (unknown tags skipped)."""
    _check_version(OFFSET_FETCH, version)
    reader = _Reader(body, f"OffsetFetchResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    groups = reader.compact_array("Groups", lambda: _group_offsets(reader), 5)
    reader.tagged_fields()
    reader.end()
    return OffsetFetchResult(throttle, tuple(groups))


def _group_offsets(reader: _Reader) -> GroupOffsets:
    group = reader.compact_string("GroupId")
    offsets: list[PartitionOffset] = []

    def topic() -> None:
        name = reader.compact_string("Name")
        reader.compact_array("Partitions", lambda: offsets.append(_partition(reader, name)), 20)
        reader.tagged_fields()

    reader.compact_array("Topics", topic, 3)
    error_code = reader.int16("ErrorCode")
    reader.tagged_fields()
    offsets.sort(key=lambda p: (p.topic, p.partition))
    return GroupOffsets(group, error_code, tuple(offsets))


def _partition(reader: _Reader, topic: str) -> PartitionOffset:
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


def decode_describe_groups_response(body: bytes, version: int) -> DescribeGroupsResult:
    """DescribeGroups v5/v6 answer, every field read (unknown tags skipped); members'
    assignments decoded where the group's protocol type is "consumer" (see ``ClassicMember``).
    """
    _check_version(DESCRIBE_GROUPS, version)
    reader = _Reader(body, f"DescribeGroupsResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    min_size = 13 if version >= 6 else 12
    groups = reader.compact_array("Groups", lambda: _classic_group(reader, version), min_size)
    reader.tagged_fields()
    reader.end()
    return DescribeGroupsResult(throttle, tuple(groups))


def _classic_group(reader: _Reader, version: int) -> ClassicGroup:
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


def _classic_member(reader: _Reader, consumer: bool) -> ClassicMember:
    member_id = reader.compact_string("MemberId")
    instance_id = reader.compact_nullable_string("GroupInstanceId")
    client_id = reader.compact_string("ClientId")
    client_host = reader.compact_string("ClientHost")
    reader.compact_bytes("MemberMetadata")  # the subscription: ownership is the assignment's
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
    return ClassicMember(
        member_id=member_id,
        instance_id=instance_id or None,
        client_id=client_id,
        client_host=client_host,
        assignment=assignment,
        assignment_error=problem,
    )

"""What every message shares: API keys, the versions we speak, headers and frames.

A request is spoken only in versions whose layout this package implements, chosen against
the broker's ApiVersions answer (``choose_version``), because a broker answers exactly the
version asked and a misread version is a silent misreading. "Flexible" versions
(ConsumerGroupDescribe 0+, FindCoordinator 3+, ApiVersions 3+, OffsetFetch 6+, DescribeGroups
5+, ListGroups 3+, ShareGroupDescribe, DescribeShareGroupOffsets and StreamsGroupDescribe
0+) use compact strings and arrays (unsigned-varint length + 1, 0 meaning null) and end every
struct with tagged fields; the header versions follow from that, with the one exception the
schemas make for ApiVersions.

From ``RequestHeader.json`` and ``ResponseHeader.json`` of Kafka 4.1.1, unchanged in 4.4.0
(see ``codec``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

from collectors.kafka_wire.codec.reader import Reader, WireError

__all__ = [
    "API_VERSIONS",
    "CONSUMER_GROUP_DESCRIBE",
    "COORDINATOR_NOT_AVAILABLE",
    "DESCRIBE_GROUPS",
    "DESCRIBE_SHARE_GROUP_OFFSETS",
    "ERROR_NAMES",
    "FIND_COORDINATOR",
    "LIST_GROUPS",
    "NO_TAGGED_FIELDS",
    "OFFSET_FETCH",
    "OUR_VERSIONS",
    "REQUEST_TIMED_OUT",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "SHARE_GROUP_DESCRIBE",
    "STREAMS_GROUP_DESCRIBE",
    "UNKNOWN_SERVER_ERROR",
    "UNSUPPORTED_VERSION",
    "check_version",
    "choose_version",
    "compact_bytes",
    "compact_string",
    "compact_string_array",
    "decode_response_header",
    "encode_request",
    "legacy_bytes",
    "legacy_string",
    "error_name",
    "is_flexible",
    "request_header_version",
    "response_header_version",
    "uvarint",
]

OFFSET_FETCH = 9
API_VERSIONS = 18
FIND_COORDINATOR = 10
CONSUMER_GROUP_DESCRIBE = 69
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
SHARE_GROUP_DESCRIBE = 77  # KIP-932
DESCRIBE_SHARE_GROUP_OFFSETS = 90  # KIP-932; v1 adds Lag (KIP-1226)
STREAMS_GROUP_DESCRIBE = 89  # KIP-1071; v1 adds the topology description (KIP-1331)
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36  # v1 adds SessionLifetimeMs (KIP-368)

# The versions this package can write and read, per API key. FindCoordinator starts at 4, the
# first that batches keys; 5 and 6 only add error codes and key types, same layout.
# ApiVersions 4 is laid out as 3 (it only lifts a restriction on feature versions).
# ListGroups from 3, the first flexible version (4 adds the state, 5 the type and its filter).
# ShareGroupDescribe 1 only: 0 was Kafka 4.0's early access, removed in 4.1.
# SaslHandshake 1 only: 0 sends the mechanism's bytes unframed, outside Kafka's protocol.
# SaslAuthenticate from 1, the first that says the session's lifetime (KIP-368, Kafka 2.2).
OUR_VERSIONS: dict[int, tuple[int, int]] = {
    API_VERSIONS: (0, 4),
    FIND_COORDINATOR: (4, 6),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
    OFFSET_FETCH: (8, 9),
    DESCRIBE_GROUPS: (5, 6),
    LIST_GROUPS: (3, 5),
    SHARE_GROUP_DESCRIBE: (1, 1),
    DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    STREAMS_GROUP_DESCRIBE: (0, 1),
    SASL_HANDSHAKE: (1, 1),
    SASL_AUTHENTICATE: (1, 2),
}
# First flexible version of each API (the schemas' "flexibleVersions").
_FIRST_FLEXIBLE = {
    API_VERSIONS: 3,
    FIND_COORDINATOR: 3,
    CONSUMER_GROUP_DESCRIBE: 0,
    OFFSET_FETCH: 6,
    DESCRIBE_GROUPS: 5,
    LIST_GROUPS: 3,
    SHARE_GROUP_DESCRIBE: 0,
    DESCRIBE_SHARE_GROUP_OFFSETS: 0,
    STREAMS_GROUP_DESCRIBE: 0,
    SASL_HANDSHAKE: 99,  # never flexible ("flexibleVersions": "none")
    SASL_AUTHENTICATE: 2,
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
    33: "UNSUPPORTED_SASL_MECHANISM",
    34: "ILLEGAL_SASL_STATE",
    35: "UNSUPPORTED_VERSION",
    42: "INVALID_REQUEST",
    58: "SASL_AUTHENTICATION_FAILED",
    69: "GROUP_ID_NOT_FOUND",
    88: "UNSTABLE_OFFSET_COMMIT",
    100: "UNKNOWN_TOPIC_ID",
    113: "STALE_MEMBER_EPOCH",
}
# The codes the client itself acts on or reports.
UNKNOWN_SERVER_ERROR = -1
REQUEST_TIMED_OUT = 7
COORDINATOR_NOT_AVAILABLE = 15
UNSUPPORTED_VERSION = 35

_MAX_STRING = 0x7FFF  # Kafka strings are at most 32767 bytes, compact or not


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"ERROR_{code}")


class ErrorCoded:
    """A part of an answer that carries Kafka's error code (a group, a partition): its name
    and whether there is none, alike for every message family."""

    error_code: int

    @property
    def error_name(self) -> str:
        return error_name(self.error_code)

    @property
    def ok(self) -> bool:
        return self.error_code == 0


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


def check_version(api_key: int, version: int) -> None:
    low, high = OUR_VERSIONS[api_key]
    if not low <= version <= high:
        raise ValueError(f"API {api_key} version {version} not implemented ({low}-{high})")


# --- writing --------------------------------------------------------------------------------


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


def _utf8(value: str, what: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > _MAX_STRING:
        raise WireError(f"{what} is {len(raw)} bytes; Kafka strings hold at most {_MAX_STRING}")
    return raw


def compact_string(value: str, what: str) -> bytes:
    raw = _utf8(value, what)
    return uvarint(len(raw) + 1) + raw


def _legacy_nullable_string(value: str | None, what: str) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = _utf8(value, what)
    return struct.pack(">h", len(raw)) + raw


def legacy_string(value: str, what: str) -> bytes:
    """A non-flexible STRING: int16 length, then UTF-8."""
    raw = _utf8(value, what)
    return struct.pack(">h", len(raw)) + raw


def legacy_bytes(value: bytes) -> bytes:
    """Non-flexible BYTES: int32 length, then the bytes."""
    return struct.pack(">i", len(value)) + value


def compact_bytes(value: bytes) -> bytes:
    return uvarint(len(value) + 1) + value


def compact_string_array(values: Iterable[str], what: str) -> bytes:
    items = [compact_string(v, f"{what}[{i}]") for i, v in enumerate(values)]
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGGED_FIELDS = b"\x00"


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
        header += NO_TAGGED_FIELDS
    return struct.pack(">i", len(header) + len(body)) + header + body


def decode_response_header(frame: bytes, header_version: int) -> tuple[int, bytes]:
    """(correlation id, body) of one response frame without its size prefix."""
    reader = Reader(frame, f"ResponseHeader v{header_version}")
    correlation_id = reader.int32("CorrelationId")
    if header_version >= 1:
        reader.tagged_fields()
    return correlation_id, bytes(frame[reader.pos :])

"""The two messages that come before any group question: ApiVersions and FindCoordinator.

ApiVersions is asked once per connection, because everything after it is spoken in the
highest version both sides know. FindCoordinator is spoken from v4 only (KIP-699, Kafka 3.0),
the first version that finds the coordinators of many groups in one request: a cycle asks
about every group at once, and one FindCoordinator per group would cost a round trip each.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from collectors.kafka_wire.codec.framing import (
    API_VERSIONS,
    FIND_COORDINATOR,
    NO_TAGGED_FIELDS,
    check_version,
    compact_string,
    compact_string_array,
    is_flexible,
)
from collectors.kafka_wire.codec.reader import Reader, WireError

__all__ = [
    "ApiVersionsResult",
    "Coordinator",
    "FindCoordinatorResult",
    "decode_api_versions_response",
    "decode_find_coordinator_response",
    "encode_api_versions_request",
    "encode_find_coordinator_request",
]


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


def encode_api_versions_request(
    version: int, software_name: str = "lagwatch", software_version: str = "0.1.0"
) -> bytes:
    """ApiVersions body. v0-2 are empty; v3+ name the client software, which the broker
    checks against ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` (else INVALID_REQUEST)."""
    check_version(API_VERSIONS, version)
    if version < 3:
        return b""
    return (
        compact_string(software_name, "ClientSoftwareName")
        + compact_string(software_version, "ClientSoftwareVersion")
        + NO_TAGGED_FIELDS
    )


def encode_find_coordinator_request(version: int, keys: Sequence[str], key_type: int = 0) -> bytes:
    """FindCoordinator v4+ body: one request for many keys (KIP-699); key type 0 = group."""
    check_version(FIND_COORDINATOR, version)
    return (
        struct.pack(">b", key_type)
        + compact_string_array(keys, "CoordinatorKeys")
        + NO_TAGGED_FIELDS
    )


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
    reader = Reader(body, f"ApiVersionsResponse v{version}")
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
    check_version(FIND_COORDINATOR, version)
    reader = Reader(body, f"FindCoordinatorResponse v{version}")
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

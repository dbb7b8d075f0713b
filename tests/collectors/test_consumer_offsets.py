"""Tests for the ``__consumer_offsets`` decoder.

Two sources of truth: Burrow's test records (``tests/data/``, with their provenance), judged by Kafka's schemas where the two disagree; and records built here by a small
encoder written straight from the schemas in ``CONSUMER_OFFSETS_LAYOUT.md``, so every version,
null and edge the Burrow table lacks is covered too.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from collectors.consumer_offsets import (
    MALFORMED,
    TRUNCATED,
    UNKNOWN_VERSION,
    UNSUPPORTED_RECORD_TYPE,
    DecodeError,
    DecodeStats,
    decode_record,
)
from tests.testdata import load_json

VECTORS: list[dict[str, Any]] = load_json("consumer_offsets_vectors.json")

# Layout doc §7: Kafka's schemas decide the vectors where Burrow's expectations differ.
# "decode" means use the vector's contested.kafka_expected; otherwise the field that must fail.
CONTESTED_RULINGS = {
    # OffsetCommitValue v2 is valid in Kafka (offset, metadata, commitTimestamp).
    "decodeKeyAndOffsetErrors[2]/offset_value_version_2": "decode",
    # v4 is flexible: the tagged-field section is mandatory and this value ends before it.
    "decodeKeyAndOffset_ValueVersion4/offset_commit_k1_v4": "tagged_fields",
    # Key type 3 is ConsumerGroupMetadataKey (KIP-848): still not decodable here, but reported
    # as an unsupported record type rather than an unknown version.
    "processConsumerOffsetsMessage_Errors[1]/unknown_key_version_3": "key_version",
}

# Burrow's errorAt labels, renamed to the schema field names this decoder reports.
BURROW_FIELD = {
    "no key version": "key_version",
    "key version": "key_version",
    "no value version": "value_version",
    "value version": "value_version",
    "timestamp": "commit_timestamp",
    "leaderEpoch": "leader_epoch",
    "no member size": "members",
}
# A v2 header over a v1 body reads a member count of 1937010021; Kafka's generated reader, and
# this one, reject that count against the bytes left before any member_id is read.
FIELD_BY_VECTOR = {"decodeGroupMetadataErrors[2]/v2_header_over_v1_body": "members"}


def _ruling(vector: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """Return (expected fields, None) for a record that must decode, (None, field) otherwise."""
    name = vector["name"]
    if "contested" in vector:
        ruling = CONTESTED_RULINGS[name]
        if ruling == "decode":
            return vector["contested"]["kafka_expected"], None
        return None, ruling
    if vector["expect_error"]:
        at = vector["strict_error_at"]
        return None, FIELD_BY_VECTOR.get(name, BURROW_FIELD.get(at, at))
    return vector["expected"], None


def _vector_bytes(vector: dict[str, Any]) -> tuple[bytes, bytes | None]:
    value_hex = vector["value_hex"]
    return bytes.fromhex(vector["key_hex"]), None if value_hex is None else bytes.fromhex(value_hex)


def test_vectors_are_all_present() -> None:
    assert len(VECTORS) == 45
    assert len({v["name"] for v in VECTORS}) == 45


def test_every_contested_vector_has_a_ruling() -> None:
    contested = {v["name"] for v in VECTORS if "contested" in v}
    assert contested == set(CONTESTED_RULINGS)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector(vector: dict[str, Any]) -> None:
    key, value = _vector_bytes(vector)
    expected, error_field = _ruling(vector)
    if expected is not None:
        record = decode_record(key, value)
        for name, want in expected.items():
            field = "deleted" if name == "tombstone" else name
            if field == "members":
                assert len(record["members"]) == len(want)
                for got_member, want_member in zip(record["members"], want, strict=True):
                    assert {k: got_member[k] for k in want_member} == want_member
            else:
                assert record[field] == want, field
        return
    with pytest.raises(DecodeError) as info:
        decode_record(key, value)
    assert info.value.field == error_field, str(info.value)
    record_type = vector["expected"]["type"]
    if record_type != "unknown":
        assert str(info.value).startswith(record_type.replace("_", " ")), str(info.value)
    expected_kind = {
        "processConsumerOffsetsMessage_Errors[1]/unknown_key_version_3": UNSUPPORTED_RECORD_TYPE
    }.get(vector["name"], TRUNCATED)
    assert info.value.kind == expected_kind


def test_contested_offset_value_v2_decodes_like_v0() -> None:
    vector = next(v for v in VECTORS if v["name"].endswith("offset_value_version_2"))
    record = decode_record(*_vector_bytes(vector))
    assert record["value_version"] == 2
    assert record["metadata"] == "testdata"
    assert record["leader_epoch"] is None
    assert record["expire_timestamp_ms"] is None


def test_contested_offset_value_v4_with_its_tagged_field_byte_decodes() -> None:
    vector = next(v for v in VECTORS if v["name"].endswith("offset_commit_k1_v4"))
    key, value = _vector_bytes(vector)
    assert value is not None
    record = decode_record(key, value + b"\x00")
    assert {k: record[k] for k in vector["expected"]} == vector["expected"]


# --- a tiny encoder, written from the schemas -------------------------------------------------


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    raw = s.encode()
    return i16(len(raw)) + raw


def cstring(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def blob(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def cblob(b: bytes | None) -> bytes:
    return uvarint(0) if b is None else uvarint(len(b) + 1) + b


NO_TAGS = b"\x00"


def offset_key(group: str = "g", topic: str = "t", partition: int = 0, version: int = 1) -> bytes:
    return i16(version) + string(group) + string(topic) + i32(partition)


def offset_value(
    version: int,
    offset: int = 42,
    metadata: str | None = "meta",
    commit_ts: int = 1_700_000_000_000,
    leader_epoch: int = 7,
    expire_ts: int = 1_700_000_600_000,
    tags: bytes = NO_TAGS,
) -> bytes:
    out = i16(version) + i64(offset)
    if version >= 3:
        out += i32(leader_epoch)
    out += cstring(metadata) if version >= 4 else string(metadata)
    out += i64(commit_ts)
    if version == 1:
        out += i64(expire_ts)
    if version >= 4:
        out += tags
    return out


def assignment(
    topics: dict[str, list[int]] | list[tuple[str, list[int]]],
    version: int = 0,
    user_data: bytes | None = b"",
) -> bytes:
    items = list(topics.items()) if isinstance(topics, dict) else topics
    out = i16(version) + i32(len(items))
    for topic, partitions in items:
        out += string(topic) + i32(len(partitions)) + b"".join(i32(p) for p in partitions)
    return out + blob(user_data)


def subscription(topics: list[str]) -> bytes:
    return i16(0) + i32(len(topics)) + b"".join(string(t) for t in topics) + blob(None)


def member(
    member_id: str | None = "m-1",
    client_id: str | None = "client-1",
    client_host: str | None = "/10.0.0.1",
    assigned: bytes | None = None,
    group_instance_id: str | None = None,
    rebalance_timeout: int = 300_000,
    session_timeout: int = 45_000,
    subscribed: bytes | None = None,
) -> dict[str, Any]:
    return {
        "member_id": member_id,
        "group_instance_id": group_instance_id,
        "client_id": client_id,
        "client_host": client_host,
        "rebalance_timeout": rebalance_timeout,
        "session_timeout": session_timeout,
        "subscription": subscription(["orders"]) if subscribed is None else subscribed,
        "assignment": assignment({"orders": [0, 1]}) if assigned is None else assigned,
    }


def group_key(group: str | None = "g") -> bytes:
    return i16(2) + string(group)


def group_value(
    version: int,
    members: list[dict[str, Any]],
    protocol_type: str | None = "consumer",
    generation: int = 5,
    protocol: str | None = "range",
    leader: str | None = "m-1",
    state_ts: int = 1_700_000_000_123,
) -> bytes:
    flexible = version >= 4
    s, b = (cstring, cblob) if flexible else (string, blob)
    out = i16(version) + s(protocol_type) + i32(generation) + s(protocol) + s(leader)
    if version >= 2:
        out += i64(state_ts)
    out += uvarint(len(members) + 1) if flexible else i32(len(members))
    for m in members:
        out += s(m["member_id"])
        if version >= 3:
            out += s(m["group_instance_id"])
        out += s(m["client_id"]) + s(m["client_host"])
        if version >= 1:
            out += i32(m["rebalance_timeout"])
        out += i32(m["session_timeout"]) + b(m["subscription"]) + b(m["assignment"])
        if flexible:
            out += NO_TAGS
    if flexible:
        out += NO_TAGS
    return out


def _decode_error(key: bytes, value: bytes | None) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode_record(key, value)
    return info.value


# --- offset commits ---------------------------------------------------------------------------


@pytest.mark.parametrize("key_version", [0, 1])
@pytest.mark.parametrize("value_version", [0, 1, 2, 3, 4])
def test_offset_commit_every_version(key_version: int, value_version: int) -> None:
    key = offset_key("orders-app", "orders", 17, version=key_version)
    record = decode_record(key, offset_value(value_version))
    assert record == {
        "type": "offset_commit",
        "group": "orders-app",
        "topic": "orders",
        "partition": 17,
        "offset": 42,
        "commit_timestamp_ms": 1_700_000_000_000,
        "metadata": "meta",
        "leader_epoch": 7 if value_version >= 3 else None,
        "expire_timestamp_ms": 1_700_000_600_000 if value_version == 1 else None,
        "key_version": key_version,
        "value_version": value_version,
        "deleted": False,
    }


@pytest.mark.parametrize("key_version", [0, 1])
def test_offset_commit_tombstone(key_version: int) -> None:
    assert decode_record(offset_key("g", "t", 3, version=key_version), None) == {
        "type": "offset_commit",
        "group": "g",
        "topic": "t",
        "partition": 3,
        "key_version": key_version,
        "deleted": True,
    }


def test_offset_commit_unset_epoch_and_expiry_read_as_none() -> None:
    v3 = decode_record(offset_key(), offset_value(3, leader_epoch=-1))
    v1 = decode_record(offset_key(), offset_value(1, expire_ts=-1))
    assert v3["leader_epoch"] is None
    assert v1["expire_timestamp_ms"] is None


def test_offset_commit_large_and_negative_numbers() -> None:
    record = decode_record(
        offset_key(partition=2**31 - 1), offset_value(0, offset=2**63 - 1, commit_ts=-5)
    )
    assert (record["partition"], record["offset"], record["commit_timestamp_ms"]) == (
        2**31 - 1,
        2**63 - 1,
        -5,
    )


def test_empty_strings_are_not_null() -> None:
    record = decode_record(offset_key("", "", 0), offset_value(4, metadata=""))
    assert (record["group"], record["topic"], record["metadata"]) == ("", "", "")


def test_brief_error_message_format() -> None:
    value = offset_value(1, metadata="meta01")[:20]
    error = _decode_error(offset_key(), value)
    assert str(error).startswith(
        "offset commit value v1: truncated at byte 18 reading commit_timestamp"
    )
    assert (error.kind, error.offset, error.field) == (TRUNCATED, 18, "commit_timestamp")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_null_metadata_is_rejected(version: int) -> None:
    error = _decode_error(offset_key(), offset_value(version, metadata=None))
    assert (error.kind, error.field) == (MALFORMED, "metadata")
    assert "not nullable" in str(error)


def test_null_compact_metadata_is_rejected() -> None:
    error = _decode_error(offset_key(), offset_value(4, metadata=None))
    assert (error.kind, error.field) == (MALFORMED, "metadata")


@pytest.mark.parametrize("field", ["group", "topic"])
def test_null_key_string_is_rejected(field: str) -> None:
    key = i16(1) + (string(None) + string("t") if field == "group" else string("g") + string(None))
    error = _decode_error(key + i32(0), offset_value(0))
    assert error.field == field


def test_negative_length_other_than_minus_one_is_rejected() -> None:
    error = _decode_error(i16(1) + i16(-2) + b"xx" + string("t") + i32(0), None)
    assert (error.kind, error.field) == (MALFORMED, "group")
    assert "negative length -2" in str(error)


def test_offset_v4_skips_unknown_tagged_fields() -> None:
    tags = uvarint(2) + uvarint(0) + uvarint(3) + b"abc" + uvarint(300) + uvarint(1) + b"z"
    record = decode_record(offset_key(), offset_value(4, tags=tags))
    assert record["offset"] == 42


def test_offset_v4_truncated_tagged_field_payload() -> None:
    tags = uvarint(1) + uvarint(5) + uvarint(10) + b"short"
    error = _decode_error(offset_key(), offset_value(4, tags=tags))
    assert (error.kind, error.field) == (TRUNCATED, "tagged field 5")


def test_offset_v4_metadata_with_multibyte_varint_length() -> None:
    metadata = "x" * 200
    record = decode_record(offset_key(), offset_value(4, metadata=metadata))
    assert record["metadata"] == metadata


def test_overlong_varint_is_rejected() -> None:
    value = i16(4) + i64(1) + i32(0) + b"\x80\x80\x80\x80\x80\x01"
    error = _decode_error(offset_key(), value)
    assert (error.kind, error.field) == (MALFORMED, "metadata")
    assert "varint" in str(error)


def test_compact_string_longer_than_kafka_allows_is_rejected() -> None:
    value = i16(4) + i64(1) + i32(0) + uvarint(0x8000 + 1) + b"x" * 0x8000 + i64(0) + NO_TAGS
    error = _decode_error(offset_key(), value)
    assert (error.kind, error.field) == (MALFORMED, "metadata")


def test_invalid_utf8_is_replaced_like_java() -> None:
    key = i16(1) + i16(2) + b"\xff\xfe" + string("t") + i32(0)
    assert decode_record(key, offset_value(0))["group"] == "\ufffd\ufffd"


# --- group metadata ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_every_version(version: int) -> None:
    members = [
        member(
            "m-1",
            assigned=assignment({"orders": [0, 2], "payments": [1]}),
            group_instance_id="static-1",
        ),
        member("m-2", "client-2", "/10.0.0.2", assigned=assignment({"orders": [1]}, version=3)),
    ]
    record = decode_record(group_key("orders-app"), group_value(version, members))
    rebalance = 300_000 if version >= 1 else 45_000  # v0 loaders used the session timeout
    assert record == {
        "type": "group_metadata",
        "group": "orders-app",
        "generation": 5,
        "protocol_type": "consumer",
        "protocol": "range",
        "leader": "m-1",
        "current_state_timestamp_ms": 1_700_000_000_123 if version >= 2 else None,
        "members": [
            {
                "member_id": "m-1",
                "group_instance_id": "static-1" if version >= 3 else None,
                "client_id": "client-1",
                "client_host": "/10.0.0.1",
                "rebalance_timeout_ms": rebalance,
                "session_timeout_ms": 45_000,
                "assignment": {"orders": [0, 2], "payments": [1]},
            },
            {
                "member_id": "m-2",
                "group_instance_id": None,
                "client_id": "client-2",
                "client_host": "/10.0.0.2",
                "rebalance_timeout_ms": rebalance,
                "session_timeout_ms": 45_000,
                "assignment": {"orders": [1]},
            },
        ],
        "key_version": 2,
        "value_version": version,
        "deleted": False,
    }


def test_group_metadata_tombstone() -> None:
    assert decode_record(group_key("gone"), None) == {
        "type": "group_metadata",
        "group": "gone",
        "key_version": 2,
        "deleted": True,
    }


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_empty_group_has_null_protocol_and_leader_and_no_members(version: int) -> None:
    value = group_value(version, [], protocol=None, leader=None, generation=12)
    record = decode_record(group_key(), value)
    assert (record["protocol"], record["leader"], record["members"]) == (None, None, [])
    assert record["generation"] == 12


@pytest.mark.parametrize("version", [0, 3, 4])
def test_null_protocol_type_is_rejected(version: int) -> None:
    error = _decode_error(group_key(), group_value(version, [], protocol_type=None))
    assert (error.kind, error.field) == (MALFORMED, "protocol_type")


@pytest.mark.parametrize("version", [1, 4])
@pytest.mark.parametrize("field", ["member_id", "client_id", "client_host"])
def test_null_member_string_is_rejected(version: int, field: str) -> None:
    value = group_value(version, [member(**{field: None})])
    error = _decode_error(group_key(), value)
    assert (error.kind, error.field) == (MALFORMED, field)
    assert "member 0" in str(error)


@pytest.mark.parametrize("version", [1, 4])
@pytest.mark.parametrize("field", ["subscription", "assignment"])
def test_null_member_bytes_are_rejected(version: int, field: str) -> None:
    m = member()
    m[field] = None
    error = _decode_error(group_key(), group_value(version, [m]))
    assert (error.kind, error.field) == (MALFORMED, field)


def test_empty_assignment_bytes_mean_no_assignment_yet() -> None:
    record = decode_record(group_key(), group_value(1, [member(assigned=b"")]))
    assert record["members"][0]["assignment"] == {}


def test_assignment_with_no_topics_and_null_user_data() -> None:
    record = decode_record(group_key(), group_value(1, [member(assigned=assignment({}, 1, None))]))
    assert record["members"][0]["assignment"] == {}


def test_assignment_topic_listed_twice_is_merged() -> None:
    blob_ = assignment([("orders", [0]), ("orders", [3])])
    record = decode_record(group_key(), group_value(1, [member(assigned=blob_)]))
    assert record["members"][0]["assignment"] == {"orders": [0, 3]}


def test_non_consumer_group_assignment_stays_opaque() -> None:
    value = group_value(1, [member(assigned=b"\x00\x01connect-bytes")], protocol_type="connect")
    record = decode_record(group_key(), value)
    assert record["protocol_type"] == "connect"
    assert record["members"][0]["assignment"] == {}


def test_newer_assignment_version_is_read_as_v3_and_extra_fields_ignored() -> None:
    blob_ = assignment({"orders": [4]}, version=9) + b"future-field"
    record = decode_record(group_key(), group_value(3, [member(assigned=blob_)]))
    assert record["members"][0]["assignment"] == {"orders": [4]}


def test_negative_assignment_version_is_rejected() -> None:
    value = group_value(1, [member(assigned=assignment({"orders": [4]}, version=-1))])
    error = _decode_error(group_key(), value)
    assert (error.kind, error.field) == (UNKNOWN_VERSION, "version")
    assert "assignment" in str(error)


def test_trailing_bytes_in_known_assignment_version_are_rejected() -> None:
    value = group_value(1, [member(assigned=assignment({"orders": [4]}) + b"\x00")])
    error = _decode_error(group_key(), value)
    assert error.kind == MALFORMED
    assert "member 0 assignment" in str(error)


def test_assignment_without_user_data_is_rejected() -> None:
    blob_ = assignment({"orders": [4]})[:-4]
    error = _decode_error(group_key(), group_value(1, [member(assigned=blob_)]))
    assert (error.kind, error.field) == (TRUNCATED, "user_data")


def test_assignment_partition_count_beyond_blob_is_rejected() -> None:
    blob_ = i16(0) + i32(1) + string("orders") + i32(1000) + i32(0) + blob(b"")
    error = _decode_error(group_key(), group_value(1, [member(assigned=blob_)]))
    assert (error.kind, error.field) == (TRUNCATED, "partitions")


def test_huge_member_count_fails_fast() -> None:
    value = group_value(1, [])[:-4] + i32(2**31 - 1)
    error = _decode_error(group_key(), value)
    assert (error.kind, error.field) == (TRUNCATED, "members")


def test_negative_member_count_is_rejected() -> None:
    error = _decode_error(group_key(), group_value(1, [])[:-4] + i32(-1))
    assert (error.kind, error.field) == (MALFORMED, "members")


def test_group_v4_requires_member_and_value_tagged_sections() -> None:
    value = group_value(4, [member()])
    assert decode_record(group_key(), value)["members"][0]["assignment"] == {"orders": [0, 1]}
    error = _decode_error(group_key(), value[:-1])
    assert (error.kind, error.field) == (TRUNCATED, "tagged_fields")


# --- versions, trailing bytes, truncation, fuzzing --------------------------------------------


@pytest.mark.parametrize("key_version", [-1, 16, 99, 32767])
def test_unknown_key_version(key_version: int) -> None:
    error = _decode_error(i16(key_version) + string("g"), None)
    assert (error.kind, error.field) == (UNKNOWN_VERSION, "key_version")
    assert f"key version {key_version}" in str(error)


@pytest.mark.parametrize("key_version", range(3, 16))
def test_kip848_record_types_are_unsupported_not_corrupt(key_version: int) -> None:
    error = _decode_error(i16(key_version) + string("g"), b"\x00\x00")
    assert (error.kind, error.field) == (UNSUPPORTED_RECORD_TYPE, "key_version")
    assert f"key version {key_version}" in str(error)


@pytest.mark.parametrize("value_version", [-1, 5, 300])
def test_unknown_offset_value_version(value_version: int) -> None:
    error = _decode_error(offset_key(), i16(value_version) + offset_value(0)[2:])
    assert (error.kind, error.field) == (UNKNOWN_VERSION, "value_version")
    assert f"offset commit value: unknown value version {value_version}" in str(error)


@pytest.mark.parametrize("value_version", [-1, 5])
def test_unknown_group_value_version(value_version: int) -> None:
    error = _decode_error(group_key(), i16(value_version) + group_value(0, [])[2:])
    assert (error.kind, error.field) == (UNKNOWN_VERSION, "value_version")
    assert f"group metadata value: unknown value version {value_version}" in str(error)


def test_null_key_and_empty_value() -> None:
    assert _decode_error(None, None).field == "key_version"  # type: ignore[arg-type]
    error = _decode_error(offset_key(), b"")
    assert (error.kind, error.field) == (TRUNCATED, "value_version")


def test_buffer_types_other_than_bytes_are_accepted() -> None:
    key, value = offset_key(), offset_value(3)
    expected = decode_record(key, value)
    assert decode_record(bytearray(key), memoryview(value)) == expected


VALID_RECORDS = [
    *[(f"offset key v1 value v{v}", offset_key(), offset_value(v)) for v in range(5)],
    ("offset key v0", offset_key(version=0), offset_value(0)),
    *[
        (f"group value v{v}", group_key(), group_value(v, [member(), member("m-2")]))
        for v in range(5)
    ],
    ("group value v4 with tags", group_key(), group_value(4, [member()])[:-1] + b"\x01\x00\x01z"),
]


@pytest.mark.parametrize(
    ("key", "value"), [r[1:] for r in VALID_RECORDS], ids=[r[0] for r in VALID_RECORDS]
)
def test_trailing_bytes_are_rejected(key: bytes, value: bytes) -> None:
    decode_record(key, value)
    for extra in (b"\x00", b"garbage"):
        value_error = _decode_error(key, value + extra)
        assert value_error.kind == MALFORMED
        assert f"{len(extra)} trailing bytes at byte {len(value)}" in str(value_error)
        key_error = _decode_error(key + extra, value)
        assert key_error.kind == MALFORMED
        assert f"{len(extra)} trailing bytes at byte {len(key)}" in str(key_error)


@pytest.mark.parametrize(
    ("key", "value"), [r[1:] for r in VALID_RECORDS], ids=[r[0] for r in VALID_RECORDS]
)
def test_truncation_at_every_byte_raises_decode_error(key: bytes, value: bytes) -> None:
    for cut in range(len(value)):
        error = _decode_error(key, value[:cut])
        assert error.kind == TRUNCATED, (cut, str(error))
        assert "truncated at byte" in str(error)
    for cut in range(len(key)):
        error = _decode_error(key[:cut], value)
        assert error.kind == TRUNCATED, (cut, str(error))


@pytest.mark.parametrize(
    ("key", "value"), [r[1:] for r in VALID_RECORDS], ids=[r[0] for r in VALID_RECORDS]
)
def test_random_corruption_only_ever_raises_decode_error(key: bytes, value: bytes) -> None:
    rng = random.Random(f"{key.hex()}:{value.hex()}")
    for _ in range(400):
        corrupt = bytearray(value)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(2, len(corrupt))] = rng.randrange(256)
        try:
            record = decode_record(key, bytes(corrupt))
        except DecodeError:
            continue
        assert record["type"] in {"offset_commit", "group_metadata"}


def test_random_bytes_only_ever_raise_decode_error() -> None:
    rng = random.Random(848)
    failures = 0
    for _ in range(2000):
        key = rng.choice([b"\x00\x01", b"\x00\x02", b""]) + rng.randbytes(rng.randrange(12))
        value = rng.choice([b"\x00\x00", b"\x00\x03", b"\x00\x04", b""]) + rng.randbytes(
            rng.randrange(40)
        )
        try:
            decode_record(key, value)
        except DecodeError as error:
            assert error.kind in {TRUNCATED, MALFORMED, UNKNOWN_VERSION, UNSUPPORTED_RECORD_TYPE}
            failures += 1
    assert failures > 0


# --- the reader loop's counter ----------------------------------------------------------------


def test_decode_stats_counts_and_skips_without_raising() -> None:
    stats = DecodeStats()
    stream = [
        (offset_key(), offset_value(3)),
        (offset_key(), None),
        (group_key(), group_value(3, [member()])),
        (group_key(), None),
        (offset_key(), offset_value(3)[:-1]),
        (i16(3) + string("new-style"), b"\x00\x00"),
        (i16(77), None),
        (offset_key(), offset_value(0) + b"x"),
    ]
    decoded = [stats.decode(key, value) for key, value in stream]
    assert [r is not None for r in decoded] == [True] * 4 + [False] * 4
    assert stats.decoded == {"offset_commit": 2, "group_metadata": 2}
    assert stats.deleted == 2
    assert stats.skipped == {
        TRUNCATED: 1,
        UNSUPPORTED_RECORD_TYPE: 1,
        UNKNOWN_VERSION: 1,
        MALFORMED: 1,
    }
    assert (stats.total_decoded, stats.total_skipped) == (4, 4)
    assert stats.last_error is not None
    assert "trailing bytes" in stats.last_error

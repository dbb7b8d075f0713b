"""The Kafka wire client of KIP-848 epochs: the pure codec on hand-built bytes, the socket side
against a scripted fake broker, and the real thing against the lab's Apache Kafka broker.

Expected bytes are written out from the message schemas (``collectors/kafka_wire/codec/``
names them), with the builders of ``kafka_wire_fakes``, never with the encoders under test. The
fake broker stages what a real one will not do on demand (NOT_COORDINATOR, silence, a wrong
correlation id, no API 69, TLS); everything a real broker does is asserted against one.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.kafka_wire import (
    BrokerUnreachable,
    ConsumerGroupEpochs,
    DeadlineExceeded,
    EpochReader,
    MemberEpochs,
    UnsupportedSecurity,
    WireError,
    describe_consumer_group_epochs,
)
from collectors.kafka_wire.codec import (
    API_VERSIONS,
    CONSUMER_GROUP_DESCRIBE,
    FIND_COORDINATOR,
    choose_version,
    decode_api_versions_response,
    decode_consumer_group_describe_response,
    decode_find_coordinator_response,
    decode_response_header,
    encode_api_versions_request,
    encode_consumer_group_describe_request,
    encode_find_coordinator_request,
    encode_request,
    error_name,
    read_uvarint,
    request_header_version,
    response_header_version,
    uuid_str,
    uvarint,
)
from collectors.kafka_wire.connection import parse_bootstrap, ssl_context
from lab.workload.clients import leave_and_close
from tests.collectors.kafka_wire_fakes import (
    CLOSE,
    GARBAGE,
    NO_TAGS,
    SILENT,
    TOPIC_A,
    TOPIC_B,
    FakeBroker,
    api_versions_v3,
    assignment,
    closed_port,
    coordinator,
    describe_response,
    described,
    find_response,
    finding,
    i16,
    i32,
    member,
    silent_on,
    slow_on,
    started_brokers,
    strings,
    tags,
    tp,
    uv,
)
from tests.waiting import wait_for

lab = pytest.mark.lab

# --- answers with every kind of field ------------------------------------------------------

# A v1 answer with every kind of field: two members (one with nullable strings set, regex,
# classic type), two topics, unknown tags at each level that has tagged fields.
M_FULL = member(
    member_id="m2", instance="inst-1", rack="rack-a", epoch=4, client_id="c2", host="/10.0.0.2",
    topics=("orders", "payments"), regex="pay.*",
    assigned=assignment(tp(TOPIC_B, "payments", [1]), tp(TOPIC_A, "orders", [3, 0])),
    target=assignment(tp(TOPIC_A, "orders", [0]), tagged=tags((9, b"xy"))),
    member_type=0, tagged=tags((0, b"\x01\x02"), (7, b"")),
)  # fmt: skip
M_PLAIN = member(
    member_id="m1", assigned=assignment(tp(TOPIC_A, "orders", [2, 1])),
    target=assignment(tp(TOPIC_A, "orders", [1, 2], tagged=tags((3, b"z")))), member_type=1,
)  # fmt: skip
V1_RESPONSE = describe_response(
    described("g", [M_FULL, M_PLAIN], epoch=5, assignment_epoch=4, tagged=tags((1, b"\xff"))),
    described("classic-g", error=69, message="Group classic-g is not a consumer group.",
              state="", epoch=0, assignment_epoch=0, assignor=""),
    throttle=12,
    tagged=tags((0, b"abc")),
)  # fmt: skip
V0_RESPONSE = describe_response(
    described(
        "g0", [member(assigned=assignment(tp(TOPIC_A, "t", [0])),
                      target=assignment(tp(TOPIC_A, "t", [0, 1])))],
        state="Reconciling", epoch=3, assignment_epoch=3, operations=0x0F,
    )
)  # fmt: skip
FIND_RESPONSE = find_response(
    coordinator("g1", 9092), coordinator("g2", 9093, error=15, message="not yet")
)
API_VERSIONS_RESPONSE = api_versions_v3(
    {18: (0, 4), 10: (0, 6), 69: (0, 1)}, tagged=tags((0, b"\x01"), (1, i32(0) + i32(7)))
)


# --- primitives -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16383, "ff7f"),
        (16384, "808001"),
        (2**21, "80808001"),
        (2**28 - 1, "ffffff7f"),
        (2**31 - 1, "ffffffff07"),
        (2**32 - 1, "ffffffff0f"),
    ],
)
def test_unsigned_varint(value: int, encoded: str) -> None:
    raw = bytes.fromhex(encoded)
    assert uvarint(value) == raw
    assert read_uvarint(raw + b"\xaa") == (value, len(raw))


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "truncated"),
        ("80", "truncated"),
        ("ffff", "truncated"),
        ("ffffffff", "truncated"),
        ("ffffffffff01", "longer than 5 bytes"),
    ],
)
def test_unsigned_varint_garbage(raw: str, problem: str) -> None:
    with pytest.raises(WireError, match=problem):
        read_uvarint(bytes.fromhex(raw))


@pytest.mark.parametrize("value", [-1, 2**32])
def test_unsigned_varint_range(value: int) -> None:
    with pytest.raises(WireError, match="out of range"):
        uvarint(value)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (bytes(16), "AAAAAAAAAAAAAAAAAAAAAA"),
        (b"\xff" * 16, "_____________________w"),
        (bytes(range(16)), "AAECAwQFBgcICQoLDA0ODw"),
        (uuid.UUID("3fa85f64-5717-4562-b3fc-2c963f66afa6").bytes, "P6hfZFcXRWKz_CyWP2avpg"),
    ],
)
def test_uuid_in_kafkas_base64(raw: bytes, text: str) -> None:
    assert uuid_str(raw) == text


# --- versions and headers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_key", "version", "request_header", "response_header"),
    [
        (API_VERSIONS, 0, 1, 0),
        (API_VERSIONS, 2, 1, 0),
        (API_VERSIONS, 3, 2, 0),  # flexible, yet its answer's header stays v0
        (API_VERSIONS, 4, 2, 0),
        (FIND_COORDINATOR, 2, 1, 0),
        (FIND_COORDINATOR, 3, 2, 1),
        (FIND_COORDINATOR, 6, 2, 1),
        (CONSUMER_GROUP_DESCRIBE, 0, 2, 1),
        (CONSUMER_GROUP_DESCRIBE, 1, 2, 1),
    ],
)
def test_header_versions(
    api_key: int, version: int, request_header: int, response_header: int
) -> None:
    assert request_header_version(api_key, version) == request_header
    assert response_header_version(api_key, version) == response_header


@pytest.mark.parametrize(
    ("api_key", "broker", "chosen"),
    [
        (CONSUMER_GROUP_DESCRIBE, {69: (0, 1)}, 1),
        (CONSUMER_GROUP_DESCRIBE, {69: (0, 0)}, 0),  # Kafka 3.7-4.0
        (CONSUMER_GROUP_DESCRIBE, {69: (0, 9)}, 1),  # newer broker: our highest
        (CONSUMER_GROUP_DESCRIBE, {69: (2, 9)}, None),  # no overlap
        (CONSUMER_GROUP_DESCRIBE, {10: (0, 6)}, None),  # no API 69 at all
        (FIND_COORDINATOR, {10: (0, 6)}, 6),
        (FIND_COORDINATOR, {10: (0, 4)}, 4),
        (FIND_COORDINATOR, {10: (0, 3)}, None),  # not batched: Kafka < 3.0
    ],
)
def test_choose_version(api_key: int, broker: dict, chosen: int | None) -> None:
    assert choose_version(api_key, broker) == chosen


# --- requests -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        # size | api 69 v0 | correlation 7 | client id "lw" (int16 length) | header tags |
        # GroupIds [g1, abc] | IncludeAuthorizedOperations false | tags
        (
            lambda: encode_request(
                69, 0, 7, "lw", encode_consumer_group_describe_request(0, ["g1", "abc"])
            ),
            "00000017 0045 0000 00000007 0002 6c77 00 03 03 6731 04 616263 00 00",
        ),
        (
            lambda: encode_request(
                69, 1, 8, "lw", encode_consumer_group_describe_request(1, [], True)
            ),
            "00000010 0045 0001 00000008 0002 6c77 00 01 01 00",
        ),
        # FindCoordinator v4, null client id: KeyType 0 (group) | CoordinatorKeys [g] | tags
        (
            lambda: encode_request(10, 4, 1, None, encode_find_coordinator_request(4, ["g"])),
            "00000010 000a 0004 00000001 ffff 00 00 02 0267 00",
        ),
        (
            lambda: encode_request(10, 6, 2, "", encode_find_coordinator_request(6, ["a", "b"])),
            "00000012 000a 0006 00000002 0000 00 00 03 0261 0262 00",
        ),
        # ApiVersions v3: ClientSoftwareName "lagwatch", ClientSoftwareVersion "0.1.0"
        (
            lambda: encode_request(18, 3, 0, "lw", encode_api_versions_request(3)),
            "0000001d 0012 0003 00000000 0002 6c77 00 09 6c6167776174 6368 06 302e312e30 00",
        ),
        # ApiVersions v0: header v1 (no tagged fields), empty body
        (
            lambda: encode_request(18, 0, 5, "lw", encode_api_versions_request(0)),
            "0000000c 0012 0000 00000005 0002 6c77",
        ),
    ],
)
def test_request_bytes(frame: Callable[[], bytes], expected: str) -> None:
    assert frame().hex() == expected.replace(" ", "")


@pytest.mark.parametrize(
    "encode",
    [
        lambda: encode_consumer_group_describe_request(2, ["g"]),
        lambda: encode_find_coordinator_request(3, ["g"]),
        lambda: encode_api_versions_request(5),
    ],
)
def test_versions_not_implemented_are_refused(encode: Callable[[], bytes]) -> None:
    with pytest.raises(ValueError, match="not implemented"):
        encode()


def test_overlong_group_id_is_refused() -> None:
    with pytest.raises(WireError, match=r"GroupIds\[1\] is 32768 bytes"):
        encode_consumer_group_describe_request(0, ["ok", "x" * 32768])


def test_multibyte_group_ids_are_counted_in_bytes() -> None:
    assert encode_consumer_group_describe_request(0, ["é"]) == bytes.fromhex("02 03 c3a9 00 00")


# --- ConsumerGroupDescribe answers ----------------------------------------------------------


def test_describe_v1_every_field() -> None:
    result = decode_consumer_group_describe_response(V1_RESPONSE, 1)

    assert result.throttle_time_ms == 12
    group, classic = result.groups
    assert group == ConsumerGroupEpochs(
        group="g",
        state="Stable",
        group_epoch=5,
        assignment_epoch=4,
        assignor="uniform",
        members=(
            MemberEpochs(
                member_id="m1", instance_id=None, rack_id=None, member_epoch=5, client_id="c1",
                client_host="/10.0.0.1", subscribed_topics=("orders",),
                subscribed_topic_regex=None,
                assignment=(("orders", 1), ("orders", 2)),
                target_assignment=(("orders", 1), ("orders", 2)),
                member_type="consumer",
            ),
            MemberEpochs(
                member_id="m2", instance_id="inst-1", rack_id="rack-a", member_epoch=4,
                client_id="c2", client_host="/10.0.0.2",
                subscribed_topics=("orders", "payments"), subscribed_topic_regex="pay.*",
                assignment=(("orders", 0), ("orders", 3), ("payments", 1)),
                target_assignment=(("orders", 0),),
                member_type="classic",
            ),
        ),
        topic_ids=(("orders", "AAECAwQFBgcICQoLDA0ODw"), ("payments", "ZGVmZ2hpamtsbW5vcHFycw")),
    )  # fmt: skip
    assert group.ok
    assert group.error_name == "NONE"
    # An error answer's other fields are the schema's defaults, not facts: left out.
    assert classic == ConsumerGroupEpochs.failed(
        "classic-g", 69, "Group classic-g is not a consumer group."
    )
    assert classic.error_name == "GROUP_ID_NOT_FOUND"
    assert not classic.ok


def test_describe_v0_has_no_member_type() -> None:
    (group,) = decode_consumer_group_describe_response(V0_RESPONSE, 0).groups

    assert (group.group, group.state, group.group_epoch, group.assignment_epoch) == (
        "g0", "Reconciling", 3, 3,
    )  # fmt: skip
    assert group.authorized_operations == 0x0F
    (m,) = group.members
    assert m.member_type is None
    assert m.assignment == (("t", 0),)
    assert m.target_assignment == (("t", 0), ("t", 1))


def test_v1_bytes_read_as_v0_are_refused() -> None:
    # The MemberType byte is where v0 expects the member's tagged fields: the misreading
    # surfaces as a WireError, never as wrong values.
    with pytest.raises(WireError):
        decode_consumer_group_describe_response(V1_RESPONSE, 0)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (describe_response(), ()),
        (describe_response(described("e", state="Empty", epoch=4, assignment_epoch=2)),
         (("e", "Empty", 4, 2, "uniform", ()),)),
        # "" state and assignor mean "not said"
        (describe_response(described("x", state="", assignor="")), (("x", None, 5, 5, None, ()),)),
        (describe_response(described("ü-gröup")), (("ü-gröup", "Stable", 5, 5, "uniform", ()),)),
    ],
)  # fmt: skip
def test_describe_small_answers(body: bytes, expected: tuple) -> None:
    groups = decode_consumer_group_describe_response(body, 0).groups
    assert (
        tuple(
            (g.group, g.state, g.group_epoch, g.assignment_epoch, g.assignor, g.members)
            for g in groups
        )
        == expected
    )


@pytest.mark.parametrize(
    ("regex", "instance", "expected"),
    [(None, None, (None, None)), ("", "", (None, None)), ("^t.*", "i", ("^t.*", "i"))],
)
def test_unset_member_strings_are_none(
    regex: str | None, instance: str | None, expected: tuple
) -> None:
    body = describe_response(described(members=[member(regex=regex, instance=instance)]))
    (m,) = decode_consumer_group_describe_response(body, 0).groups[0].members
    assert (m.subscribed_topic_regex, m.instance_id) == expected


@pytest.mark.parametrize(
    "tagged",
    [
        tags((0, b"")),
        tags((5, b"\x00" * 300)),  # size needing a two-byte varint
        tags((1, b"a"), (2, b"bc"), (200, b"d")),
        tags((2**20, b"\x01")),
    ],
)
@pytest.mark.parametrize("level", ["response", "group", "member", "assignment", "topic"])
def test_unknown_tags_are_skipped(tagged: bytes, level: str) -> None:
    at = {level: tagged}
    plain = assignment(tp(TOPIC_A, "t", [0], tagged=at.get("topic", NO_TAGS)),
                       tagged=at.get("assignment", NO_TAGS))  # fmt: skip
    body = describe_response(
        described("g", [member(assigned=plain, target=plain, tagged=at.get("member", NO_TAGS))],
                  tagged=at.get("group", NO_TAGS)),
        tagged=at.get("response", NO_TAGS),
    )  # fmt: skip
    (group,) = decode_consumer_group_describe_response(body, 0).groups
    assert group.members[0].assignment == (("t", 0),)
    assert group.members[0].target_assignment == (("t", 0),)


def _valid_answers() -> list[tuple[str, Callable[[bytes], Any], bytes]]:
    return [
        ("describe v1", lambda b: decode_consumer_group_describe_response(b, 1), V1_RESPONSE),
        ("describe v0", lambda b: decode_consumer_group_describe_response(b, 0), V0_RESPONSE),
        ("find v4", lambda b: decode_find_coordinator_response(b, 4), FIND_RESPONSE),
        ("api versions v3", lambda b: decode_api_versions_response(b, 3), API_VERSIONS_RESPONSE),
        ("header v1", lambda b: decode_response_header(b, 1), i32(7) + tags((0, b"x"))),
    ]


@pytest.mark.parametrize(("what", "decode", "body"), _valid_answers())
def test_truncated_anywhere_is_a_wire_error(
    what: str, decode: Callable[[bytes], Any], body: bytes
) -> None:
    decode(body)  # the whole answer reads
    for cut in range(len(body)):
        with pytest.raises(WireError, match="truncated"):
            decode(body[:cut])


@pytest.mark.parametrize(("what", "decode", "body"), _valid_answers()[:4])
def test_trailing_bytes_are_a_wire_error(
    what: str, decode: Callable[[bytes], Any], body: bytes
) -> None:
    with pytest.raises(WireError, match="1 unexpected bytes"):
        decode(body + b"\x00")


@pytest.mark.parametrize(
    ("body", "named"),
    [
        # null where the schema allows none
        (describe_response(described(group=None)),
         r"null in a non-nullable string at byte 8 reading Groups\[0\]\.GroupId$"),
        (describe_response(described(members=[member(client_id=None)])),
         r"null in a non-nullable string at byte \d+ reading Groups\[0\]\.Members\[0\]\.ClientId$"),
        (i32(0) + b"\x00" + NO_TAGS, r"null in a non-nullable array at byte 4 reading Groups$"),
        (describe_response(described(members=[member(topics=["a"], assigned=b"\x00")])),
         r"null in a non-nullable array at byte \d+ reading Groups\[0\]\.Members\[0\]\.Assignment\.TopicPartitions$"),
        # invalid UTF-8
        (describe_response(described(members=[member(host="h")])).replace(b"\x02h", b"\x02\xff"),
         r"invalid UTF-8 .* reading Groups\[0\]\.Members\[0\]\.ClientHost$"),
        # a count the bytes left cannot hold (refused before allocating anything for it)
        (i32(0) + uv(2**31) + NO_TAGS,
         r"truncated \(2147483647 elements cannot fit in 1 bytes\) at byte 4 reading Groups$"),
        (describe_response(described(members=[member(assigned=assignment(tp(TOPIC_A, "t", [0])))]))
         .replace(b"\x02\x00\x00\x00\x00", b"\x09\x00\x00\x00\x00"),
         r"truncated \(8 elements cannot fit in \d+ bytes\) at byte \d+ reading "
         r"Groups\[0\]\.Members\[0\]\.Assignment\.TopicPartitions\[0\]\.Partitions$"),
        # a varint that does not end
        (i32(0) + b"\xff" * 6, r"unsigned varint longer than 5 bytes at byte 4 reading Groups$"),
        # a tagged field longer than what is left
        (describe_response(tagged=uv(1) + uv(0) + uv(50) + b"ab"),
         r"truncated \(needs 50 bytes, 2 left\) at byte 8 reading TaggedFields\[0\]\.data$"),
    ],
)  # fmt: skip
def test_garbage_names_the_field(body: bytes, named: str) -> None:
    with pytest.raises(WireError, match=named):
        decode_consumer_group_describe_response(body, 0)


@pytest.mark.parametrize(
    "garbage",
    GARBAGE,
)
@pytest.mark.parametrize("version", [0, 1])
def test_garbage_never_raises_anything_else(garbage: bytes, version: int) -> None:
    with pytest.raises(WireError):
        decode_consumer_group_describe_response(garbage, version)
    with pytest.raises(WireError):
        decode_find_coordinator_response(garbage, 4)


# --- FindCoordinator and ApiVersions answers ------------------------------------------------


def test_find_coordinator_batched() -> None:
    result = decode_find_coordinator_response(FIND_RESPONSE, 4)
    ok, failed = result.coordinators
    assert (ok.key, ok.node_id, ok.host, ok.port, ok.error_code, ok.error_message) == (
        "g1", 1, "127.0.0.1", 9092, 0, None,
    )  # fmt: skip
    assert (failed.key, failed.error_code, failed.error_message) == ("g2", 15, "not yet")


def test_api_versions_v3_skips_feature_tags() -> None:
    result = decode_api_versions_response(API_VERSIONS_RESPONSE, 3)
    assert result.error_code == 0
    assert result.api_versions == {18: (0, 4), 10: (0, 6), 69: (0, 1)}


def test_api_versions_unsupported_answers_in_v0_layout() -> None:
    # KIP-511: a broker that does not speak v3 answers UNSUPPORTED_VERSION as v0, listing
    # its ApiVersions range so the client can try again.
    v0 = i16(35) + i32(1) + i16(18) + i16(0) + i16(2)
    result = decode_api_versions_response(v0, 3)
    assert (result.error_code, result.api_versions) == (35, {18: (0, 2)})


@pytest.mark.parametrize(
    ("version", "body", "expected"),
    [
        (0, i16(0) + i32(2) + i16(0) + i16(0) + i16(9) + i16(18) + i16(0) + i16(2),
         {0: (0, 9), 18: (0, 2)}),
        (1, i16(0) + i32(0) + i32(100), {}),
        (4, api_versions_v3({69: (0, 0)}), {69: (0, 0)}),
    ],
)  # fmt: skip
def test_api_versions_layouts(version: int, body: bytes, expected: dict) -> None:
    assert decode_api_versions_response(body, version).api_versions == expected


@pytest.mark.parametrize(
    ("code", "name"),
    [(0, "NONE"), (14, "COORDINATOR_LOAD_IN_PROGRESS"), (15, "COORDINATOR_NOT_AVAILABLE"),
     (16, "NOT_COORDINATOR"), (30, "GROUP_AUTHORIZATION_FAILED"), (35, "UNSUPPORTED_VERSION"),
     (69, "GROUP_ID_NOT_FOUND"), (7, "REQUEST_TIMED_OUT"), (999, "ERROR_999")],
)  # fmt: skip
def test_error_names(code: int, name: str) -> None:
    assert error_name(code) == name


# --- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("servers", "addresses"),
    [
        ("localhost:9092", [("localhost", 9092)]),
        ("a:1, b:2,", [("a", 1), ("b", 2)]),
        ("PLAINTEXT://k1:19092,SSL://k2:19093", [("k1", 19092), ("k2", 19093)]),
        ("broker", [("broker", 9092)]),
        ("[::1]:9093,[fe80::1]", [("::1", 9093), ("fe80::1", 9092)]),
    ],
)
def test_parse_bootstrap(servers: str, addresses: list) -> None:
    assert parse_bootstrap(servers) == addresses


@pytest.mark.parametrize("servers", ["", " , ", "host:port", "host:0", ":9092", "h:70000"])
def test_parse_bootstrap_refuses(servers: str) -> None:
    with pytest.raises(ValueError):
        parse_bootstrap(servers)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"security.protocol": "KERBEROS"}, "unknown security.protocol"),
        ({"security.protocol": "SSL", "ssl.keystore.location": "/k.p12"}, "ssl.keystore.location"),
    ],
)
def test_unsupported_security(config: dict, message: str) -> None:
    with pytest.raises(UnsupportedSecurity, match=message):
        ssl_context(config)
    with pytest.raises(UnsupportedSecurity):
        EpochReader("localhost:9092", config)


@pytest.mark.parametrize(
    ("config", "check_hostname", "verify"),
    [
        ({"security.protocol": "SSL"}, True, ssl.CERT_REQUIRED),
        ({"security.protocol": "ssl", "ssl.endpoint.identification.algorithm": "none"},
         False, ssl.CERT_REQUIRED),
        ({"security.protocol": "SSL", "enable.ssl.certificate.verification": "false"},
         False, ssl.CERT_NONE),
        ({"security.protocol": "SSL", "ssl.ca.location": "probe", "ssl.keystore.location": ""},
         True, ssl.CERT_REQUIRED),
    ],
)  # fmt: skip
def test_ssl_settings(config: dict, check_hostname: bool, verify: ssl.VerifyMode) -> None:
    context = ssl_context(config)
    assert context is not None
    assert (context.check_hostname, context.verify_mode) == (check_hostname, verify)


@pytest.mark.parametrize("config", [None, {}, {"security.protocol": "PLAINTEXT", "x": 1}])
def test_plaintext_has_no_tls(config: dict | None) -> None:
    assert ssl_context(config or {}) is None


# --- the client against a scripted broker ---------------------------------------------------


@pytest.fixture
def fake() -> Iterator[Callable[..., FakeBroker]]:
    yield from started_brokers(FakeBroker)


def test_fake_round_trip_and_connection_kept(fake: Callable[..., FakeBroker]) -> None:
    broker = fake()
    with EpochReader(broker.bootstrap, {"client.id": "me"}) as reader:
        first = reader.describe(["a", "b", "a"], timeout_s=5)
        second = reader.describe(["b"], timeout_s=5)
    assert list(first) == ["a", "b"]
    assert first["a"].group_epoch == 5 and first["a"].members[0].client_id == "c1"
    assert second["b"].ok
    # One connection; ApiVersions once; one FindCoordinator and one describe per call,
    # each describe carrying every group, at the highest version both sides speak.
    assert broker.connections == 1
    assert broker.apis_called() == [18, 10, 69, 10, 69]
    assert [(a, v) for a, v, _ in broker.requests if a == 69] == [(69, 1), (69, 1)]
    assert strings(broker.requests[2][2], 0) == ["a", "b"]


@pytest.mark.parametrize("code", [16, 14, 15])
def test_coordinator_moved_is_asked_again_once(fake: Callable[..., FakeBroker], code: int) -> None:
    answers = [describe_response(described("g", error=code)), None]

    def handler(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 69 and answers:
            return answers.pop(0) or broker.default(api, version, body)
        return broker.default(api, version, body)

    broker = fake(handler)
    result = describe_consumer_group_epochs(broker.bootstrap, ["g"], timeout_s=5)["g"]
    assert result.ok and result.group_epoch == 5
    assert broker.apis_called() == [18, 10, 69, 10, 69]


def test_still_moved_after_the_retry_is_the_result(fake: Callable[..., FakeBroker]) -> None:
    broker = fake(lambda b, api, v, body: describe_response(described("g", error=16))
                  if api == 69 else b.default(api, v, body))  # fmt: skip
    result = describe_consumer_group_epochs(broker.bootstrap, ["g"], timeout_s=5)["g"]
    assert result.error_name == "NOT_COORDINATOR"
    assert broker.apis_called().count(69) == 2


def test_find_coordinator_errors_are_per_group(fake: Callable[..., FakeBroker]) -> None:
    def handler(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 10:
            return find_response(coordinator("ok", broker.port),
                                 coordinator("denied", -1, error=30, message=None))  # fmt: skip
        return broker.default(api, version, body)

    broker = fake(handler)
    results = describe_consumer_group_epochs(
        broker.bootstrap, ["ok", "denied", "lost"], timeout_s=5
    )
    assert results["ok"].ok
    assert (results["denied"].error_name, results["denied"].error_message) == (
        "GROUP_AUTHORIZATION_FAILED", "FindCoordinator: GROUP_AUTHORIZATION_FAILED",
    )  # fmt: skip
    assert "left the group out" in (results["lost"].error_message or "")
    assert strings(broker.requests[-1][2], 0) == ["ok"]


def test_broker_without_api_69_says_unsupported(fake: Callable[..., FakeBroker]) -> None:
    broker = fake(apis={18: (0, 3), 10: (0, 4)})
    results = describe_consumer_group_epochs(broker.bootstrap, ["g", "h"], timeout_s=5)
    for group in ("g", "h"):
        assert results[group].error_name == "UNSUPPORTED_VERSION"
        assert "does not offer ConsumerGroupDescribe (API 69)" in (
            results[group].error_message or ""
        )
    assert 69 not in broker.apis_called()


def test_broker_too_old_for_batched_find_says_unsupported(fake: Callable[..., FakeBroker]) -> None:
    broker = fake(apis={18: (0, 3), 10: (0, 3)})
    result = describe_consumer_group_epochs(broker.bootstrap, ["g"], timeout_s=5)["g"]
    assert result.error_name == "UNSUPPORTED_VERSION"
    assert broker.apis_called() == [18]


def test_coordinators_are_asked_in_parallel(fake: Callable[..., FakeBroker]) -> None:
    """Two coordinators, each taking 0.4 s: about 0.4 s in all, not 0.8 s."""
    one, two = fake(slow_on(69, 0.4)), fake(slow_on(69, 0.4))
    bootstrap = fake(finding({"g1": one.port, "g2": two.port}))
    with EpochReader(bootstrap.bootstrap) as reader:
        reader.describe(["g1", "g2"], timeout_s=5)  # connects
        started = time.monotonic()
        results = reader.describe(["g1", "g2"], timeout_s=5)
        elapsed = time.monotonic() - started
    assert results["g1"].ok and results["g2"].ok
    assert elapsed < 0.7
    assert one.apis_called().count(69) == two.apis_called().count(69) == 2


def test_silent_coordinator_times_out_its_groups_only(fake: Callable[..., FakeBroker]) -> None:
    silent = fake(silent_on(69))
    bootstrap = fake(finding({"slow": silent.port, "fine": None}))
    started = time.monotonic()
    results = describe_consumer_group_epochs(bootstrap.bootstrap, ["slow", "fine"], timeout_s=0.8)
    assert time.monotonic() - started < 1.5
    assert results["fine"].ok
    assert results["slow"].error_name == "REQUEST_TIMED_OUT"
    assert (
        f"coordinator 127.0.0.1:{silent.port} no answer within 0.8 s"
        == results["slow"].error_message
    )


def test_silent_bootstrap_raises_within_the_deadline(fake: Callable[..., FakeBroker]) -> None:
    broker = fake(lambda b, api, v, body: SILENT)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded, match="no answer from 127.0.0.1"):
        describe_consumer_group_epochs(broker.bootstrap, ["g"], timeout_s=0.5)
    assert time.monotonic() - started < 1.0


def test_wrong_correlation_id_is_a_wire_error(fake: Callable[..., FakeBroker]) -> None:
    broker = fake()
    with EpochReader(broker.bootstrap) as reader:
        assert reader.describe(["g"], timeout_s=5)["g"].ok
        broker.misnumber = True  # answers now carry the request's id + 1
        with pytest.raises(WireError, match=r"127.0.0.1:\d+: answer to request 4, expected 3"):
            reader.describe(["g"], timeout_s=5)
        assert reader._brokers.open == {}  # dropped: its stream can no longer be trusted


def test_garbage_from_a_broker_is_a_wire_error(fake: Callable[..., FakeBroker]) -> None:
    broker = fake(lambda b, api, v, body: b"\x00\x00" if api == 10 else b.default(api, v, body))
    with pytest.raises(WireError, match="FindCoordinatorResponse v6: truncated"):
        describe_consumer_group_epochs(broker.bootstrap, ["g"], timeout_s=5)


def test_a_dropped_connection_is_replaced(fake: Callable[..., FakeBroker]) -> None:
    calls = {"n": 0}

    def closes_after_describe(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 69:
            calls["n"] += 1
            if calls["n"] == 2:
                return CLOSE  # dies mid-call: that coordinator's groups fail, once
        return broker.default(api, version, body)

    broker = fake(closes_after_describe)
    with EpochReader(broker.bootstrap) as reader:
        assert reader.describe(["g"], timeout_s=5)["g"].ok
        # The close is seen as COORDINATOR_NOT_AVAILABLE, which is retried on a new socket.
        assert reader.describe(["g"], timeout_s=5)["g"].ok
        assert reader.describe(["g"], timeout_s=5)["g"].ok
    assert broker.connections == 2


def test_idle_connection_closed_by_the_broker_is_noticed(fake: Callable[..., FakeBroker]) -> None:
    broker = fake()
    with EpochReader(broker.bootstrap) as reader:
        assert reader.describe(["g"], timeout_s=5)["g"].ok
        for sock in list(broker._open):
            sock.shutdown(socket.SHUT_RDWR)
        time.sleep(0.1)
        assert reader.describe(["g"], timeout_s=5)["g"].ok
    assert broker.connections == 2
    assert broker.apis_called() == [18, 10, 69, 18, 10, 69]


def test_refused_bootstrap_is_clear_and_quick() -> None:
    port = closed_port()
    started = time.monotonic()
    with pytest.raises(
        BrokerUnreachable,
        match=rf"no broker of 127.0.0.1:{port} reachable: 127.0.0.1:{port}: .*refused",
    ):
        describe_consumer_group_epochs(f"127.0.0.1:{port}", ["g"], timeout_s=5)
    assert time.monotonic() - started < 1


def test_second_bootstrap_server_is_tried(fake: Callable[..., FakeBroker]) -> None:
    broker = fake()
    results = describe_consumer_group_epochs(
        f"127.0.0.1:{closed_port()},{broker.bootstrap}", ["g"], timeout_s=5
    )
    assert results["g"].ok


def test_no_groups_no_connection() -> None:
    assert describe_consumer_group_epochs(f"127.0.0.1:{closed_port()}", [], timeout_s=1) == {}


# --- TLS ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A self-signed certificate for localhost with a password-protected key (openssl CLI)."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    try:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost", "-passout", "pass:secret"],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"openssl cannot make a test certificate: {exc}")
    return {"cert": str(cert), "key": str(key)}


def _server_tls(files: dict[str, str], require_client_cert: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files["cert"], files["key"], "secret")
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(Path(files["cert"]))
    return context


def test_tls_with_client_certificate(
    fake: Callable[..., FakeBroker], tls_files: dict[str, str]
) -> None:
    broker = fake(tls=_server_tls(tls_files, require_client_cert=True), host="localhost")
    config = {
        "security.protocol": "SSL",
        "ssl.ca.location": tls_files["cert"],
        "ssl.certificate.location": tls_files["cert"],
        "ssl.key.location": tls_files["key"],
        "ssl.key.password": "secret",
    }
    results = describe_consumer_group_epochs(broker.bootstrap, ["g"], config=config, timeout_s=5)
    assert results["g"].ok
    assert broker.apis_called() == [18, 10, 69]


def test_tls_with_an_unknown_ca_is_refused(
    fake: Callable[..., FakeBroker], tls_files: dict[str, str]
) -> None:
    broker = fake(tls=_server_tls(tls_files, require_client_cert=False), host="localhost")
    with pytest.raises(BrokerUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        describe_consumer_group_epochs(
            broker.bootstrap, ["g"], config={"security.protocol": "SSL"}, timeout_s=5
        )


def test_plaintext_to_a_tls_listener_is_named(
    fake: Callable[..., FakeBroker], tls_files: dict[str, str]
) -> None:
    broker = fake(tls=_server_tls(tls_files, require_client_cert=False), host="localhost")
    # A TLS listener drops what is not TLS (here reset, as unread bytes were left), or answers
    # with an alert, whose first bytes read as an implausible size.
    with pytest.raises((WireError, BrokerUnreachable), match="implausible|closed|reset"):
        describe_consumer_group_epochs(broker.bootstrap, ["g"], timeout_s=5)


# --- against the real broker (Apache Kafka 4.1) ---------------------------------------------


def _name(kind: str) -> str:
    return f"kw-{kind}-{uuid.uuid4().hex[:10]}"


def _topic(admin: AdminClient, partitions: int) -> str:
    topic = _name("t")
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)
    return topic


def _consumer(bootstrap: str, group: str, client_id: str, protocol: str = "consumer") -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "client.id": client_id,
            "enable.auto.commit": False,
        }
    )


def _poll(consumers: Sequence[Consumer]) -> None:
    for consumer in consumers:
        consumer.poll(0.1)


def _settled(result: ConsumerGroupEpochs, members: int) -> bool:
    """Stable, everyone at the assignment epoch with the whole target assigned."""
    return (
        result.ok
        and result.state == "Stable"
        and len(result.members) == members
        and result.group_epoch == result.assignment_epoch
        and all(
            m.member_epoch == result.group_epoch and m.assignment == m.target_assignment
            for m in result.members
        )
    )


def _as_confluent_reports(admin: AdminClient, group: str) -> dict[str, tuple]:
    description = admin.describe_consumer_groups([group])[group].result(15)

    def pairs(assignment: Any) -> tuple:
        return tuple(sorted((t.topic, t.partition) for t in assignment.topic_partitions))

    return {
        m.member_id: (m.client_id, m.host, pairs(m.assignment), pairs(m.target_assignment))
        for m in description.members
    }


@pytest.fixture
def reader(kafka_bootstrap: str) -> Iterator[EpochReader]:
    with EpochReader(kafka_bootstrap) as epoch_reader:
        yield epoch_reader


@lab
@pytest.mark.kafka_since("4.0", "KIP-848 consumer groups")
def test_epochs_of_a_kip848_group(
    kafka_bootstrap: str, admin: AdminClient, reader: EpochReader
) -> None:
    topic, group = _topic(admin, 4), _name("g")
    client_ids = [_name("c1"), _name("c2")]
    consumers = [_consumer(kafka_bootstrap, group, client_ids[0])]
    try:
        consumers[0].subscribe([topic])

        # Not merely settled: the first epoch may assign nothing, when the coordinator has
        # not yet seen the new topic; the topic's arrival then raises the epoch again.
        def one_settled() -> ConsumerGroupEpochs | None:
            _poll(consumers)
            result = reader.describe([group], timeout_s=5)[group]
            return result if _settled(result, 1) and result.members[0].assignment else None

        alone = wait_for(one_settled, timeout=60, what="first member assigned")
        assert alone.group_epoch >= 1
        assert alone.assignor == "uniform"
        assert alone.members[0].assignment == tuple((topic, p) for p in range(4))

        consumers.append(_consumer(kafka_bootstrap, group, client_ids[1]))
        consumers[1].subscribe([topic])

        def both_settled() -> ConsumerGroupEpochs | None:
            _poll(consumers)
            if not all(c.assignment() for c in consumers):
                return None
            result = reader.describe([group], timeout_s=5)[group]
            return result if _settled(result, 2) else None

        together = wait_for(both_settled, timeout=60, what="both members reconciled")
        assert together.group_epoch > alone.group_epoch  # a member joining raises the epoch
        assert together.group_epoch == together.assignment_epoch
        assert sorted(m.client_id for m in together.members) == client_ids
        assigned = [pair for m in together.members for pair in m.assignment]
        assert sorted(assigned) == [(topic, p) for p in range(4)]
        for m in together.members:
            assert m.subscribed_topics == (topic,)
            assert m.subscribed_topic_regex is None
            assert m.member_type == "consumer"
            assert m.client_host.endswith("127.0.0.1")
        assert dict(together.topic_ids).keys() == {topic}
        assert {m.member_id for m in together.members} == {c.memberid() for c in consumers}

        # What confluent-kafka reports of the same members, nothing having changed meanwhile.
        ours = {
            m.member_id: (m.client_id, m.client_host, m.assignment, m.target_assignment)
            for m in together.members
        }
        assert _as_confluent_reports(admin, group) == ours
        assert reader.describe([group], timeout_s=5)[group] == together
    finally:
        for consumer in consumers:
            leave_and_close(consumer)

    def emptied() -> ConsumerGroupEpochs | None:
        result = reader.describe([group], timeout_s=5)[group]
        return result if result.state == "Empty" else None

    empty = wait_for(emptied, timeout=60, what="group empty after both left")
    assert empty.members == ()
    assert empty.group_epoch > together.group_epoch  # leaving raises it too


@lab
@pytest.mark.kafka_since("4.0", "ConsumerGroupDescribe (KIP-848)")
def test_classic_and_unknown_groups_are_answered_not_raised(
    kafka_bootstrap: str, admin: AdminClient, reader: EpochReader
) -> None:
    topic, classic, unknown = _topic(admin, 1), _name("classic"), _name("unknown")
    consumer = _consumer(kafka_bootstrap, classic, _name("c"), protocol="classic")
    try:
        consumer.subscribe([topic])

        def assigned() -> bool:
            consumer.poll(0.2)
            return bool(consumer.assignment())

        wait_for(assigned, timeout=60, what="classic member assigned")

        def answered() -> dict[str, ConsumerGroupEpochs] | None:
            results = reader.describe([classic, unknown], timeout_s=5)
            return results if all(r.error_code == 69 for r in results.values()) else None

        results = wait_for(answered, timeout=30, what="both groups answered")
    finally:
        leave_and_close(consumer)
    assert results[classic].error_name == "GROUP_ID_NOT_FOUND"
    assert results[classic].error_message == f"Group {classic} is not a consumer group."
    assert results[unknown].error_message == f"Group {unknown} not found."
    assert results[classic].group_epoch is None and results[classic].members == ()


@lab
@pytest.mark.kafka_since("4.0", "ConsumerGroupDescribe (KIP-848)")
def test_describe_is_quick_and_keeps_its_connection(
    kafka_bootstrap: str, reader: EpochReader
) -> None:
    group = _name("unknown")
    wait_for(lambda: reader.describe([group], timeout_s=5)[group].error_code == 69, timeout=30)
    started = time.monotonic()
    for _ in range(20):
        assert reader.describe([group], timeout_s=5)[group].error_code == 69
    per_call = (time.monotonic() - started) / 20
    assert per_call < 0.2
    assert len(reader._brokers.open) == 1  # the coordinator is the bootstrap broker

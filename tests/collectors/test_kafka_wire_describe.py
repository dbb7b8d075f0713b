"""Classic group descriptions through the Kafka wire client (DescribeGroups v5/v6): the codec on
hand-built bytes, the client against the scripted fake broker (``kafka_wire_fakes``), and the
real thing against the lab's Apache Kafka broker, compared with what confluent-kafka describes.

Why the client has it at all: with librdkafka 2.16 ``AdminClient.describe_consumer_groups``
aborts the process (``rd_kafka_enq_once_del_source_return: Assertion eonce->refcnt > 0``,
librdkafka #4605/#3663) when a coordinator's connection drops mid-call; here the broker is
restarted under the client. Expected bytes are written out from ``DescribeGroupsRequest.json``
/ ``DescribeGroupsResponse.json`` (Kafka 4.1.1) and the consumer protocol's
``ConsumerProtocolAssignment.json`` with this module's own builders, never with the encoders
under test.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import wait
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.consumer_offsets import (
    DecodeError,
    decode_consumer_assignment,
    decode_consumer_subscription,
)
from collectors.kafka_wire import (
    BrokerUnreachable,
    ClassicGroup,
    ClassicMember,
    DeadlineExceeded,
    GroupClient,
    WireError,
    describe_classic_groups,
    group_apis,
)
from collectors.kafka_wire.codec import (
    DESCRIBE_GROUPS,
    choose_version,
    decode_describe_groups_response,
    encode_describe_groups_request,
    encode_request,
    request_header_version,
    response_header_version,
)
from lab.workload.clients import leave_and_close
from tests.collectors.kafka_wire_fakes import (
    ALL_APIS,
    CLOSE,
    GARBAGE,
    NO_TAGS,
    SILENT,
    FakeBroker,
    answering,
    carr,
    cb,
    closed_port,
    coordinator,
    cs,
    find_response,
    finding,
    i16,
    i32,
    started_brokers,
    strings,
    tags,
    through_a_restart,
    timing_summary,
    uv,
)
from tests.waiting import wait_for

lab = pytest.mark.lab

# --- byte builders, straight from the schemas ----------------------------------------------


def cpa(topics: Mapping[str, Sequence[int]], version: int = 0, user_data: bytes | None = None,
        extra: bytes = b"") -> bytes:  # fmt: skip
    """ConsumerProtocolAssignment (not flexible: int16 lengths, int32 counts): Version,
    AssignedPartitions [Topic, Partitions], UserData (nullable bytes); ``extra`` appended."""
    out = i16(version) + i32(len(topics))
    for topic, partitions in topics.items():
        raw = topic.encode()
        out += i16(len(raw)) + raw + i32(len(partitions)) + b"".join(map(i32, partitions))
    out += i32(-1) if user_data is None else i32(len(user_data)) + user_data
    return out + extra


def dmember(member_id: str = "m1", instance: str | None = None, client_id: str = "c1",
            host: str = "/10.0.0.1", metadata: bytes = b"\x00\x01", assignment: bytes = b"",
            tagged: bytes = NO_TAGS) -> bytes:  # fmt: skip
    """MemberId, GroupInstanceId, ClientId, ClientHost, MemberMetadata, MemberAssignment, tags."""
    return (cs(member_id) + cs(instance) + cs(client_id) + cs(host) + cb(metadata)
            + cb(assignment) + tagged)  # fmt: skip


def dgroup(name: str | None, members: Sequence[bytes] = (), *, version: int = 6, error: int = 0,
           message: str | None = None, state: str = "Stable", protocol_type: str = "consumer",
           protocol: str = "range", operations: int = -(2**31),
           tagged: bytes = NO_TAGS) -> bytes:  # fmt: skip
    """ErrorCode, ErrorMessage (v6+), GroupId, GroupState, ProtocolType, ProtocolData, Members,
    AuthorizedOperations, tags."""
    return (
        i16(error) + (cs(message) if version >= 6 else b"") + cs(name) + cs(state)
        + cs(protocol_type) + cs(protocol) + carr(members) + i32(operations) + tagged
    )  # fmt: skip


def dg_response(*groups: bytes, throttle: int = 0, tagged: bytes = NO_TAGS) -> bytes:
    return i32(throttle) + carr(groups) + tagged


CORRUPT = b"\x00\x00\x00\x00\x00\x05"  # version 0, five topics, and then nothing


def full_response(version: int) -> bytes:
    """Every kind of field: a Stable consumer group of three members (a static one with tags,
    one with an assignment that is not one, one with two topics given out of order and user
    data), a Connect group (its assignment not ours to read), a group-level error, unknown
    tags at each level."""
    return dg_response(
        dgroup("g", [
            dmember("m2", instance="inst-2", client_id="c2", host="/10.0.0.2",
                    assignment=cpa({"payments": [1], "orders": [3, 0]}, version=1,
                                   user_data=b"ud"),
                    tagged=tags((0, b"\x01\x02"), (7, b""))),
            dmember("m3", instance="", client_id="c3", assignment=CORRUPT),
            dmember("m1", assignment=cpa({"orders": [2]})),
        ], version=version, tagged=tags((1, b"\xff"))),
        dgroup("connect-g", [dmember("w1", assignment=b"\x00\x01{json}")], version=version,
               protocol_type="connect", protocol="sessioned"),
        dgroup("gone", version=version, error=69, message="Group gone not found.", state="Dead",
               protocol_type="", protocol=""),
        throttle=12,
        tagged=tags((0, b"abc")),
    )  # fmt: skip


def full_groups(version: int) -> tuple[ClassicGroup, ...]:
    start = full_response(version).index(cb(CORRUPT)) + 1  # after its length
    bad = (
        "MemberAssignment of m3: truncated at byte 2: topics count 5 needs at least 30 bytes, "
        f"0 left (assignment at byte {start} of the answer)"
    )
    return (
        ClassicGroup("g", 0, None, "Stable", "consumer", "range", (
            ClassicMember("m1", None, "c1", "/10.0.0.1", (("orders", 2),)),
            ClassicMember("m2", "inst-2", "c2", "/10.0.0.2",
                          (("orders", 0), ("orders", 3), ("payments", 1))),
            ClassicMember("m3", None, "c3", "/10.0.0.1", None, bad),
        )),
        ClassicGroup("connect-g", 0, None, "Stable", "connect", "sessioned",
                     (ClassicMember("w1", None, "c1", "/10.0.0.1", None),)),
        ClassicGroup("gone", 69, "Group gone not found." if version >= 6 else None, "Dead",
                     None, None, ()),
    )  # fmt: skip


# --- requests -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        # size | api 15 v5 | correlation 7 | client id "lw" (int16 length) | header tags |
        # Groups [g1, abc] | IncludeAuthorizedOperations false | tags
        (
            lambda: encode_request(
                15, 5, 7, "lw", encode_describe_groups_request(5, ["g1", "abc"])
            ),
            "00000017 000f 0005 00000007 0002 6c77 00 03 036731 04616263 00 00",
        ),
        # v6 is the same request
        (
            lambda: encode_request(15, 6, 8, "lw", encode_describe_groups_request(6, ["g"], True)),
            "00000012 000f 0006 00000008 0002 6c77 00 02 0267 01 00",
        ),
        (
            lambda: encode_request(15, 6, 1, None, encode_describe_groups_request(6, [])),
            "0000000e 000f 0006 00000001 ffff 00 01 00 00",
        ),
    ],
)
def test_request_bytes(frame: Callable[[], bytes], expected: str) -> None:
    assert frame().hex() == expected.replace(" ", "")


def test_multibyte_and_long_group_ids() -> None:
    assert encode_describe_groups_request(5, ["é"]) == bytes.fromhex("02 03c3a9 00 00")
    body = encode_describe_groups_request(5, ["x" * 200])  # 201 = varint c9 01
    assert body[:3] == bytes.fromhex("02 c901") and len(body) == 1 + 2 + 200 + 2
    with pytest.raises(WireError, match=r"Groups\[1\] is 32768 bytes"):
        encode_describe_groups_request(5, ["ok", "x" * 32768])


@pytest.mark.parametrize(
    "call",
    [
        lambda: encode_describe_groups_request(4, ["g"]),
        lambda: encode_describe_groups_request(7, ["g"]),
        lambda: decode_describe_groups_response(dg_response(), 4),
        lambda: decode_describe_groups_response(dg_response(), 7),
    ],
)
def test_versions_not_implemented_are_refused(call: Callable[[], Any]) -> None:
    with pytest.raises(ValueError, match="not implemented"):
        call()


@pytest.mark.parametrize("version", [5, 6])
def test_header_versions(version: int) -> None:
    assert request_header_version(DESCRIBE_GROUPS, version) == 2
    assert response_header_version(DESCRIBE_GROUPS, version) == 1


@pytest.mark.parametrize(
    ("broker", "chosen"),
    [
        ({15: (0, 6)}, 6),  # Kafka 4.0+
        ({15: (0, 5)}, 5),  # Kafka 2.4-3.x
        ({15: (0, 4)}, None),  # not flexible: not spoken here
        ({15: (7, 7)}, None),
        ({9: (0, 9)}, None),
    ],
)
def test_choose_version(broker: dict, chosen: int | None) -> None:
    assert choose_version(DESCRIBE_GROUPS, broker) == chosen


# --- answers --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [5, 6])
def test_every_field(version: int) -> None:
    result = decode_describe_groups_response(full_response(version), version)
    assert result.throttle_time_ms == 12
    assert result.groups == full_groups(version)
    ok, connect, gone = result.groups
    assert ok.ok and ok.error_name == "NONE"
    assert (gone.ok, gone.error_name) == (False, "GROUP_ID_NOT_FOUND")


def test_v6_bytes_read_as_v5_are_refused() -> None:
    """v6 puts ErrorMessage before GroupId: a version mix-up is an error, not a misreading."""
    with pytest.raises(WireError):
        decode_describe_groups_response(full_response(6), 5)


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        # not Stable: Kafka sends no assignment bytes, read as no partitions (as the admin
        # clients do); no protocol ("") either
        (dgroup("g", [dmember()], state="PreparingRebalance", protocol=""),
         ClassicGroup("g", 0, None, "PreparingRebalance", "consumer", None,
                      (ClassicMember("m1", None, "c1", "/10.0.0.1", ()),))),
        # a member assigned nothing (an assignment of no topics)
        (dgroup("g", [dmember(assignment=cpa({}))], protocol="cooperative-sticky"),
         ClassicGroup("g", 0, None, "Stable", "consumer", "cooperative-sticky",
                      (ClassicMember("m1", None, "c1", "/10.0.0.1", ()),))),
        # a topic listed twice is merged; partitions sorted
        (dgroup("g", [dmember(assignment=i16(0) + i32(2) + cpa({"t": [5, 1]})[6:-4]
                              + cpa({"t": [0]})[6:-4] + i32(-1))]),
         ClassicGroup("g", 0, None, "Stable", "consumer", "range",
                      (ClassicMember("m1", None, "c1", "/10.0.0.1",
                                     (("t", 0), ("t", 1), ("t", 5))),))),
        # a newer assignment version with fields appended: read as v3, the rest ignored
        (dgroup("g", [dmember(assignment=cpa({"t": [0]}, version=9, extra=b"\x01\x02"))]),
         ClassicGroup("g", 0, None, "Stable", "consumer", "range",
                      (ClassicMember("m1", None, "c1", "/10.0.0.1", (("t", 0),)),))),
        # an Empty group holding commits only (what Kafka 4.1 answers for one)
        (dgroup("g", state="Empty", protocol_type="", protocol=""),
         ClassicGroup("g", 0, None, "Empty", None, None, ())),
        (dgroup("ü-gröup", state="Dead", protocol_type="", protocol=""),
         ClassicGroup("ü-gröup", 0, None, "Dead", None, None, ())),
        (dgroup("g", error=16, state="", protocol_type="", protocol="", message=None),
         ClassicGroup("g", 16, None, None, None, None, ())),
    ],
)  # fmt: skip
def test_small_answers(group: bytes, expected: ClassicGroup) -> None:
    assert decode_describe_groups_response(dg_response(group), 6).groups == (expected,)


@pytest.mark.parametrize(
    ("assignment", "problem"),
    [
        (b"\x00", r"truncated at byte 0 reading version"),
        (b"\xff\xff" + i32(0) + i32(-1), r"unsupported assignment version -1"),
        (cpa({"t": [0]})[:-1], r"truncated at byte 17 reading user_data \(needs 4 bytes, 3 left\)"),
        (cpa({"t": [0]}, extra=b"\x00"), r"1 trailing bytes at byte 21"),  # v0 ends there
        (i16(0) + i32(2**30) + i32(-1), r"topics"),
        (i16(0) + i32(1) + i16(-1) + i32(0) + i32(-1), r"topic"),
    ],
)
def test_corrupt_assignment_keeps_the_member(assignment: bytes, problem: str) -> None:
    body = dg_response(dgroup("g", [dmember("a", assignment=assignment),
                                    dmember("b", assignment=cpa({"t": [1]}))]))  # fmt: skip
    (got,) = decode_describe_groups_response(body, 6).groups
    bad, good = got.members
    assert got.ok and bad.member_id == "a" and bad.assignment is None
    assert bad.assignment_error is not None
    assert bad.assignment_error.startswith("MemberAssignment of a: ")
    assert re.search(problem, bad.assignment_error)
    assert good == ClassicMember("b", None, "c1", "/10.0.0.1", (("t", 1),))


def test_public_assignment_decoder() -> None:
    """The wrapper reads what the ``__consumer_offsets`` decoder reads, errors included."""
    assert decode_consumer_assignment(cpa({"b": [2, 0], "a": [1]}, version=3, user_data=b"")) == {
        "b": [2, 0],
        "a": [1],
    }
    with pytest.raises(DecodeError, match=r"^consumer protocol assignment: truncated"):
        decode_consumer_assignment(b"")


@pytest.mark.parametrize(
    "tagged",
    [
        tags((0, b"")),
        tags((5, b"\x00" * 300)),
        tags((1, b"a"), (200, b"d")),
        tags((2**20, b"\x01")),
    ],
)
@pytest.mark.parametrize("level", ["response", "group", "member"])
def test_unknown_tags_are_skipped(tagged: bytes, level: str) -> None:
    at = {level: tagged}
    body = dg_response(
        dgroup("g", [dmember(assignment=cpa({"t": [0]}), tagged=at.get("member", NO_TAGS))],
               tagged=at.get("group", NO_TAGS)),
        tagged=at.get("response", NO_TAGS),
    )  # fmt: skip
    assert decode_describe_groups_response(body, 6).groups == (
        ClassicGroup("g", 0, None, "Stable", "consumer", "range",
                     (ClassicMember("m1", None, "c1", "/10.0.0.1", (("t", 0),)),)),
    )  # fmt: skip


def _valid_answers(version: int) -> list[tuple[str, bytes]]:
    return [
        ("full", full_response(version)),
        ("empty", dg_response()),
        ("one", dg_response(dgroup("g", [dmember(assignment=cpa({"t": [0]}))], version=version))),
    ]


@pytest.mark.parametrize("version", [5, 6])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_truncated_anywhere_is_a_wire_error(which: int, version: int) -> None:
    _, body = _valid_answers(version)[which]
    decode_describe_groups_response(body, version)  # the whole answer reads
    for cut in range(len(body)):
        with pytest.raises(WireError, match=rf"^DescribeGroupsResponse v{version}: truncated"):
            decode_describe_groups_response(body[:cut], version)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_trailing_bytes_are_a_wire_error(which: int) -> None:
    _, body = _valid_answers(6)[which]
    with pytest.raises(WireError, match="1 unexpected bytes"):
        decode_describe_groups_response(body + b"\x00", 6)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (dg_response(dgroup(None)),
         r"null in a non-nullable string at byte 8 reading Groups\[0\]\.GroupId$"),
        (dg_response(dgroup("g", [dmember()]).replace(cb(b"\x00\x01"), b"\x00")),
         r"null in non-nullable bytes at byte \d+ reading "
         r"Groups\[0\]\.Members\[0\]\.MemberMetadata$"),
        (dg_response(dgroup("g", [dmember(client_id="c")]).replace(b"\x02c", b"\x02\xff")),
         r"invalid UTF-8 .* reading Groups\[0\]\.Members\[0\]\.ClientId$"),
        (i32(0) + uv(2**31) + NO_TAGS,
         r"truncated \(2147483647 elements cannot fit in 1 bytes\) at byte 4 reading Groups$"),
        (dg_response(dgroup("g", [dmember(assignment=b"x" * 40)]))[:70],
         r"truncated \(needs 40 bytes, 16 left\) at byte 54 reading "
         r"Groups\[0\]\.Members\[0\]\.MemberAssignment$"),
        (i32(0) + b"\xff" * 6, r"unsigned varint longer than 5 bytes at byte 4 reading Groups$"),
    ],
)  # fmt: skip
def test_garbage_names_the_field(body: bytes, named: str) -> None:
    with pytest.raises(WireError, match=named):
        decode_describe_groups_response(body, 6)


@pytest.mark.parametrize(
    "garbage",
    GARBAGE,
)
@pytest.mark.parametrize("version", [5, 6])
def test_garbage_never_raises_anything_else(garbage: bytes, version: int) -> None:
    with pytest.raises(WireError):
        decode_describe_groups_response(garbage, version)


# --- the client against a scripted broker ---------------------------------------------------

CLASSIC_APIS = {**ALL_APIS, 15: (0, 6)}  # what Kafka 4.1 advertises for DescribeGroups


def default_group(name: str, version: int) -> bytes:
    """What the fake coordinator has of any group: one Stable member owning orders-0 and -1."""
    member = dmember(f"{name}-m", assignment=cpa({"orders": [1, 0]}))
    return dgroup(name, [member], version=version)


def expected(name: str) -> ClassicGroup:
    return ClassicGroup(name, 0, None, "Stable", "consumer", "range", (ClassicMember(
        f"{name}-m", None, "c1", "/10.0.0.1", (("orders", 0), ("orders", 1))),))  # fmt: skip


class ClassicBroker(FakeBroker):
    """The fake broker, also answering DescribeGroups by default."""

    def __init__(self, handler: Callable[..., Any] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("apis", CLASSIC_APIS)
        super().__init__(handler, **kwargs)

    def default(self, api: int, version: int, body: bytes) -> bytes:
        if api == DESCRIBE_GROUPS:
            asked = describe_groups_asked(body)
            return dg_response(*(default_group(g, version) for g in asked))
        return super().default(api, version, body)

    def describes(self) -> list[list[str]]:
        """The groups of each DescribeGroups received, in order."""
        return [describe_groups_asked(b) for api, _, b in self.requests if api == DESCRIBE_GROUPS]


def describe_groups_asked(body: bytes) -> list[str]:
    """The Groups of a DescribeGroups request of short names; asserts the rest of it."""
    groups = strings(body, 0)
    assert body[1 + sum(1 + len(g) for g in groups) :] == b"\x00\x00"  # no operations, no tags
    return groups


@pytest.fixture
def fake() -> Iterator[Callable[..., ClassicBroker]]:
    yield from started_brokers(ClassicBroker)


def test_round_trip_and_connection_kept(fake: Callable[..., ClassicBroker]) -> None:
    broker = fake()
    with GroupClient(broker.bootstrap, {"client.id": "me"}) as client:
        first = client.describe_classic(["b", "a", "b"], timeout_s=5)
        second = client.describe_classic(["a"], timeout_s=5)
    assert list(first) == ["b", "a"]
    assert first["a"] == expected("a") == second["a"]
    assert broker.connections == 1
    assert broker.apis_called() == [18, 10, 15, 10, 15]
    assert {v for api, v, _ in broker.requests if api == 15} == {6}
    assert broker.describes() == [["b", "a"], ["a"]]


def test_v5_when_the_broker_has_no_v6(fake: Callable[..., ClassicBroker]) -> None:
    broker = fake(apis={**ALL_APIS, 15: (0, 5)})  # Kafka 2.4-3.x
    assert describe_classic_groups(broker.bootstrap, ["g"], timeout_s=5)["g"] == expected("g")
    assert [v for api, v, _ in broker.requests if api == 15] == [5]


@pytest.mark.parametrize(
    ("apis", "message"),
    [
        ({**ALL_APIS, 15: (0, 4)}, r"offers DescribeGroups v0-4, not v5-6$"),
        (ALL_APIS, r"does not offer DescribeGroups \(API 15\)$"),
    ],
)
def test_broker_too_old_says_unsupported(
    fake: Callable[..., ClassicBroker], apis: dict, message: str
) -> None:
    broker = fake(apis=apis)
    result = describe_classic_groups(broker.bootstrap, ["g"], timeout_s=5)["g"]
    assert result.error_name == "UNSUPPORTED_VERSION"
    assert re.search(message, result.error_message or "")
    assert 15 not in broker.apis_called()


def test_batches_of_groups_on_one_connection(
    fake: Callable[..., ClassicBroker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_apis, "DESCRIBE_GROUPS_BATCH", 2)
    broker = fake()
    groups = [f"g{i}" for i in range(5)]
    with GroupClient(broker.bootstrap) as client:
        results = client.describe_classic(groups, timeout_s=5)
    assert results == {g: expected(g) for g in groups}
    assert broker.describes() == [["g0", "g1"], ["g2", "g3"], ["g4"]]
    assert broker.connections == 1


@pytest.mark.parametrize("code", [16, 14, 15])
def test_coordinator_errors_are_asked_again(fake: Callable[..., ClassicBroker], code: int) -> None:
    broker = fake(answering(DESCRIBE_GROUPS, dg_response(dgroup("g", error=code, state="", protocol_type="",
                                               protocol=""))))  # fmt: skip
    assert describe_classic_groups(broker.bootstrap, ["g"], timeout_s=5)["g"] == expected("g")
    assert broker.apis_called() == [18, 10, 15, 10, 15]


def test_only_the_failed_groups_are_asked_again(fake: Callable[..., ClassicBroker]) -> None:
    first = dg_response(default_group("a", 6), dgroup("b", error=16), default_group("c", 6))
    broker = fake(answering(DESCRIBE_GROUPS, first))
    results = describe_classic_groups(broker.bootstrap, ["a", "b", "c"], timeout_s=5)
    assert results == {g: expected(g) for g in "abc"}
    assert broker.describes() == [["a", "b", "c"], ["b"]]


def test_retries_are_bounded_and_the_last_error_is_the_result(
    fake: Callable[..., ClassicBroker],
) -> None:
    """Still NOT_COORDINATOR after three retries (0.1 + 0.2 + 0.4 s of pauses): the group's
    result, named after the coordinator (a v5 answer has no message of its own)."""
    moved = dg_response(dgroup("g", version=5, error=16, state="", protocol_type="", protocol=""))
    broker = fake(lambda b, api, v, body: moved if api == 15 else b.default(api, v, body),
                  apis={**ALL_APIS, 15: (0, 5)})  # fmt: skip
    started = time.monotonic()
    result = describe_classic_groups(broker.bootstrap, ["g"], timeout_s=5)["g"]
    assert 0.7 <= time.monotonic() - started < 2
    assert (result.error_name, result.error_message) == (
        "NOT_COORDINATOR", f"coordinator 127.0.0.1:{broker.port}: NOT_COORDINATOR",
    )  # fmt: skip
    assert len(broker.describes()) == 4
    with GroupClient(broker.bootstrap) as client:
        assert client.describe_classic(["g"], timeout_s=5, retries=0)["g"].error_code == 16
        with pytest.raises(ValueError, match="retries"):
            client.describe_classic(["g"], timeout_s=5, retries=-1)
    assert len(broker.describes()) == 5


def test_retries_stop_at_the_deadline(fake: Callable[..., ClassicBroker]) -> None:
    loading = dg_response(dgroup("g", error=14, message="loading"))
    broker = fake(lambda b, api, v, body: loading if api == 15 else b.default(api, v, body))
    started = time.monotonic()
    result = describe_classic_groups(broker.bootstrap, ["g"], timeout_s=0.5)["g"]
    assert time.monotonic() - started < 0.5
    assert (result.error_name, result.error_message) == ("COORDINATOR_LOAD_IN_PROGRESS", "loading")
    assert len(broker.describes()) == 2  # 0.1 s pause, then 0.2 s needs 0.4 s left: too late


def test_coordinator_moved(fake: Callable[..., ClassicBroker]) -> None:
    """The first FindCoordinator names ``old``, which answers NOT_COORDINATOR; the fresh one
    names ``new``, which describes the group."""
    new = fake()
    old = fake(answering(DESCRIBE_GROUPS, dg_response(dgroup("g", error=16))))
    finds = iter([old.port, new.port])

    def bootstrap_handler(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 10:
            return find_response(coordinator("g", next(finds)))
        return broker.default(api, version, body)

    bootstrap = fake(bootstrap_handler)
    with GroupClient(bootstrap.bootstrap) as client:
        assert client.describe_classic(["g"], timeout_s=5)["g"] == expected("g")
    assert (old.describes(), new.describes()) == ([["g"]], [["g"]])


def test_dropped_connection_is_retried_on_a_new_one(fake: Callable[..., ClassicBroker]) -> None:
    """The coordinator closes the connection mid-call (what a broker restart does, and what
    takes librdkafka down): COORDINATOR_NOT_AVAILABLE, asked again on a fresh connection."""
    broker = fake(answering(DESCRIBE_GROUPS, CLOSE))
    with GroupClient(broker.bootstrap) as client:
        assert client.describe_classic(["g"], timeout_s=5)["g"] == expected("g")
    assert broker.connections == 2


def test_silent_coordinator_fails_its_groups_only(fake: Callable[..., ClassicBroker]) -> None:
    silent = fake(answering(DESCRIBE_GROUPS, SILENT))
    talking = fake()

    bootstrap = fake(finding({"slow": silent.port, "ok": talking.port}))
    started = time.monotonic()
    with GroupClient(bootstrap.bootstrap) as client:
        results = client.describe_classic(["slow", "ok"], timeout_s=0.5)
    assert time.monotonic() - started < 0.9
    assert results["ok"] == expected("ok")
    assert (results["slow"].error_name, results["slow"].error_message) == (
        "REQUEST_TIMED_OUT", f"coordinator 127.0.0.1:{silent.port} no answer within 0.5 s",
    )  # fmt: skip


def test_per_group_errors_are_returned_not_raised(fake: Callable[..., ClassicBroker]) -> None:
    def handler(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 10:
            return find_response(
                coordinator("ok", broker.port), coordinator("denied", broker.port),
                coordinator("find-denied", -1, error=30), coordinator("lost", broker.port),
            )  # fmt: skip
        if api == 15:
            return dg_response(default_group("ok", 6), dgroup("denied", error=30))
        return broker.default(api, version, body)

    broker = fake(handler)
    results = describe_classic_groups(
        broker.bootstrap, ["ok", "denied", "find-denied", "lost", "unasked"], timeout_s=5
    )
    assert results["ok"] == expected("ok")
    summary = {g: (r.error_name, r.error_message) for g, r in results.items() if not r.ok}
    assert summary == {
        "denied": ("GROUP_AUTHORIZATION_FAILED",
                   f"coordinator 127.0.0.1:{broker.port}: GROUP_AUTHORIZATION_FAILED"),
        "find-denied": ("GROUP_AUTHORIZATION_FAILED", "FindCoordinator: GROUP_AUTHORIZATION_FAILED"),
        "lost": ("UNKNOWN_SERVER_ERROR", f"127.0.0.1:{broker.port} left the group out of its answer"),
        "unasked": ("UNKNOWN_SERVER_ERROR",
                    f"127.0.0.1:{broker.port} left the group out of FindCoordinator"),
    }  # fmt: skip


def test_garbage_answer_raises_and_drops_the_connection(fake: Callable[..., ClassicBroker]) -> None:
    broker = fake(answering(DESCRIBE_GROUPS, dg_response(default_group("g", 6))[:-3]))
    with GroupClient(broker.bootstrap) as client:
        with pytest.raises(WireError, match="DescribeGroupsResponse v6: truncated"):
            client.describe_classic(["g"], timeout_s=5)
        assert client._brokers.open == {}
        assert client.describe_classic(["g"], timeout_s=5)["g"].ok  # and connects again
    assert broker.connections == 2


def test_whole_call_failures_raise(fake: Callable[..., ClassicBroker]) -> None:
    with pytest.raises(BrokerUnreachable, match="refused"):
        describe_classic_groups(f"127.0.0.1:{closed_port()}", ["g"], timeout_s=5)
    silent = fake(lambda b, api, v, body: SILENT)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        describe_classic_groups(silent.bootstrap, ["g"], timeout_s=0.4)
    assert time.monotonic() - started < 0.8
    assert describe_classic_groups(f"127.0.0.1:{closed_port()}", [], timeout_s=1) == {}


# --- against the real broker (Apache Kafka 4.1) ---------------------------------------------


def _name(kind: str) -> str:
    return f"kwd-{kind}-{uuid.uuid4().hex[:10]}"


def _topic(admin: AdminClient, partitions: int) -> str:
    """A new topic, known to the broker's metadata cache before any consumer asks for it."""
    name = _name("t")
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)

    def known() -> bool:
        listed = admin.list_topics(timeout=10).topics
        return name in listed and len(listed[name].partitions) == partitions

    wait_for(known, timeout=30, what="topic in the broker's metadata")
    return name


def _commit(admin: AdminClient, groups: Sequence[str], topic_name: str) -> None:
    """Commits made without a member (an admin's): each group exists as Empty, nothing else."""
    futures = [
        future
        for g in groups
        for future in admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(g, [TopicPartition(topic_name, 0, 5)])],
            request_timeout=60,
        ).values()
    ]
    for future in futures:
        future.result(60)


def _confluent_describes(admin: AdminClient, groups: Sequence[str], batch: int = 50) -> dict:
    """``describe_consumer_groups`` as our classic groups' fields, ``batch`` groups per call,
    every call in flight at once (safe while no connection drops)."""
    futures: dict[str, Any] = {}
    for i in range(0, len(groups), batch):
        futures.update(admin.describe_consumer_groups(list(groups[i : i + batch]),
                                                      request_timeout=60))  # fmt: skip
    wait(list(futures.values()), timeout=60)
    out = {}
    for g, future in futures.items():
        d = future.result()
        out[g] = (
            d.state.name,
            d.partition_assignor or None,
            tuple(sorted(
                (m.member_id, m.group_instance_id, m.client_id, m.host,
                 tuple(sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)))
                for m in d.members
            )),
        )  # fmt: skip
    return out


def _as_confluent_shows(result: ClassicGroup) -> tuple:
    return (
        (result.state or "").upper(),  # confluent's ConsumerGroupState names
        result.protocol,
        tuple((m.member_id, m.instance_id, m.client_id, m.client_host, m.assignment)
              for m in result.members),
    )  # fmt: skip


@pytest.fixture
def client(kafka_bootstrap: str) -> Iterator[GroupClient]:
    with GroupClient(kafka_bootstrap) as group_client:
        yield group_client


def _consumers(bootstrap: str, group_id: str, topic_name: str, assignor: str,
               count: int) -> list[Consumer]:  # fmt: skip
    consumers = []
    for i in range(count):
        consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group_id, "group.protocol": "classic",
            "client.id": f"{group_id}-c{i}", "partition.assignment.strategy": assignor,
            "enable.auto.commit": False,
        })  # fmt: skip
        consumer.subscribe([topic_name])
        consumers.append(consumer)
    return consumers


@lab
@pytest.mark.kafka_since("4.0", "DescribeGroups v6 (KIP-1043)")
def test_broker_speaks_describe_groups_v6(client: GroupClient) -> None:
    client.describe_classic([_name("g")], timeout_s=10)
    (conn,) = client._brokers.open.values()
    assert conn.api_versions[DESCRIBE_GROUPS] == (0, 6)
    assert choose_version(DESCRIBE_GROUPS, conn.api_versions) == 6


@lab
@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_classic_group_as_confluent_describes_it(
    kafka_bootstrap: str, admin: AdminClient, client: GroupClient, assignor: str
) -> None:
    topic_name = _topic(admin, 5)
    group_id = _name(assignor)
    consumers = _consumers(kafka_bootstrap, group_id, topic_name, assignor, 2)
    try:

        def stable() -> ClassicGroup | None:
            for consumer in consumers:
                consumer.poll(0.1)
            got = client.describe_classic([group_id], timeout_s=10)[group_id]
            owned = {tp for m in got.members for tp in m.assignment or ()}
            mine = [{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers]
            ready = (got.state == "Stable" and len(got.members) == 2
                     and len(owned) == 5 and set().union(*mine) == owned)  # fmt: skip
            return got if ready else None

        ours = wait_for(stable, timeout=90, what="both members assigned, group Stable")
        theirs = _confluent_describes(admin, [group_id])[group_id]
        assert client.describe_classic([group_id], timeout_s=10)[group_id] == ours  # no rebalance
    finally:
        for consumer in consumers:
            leave_and_close(consumer)
    assert (ours.ok, ours.state, ours.protocol_type, ours.protocol) == (
        True, "Stable", "consumer", assignor,
    )  # fmt: skip
    assert _as_confluent_shows(ours) == theirs
    assert {m.client_id for m in ours.members} == {f"{group_id}-c0", f"{group_id}-c1"}
    assert all(m.client_host == "/127.0.0.1" and m.instance_id is None for m in ours.members)
    assert all(m.assignment and m.assignment_error is None for m in ours.members)
    assert all(m.member_id.startswith(m.client_id + "-") for m in ours.members)


@lab
@pytest.mark.kafka_since("4.0", "KIP-848 consumer groups")
def test_empty_deleted_unknown_and_kip848_groups(
    kafka_bootstrap: str, admin: AdminClient, client: GroupClient
) -> None:
    """What Kafka 4.1 answers v6 for groups that have no classic members. Only the commit-only
    group is a classic group (Empty, no protocol); the others, including a live KIP-848 group,
    are GROUP_ID_NOT_FOUND with state Dead, which confluent-kafka shows as a Dead classic group
    (and describes the KIP-848 group through ConsumerGroupDescribe instead)."""
    topic_name = _topic(admin, 2)
    empty, deleted, unknown, kip848 = (_name(k) for k in ("empty", "deleted", "unknown", "848"))
    _commit(admin, [empty, deleted], topic_name)
    admin.delete_consumer_groups([deleted], request_timeout=30)[deleted].result(30)
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": kip848,
                         "group.protocol": "consumer", "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.subscribe([topic_name])

        def assigned() -> bool:
            consumer.poll(0.2)
            return bool(consumer.assignment())

        wait_for(assigned, timeout=60, what="KIP-848 member assigned")
        results = client.describe_classic([empty, deleted, unknown, kip848], timeout_s=10)
        described = client.describe([kip848], timeout_s=10)[kip848]
    finally:
        leave_and_close(consumer)
    assert results[empty] == ClassicGroup(empty, 0, None, "Empty", None, None, ())
    assert results[deleted] == ClassicGroup(
        deleted, 69, f"Group {deleted} not found.", "Dead", None, None, ()
    )
    assert results[unknown] == ClassicGroup(
        unknown, 69, f"Group {unknown} not found.", "Dead", None, None, ()
    )
    assert results[kip848] == ClassicGroup(
        kip848, 69, f"Group {kip848} is not a classic group.", "Dead", None, None, ()
    )
    assert described.ok and len(described.members) == 1  # where a KIP-848 group is described
    theirs = _confluent_describes(admin, [empty, deleted, unknown])
    assert theirs == {empty: ("EMPTY", None, ()), deleted: ("DEAD", None, ()),
                      unknown: ("DEAD", None, ())}  # fmt: skip


@lab
def test_client_survives_a_broker_restart(
    lab_services: Any, admin: AdminClient, client: GroupClient
) -> None:
    """The same client, asked over and over while the broker stops and starts again (what
    aborts librdkafka's describe_consumer_groups), raises only what the caller expects of a
    cluster that is down, then describes the groups as before."""
    topic_name = _topic(admin, 2)
    groups = [_name("g") for _ in range(10)]
    _commit(admin, groups, topic_name)
    before = client.describe_classic(groups, timeout_s=10)
    assert all(r.ok and r.state == "Empty" for r in before.values())

    after = through_a_restart(
        lab_services,
        lambda timeout_s: client.describe_classic(groups, timeout_s=timeout_s),
        "descriptions after the restart",
    )
    assert after == before


@lab
def test_timing_against_describe_consumer_groups(
    kafka_bootstrap: str, admin: AdminClient, client: GroupClient
) -> None:
    """One call for 200 groups (198 Empty, two Stable with two members each), against
    ``describe_consumer_groups`` in batches of 50, all in flight; the answers must agree."""
    topic_name = _topic(admin, 4)
    live = [_name("live") for _ in range(2)]
    groups = [_name("g") for _ in range(198)]
    _commit(admin, groups, topic_name)
    consumers = [c for g in live for c in _consumers(kafka_bootstrap, g, topic_name, "range", 2)]
    try:

        def stable() -> bool:
            for consumer in consumers:
                consumer.poll(0.1)
            got = client.describe_classic(live, timeout_s=10)
            return all(r.state == "Stable" and len(r.members) == 2 for r in got.values())

        wait_for(stable, timeout=90, what="live groups Stable")
        every = groups + live
        client.describe_classic(every[:1], timeout_s=10)  # connected, as between cycles
        timings: dict[str, list[float]] = {"wire": [], "admin": []}
        answers: dict[str, dict] = {}
        for _ in range(5):
            started = time.perf_counter()
            ours = client.describe_classic(every, timeout_s=30)
            timings["wire"].append(time.perf_counter() - started)
            answers["wire"] = {g: _as_confluent_shows(r) for g, r in ours.items()}
            started = time.perf_counter()
            answers["admin"] = _confluent_describes(admin, every, batch=50)
            timings["admin"].append(time.perf_counter() - started)
    finally:
        for consumer in consumers:
            leave_and_close(consumer)
    assert answers["wire"] == answers["admin"]
    assert sum(len(a[2]) for a in answers["wire"].values()) == 4
    summary = timing_summary("200 groups", timings)
    assert summary["wire"][1] < 2.0


# --- the members' subscriptions (MemberMetadata) ---------------------------------------------


def cps(topics: Sequence[str], version: int = 0, user_data: bytes | None = None,
        owned: Mapping[str, Sequence[int]] | None = None, generation: int = -1,
        rack: str | None = None) -> bytes:  # fmt: skip
    """ConsumerProtocolSubscription (not flexible): Version, Topics [string], UserData, then
    OwnedPartitions (v1+), GenerationId (v2+), RackId (v3+)."""
    out = i16(version) + i32(len(topics))
    for topic in topics:
        raw = topic.encode()
        out += i16(len(raw)) + raw
    out += i32(-1) if user_data is None else i32(len(user_data)) + user_data
    if version >= 1:
        owned = owned or {}
        out += i32(len(owned))
        for topic, partitions in owned.items():
            raw = topic.encode()
            out += i16(len(raw)) + raw + i32(len(partitions)) + b"".join(map(i32, partitions))
    if version >= 2:
        out += i32(generation)
    if version >= 3:
        out += i16(-1) if rack is None else i16(len(rack.encode())) + rack.encode()
    return out


SUBSCRIPTIONS = {
    "v0, one topic": (cps(["orders"]), ("orders",)),
    "v0, sorted and once each": (cps(["b", "a", "b"]), ("a", "b")),
    "v1 with owned partitions": (cps(["t"], 1, owned={"t": [0, 2]}), ("t",)),
    "v3 with user data, generation, rack": (
        cps(["x", "é"], 3, user_data=b"ud", generation=7, rack="r1"), ("x", "é")),
    "a later version: its topics still first": (cps(["t"], 9) + b"\x00" * 8, ("t",)),
    "no topics": (cps([]), ()),
}  # fmt: skip


@pytest.mark.parametrize("data, topics", list(SUBSCRIPTIONS.values()), ids=list(SUBSCRIPTIONS))
def test_a_members_subscription_is_its_topics(data: bytes, topics: tuple[str, ...]) -> None:
    assert decode_consumer_subscription(data) == topics


BAD_SUBSCRIPTIONS = {
    "empty": b"",
    "a negative version": i16(-1) + i32(0),
    "truncated in a topic": i16(0) + i32(2) + i16(6) + b"ord",
    "more topics than bytes": i16(0) + i32(1_000_000),
}


@pytest.mark.parametrize("data", list(BAD_SUBSCRIPTIONS.values()), ids=list(BAD_SUBSCRIPTIONS))
def test_a_bad_subscription_is_a_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_consumer_subscription(data)


def test_describe_groups_gives_each_members_subscription_or_none() -> None:
    """The leader assigned from what each member asked for: a member whose client did not yet
    know one of the group's topics asked for the others only (seen on the real broker: the
    what-if of round-robin then differed from what librdkafka's leader gave)."""
    body = dg_response(
        dgroup("g", [
            dmember("m1", metadata=cps(["clicks", "orders"], 1), assignment=cpa({"orders": [0]})),
            dmember("m2", metadata=cps(["orders"], 3), assignment=cpa({"orders": [1]})),
            dmember("m3", metadata=CORRUPT, assignment=cpa({"orders": [2]})),
        ]),
        dgroup("connect", [dmember("w1", metadata=cps(["x"]))], protocol_type="connect"),
    )  # fmt: skip
    result = decode_describe_groups_response(body, 6)
    consumers, connect = result.groups
    assert [m.subscription for m in consumers.members] == [("clicks", "orders"), ("orders",), None]
    assert [m.assignment for m in consumers.members] == [
        (("orders", 0),), (("orders", 1),), (("orders", 2),)
    ]
    assert connect.members[0].subscription is None  # not a consumer protocol's bytes

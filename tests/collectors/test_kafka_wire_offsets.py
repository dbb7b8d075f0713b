"""Committed offsets through the Kafka wire client (OffsetFetch v8/v9): the codec on hand-built
bytes, the client against the scripted fake broker (``kafka_wire_fakes``), and the real thing
against the lab's Apache Kafka broker, compared with what confluent-kafka reads.

Why the client has it at all: ``AdminClient.list_consumer_group_offsets`` crashes the process
(librdkafka 2.16, issue #5040) when a coordinator answers NOT_COORDINATOR; here that answer is
staged on the fake broker, and retried. Expected bytes are written out from
``OffsetFetchRequest.json`` / ``OffsetFetchResponse.json`` (Kafka 4.1.1) with this module's
own builders, never with the encoders under test.
"""

from __future__ import annotations

import fcntl
import re
import termios
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import wait
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.kafka_wire import (
    NO_OFFSET,
    BrokerUnreachable,
    DeadlineExceeded,
    EpochReader,
    GroupClient,
    GroupOffsets,
    PartitionOffset,
    UnsupportedSecurity,
    WireError,
    fetch_committed_offsets,
    group_apis,
)
from collectors.kafka_wire.codec import (
    OFFSET_FETCH,
    choose_version,
    decode_offset_fetch_response,
    encode_offset_fetch_request,
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
    closed_port,
    coordinator,
    cs,
    find_response,
    finding,
    i16,
    i32,
    i64,
    silent_on,
    slow_on,
    started_brokers,
    tags,
    through_a_restart,
    timing_summary,
    uv,
)
from tests.waiting import wait_for

lab = pytest.mark.lab


# --- byte builders, straight from OffsetFetchResponse.json (v8 and v9 are the same) ---------


def part(
    index: int,
    offset: int,
    epoch: int = -1,
    metadata: str | None = "",
    error: int = 0,
    tagged: bytes = NO_TAGS,
) -> bytes:
    """PartitionIndex, CommittedOffset, CommittedLeaderEpoch, Metadata, ErrorCode, tags."""
    return i32(index) + i64(offset) + i32(epoch) + cs(metadata) + i16(error) + tagged


def topic(name: str | None, *partitions: bytes, tagged: bytes = NO_TAGS) -> bytes:
    return cs(name) + carr(partitions) + tagged


def group(name: str | None, *topics: bytes, error: int = 0, tagged: bytes = NO_TAGS) -> bytes:
    return cs(name) + carr(topics) + i16(error) + tagged


def offsets_response(*groups: bytes, throttle: int = 0, tagged: bytes = NO_TAGS) -> bytes:
    return i32(throttle) + carr(groups) + tagged


# Every kind of field: two topics given out of order, a commit with metadata and a leader
# epoch, one without either (null metadata, epoch -1), a partition with no offset (-1) and one
# with its own error, a group-level error, unknown tags at each level.
FULL_RESPONSE = offsets_response(
    group(
        "g",
        topic("payments", part(1, 7, epoch=2, metadata="m"), tagged=tags((4, b"t"))),
        topic("orders", part(3, 2**40, epoch=0), part(0, 5, metadata=None),
              part(2, -1), part(4, -1, error=88, tagged=tags((0, b"p")))),
        tagged=tags((1, b"\xff")),
    ),
    group("denied", error=30),
    throttle=12,
    tagged=tags((0, b"abc")),
)  # fmt: skip
FULL_GROUPS = (
    GroupOffsets(
        group="g",
        error_code=0,
        offsets=(
            PartitionOffset("orders", 0, 5, None, None, 0),
            PartitionOffset("orders", 2, NO_OFFSET, None, "", 0),
            PartitionOffset("orders", 3, 2**40, 0, "", 0),
            PartitionOffset("orders", 4, NO_OFFSET, None, "", 88),
            PartitionOffset("payments", 1, 7, 2, "m", 0),
        ),
    ),
    GroupOffsets("denied", 30, ()),
)


# --- requests -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        # size | api 9 v8 | correlation 7 | client id "lw" (int16 length) | header tags |
        # Groups [ {GroupId g1, Topics null, tags}, {abc, null, tags} ] | RequireStable | tags
        (
            lambda: encode_request(9, 8, 7, "lw", encode_offset_fetch_request(8, ["g1", "abc"])),
            "0000001b 0009 0008 00000007 0002 6c77 00 03 03673100 00 04616263 00 00 00 00",
        ),
        # v9 adds MemberId (null) and MemberEpoch (-1) between GroupId and Topics
        (
            lambda: encode_request(9, 9, 8, "lw", encode_offset_fetch_request(9, ["g"])),
            "00000019 0009 0009 00000008 0002 6c77 00 02 0267 00 ffffffff 00 00 00 00",
        ),
        (
            lambda: encode_request(9, 9, 1, None, encode_offset_fetch_request(9, [], True)),
            "0000000e 0009 0009 00000001 ffff 00 01 01 00",
        ),
    ],
)
def test_request_bytes(frame: Callable[[], bytes], expected: str) -> None:
    assert frame().hex() == expected.replace(" ", "")


def test_multibyte_and_long_group_ids() -> None:
    assert encode_offset_fetch_request(8, ["é"]) == bytes.fromhex("02 03c3a9 00 00 00 00")
    # 200 bytes: a two-byte varint length (201 = c9 01)
    body = encode_offset_fetch_request(8, ["x" * 200])
    assert body[:3] == bytes.fromhex("02 c901") and len(body) == 1 + 2 + 200 + 2 + 2
    with pytest.raises(WireError, match=r"Groups\[1\]\.GroupId is 32768 bytes"):
        encode_offset_fetch_request(8, ["ok", "x" * 32768])


@pytest.mark.parametrize(
    "call",
    [
        lambda: encode_offset_fetch_request(7, ["g"]),
        lambda: encode_offset_fetch_request(10, ["g"]),
        lambda: decode_offset_fetch_response(offsets_response(), 7),
        lambda: decode_offset_fetch_response(offsets_response(), 10),
    ],
)
def test_versions_not_implemented_are_refused(call: Callable[[], Any]) -> None:
    with pytest.raises(ValueError, match="not implemented"):
        call()


@pytest.mark.parametrize("version", [8, 9])
def test_header_versions(version: int) -> None:
    assert request_header_version(OFFSET_FETCH, version) == 2
    assert response_header_version(OFFSET_FETCH, version) == 1


@pytest.mark.parametrize(
    ("broker", "chosen"),
    [
        ({9: (1, 10)}, 9),  # Kafka 4.x with unstable versions enabled: ours is 9
        ({9: (1, 9)}, 9),  # Kafka 4.1 as shipped
        ({9: (0, 8)}, 8),  # Kafka 3.0-3.6
        ({9: (0, 7)}, None),  # Kafka < 3.0: not batched
        ({9: (10, 10)}, None),
        ({10: (0, 6)}, None),
    ],
)
def test_choose_version(broker: dict, chosen: int | None) -> None:
    assert choose_version(OFFSET_FETCH, broker) == chosen


# --- answers --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [8, 9])
def test_every_field(version: int) -> None:
    result = decode_offset_fetch_response(FULL_RESPONSE, version)
    assert result.throttle_time_ms == 12
    assert result.groups == FULL_GROUPS
    ok, denied = result.groups
    assert ok.ok and ok.error_name == "NONE"
    # Offsets of -1 are kept, but are not commits.
    assert ok.committed == {("orders", 0): 5, ("orders", 3): 2**40, ("payments", 1): 7}
    assert [p.has_commit for p in ok.offsets] == [True, False, True, False, True]
    assert ok.offsets[3].error_name == "UNSTABLE_OFFSET_COMMIT"
    assert (denied.ok, denied.error_name, denied.committed) == (
        False, "GROUP_AUTHORIZATION_FAILED", {},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (offsets_response(), ()),
        # a group the coordinator does not know: no error, no offsets (Kafka 4.1's answer)
        (offsets_response(group("gone")), (GroupOffsets("gone", 0, ()),)),
        (offsets_response(group("ü-gröup", topic("t"))), (GroupOffsets("ü-gröup", 0, ()),)),
        (offsets_response(group("g", error=16)), (GroupOffsets("g", 16, ()),)),
        (offsets_response(group("a", topic("t", part(0, 0))), group("b", topic("t", part(0, 1)))),
         (GroupOffsets("a", 0, (PartitionOffset("t", 0, 0),)),
          GroupOffsets("b", 0, (PartitionOffset("t", 0, 1),)))),
        # extremes of int64 and int32 read as signed
        (offsets_response(group("g", topic("t", part(2**31 - 1, 2**63 - 1, epoch=2**31 - 1)))),
         (GroupOffsets("g", 0, (PartitionOffset("t", 2**31 - 1, 2**63 - 1, 2**31 - 1),)),)),
        (offsets_response(group("g", topic("t", part(0, -(2**63), epoch=-2)))),
         (GroupOffsets("g", 0, (PartitionOffset("t", 0, -(2**63), -2),)),)),
    ],
)  # fmt: skip
def test_small_answers(body: bytes, expected: tuple) -> None:
    assert decode_offset_fetch_response(body, 9).groups == expected


@pytest.mark.parametrize(
    "tagged",
    [
        tags((0, b"")),
        tags((5, b"\x00" * 300)),  # size needing a two-byte varint
        tags((1, b"a"), (2, b"bc"), (200, b"d")),
        tags((2**20, b"\x01")),
    ],
)
@pytest.mark.parametrize("level", ["response", "group", "topic", "partition"])
def test_unknown_tags_are_skipped(tagged: bytes, level: str) -> None:
    at = {level: tagged}
    body = offsets_response(
        group("g", topic("t", part(0, 9, tagged=at.get("partition", NO_TAGS)),
                         tagged=at.get("topic", NO_TAGS)),
              tagged=at.get("group", NO_TAGS)),
        tagged=at.get("response", NO_TAGS),
    )  # fmt: skip
    assert decode_offset_fetch_response(body, 8).groups == (
        GroupOffsets("g", 0, (PartitionOffset("t", 0, 9),)),
    )


def _valid_answers() -> list[tuple[str, bytes]]:
    return [
        ("full", FULL_RESPONSE),
        ("empty", offsets_response()),
        ("one", offsets_response(group("g", topic("t", part(0, 1, metadata="x"))))),
    ]


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize(("what", "body"), _valid_answers())
def test_truncated_anywhere_is_a_wire_error(what: str, body: bytes, version: int) -> None:
    decode_offset_fetch_response(body, version)  # the whole answer reads
    for cut in range(len(body)):
        with pytest.raises(WireError, match=rf"^OffsetFetchResponse v{version}: truncated"):
            decode_offset_fetch_response(body[:cut], version)


@pytest.mark.parametrize(("what", "body"), _valid_answers())
def test_trailing_bytes_are_a_wire_error(what: str, body: bytes) -> None:
    with pytest.raises(WireError, match="1 unexpected bytes"):
        decode_offset_fetch_response(body + b"\x00", 9)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        # null where the schema allows none
        (offsets_response(group(None)),
         r"null in a non-nullable string at byte 5 reading Groups\[0\]\.GroupId$"),
        (offsets_response(group("g", topic(None))),
         r"null in a non-nullable string at byte 8 reading Groups\[0\]\.Topics\[0\]\.Name$"),
        (i32(0) + uv(2) + cs("g") + b"\x00" + i16(0) + NO_TAGS + NO_TAGS,
         r"null in a non-nullable array at byte 7 reading Groups\[0\]\.Topics$"),
        (offsets_response(group("g", cs("t") + b"\x00" + NO_TAGS)),
         r"null in a non-nullable array at byte 10 reading Groups\[0\]\.Topics\[0\]\.Partitions$"),
        # invalid UTF-8
        (offsets_response(group("g", topic("t", part(0, 1, metadata="m"))))
         .replace(b"\x02m", b"\x02\xff"),
         r"invalid UTF-8 .* reading Groups\[0\]\.Topics\[0\]\.Partitions\[0\]\.Metadata$"),
        # counts the bytes left cannot hold (refused before allocating anything for them)
        (i32(0) + uv(2**31) + NO_TAGS,
         r"truncated \(2147483647 elements cannot fit in 1 bytes\) at byte 4 reading Groups$"),
        (offsets_response(group("g", cs("t") + uv(3) + part(0, 1) + NO_TAGS)),
         r"truncated \(2 elements cannot fit in 25 bytes\) at byte 10 reading "
         r"Groups\[0\]\.Topics\[0\]\.Partitions$"),
        # the field a short answer ends in is named
        (offsets_response(group("g", topic("t", part(0, 1, metadata="x" * 40))))[:50],
         r"truncated \(needs 40 bytes, 22 left\) at byte 28 reading "
         r"Groups\[0\]\.Topics\[0\]\.Partitions\[0\]\.Metadata$"),
        (offsets_response(group("g", topic("t", part(0, 1, metadata="x" * 30), part(1, 2))))[:69],
         r"truncated \(needs 8 bytes, 4 left\) at byte 65 reading "
         r"Groups\[0\]\.Topics\[0\]\.Partitions\[1\]\.CommittedOffset$"),
        # a varint that does not end
        (i32(0) + b"\xff" * 6, r"unsigned varint longer than 5 bytes at byte 4 reading Groups$"),
    ],
)  # fmt: skip
def test_garbage_names_the_field(body: bytes, named: str) -> None:
    with pytest.raises(WireError, match=named):
        decode_offset_fetch_response(body, 9)


@pytest.mark.parametrize(
    "garbage",
    GARBAGE,
)
def test_garbage_never_raises_anything_else(garbage: bytes) -> None:
    with pytest.raises(WireError):
        decode_offset_fetch_response(garbage, 8)


# --- the client against a scripted broker ---------------------------------------------------

OFFSET_APIS = {**ALL_APIS, 9: (1, 9)}  # what Kafka 4.1 advertises for OffsetFetch


def requested_groups(body: bytes, version: int) -> list[str]:
    """The GroupIds of an OffsetFetch v8/v9 request of short names; asserts the rest of it."""
    count, pos, out = body[0] - 1, 1, []
    for _ in range(count):
        size = body[pos] - 1
        out.append(body[pos + 1 : pos + 1 + size].decode())
        pos += 1 + size
        if version >= 9:
            assert body[pos : pos + 5] == b"\x00\xff\xff\xff\xff"  # MemberId null, epoch -1
            pos += 5
        assert body[pos : pos + 2] == b"\x00\x00"  # Topics null (all), no tags
        pos += 2
    assert body[pos:] == b"\x00\x00"  # RequireStable false, no tags
    return out


def default_offsets(name: str) -> bytes:
    """What the fake coordinator has of any group: orders-0 at 42, orders-1 at 7."""
    return group(name, topic("orders", part(1, 7, epoch=3), part(0, 42, epoch=3)))


EXPECTED = (PartitionOffset("orders", 0, 42, 3), PartitionOffset("orders", 1, 7, 3))


class OffsetsBroker(FakeBroker):
    """The fake broker, also answering OffsetFetch by default."""

    def __init__(self, handler: Callable[..., Any] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("apis", OFFSET_APIS)
        super().__init__(handler, **kwargs)

    def default(self, api: int, version: int, body: bytes) -> bytes:
        if api == OFFSET_FETCH:
            return offsets_response(*map(default_offsets, requested_groups(body, version)))
        return super().default(api, version, body)

    def fetches(self) -> list[list[str]]:
        """The groups of each OffsetFetch received, in order."""
        return [requested_groups(body, v) for api, v, body in self.requests if api == 9]


@pytest.fixture
def fake() -> Iterator[Callable[..., OffsetsBroker]]:
    yield from started_brokers(OffsetsBroker)


def test_round_trip_and_connection_kept(fake: Callable[..., OffsetsBroker]) -> None:
    broker = fake()
    with GroupClient(broker.bootstrap, {"client.id": "me"}) as client:
        first = client.fetch_committed(["b", "a", "b"], timeout_s=5)
        second = client.fetch_committed(["a"], timeout_s=5)
    assert list(first) == ["b", "a"]
    assert first["a"] == GroupOffsets("a", 0, EXPECTED) == second["a"]
    assert first["a"].committed == {("orders", 0): 42, ("orders", 1): 7}
    # One connection, ApiVersions once; a FindCoordinator and one OffsetFetch v9 per call.
    assert broker.connections == 1
    assert broker.apis_called() == [18, 10, 9, 10, 9]
    assert {v for api, v, _ in broker.requests if api == 9} == {9}
    assert broker.fetches() == [["b", "a"], ["a"]]


def test_v8_when_the_broker_has_no_v9(fake: Callable[..., OffsetsBroker]) -> None:
    broker = fake(apis={**ALL_APIS, 9: (0, 8)})  # Kafka 3.0-3.6
    assert fetch_committed_offsets(broker.bootstrap, ["g"], timeout_s=5)["g"].offsets == EXPECTED
    assert [v for api, v, _ in broker.requests if api == 9] == [8]


def test_describe_and_offsets_share_connections(fake: Callable[..., OffsetsBroker]) -> None:
    broker = fake()
    with EpochReader(broker.bootstrap) as client:  # the old name, the same class
        assert client.describe(["g"], timeout_s=5)["g"].ok
        assert client.fetch_committed(["g"], timeout_s=5)["g"].ok
    assert broker.connections == 1
    assert broker.apis_called() == [18, 10, 69, 10, 9]


def test_batches_of_groups_on_one_connection(
    fake: Callable[..., OffsetsBroker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_apis, "OFFSET_FETCH_BATCH", 2)
    broker = fake()
    groups = [f"g{i}" for i in range(5)]
    with GroupClient(broker.bootstrap) as client:
        results = client.fetch_committed(groups, timeout_s=5)
    assert all(results[g] == GroupOffsets(g, 0, EXPECTED) for g in groups)
    assert broker.fetches() == [["g0", "g1"], ["g2", "g3"], ["g4"]]
    assert broker.connections == 1


def test_batches_are_pipelined_five_at_a_time(
    fake: Callable[..., OffsetsBroker], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the broker works on the first of eight batches, four more are already waiting in
    its socket (five in flight, as Kafka's clients allow by default); the rest follow as
    answers are read, so that requests never pile up behind unread answers."""
    monkeypatch.setattr(group_apis, "OFFSET_FETCH_BATCH", 1)
    waiting: list[int] = []

    def handler(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 9 and len(broker.fetches()) == 1:
            time.sleep(0.3)  # by now the client has sent everything it will send unanswered
            waiting.append(_pending_bytes(broker))
        return broker.default(api, version, body)

    broker = fake(handler)
    groups = [f"g{i}" for i in range(8)]
    with GroupClient(broker.bootstrap) as client:
        results = client.fetch_committed(groups, timeout_s=5)
    assert all(results[g] == GroupOffsets(g, 0, EXPECTED) for g in groups)
    assert broker.fetches() == [[g] for g in groups]
    frame = encode_request(9, 9, 0, "lagwatch-epochs", encode_offset_fetch_request(9, ["g1"]))
    assert waiting == [4 * len(frame)]


def _pending_bytes(broker: FakeBroker) -> int:
    """Bytes received by the broker's newest socket and not read yet."""
    sock = broker._open[-1]
    raw = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\x00\x00\x00\x00")
    return int.from_bytes(raw, "little")


@pytest.mark.parametrize("code", [16, 14, 15])
def test_coordinator_errors_are_asked_again(fake: Callable[..., OffsetsBroker], code: int) -> None:
    broker = fake(answering(OFFSET_FETCH, offsets_response(group("g", error=code))))
    result = fetch_committed_offsets(broker.bootstrap, ["g"], timeout_s=5)["g"]
    assert result == GroupOffsets("g", 0, EXPECTED)
    assert broker.apis_called() == [18, 10, 9, 10, 9]


def test_only_the_failed_groups_are_asked_again(fake: Callable[..., OffsetsBroker]) -> None:
    first = offsets_response(default_offsets("a"), group("b", error=16), default_offsets("c"))
    broker = fake(answering(OFFSET_FETCH, first))
    results = fetch_committed_offsets(broker.bootstrap, ["a", "b", "c"], timeout_s=5)
    assert all(r == GroupOffsets(r.group, 0, EXPECTED) for r in results.values())
    assert broker.fetches() == [["a", "b", "c"], ["b"]]


def test_coordinator_moved(fake: Callable[..., OffsetsBroker]) -> None:
    """The group moved from ``old`` to ``new``: the first FindCoordinator still names ``old``,
    which answers NOT_COORDINATOR; the fresh one names ``new``, which has the offsets."""
    new = fake()
    old = fake(lambda b, api, v, body: offsets_response(group("g", error=16))
               if api == 9 else b.default(api, v, body))  # fmt: skip
    finds = iter([old.port, new.port])

    def bootstrap_handler(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 10:
            return find_response(coordinator("g", next(finds)))
        return broker.default(api, version, body)

    bootstrap = fake(bootstrap_handler)
    with GroupClient(bootstrap.bootstrap) as client:
        assert client.fetch_committed(["g"], timeout_s=5)["g"] == GroupOffsets("g", 0, EXPECTED)
    assert (old.fetches(), new.fetches()) == ([["g"]], [["g"]])


def test_loading_coordinator_is_waited_for(fake: Callable[..., OffsetsBroker]) -> None:
    """COORDINATOR_LOAD_IN_PROGRESS three times (a coordinator loading __consumer_offsets
    after a move), then the offsets: within the default three retries, after backing off."""
    loading = offsets_response(group("g", error=14))
    broker = fake(answering(OFFSET_FETCH, loading, loading, loading))
    started = time.monotonic()
    result = fetch_committed_offsets(broker.bootstrap, ["g"], timeout_s=5)["g"]
    elapsed = time.monotonic() - started
    assert result.ok and result.offsets == EXPECTED
    assert broker.apis_called().count(9) == 4
    assert 0.1 + 0.2 + 0.4 <= elapsed < 1.5


def test_still_failing_after_the_retries_is_the_result(fake: Callable[..., OffsetsBroker]) -> None:
    broker = fake(lambda b, api, v, body: offsets_response(group("g", error=14))
                  if api == 9 else b.default(api, v, body))  # fmt: skip
    with GroupClient(broker.bootstrap) as client:
        result = client.fetch_committed(["g"], timeout_s=5)["g"]
        assert (result.error_name, result.offsets) == ("COORDINATOR_LOAD_IN_PROGRESS", ())
        assert result.error_message == f"coordinator 127.0.0.1:{broker.port}: {result.error_name}"
        assert broker.apis_called().count(9) == 4
        client.fetch_committed(["g"], timeout_s=5, retries=0)
        assert broker.apis_called().count(9) == 5
        with pytest.raises(ValueError, match="retries"):
            client.fetch_committed(["g"], timeout_s=5, retries=-1)


def test_retries_stop_at_the_deadline(fake: Callable[..., OffsetsBroker]) -> None:
    broker = fake(lambda b, api, v, body: offsets_response(group("g", error=16))
                  if api == 9 else b.default(api, v, body))  # fmt: skip
    started = time.monotonic()
    result = fetch_committed_offsets(broker.bootstrap, ["g"], timeout_s=0.45)["g"]
    assert time.monotonic() - started < 0.45
    assert result.error_name == "NOT_COORDINATOR"
    assert broker.apis_called().count(9) == 2  # 0.1 s pause fits; the next 0.2 s one does not


def test_closed_connection_is_retried_on_a_new_one(fake: Callable[..., OffsetsBroker]) -> None:
    broker = fake(answering(OFFSET_FETCH, CLOSE))
    result = fetch_committed_offsets(broker.bootstrap, ["g"], timeout_s=5)["g"]
    assert result.ok and result.offsets == EXPECTED
    assert broker.connections == 2


def test_silent_coordinator_times_out_its_groups_only(fake: Callable[..., OffsetsBroker]) -> None:
    silent = fake(silent_on(9))
    bootstrap = fake(finding({"slow": silent.port, "fine": None}))
    started = time.monotonic()
    with GroupClient(bootstrap.bootstrap) as client:
        results = client.fetch_committed(["slow", "fine"], timeout_s=0.8)
        assert time.monotonic() - started < 1.2
        assert results["fine"] == GroupOffsets("fine", 0, EXPECTED)
        assert (results["slow"].error_name, results["slow"].error_message) == (
            "REQUEST_TIMED_OUT", f"coordinator 127.0.0.1:{silent.port} no answer within 0.8 s",
        )  # fmt: skip
        # Its connection was dropped (an answer may still come); the other one is kept.
        assert ("127.0.0.1", silent.port) not in client._brokers.open
        assert ("127.0.0.1", bootstrap.port) in client._brokers.open


def test_coordinators_are_asked_in_parallel(fake: Callable[..., OffsetsBroker]) -> None:
    """Two coordinators, each taking 0.4 s: about 0.4 s in all, not 0.8 s."""
    one, two = fake(slow_on(9, 0.4)), fake(slow_on(9, 0.4))
    bootstrap = fake(finding({"g1": one.port, "g2": two.port}))
    with GroupClient(bootstrap.bootstrap) as client:
        client.fetch_committed(["g1", "g2"], timeout_s=5)  # connects
        started = time.monotonic()
        results = client.fetch_committed(["g1", "g2"], timeout_s=5)
        elapsed = time.monotonic() - started
    assert results["g1"].ok and results["g2"].ok
    assert elapsed < 0.7
    assert (one.fetches(), two.fetches()) == ([["g1"], ["g1"]], [["g2"], ["g2"]])


def test_per_group_errors_are_returned_not_raised(fake: Callable[..., OffsetsBroker]) -> None:
    def handler(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 10:
            return find_response(
                coordinator("ok", broker.port), coordinator("denied", broker.port),
                coordinator("find-denied", -1, error=30), coordinator("lost", broker.port),
            )  # fmt: skip
        if api == 9:
            return offsets_response(default_offsets("ok"), group("denied", error=30))
        return broker.default(api, version, body)

    broker = fake(handler)
    results = fetch_committed_offsets(
        broker.bootstrap, ["ok", "denied", "find-denied", "lost", "unasked"], timeout_s=5
    )
    assert results["ok"].ok
    summary = {g: (r.error_name, r.error_message) for g, r in results.items() if not r.ok}
    assert summary == {
        "denied": ("GROUP_AUTHORIZATION_FAILED",
                   f"coordinator 127.0.0.1:{broker.port}: GROUP_AUTHORIZATION_FAILED"),
        "find-denied": ("GROUP_AUTHORIZATION_FAILED", "FindCoordinator: GROUP_AUTHORIZATION_FAILED"),
        "lost": ("UNKNOWN_SERVER_ERROR", f"127.0.0.1:{broker.port} left the group out of its answer"),
        "unasked": ("UNKNOWN_SERVER_ERROR",
                    f"127.0.0.1:{broker.port} left the group out of FindCoordinator"),
    }  # fmt: skip
    assert broker.fetches() == [["ok", "denied", "lost"]]


@pytest.mark.parametrize(
    ("apis", "message"),
    [
        ({**ALL_APIS, 9: (0, 7)}, r"offers OffsetFetch v0-7, not v8-9$"),
        (ALL_APIS, r"does not offer OffsetFetch \(API 9\) \(batched OffsetFetch is v8\+"),
    ],
)
def test_broker_too_old_says_unsupported(
    fake: Callable[..., OffsetsBroker], apis: dict, message: str
) -> None:
    broker = fake(apis=apis)
    result = fetch_committed_offsets(broker.bootstrap, ["g"], timeout_s=5)["g"]
    assert result.error_name == "UNSUPPORTED_VERSION"
    assert re.search(message, result.error_message or "")
    assert 9 not in broker.apis_called()


def test_garbage_answer_raises_and_drops_the_connection(fake: Callable[..., OffsetsBroker]) -> None:
    broker = fake(answering(OFFSET_FETCH, offsets_response(group("g"))[:-3]))
    with GroupClient(broker.bootstrap) as client:
        with pytest.raises(WireError, match="OffsetFetchResponse v9: truncated"):
            client.fetch_committed(["g"], timeout_s=5)
        assert client._brokers.open == {}
        assert client.fetch_committed(["g"], timeout_s=5)["g"].ok  # and connects again
    assert broker.connections == 2


def test_whole_call_failures_raise(fake: Callable[..., OffsetsBroker]) -> None:
    with pytest.raises(BrokerUnreachable, match="refused"):
        fetch_committed_offsets(f"127.0.0.1:{closed_port()}", ["g"], timeout_s=5)
    silent = fake(lambda b, api, v, body: SILENT)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        fetch_committed_offsets(silent.bootstrap, ["g"], timeout_s=0.4)
    assert time.monotonic() - started < 0.8
    with pytest.raises(UnsupportedSecurity):
        GroupClient("localhost:9092", {"security.protocol": "SASL_SSL"})  # GSSAPI, by default
    assert fetch_committed_offsets(f"127.0.0.1:{closed_port()}", [], timeout_s=1) == {}


# --- against the real broker (Apache Kafka 4.1) ---------------------------------------------


def _name(kind: str) -> str:
    return f"kwo-{kind}-{uuid.uuid4().hex[:10]}"


def _topics(admin: AdminClient, partitions: Sequence[int]) -> list[str]:
    """New topics, known to the broker's metadata cache: a commit on a topic it does not know
    yet is refused (UNKNOWN_TOPIC_OR_PARTITION), which would look like a missing commit."""
    names = [_name("t") for _ in partitions]
    futures = admin.create_topics(
        [NewTopic(n, p, 1) for n, p in zip(names, partitions, strict=True)]
    )
    for future in futures.values():
        future.result(30)

    def known() -> bool:
        listed = admin.list_topics(timeout=10).topics
        return all(
            n in listed and listed[n].error is None and len(listed[n].partitions) == p
            for n, p in zip(names, partitions, strict=True)
        )

    wait_for(known, timeout=30, what="topics in the broker's metadata")
    return names


def _commit(admin: AdminClient, commits: dict[str, list[TopicPartition]]) -> None:
    """Every group's commits written at once (the AdminClient takes one group per call);
    partition-level errors, which the futures do not raise, fail the test."""
    futures = [
        future
        for group_id, tps in commits.items()
        for future in admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group_id, tps)], request_timeout=60
        ).values()
    ]
    for future in futures:
        written = future.result(60)
        errors = [tp for tp in written.topic_partitions if tp.error is not None]
        assert not errors, f"{written.group_id}: {errors}"


def _as_confluent_reads(admin: AdminClient, groups: Sequence[str]) -> dict[str, dict]:
    """What ``list_consumer_group_offsets`` reads, every group's future in flight at once, as
    the Kafka adapter asks today (safe while no coordinator moves)."""
    futures = {
        g: admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=60)
        for g in groups
    }
    wait([f[g] for g, f in futures.items()], timeout=60)
    return {
        g: {
            (tp.topic, tp.partition): (tp.offset, tp.leader_epoch, tp.metadata)
            for tp in f[g].result().topic_partitions
        }
        for g, f in futures.items()
    }


def _as_confluent_shows(result: GroupOffsets) -> dict:
    """Our answer as librdkafka shows it. Its metadata is a C string: 2.16 writes it with its
    terminating NUL (the broker stores "m\\x00", which we read as stored), reads it back up to
    the first NUL, and shows "" as None."""
    return {
        (p.topic, p.partition): (
            p.offset,
            p.leader_epoch,
            (p.metadata or "").split("\x00")[0] or None,
        )
        for p in result.offsets
    }


def _as_stored(result: GroupOffsets) -> dict:
    return {(p.topic, p.partition): (p.offset, p.leader_epoch, p.metadata) for p in result.offsets}


@pytest.fixture
def client(kafka_bootstrap: str) -> Iterator[GroupClient]:
    with GroupClient(kafka_bootstrap) as group_client:
        yield group_client


@lab
def test_broker_speaks_offset_fetch_v9(kafka_bootstrap: str, client: GroupClient) -> None:
    client.fetch_committed([_name("g")], timeout_s=10)
    (conn,) = client._brokers.open.values()
    low, high = conn.api_versions[OFFSET_FETCH]
    # v10 (topic ids instead of names, KIP-848) was unstable in 4.1 and is advertised from
    # 4.2 on; a batched OffsetFetch by names (v8/v9) is still answered, and is what we ask.
    assert high >= 9
    assert choose_version(OFFSET_FETCH, conn.api_versions) == 9


@lab
def test_300_groups_in_one_call(
    admin: AdminClient, client: GroupClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    topics = _topics(admin, [3, 5, 8])
    groups = [_name("g") for _ in range(300)]
    expected: dict[str, dict] = {}
    commits: dict[str, list[TopicPartition]] = {}
    for i, group_id in enumerate(groups):
        # Group i commits on the first 1-3 topics, some partitions of each, its own offsets;
        # every fifth with metadata and a leader epoch.
        extra = {"metadata": f"m{i}", "leader_epoch": i % 7} if i % 5 == 0 else {}
        tps = [
            TopicPartition(t, p, 1000 * i + 10 * n + p, **extra)
            for n, t in enumerate(topics[: 1 + i % 3])
            for p in range(0, (3, 5, 8)[n], 1 + i % 2)
        ]
        commits[group_id] = tps
        # Stored as librdkafka wrote it: metadata with a NUL (see _as_confluent_shows).
        stored = f"{extra['metadata']}\x00" if extra else ""
        expected[group_id] = {
            (tp.topic, tp.partition): (tp.offset, tp.leader_epoch, stored) for tp in tps
        }
    _commit(admin, commits)

    started = time.monotonic()
    results = client.fetch_committed(groups, timeout_s=30)
    elapsed = time.monotonic() - started

    assert list(results) == groups
    assert all(r.ok for r in results.values())
    assert {g: _as_stored(results[g]) for g in groups} == expected
    assert all(all(p.has_commit for p in r.offsets) for r in results.values())
    # The same as confluent-kafka reads, for a few of them (with and without metadata).
    few = groups[:6]
    assert _as_confluent_reads(admin, few) == {g: _as_confluent_shows(results[g]) for g in few}
    assert elapsed < 5, f"300 groups took {elapsed:.2f} s"
    # In batches of 40 (eight requests, five in flight at a time): the same answer.
    monkeypatch.setattr(group_apis, "OFFSET_FETCH_BATCH", 40)
    assert client.fetch_committed(groups, timeout_s=30) == results


@lab
@pytest.mark.kafka_since("4.0", "KIP-848 consumer groups")
def test_group_without_commits_deleted_and_unknown(
    kafka_bootstrap: str, admin: AdminClient, client: GroupClient
) -> None:
    from confluent_kafka import Consumer

    (topic_name,) = _topics(admin, [2])
    member_group, deleted, unknown = _name("member"), _name("deleted"), _name("unknown")
    _commit(admin, {deleted: [TopicPartition(topic_name, 0, 5), TopicPartition(topic_name, 1, 6)]})
    assert client.fetch_committed([deleted], timeout_s=10)[deleted].committed == {
        (topic_name, 0): 5, (topic_name, 1): 6,
    }  # fmt: skip
    admin.delete_consumer_groups([deleted], request_timeout=30)[deleted].result(30)

    # A KIP-848 group with a live member that never committed: v9 with member id null and
    # epoch -1 is an admin's fetch, which the broker answers without validating a member.
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": member_group,
                         "group.protocol": "consumer", "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.subscribe([topic_name])

        def assigned() -> bool:
            consumer.poll(0.2)
            return bool(consumer.assignment())

        wait_for(assigned, timeout=60, what="member assigned")
        results = client.fetch_committed([member_group, deleted, unknown], timeout_s=10)
    finally:
        leave_and_close(consumer)
    # Kafka answers all three alike: no error, no offsets.
    assert results == {g: GroupOffsets(g, 0, ()) for g in (member_group, deleted, unknown)}
    assert _as_confluent_reads(admin, [deleted, unknown]) == {deleted: {}, unknown: {}}


@lab
def test_reader_survives_a_broker_restart(
    lab_services: Any, admin: AdminClient, client: GroupClient
) -> None:
    """The same client, asked over and over while the broker stops and starts again (what
    would take librdkafka down if a coordinator answered NOT_COORDINATOR meanwhile), raises
    only what the caller expects of a cluster that is down, then reads the same offsets."""
    (topic_name,) = _topics(admin, [4])
    groups = [_name("g") for _ in range(20)]
    _commit(admin, {g: [TopicPartition(topic_name, p, 100 + p) for p in range(4)] for g in groups})
    before = client.fetch_committed(groups, timeout_s=10)
    assert all(r.ok and len(r.committed) == 4 for r in before.values())

    after = through_a_restart(
        lab_services,
        lambda timeout_s: client.fetch_committed(groups, timeout_s=timeout_s),
        "offsets after the restart",
    )
    assert after == before


@lab
def test_timing_against_list_consumer_group_offsets(
    admin: AdminClient, client: GroupClient
) -> None:
    """One call for 200 groups × 50 partitions, against 200 ``list_consumer_group_offsets``
    futures all in flight (what the Kafka adapter does today); the answers must agree."""
    (topic_name,) = _topics(admin, [50])
    groups = [_name("g") for _ in range(200)]
    _commit(admin, {g: [TopicPartition(topic_name, p, i * 100 + p) for p in range(50)]
                    for i, g in enumerate(groups)})  # fmt: skip
    client.fetch_committed(groups[:1], timeout_s=10)  # connected, as between cycles

    def ours() -> dict[str, dict]:
        results = client.fetch_committed(groups, timeout_s=30)
        return {g: _as_confluent_shows(r) for g, r in results.items()}

    def theirs() -> dict[str, dict]:
        return _as_confluent_reads(admin, groups)

    timings: dict[str, list[float]] = {"wire": [], "admin": []}
    answers = {}
    for _ in range(5):
        for label, call in (("wire", ours), ("admin", theirs)):
            started = time.perf_counter()
            answers[label] = call()
            timings[label].append(time.perf_counter() - started)
    assert answers["wire"] == answers["admin"]
    assert all(len(a) == 50 for a in answers["wire"].values())
    summary = timing_summary("200 groups x 50 partitions", timings)
    assert summary["wire"][1] < 2.0

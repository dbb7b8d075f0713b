"""Tests for the folded ``__consumer_offsets`` picture (``collectors/consumer_offsets/state.py``).

Records are built by a small encoder written from Kafka's schemas (CONSUMER_OFFSETS_LAYOUT.md),
in the layouts Kafka 4.1 writes (offset commit value v4, group metadata value v3) and the older
ones a cluster upgraded from 2.x/3.x still holds. The decoder itself is tested in
``test_consumer_offsets.py``; here the question is what the state makes of a sequence.
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
    decode_record,
)
from collectors.consumer_offsets.picture import (
    ALL_MEMBERS_LEFT,
    ASSIGNMENT_CHANGED,
    FIRST_SEEN,
    LEADER_CHANGED,
    MEMBERS_JOINED,
    MEMBERS_LEFT,
    PROTOCOL_CHANGED,
    SAME_MEMBERS,
    CommitInfo,
    GenerationChange,
    GroupDeleted,
    MemberInfo,
    OffsetDeleted,
)
from collectors.consumer_offsets.state import OffsetsTopicState
from collectors.consumer_offsets.values import fast_commit, fast_commit_key

# --- a small encoder, from the schemas ---------------------------------------------------------


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


def blob(b: bytes) -> bytes:
    return i32(len(b)) + b


def cblob(b: bytes) -> bytes:
    return uvarint(len(b) + 1) + b


def offset_key(group: str = "g", topic: str = "t", partition: int = 0, version: int = 1) -> bytes:
    return i16(version) + string(group) + string(topic) + i32(partition)


def offset_value(
    version: int = 4,
    offset: int = 42,
    metadata: str = "",
    commit_ts: int = 1_700_000_000_000,
    leader_epoch: int = -1,
    expire_ts: int = -1,
    raw_metadata: bytes | None = None,
    topic_id: bytes | None = None,
) -> bytes:
    out = i16(version) + i64(offset)
    if version >= 3:
        out += i32(leader_epoch)
    if raw_metadata is not None:
        out += uvarint(len(raw_metadata) + 1) if version >= 4 else i16(len(raw_metadata))
        out += raw_metadata
    else:
        out += cstring(metadata) if version >= 4 else string(metadata)
    out += i64(commit_ts)
    if version == 1:
        out += i64(expire_ts)
    if version >= 4 and topic_id is not None:
        out += b"\x01" + uvarint(0) + uvarint(len(topic_id)) + topic_id  # tag 0: TopicId
    elif version >= 4:
        out += b"\x00"  # no tagged fields
    return out


def assignment(topics: dict[str, list[int]]) -> bytes:
    out = i16(0) + i32(len(topics))
    for topic, partitions in topics.items():
        out += string(topic) + i32(len(partitions)) + b"".join(i32(p) for p in partitions)
    return out + i32(-1)  # null user data


def member(member_id: str, assigned: dict[str, list[int]] | None = None, **fields: Any) -> dict:
    return {
        "member_id": member_id,
        "group_instance_id": fields.get("group_instance_id"),
        "client_id": fields.get("client_id", f"client-{member_id}"),
        "client_host": fields.get("client_host", "/127.0.0.1"),
        "assignment": assignment(assigned) if assigned is not None else b"",
    }


def group_key(group: str = "g") -> bytes:
    return i16(2) + string(group)


def group_value(
    generation: int,
    members: list[dict],
    *,
    leader: str | None = None,
    protocol: str | None = "range",
    protocol_type: str = "consumer",
    version: int = 3,
    state_ts: int = 1_700_000_000_000,
) -> bytes:
    if not members:
        protocol = leader = None  # what Kafka writes for an Empty group
    elif leader is None:
        leader = members[0]["member_id"]
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
            out += i32(300_000)
        out += i32(45_000) + b(b"") + b(m["assignment"])
        if flexible:
            out += b"\x00"
    if flexible:
        out += b"\x00"
    return out


def kip848_key(key_version: int, group: str = "g", member_id: str | None = None) -> bytes:
    """A consumer-group (KIP-848) record key: the group id, and a member id for member records."""
    return i16(key_version) + string(group) + (string(member_id) if member_id else b"")


class Log:
    """Appends records to one state, numbering offsets per partition as the broker does."""

    def __init__(self, state: OffsetsTopicState | None = None) -> None:
        self.state = state or OffsetsTopicState()
        self.next: dict[int, int] = {}

    def add(self, key: bytes, value: bytes | None, ts: int = 1_000, partition: int = 0) -> int:
        offset = self.next.get(partition, 0)
        self.next[partition] = offset + 1
        self.state.apply(partition, offset, ts, key, value)
        return offset


def snapshot(state: OffsetsTopicState) -> tuple:
    return (
        dict(state.commits),
        dict(state.groups),
        dict(state.deleted_groups),
        dict(state.deleted_offsets),
        state.records_decoded,
    )


# --- offset commits ------------------------------------------------------------------------------

COMMIT_CASES = [
    # key v, value v, metadata, epoch, expire: every layout, the v1 expiry, Kafka 4's v4
    pytest.param(1, 1, "", -1, 1_700_000_600_000, id="k1-v1-expiry"),
    pytest.param(1, 1, "meta", -1, -1, id="k1-v1-metadata"),
    pytest.param(1, 3, "", -1, -1, id="k1-v3-no-epoch"),
    pytest.param(1, 3, "checkpoint=17", 7, -1, id="k1-v3-epoch-metadata"),
    pytest.param(0, 0, "old", -1, -1, id="k0-v0"),
    pytest.param(1, 2, "v2", -1, -1, id="k1-v2"),
    pytest.param(1, 4, "", -1, -1, id="k1-v4-kafka4"),
    pytest.param(1, 4, "hello\x00", 3, -1, id="k1-v4-librdkafka-nul"),
    pytest.param(1, 4, "zürich ✓", -1, -1, id="k1-v4-multibyte"),
]


@pytest.mark.parametrize(
    ("key_version", "value_version", "metadata", "epoch", "expire"), COMMIT_CASES
)
def test_commit_is_kept_with_offset_times_and_metadata(
    key_version: int, value_version: int, metadata: str, epoch: int, expire: int
) -> None:
    log = Log()
    key = offset_key("orders-app", "orders", 3, version=key_version)
    value = offset_value(value_version, 1234, metadata, 1_700_000_000_500, epoch, expire)
    log.add(key, value, ts=1_700_000_000_501, partition=2)
    want = CommitInfo(
        offset=1234,
        commit_timestamp_ms=1_700_000_000_500,
        metadata=metadata,
        record_timestamp_ms=1_700_000_000_501,
        leader_epoch=None if epoch == -1 else epoch,
        log_partition=2,
        log_offset=0,
    )
    assert log.state.commits == {("orders-app", "orders", 3): want}
    # The same key again takes the short path (key bytes known): same answer.
    log.add(key, value, ts=1_700_000_000_501, partition=2)
    assert log.state.commits[("orders-app", "orders", 3)] == want._replace(log_offset=1)
    assert log.state.records_decoded == 2
    assert log.state.bytes_read == 2 * (len(key) + len(value))


@pytest.mark.parametrize("value_version", [1, 3, 4])
def test_later_commit_replaces_earlier(value_version: int) -> None:
    log = Log()
    key = offset_key("g", "t", 0)
    log.add(key, offset_value(value_version, 10, "a", 1_000), ts=1_000)
    log.add(offset_key("g", "t", 1), offset_value(value_version, 99, "", 1_500), ts=1_500)
    log.add(key, offset_value(value_version, 20, "b", 2_000), ts=2_001)
    commits = log.state.commits
    assert commits[("g", "t", 0)][:4] == (20, 2_000, "b", 2_001)
    assert commits[("g", "t", 1)].offset == 99


@pytest.mark.parametrize("value_version", [0, 3, 4])
def test_commit_without_a_timestamp_falls_back_to_the_record_time(value_version: int) -> None:
    log = Log()
    for _ in range(2):  # long path, then short path
        log.add(offset_key(), offset_value(value_version, 5, "", commit_ts=-1), ts=7_777)
        assert log.state.commits[("g", "t", 0)].commit_timestamp_ms == 7_777


# --- tombstones ----------------------------------------------------------------------------------


def test_offset_tombstone_removes_the_commit_and_records_the_fact() -> None:
    log = Log()
    key = offset_key("g", "t", 0)
    log.add(key, offset_value(4, 10), ts=1_000)
    log.add(key, offset_value(4, 11), ts=1_100)
    offset = log.add(key, None, ts=2_000)
    assert log.state.commits == {}
    assert log.state.deleted_offsets == {("g", "t", 0): 2_000}
    assert log.state.drain_events() == [
        OffsetDeleted(
            "g", "t", 0, time_ms=2_000, offset_before=11, log_partition=0, log_offset=offset
        )
    ]
    # A commit after the deletion brings the partition back and supersedes the fact.
    log.add(key, offset_value(4, 3), ts=3_000)
    assert log.state.commits[("g", "t", 0)].offset == 3
    assert log.state.deleted_offsets == {}
    assert log.state.drain_events() == []


def test_offset_tombstone_of_a_commit_never_seen() -> None:
    """After compaction a tombstone can outlive the commit it deletes (delete.retention.ms)."""
    log = Log()
    log.add(offset_key("g", "t", 5), None, ts=9_000)
    assert log.state.deleted_offsets == {("g", "t", 5): 9_000}
    [event] = log.state.drain_events()
    assert isinstance(event, OffsetDeleted) and event.offset_before is None


def test_group_tombstone_deletes_the_group_and_kafka_writes_its_offsets_tombstones_first() -> None:
    """The sequence Kafka 4.1 writes for DeleteGroups: offset tombstones, then the group's."""
    log = Log()
    log.add(group_key("g"), group_value(1, [member("m1", {"t": [0, 1]})]), ts=1_000)
    log.add(offset_key("g", "t", 0), offset_value(4, 5), ts=1_100)
    log.add(offset_key("g", "t", 1), offset_value(4, 6), ts=1_100)
    log.add(group_key("g"), group_value(2, []), ts=1_200)
    log.add(offset_key("other", "t", 0), offset_value(4, 9), ts=1_300)
    log.state.drain_events()
    log.add(offset_key("g", "t", 0), None, ts=2_000)
    log.add(offset_key("g", "t", 1), None, ts=2_000)
    gone = log.add(group_key("g"), None, ts=2_000)
    state = log.state
    assert state.groups == {}
    assert list(state.commits) == [("other", "t", 0)]
    assert state.deleted_groups == {"g": 2_000}
    events = state.drain_events()
    assert [type(e) for e in events] == [OffsetDeleted, OffsetDeleted, GroupDeleted]
    assert events[-1] == GroupDeleted(
        "g", 2_000, generation_before=2, log_partition=0, log_offset=gone
    )
    # The group comes back (same id): seen first again, the deletion fact superseded.
    log.add(group_key("g"), group_value(0, []), ts=3_000)
    assert state.deleted_groups == {}
    [event] = state.drain_events()
    assert isinstance(event, GenerationChange) and event.causes == (FIRST_SEEN,)


def test_group_tombstone_applies_only_to_the_group_metadata() -> None:
    """Follow the log: a group tombstone without offset tombstones leaves the commits."""
    log = Log()
    log.add(offset_key("g", "t", 0), offset_value(4, 5))
    log.add(group_key("g"), None, ts=2_000)
    assert ("g", "t", 0) in log.state.commits
    [event] = log.state.drain_events()
    assert event == GroupDeleted("g", 2_000, generation_before=None, log_partition=0, log_offset=1)


def kinds(events: list) -> list[tuple[str, str]]:
    return [(type(e).__name__, e.group) for e in events]


def test_a_deletion_split_over_two_reads_is_drained_whole() -> None:
    """Kafka 4.1's coordinator may write one DeleteGroups in two batches; a read that ends
    between them must not split the deletion over two drains (seen on the real broker)."""
    log = Log()
    log.add(offset_key("g", "t", 0), offset_value(4, 5), ts=1_000)
    log.add(offset_key("g", "t", 1), offset_value(4, 6), ts=1_000)
    log.state.drain_settled_events()
    log.add(offset_key("g", "t", 0), None, ts=2_000)  # the first batch ends here
    assert log.state.drain_settled_events() == []
    log.add(offset_key("g", "t", 1), None, ts=2_000)
    log.add(group_key("g"), None, ts=2_000)
    assert kinds(log.state.drain_settled_events()) == [
        ("OffsetDeleted", "g"),
        ("OffsetDeleted", "g"),
        ("GroupDeleted", "g"),
    ]
    assert log.state.drain_settled_events() == []


@pytest.mark.parametrize(
    ("records", "first", "second"),
    [
        # (key group, partition, tombstone?) in log order; what each of two drains gives.
        pytest.param(
            [("o", "a", 0), ("x", "b", 0)],
            [("OffsetDeleted", "a")],
            [],
            id="followed-on-its-partition",
        ),
        pytest.param(
            [("o", "a", 0), ("o", "b", 1)],
            [],
            [("OffsetDeleted", "a"), ("OffsetDeleted", "b")],
            id="tails-of-two-partitions-wait",
        ),
        pytest.param(
            [("o", "a", 0), ("o", "b", 0)],
            [("OffsetDeleted", "a")],
            [("OffsetDeleted", "b")],
            id="only-the-last-groups-tail-waits",
        ),
        pytest.param(
            [("o", "a", 0), ("g", "a", 0)],
            [("OffsetDeleted", "a"), ("GroupDeleted", "a")],
            [],
            id="whole-deletion-in-one-read",
        ),
        pytest.param([("g", "a", 0)], [("GroupDeleted", "a")], [], id="group-tombstone-alone"),
        pytest.param([], [], [], id="nothing"),
    ],
)
def test_which_offset_tombstones_wait_one_drain(
    records: list[tuple[str, str, int]], first: list, second: list
) -> None:
    log = Log()
    for what, group, partition in records:
        if what == "o":
            log.add(offset_key(group, "t", 0), None, ts=2_000, partition=partition)
        elif what == "g":
            log.add(group_key(group), None, ts=2_000, partition=partition)
        else:  # a commit after: the partition's read went on past the tombstones
            log.add(offset_key("other", "t", 0), offset_value(4, 1), ts=2_100, partition=partition)
    assert kinds(log.state.drain_settled_events()) == first
    # Held once only: the next drain gives them whatever follows.
    assert kinds(log.state.drain_settled_events()) == second


def test_held_tombstones_also_go_out_with_a_plain_drain() -> None:
    log = Log()
    log.add(offset_key("g", "t", 0), None, ts=2_000)
    assert log.state.drain_settled_events() == []
    assert kinds(log.state.drain_events()) == [("OffsetDeleted", "g")]


# --- generation changes --------------------------------------------------------------------------

A = member("a", {"t": [0, 1]})
B = member("b", {"t": [2, 3]})
A_ALL = member("a", {"t": [0, 1, 2, 3]})
B_ALL = member("b", {"t": [0, 1, 2, 3]})
A_MOVED = member("a", {"t": [0, 2]})
B_MOVED = member("b", {"t": [1, 3]})
C = member("c", {"t": [3]})

GENERATION_CASES = [
    # name, before (members, leader, protocol) or None, after, causes, joined, left
    ("first-seen", None, ([A_ALL], "a", "range"), (FIRST_SEEN,), ("a",), ()),
    ("first-seen-empty", None, ([], None, None), (FIRST_SEEN,), (), ()),
    ("joined-to-empty", ([], None, None), ([A_ALL], "a", "range"), (MEMBERS_JOINED,), ("a",), ()),
    (
        "joined",
        ([A_ALL], "a", "range"),
        ([A, B], "a", "range"),
        (MEMBERS_JOINED, ASSIGNMENT_CHANGED),
        ("b",),
        (),
    ),
    (
        "left",
        ([A, B], "a", "range"),
        ([A_ALL], "a", "range"),
        (MEMBERS_LEFT, ASSIGNMENT_CHANGED),
        (),
        ("b",),
    ),
    (
        "left-same-assignment",
        ([A, B, C], "a", "range"),
        ([A, B], "a", "range"),
        (MEMBERS_LEFT,),
        (),
        ("c",),
    ),
    (
        "leader-left",
        ([A, B], "a", "range"),
        ([B_ALL], "b", "range"),
        (MEMBERS_LEFT, LEADER_CHANGED, ASSIGNMENT_CHANGED),
        (),
        ("a",),
    ),
    (
        "leader-changed-only",
        ([A, B], "a", "range"),
        ([A, B], "b", "range"),
        (LEADER_CHANGED,),
        (),
        (),
    ),
    (
        "assignment-changed",
        ([A, B], "a", "range"),
        ([A_MOVED, B_MOVED], "a", "range"),
        (ASSIGNMENT_CHANGED,),
        (),
        (),
    ),
    (
        "protocol-changed",
        ([A, B], "a", "range"),
        ([A, B], "a", "roundrobin"),
        (PROTOCOL_CHANGED,),
        (),
        (),
    ),
    ("all-left", ([A, B], "a", "range"), ([], None, None), (ALL_MEMBERS_LEFT,), (), ("a", "b")),
    (
        "replaced",
        ([A_ALL], "a", "range"),
        ([B_ALL], "b", "range"),
        (MEMBERS_JOINED, MEMBERS_LEFT, LEADER_CHANGED),
        ("b",),
        ("a",),
    ),
    ("same-members", ([A, B], "a", "range"), ([A, B], "a", "range"), (SAME_MEMBERS,), (), ()),
    ("empty-to-empty", ([], None, None), ([], None, None), (SAME_MEMBERS,), (), ()),
]


@pytest.mark.parametrize(
    ("before", "after", "causes", "joined", "left"),
    [pytest.param(*case[1:], id=case[0]) for case in GENERATION_CASES],
)
def test_generation_change_causes(
    before: tuple | None, after: tuple, causes: tuple, joined: tuple, left: tuple
) -> None:
    log = Log()
    if before is not None:
        members, leader, protocol = before
        log.add(group_key(), group_value(4, members, leader=leader, protocol=protocol), ts=1_000)
        log.state.drain_events()
    members, leader, protocol = after
    offset = log.add(
        group_key(), group_value(5, members, leader=leader, protocol=protocol), ts=2_000
    )
    [event] = log.state.drain_events()
    assert event == GenerationChange(
        group="g",
        generation_before=4 if before is not None else None,
        generation_after=5,
        time_ms=2_000,
        causes=causes,
        members_joined=joined,
        members_left=left,
        leader_before=before[1] if before is not None else None,
        leader_after=leader,
        protocol_before=before[2] if before is not None else None,
        protocol_after=protocol if members else None,
        members_after=len(members),
        log_partition=0,
        log_offset=offset,
    )


def test_group_info_keeps_members_and_assignments() -> None:
    log = Log()
    members = [
        member("m-2", {"b": [3, 1], "a": [0]}, client_id="c2", client_host="/10.0.0.2"),
        member("m-1", {}, client_id="c1", client_host="/10.0.0.1", group_instance_id="static-1"),
    ]
    log.add(group_key("g"), group_value(7, members, leader="m-2", state_ts=1_234), ts=1_300)
    info = log.state.groups["g"]
    assert (info.generation, info.protocol_type, info.protocol, info.leader) == (
        7,
        "consumer",
        "range",
        "m-2",
    )
    assert (info.current_state_timestamp_ms, info.time_ms) == (1_234, 1_300)
    assert info.members == (
        MemberInfo("m-1", "static-1", "c1", "/10.0.0.1", {}),
        MemberInfo("m-2", None, "c2", "/10.0.0.2", {"a": [0], "b": [1, 3]}),
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_group_metadata_version_is_folded(version: int) -> None:
    log = Log()
    log.add(group_key(), group_value(1, [A_ALL], version=version))
    log.add(group_key(), group_value(2, [A, B], version=version))
    events = log.state.drain_events()
    assert [e.generation_after for e in events] == [1, 2]
    assert log.state.groups["g"].members[1].assignment == {"t": [2, 3]}


def test_same_generation_rewritten_updates_the_group_without_an_event() -> None:
    """Kafka rewrites a group's metadata within a generation when a static member is replaced."""
    log = Log()
    log.add(group_key(), group_value(3, [member("old", {"t": [0]}, group_instance_id="s1")]))
    log.state.drain_events()
    log.add(group_key(), group_value(3, [member("new", {"t": [0]}, group_instance_id="s1")]))
    assert log.state.drain_events() == []
    assert [m.member_id for m in log.state.groups["g"].members] == ["new"]


def test_kafka_41_classic_group_lifecycle() -> None:
    """What Apache Kafka 4.1.1 wrote for a classic group (seen on the lab broker): an empty
    generation-0 record when the group is created, one record per completed rebalance, an
    Empty record when the last member leaves."""
    log = Log()
    log.add(group_key(), group_value(0, [], protocol_type=""), ts=1_000)
    log.add(group_key(), group_value(1, [A_ALL]), ts=1_010)
    log.add(offset_key(), offset_value(4, 5, "hello\x00"), ts=1_100)
    log.add(group_key(), group_value(2, [A, B]), ts=4_000)
    log.add(group_key(), group_value(3, [A_ALL]), ts=7_000)
    log.add(group_key(), group_value(4, []), ts=7_100)
    causes = [(e.generation_before, e.generation_after, e.causes) for e in log.state.drain_events()]
    assert causes == [
        (None, 0, (FIRST_SEEN,)),
        (0, 1, (MEMBERS_JOINED,)),
        (1, 2, (MEMBERS_JOINED, ASSIGNMENT_CHANGED)),
        (2, 3, (MEMBERS_LEFT, ASSIGNMENT_CHANGED)),
        (3, 4, (ALL_MEMBERS_LEFT,)),
    ]


# --- what cannot be decoded ------------------------------------------------------------------------


def _seeded() -> Log:
    log = Log()
    log.add(offset_key("g", "t", 0), offset_value(4, 10), ts=1_000)
    log.add(group_key("g"), group_value(1, [A_ALL]), ts=1_000)
    log.state.drain_events()
    return log


SKIP_CASES = [
    # name, key, value, kind counted
    ("unknown-key-version", i16(99) + string("g"), b"\x00\x00", UNKNOWN_VERSION),
    ("negative-key-version", i16(-1) + string("g"), b"", UNKNOWN_VERSION),
    ("truncated-commit-value", offset_key("g", "t", 0), offset_value(4, 11)[:-5], TRUNCATED),
    (
        "commit-value-trailing-bytes",
        offset_key("g", "t", 0),
        offset_value(3, 11) + b"\x00",
        MALFORMED,
    ),
    (
        "unknown-commit-value-version",
        offset_key("g", "t", 0),
        i16(9) + i64(11) + i64(0),
        UNKNOWN_VERSION,
    ),
    (
        "null-commit-metadata",
        offset_key("g", "t", 0),
        i16(3) + i64(11) + i32(-1) + i16(-1) + i64(0),
        MALFORMED,
    ),
    ("truncated-group-value", group_key("g"), group_value(2, [A, B])[:-3], TRUNCATED),
    ("truncated-key", offset_key("g", "t", 0)[:-2], offset_value(4, 11), TRUNCATED),
    ("empty-value-is-not-a-tombstone", offset_key("g", "t", 0), b"", TRUNCATED),
    ("null-key", None, offset_value(4, 11), MALFORMED),
]


@pytest.mark.parametrize(
    ("key", "value", "kind"), [pytest.param(*c[1:], id=c[0]) for c in SKIP_CASES]
)
def test_undecodable_record_is_counted_and_changes_nothing_else(
    key: bytes | None, value: bytes, kind: str
) -> None:
    log = _seeded()
    before = snapshot(log.state)
    offset = log.add(key, value, ts=5_000)  # type: ignore[arg-type]
    assert log.state.skipped == {kind: 1}
    assert log.state.last_error
    assert snapshot(log.state) == before
    assert log.state.drain_events() == []
    assert log.state.positions[0] == offset + 1  # the reader moves on
    # ... and reading goes on: the next good commit is applied.
    log.add(offset_key("g", "t", 0), offset_value(4, 12), ts=6_000)
    assert log.state.commits[("g", "t", 0)].offset == 12


def test_corrupt_value_under_a_known_key_falls_back_to_the_decoder() -> None:
    """The short path never accepts what the decoder would refuse, even for a known key."""
    log = _seeded()
    good = offset_value(4, 11, "abc")
    for bad in (
        good[:-1],
        good + b"\x00",
        good[:-1] + b"\x01",
        i16(4) + good[2:14] + b"\x00" + good[15:],
    ):
        log.add(offset_key("g", "t", 0), bad)
    assert log.state.records_skipped == 4
    assert log.state.commits[("g", "t", 0)].offset == 10


# Key versions Kafka 4.1 writes for a KIP-848 group (seen on the lab broker): 3 group metadata
# (epoch), 4 partition metadata (tombstones only in 4.1), 5 member metadata, 6 target
# assignment metadata, 7 target assignment member, 8 current member assignment, 16 a
# regular-expression subscription. Values are opaque here; version 0 flexible ones.
KIP848_RECORDS = [
    (kip848_key(5, "g", "member-1"), b"\x00\x00\x00"),
    (kip848_key(3, "g"), b"\x00\x00\x00\x00\x00\x01\x00"),
    (kip848_key(7, "g", "member-1"), b"\x00\x00\x01\x00"),
    (kip848_key(6, "g"), b"\x00\x00\x00\x00\x00\x01\x00"),
    (kip848_key(8, "g", "member-1"), b"\x00\x00\x00"),
    (i16(16) + string("g") + string("^orders.*"), b"\x00\x00\x00"),
    (kip848_key(8, "g", "member-1"), None),
    (kip848_key(4, "g"), None),
    (kip848_key(3, "g"), None),
]


def test_kip848_records_are_counted_apart_and_their_commits_decoded() -> None:
    log = Log()
    for key, value in KIP848_RECORDS[:6]:
        log.add(key, value)
    log.add(offset_key("g", "t", 0), offset_value(4, 5), ts=2_000)
    for key, value in KIP848_RECORDS[6:]:
        log.add(key, value)
    state = log.state
    assert state.skipped == {UNSUPPORTED_RECORD_TYPE: len(KIP848_RECORDS)}
    assert state.skipped_key_versions == {3: 2, 4: 1, 5: 1, 6: 1, 7: 1, 8: 2, 16: 1}
    assert state.commits[("g", "t", 0)].offset == 5
    assert state.groups == {} and state.drain_events() == []
    assert state.positions == {0: len(KIP848_RECORDS) + 1}


def test_key_versions_beyond_kafkas_record_types_stay_unknown() -> None:
    log = Log()
    log.add(i16(24) + string("g"), b"")
    log.add(i16(300) + string("g"), b"")
    assert log.state.skipped == {UNKNOWN_VERSION: 2}
    assert log.state.skipped_key_versions == {24: 1, 300: 1}


# --- order and positions -------------------------------------------------------------------------


def test_partitions_interleave_in_any_order_within_offset_order() -> None:
    state = OffsetsTopicState()
    # Partition 3 ahead of partition 0, then both; each in its own offset order.
    state.apply(3, 100, 1_000, offset_key("g3", "t", 0), offset_value(4, 1))
    state.apply(0, 7, 900, group_key("g0"), group_value(1, [A_ALL]))
    state.apply(3, 101, 1_100, offset_key("g3", "t", 0), offset_value(4, 2))
    state.apply(0, 9, 950, offset_key("g0", "t", 1), offset_value(4, 3))
    assert state.positions == {0: 10, 3: 102}
    assert {k: c.offset for k, c in state.commits.items()} == {("g3", "t", 0): 2, ("g0", "t", 1): 3}
    assert state.groups["g0"].generation == 1


def test_a_record_below_the_position_was_applied_already_and_is_ignored() -> None:
    state = OffsetsTopicState()
    state.apply(0, 5, 1_000, offset_key(), offset_value(4, 50))
    state.apply(0, 6, 1_000, offset_key(), offset_value(4, 60))
    state.apply(0, 5, 1_000, offset_key(), offset_value(4, 50))  # a re-delivery
    assert state.commits[("g", "t", 0)].offset == 60
    assert state.records_stale == 1 and state.records_decoded == 2


def test_advance_moves_a_position_forward_only() -> None:
    state = OffsetsTopicState()
    state.apply(1, 4, 1_000, offset_key(), offset_value(4, 1))
    state.advance(1, 9)  # e.g. a transaction marker at 5-8: the end of the log is 9
    state.advance(1, 3)
    assert state.positions == {1: 9}
    state.apply(1, 8, 1_000, offset_key(), offset_value(4, 2))
    assert state.commits[("g", "t", 0)].offset == 1


def test_events_beyond_the_limit_drop_the_oldest() -> None:
    state = OffsetsTopicState(max_events=2)
    for i in range(3):
        state.apply(0, i, 1_000, offset_key("g", "t", i), None)
    assert [e.partition for e in state.drain_events()] == [1, 2]
    assert state.events_dropped == 1
    assert state.drain_events() == []


def test_bytearray_and_memoryview_records_are_accepted() -> None:
    state = OffsetsTopicState()
    for i, wrap in enumerate((bytes, bytearray, memoryview, bytearray)):
        state.apply(0, i, 1_000, wrap(offset_key()), wrap(offset_value(4, i)))
    assert state.commits[("g", "t", 0)].offset == 3 and state.records_skipped == 0


# --- the short path agrees with the decoder -------------------------------------------------------


def _decoder_commit(key: bytes, value: bytes, ts: int) -> CommitInfo | None:
    try:
        record = decode_record(key, value)
    except DecodeError:
        return None
    return CommitInfo(
        record["offset"],
        record["commit_timestamp_ms"] if record["commit_timestamp_ms"] >= 0 else ts,
        record["metadata"],
        ts,
        record["leader_epoch"],
        0,
        0,
    )


# Kafka 4.2+ writes the topic's id as v4's one tagged field (tag 0, a 16-byte UUID).
KAFKA_44_VALUES = [
    bytes.fromhex(
        "00040000000000000000ffffffff01000001a225b75bba010010fd441a8022cb444babc021cfe5dcde55"
    ),  # as Kafka 4.4.0 wrote it
    *(
        offset_value(4, offset, metadata, commit_ts, epoch, topic_id=bytes(range(16)))
        for offset in (0, 7, 2**63 - 1)
        for metadata in ("", "x", "m" * 126)
        for commit_ts, epoch in ((1_700_000_000_000, -1), (-1, 3))
    ),
]


SHORT_PATH_VALUES = (
    [
        offset_value(version, offset, metadata, commit_ts, epoch, expire)
        for version in (0, 1, 2, 3, 4)
        for offset in (0, 42, -1, 2**63 - 1)
        for metadata in ("", "x", "ü" * 3, "m" * 125, "m" * 126, "m" * 127, "m" * 300)
        for commit_ts, epoch, expire in ((1_700_000_000_000, -1, -1), (-1, 5, 9), (0, 2**31 - 1, 0))
    ]
    + [offset_value(version, 1, raw_metadata=b"\xff\xfe bad utf-8") for version in (0, 1, 3, 4)]
    + [
        bytes.fromhex(
            "00040000000000000313ffffffff01000001a20e2c8de100"
        ),  # as Kafka 4.1.1 wrote it
    ]
    + KAFKA_44_VALUES
)


def test_short_path_gives_the_decoders_answer_or_steps_aside() -> None:
    key = offset_key()
    accepted = 0
    for value in SHORT_PATH_VALUES:
        fast = fast_commit(value, 555, 0, 0)
        if fast is not None:
            accepted += 1
            assert fast == _decoder_commit(key, value, 555), value.hex()
    # It must take the common layouts, or it is no short path at all.
    assert accepted >= len(SHORT_PATH_VALUES) * 0.8


def test_short_path_takes_what_kafka_44_writes() -> None:
    key = offset_key()
    for value in KAFKA_44_VALUES:
        fast = fast_commit(value, 555, 0, 0)
        assert fast is not None, value.hex()
        assert fast == _decoder_commit(key, value, 555), value.hex()


@pytest.mark.parametrize(
    "tagged",
    [
        b"\x01\x00\x0f" + bytes(15),  # tag 0, but not 16 bytes
        b"\x01\x01\x10" + bytes(16),  # another tag
        b"\x02\x00\x10" + bytes(16) + b"\x01\x00",  # two fields
        b"\x01\x00\x10" + bytes(16) + b"\x00",  # a byte too many
        b"\x01\x00\x10" + bytes(15),  # a byte short
    ],
)
def test_short_path_steps_aside_for_other_tagged_fields(tagged: bytes) -> None:
    for metadata in ("", "abc"):
        value = offset_value(4, 5, metadata)[:-1] + tagged
        assert fast_commit(value, 555, 0, 0) is None, value.hex()


def test_short_path_never_accepts_what_the_decoder_refuses() -> None:
    """Mutated bytes (truncated, extended, flipped): same answer as the decoder, or None."""
    rng = random.Random(848)
    key = offset_key()
    for _ in range(20_000):
        value = bytearray(rng.choice(SHORT_PATH_VALUES))
        action = rng.randrange(4)
        if action == 0 and value:
            del value[rng.randrange(len(value)) :]
        elif action == 1:
            value += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
        else:
            for _ in range(rng.randrange(1, 3)):
                value[rng.randrange(len(value))] = rng.randrange(256)
        value = bytes(value)
        fast = fast_commit(value, 555, 0, 0)
        if fast is not None:
            assert fast == _decoder_commit(key, value, 555), value.hex()


SHORT_PATH_KEYS = [
    offset_key(group, topic, partition, version)
    for version in (0, 1)
    for group in ("", "g", "ü-group", "x" * 300)
    for topic in ("", "t", "topic-ß")
    for partition in (0, 7, -1, 2**31 - 1)
] + [
    i16(1) + i16(5) + b"\xff\xfe\xfdab" + string("t") + i32(0),  # bad UTF-8: replaced
]


def _decoded_key(key: bytes) -> tuple | None:
    try:
        record = decode_record(key, None)
    except DecodeError:
        return None
    if record["type"] != "offset_commit":
        return None
    return (record["group"], record["topic"], record["partition"])


def test_key_short_path_gives_the_decoders_answer() -> None:
    for key in SHORT_PATH_KEYS:
        assert fast_commit_key(key) == _decoded_key(key), key.hex()
        assert fast_commit_key(key) is not None


def test_key_short_path_never_accepts_what_the_decoder_refuses() -> None:
    """Mutated keys (truncated, extended, flipped bytes, other versions, negative lengths):
    the decoder's answer, or None."""
    rng = random.Random(1081)
    for _ in range(20_000):
        key = bytearray(rng.choice(SHORT_PATH_KEYS))
        action = rng.randrange(4)
        if action == 0 and key:
            del key[rng.randrange(len(key)) :]
        elif action == 1:
            key += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
        else:
            for _ in range(rng.randrange(1, 3)):
                key[rng.randrange(min(len(key), 12))] = rng.choice((0, 1, 2, 0x7F, 0x80, 0xFF))
        key = bytes(key)
        fast = fast_commit_key(key)
        if fast is not None:
            assert fast == _decoded_key(key), key.hex()


def test_state_built_by_either_path_is_the_same() -> None:
    """One log applied to a fresh state twice over (second time all keys known) agrees with a
    state fed only through decode_record."""
    rng = random.Random(11)
    records = [
        (offset_key(f"g{rng.randrange(5)}", "t", rng.randrange(4)), rng.choice(SHORT_PATH_VALUES))
        for _ in range(2_000)
    ]
    state = OffsetsTopicState()
    for offset, (key, value) in enumerate(records):
        state.apply(0, offset, 1_000 + offset, key, value)
    expected: dict = {}
    for offset, (key, value) in enumerate(records):
        record = decode_record(key, value)
        commit_ts = record["commit_timestamp_ms"]
        expected[(record["group"], record["topic"], record["partition"])] = CommitInfo(
            record["offset"],
            commit_ts if commit_ts >= 0 else 1_000 + offset,
            record["metadata"],
            1_000 + offset,
            record["leader_epoch"],
            0,
            offset,
        )
    assert dict(state.commits) == expected

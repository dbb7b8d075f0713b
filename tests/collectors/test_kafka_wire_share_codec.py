"""The share groups' codec (pure): ListGroups v3-v5 with its filters, ShareGroupDescribe v1,
DescribeShareGroupOffsets v0/v1, as tables of hand-built bytes.

Expected bytes are written out from ``ListGroupsRequest.json``/``ListGroupsResponse.json``,
``ShareGroupDescribeRequest.json``/``ShareGroupDescribeResponse.json`` and
``DescribeShareGroupOffsetsRequest.json``/``DescribeShareGroupOffsetsResponse.json`` of Kafka
4.4.0 (``kafka-clients-4.4.0.jar``, ``common/message/``) with this module's own builders, never
with the encoders under test. The lab test against a real broker is
``test_kafka_wire_share.py``. Some 400 lines: three messages' byte builders beside their
tables, so each expected byte sequence reads next to the schema field it writes.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from collectors.kafka_wire.codec import (
    DESCRIBE_SHARE_GROUP_OFFSETS,
    LIST_GROUPS,
    SHARE_GROUP_DESCRIBE,
    ListedGroup,
    ShareGroupDescription,
    ShareMember,
    SharePartitionOffset,
    WireError,
    choose_version,
    decode_describe_share_group_offsets_response,
    decode_list_groups_response,
    decode_share_group_describe_response,
    encode_describe_share_group_offsets_request,
    encode_list_groups_request,
    encode_share_group_describe_request,
    is_flexible,
    lag_upper_bound,
)
from collectors.kafka_wire.codec.reader import uuid_str
from tests.collectors.kafka_wire_fakes import (
    NO_TAGS,
    TOPIC_A,
    TOPIC_B,
    carr,
    cs,
    i16,
    i32,
    i64,
    tags,
)

# --- byte builders, straight from the schemas ----------------------------------------------


def listed(group: str, protocol_type: str = "", state: str = "Stable", group_type: str = "share",
           version: int = 5, tagged: bytes = NO_TAGS) -> bytes:  # fmt: skip
    """GroupId, ProtocolType, GroupState (v4+), GroupType (v5+), tags."""
    return (
        cs(group) + cs(protocol_type) + (cs(state) if version >= 4 else b"")
        + (cs(group_type) if version >= 5 else b"") + tagged
    )  # fmt: skip


def list_response(*groups: bytes, error: int = 0, throttle: int = 0) -> bytes:
    return i32(throttle) + i16(error) + carr(groups) + NO_TAGS


def stp(topic_id: bytes, topic: str, partitions: Sequence[int]) -> bytes:
    return topic_id + cs(topic) + carr([i32(p) for p in partitions]) + NO_TAGS


def smember(member_id: str = "m1", rack: str | None = None, epoch: int = 3, client_id: str = "c1",
            host: str = "/127.0.0.1", topics: Sequence[str] = ("jobs",),
            assigned: Sequence[bytes] = (), tagged: bytes = NO_TAGS) -> bytes:  # fmt: skip
    """MemberId, RackId, MemberEpoch, ClientId, ClientHost, SubscribedTopicNames,
    Assignment {TopicPartitions, tags}, tags."""
    return (
        cs(member_id) + cs(rack) + i32(epoch) + cs(client_id) + cs(host)
        + carr([cs(t) for t in topics]) + carr(assigned) + NO_TAGS + tagged
    )  # fmt: skip


def sgroup(group: str = "q", members: Sequence[bytes] = (), error: int = 0,
           message: str | None = None, state: str = "Stable", epoch: int = 4,
           assignment_epoch: int = 4, assignor: str = "simple", operations: int = -(2**31),
           tagged: bytes = NO_TAGS) -> bytes:  # fmt: skip
    """ErrorCode, ErrorMessage, GroupId, GroupState, GroupEpoch, AssignmentEpoch, AssignorName,
    Members, AuthorizedOperations, tags."""
    return (
        i16(error) + cs(message) + cs(group) + cs(state) + i32(epoch) + i32(assignment_epoch)
        + cs(assignor) + carr(members) + i32(operations) + tagged
    )  # fmt: skip


def sdescribe_response(*groups: bytes, throttle: int = 0) -> bytes:
    return i32(throttle) + carr(groups) + NO_TAGS


def opart(index: int, start: int, epoch: int = 0, lag: int | None = None, error: int = 0,
          message: str | None = None, version: int = 1) -> bytes:  # fmt: skip
    """PartitionIndex, StartOffset, LeaderEpoch, Lag (v1+), ErrorCode, ErrorMessage, tags."""
    return (
        i32(index) + i64(start) + i32(epoch)
        + (i64(-1 if lag is None else lag) if version >= 1 else b"")
        + i16(error) + cs(message) + NO_TAGS
    )  # fmt: skip


def otopic(name: str, topic_id: bytes, partitions: Sequence[bytes]) -> bytes:
    return cs(name) + topic_id + carr(partitions) + NO_TAGS


def ogroup(group: str, topics: Sequence[bytes] = (), error: int = 0,
           message: str | None = None) -> bytes:  # fmt: skip
    return cs(group) + carr(topics) + i16(error) + cs(message) + NO_TAGS


def offsets_response(*groups: bytes, throttle: int = 0) -> bytes:
    return i32(throttle) + carr(groups) + NO_TAGS


# --- versions ---------------------------------------------------------------------------------

VERSION_CASES = [
    # (api, the broker's range, what we speak, why)
    (LIST_GROUPS, (0, 5), 5, "4.4.0: TypesFilter"),
    (LIST_GROUPS, (0, 4), 4, "3.3-3.6: states, no types"),
    (LIST_GROUPS, (0, 2), None, "before flexible versions: not spoken"),
    (SHARE_GROUP_DESCRIBE, (1, 1), 1, "4.1+"),
    (SHARE_GROUP_DESCRIBE, (0, 0), None, "4.0's early access v0, removed since"),
    (DESCRIBE_SHARE_GROUP_OFFSETS, (0, 1), 1, "4.2+: Lag (KIP-1226)"),
    (DESCRIBE_SHARE_GROUP_OFFSETS, (0, 0), 0, "4.1: no lag"),
]


@pytest.mark.parametrize(("api", "theirs", "ours", "why"), VERSION_CASES)
def test_versions_chosen(api: int, theirs: tuple[int, int], ours: int | None, why: str) -> None:
    assert choose_version(api, {api: theirs}) == ours, why


def test_every_share_api_is_flexible_from_its_first_spoken_version() -> None:
    assert is_flexible(LIST_GROUPS, 3) and not is_flexible(LIST_GROUPS, 2)
    assert is_flexible(SHARE_GROUP_DESCRIBE, 1)
    assert is_flexible(DESCRIBE_SHARE_GROUP_OFFSETS, 0)


# --- ListGroups -------------------------------------------------------------------------------

LIST_REQUESTS = [
    # (version, states, types, expected body)
    (5, (), ("share",), carr([]) + carr([cs("share")]) + NO_TAGS),
    (5, ("Stable", "Empty"), (), carr([cs("Stable"), cs("Empty")]) + carr([]) + NO_TAGS),
    (5, (), (), carr([]) + carr([]) + NO_TAGS),
    (4, ("Empty",), (), carr([cs("Empty")]) + NO_TAGS),
    (3, (), (), NO_TAGS),
]


@pytest.mark.parametrize(("version", "states", "types", "body"), LIST_REQUESTS)
def test_list_groups_request(
    version: int, states: tuple[str, ...], types: tuple[str, ...], body: bytes
) -> None:
    assert encode_list_groups_request(version, states, types) == body


@pytest.mark.parametrize(
    ("version", "states", "types"), [(4, (), ("share",)), (3, ("Stable",), ())]
)
def test_a_filter_the_version_cannot_carry_is_refused(
    version: int, states: tuple[str, ...], types: tuple[str, ...]
) -> None:
    with pytest.raises(ValueError, match="cannot filter"):
        encode_list_groups_request(version, states, types)


LIST_RESPONSES = [
    # (version, body, error, groups)
    (
        5,
        list_response(
            listed("q1"),
            listed("old", "consumer", "Empty", "classic"),
            listed("q2", state="Empty", tagged=tags((3, b"\x01"))),
            throttle=7,
        ),
        0,
        (
            ListedGroup("q1", "", "Stable", "share"),
            ListedGroup("old", "consumer", "Empty", "classic"),
            ListedGroup("q2", "", "Empty", "share"),
        ),
    ),
    (
        4,
        list_response(listed("g", "consumer", version=4)),
        0,
        (ListedGroup("g", "consumer", "Stable", None),),
    ),  # fmt: skip
    (
        3,
        list_response(listed("g", "consumer", version=3)),
        0,
        (ListedGroup("g", "consumer", None, None),),
    ),  # fmt: skip
    (5, list_response(listed("g", state="", group_type="")), 0, (ListedGroup("g", ""),)),
    (5, list_response(error=14), 14, ()),
]


@pytest.mark.parametrize(("version", "body", "error", "groups"), LIST_RESPONSES)
def test_list_groups_response(
    version: int, body: bytes, error: int, groups: tuple[ListedGroup, ...]
) -> None:
    result = decode_list_groups_response(body, version)
    assert (result.error_code, result.groups) == (error, groups)


def test_list_groups_response_errors_name_the_field() -> None:
    good = list_response(listed("q1"))
    with pytest.raises(WireError, match=r"Groups\[0\]\.GroupType"):
        decode_list_groups_response(good[:-3], 5)
    with pytest.raises(WireError, match="unexpected bytes"):
        decode_list_groups_response(good + b"\x00", 5)
    null_id = b"\x00" + cs("") + cs("Stable") + cs("share") + NO_TAGS
    with pytest.raises(WireError, match=r"null .* reading Groups\[0\]\.GroupId"):
        decode_list_groups_response(list_response(null_id), 5)


# --- ShareGroupDescribe -----------------------------------------------------------------------


def test_share_group_describe_request() -> None:
    body = encode_share_group_describe_request(1, ["q1", "q2"])
    assert body == carr([cs("q1"), cs("q2")]) + b"\x00" + NO_TAGS
    assert encode_share_group_describe_request(1, ["q"], True).endswith(b"\x01" + NO_TAGS)
    with pytest.raises(ValueError, match="not implemented"):
        encode_share_group_describe_request(0, ["q"])


DESCRIBED = sdescribe_response(
    sgroup(
        "q",
        [
            smember(
                "m2",
                rack="r1",
                epoch=6,
                client_id="c2",
                host="/10.0.0.2",
                topics=("jobs", "mail"),
                assigned=[stp(TOPIC_B, "mail", [0]), stp(TOPIC_A, "jobs", [2, 0])],
                tagged=tags((5, b"x")),
            ),
            # A second member on the same partitions: share groups spread records.
            smember("m1", assigned=[stp(TOPIC_A, "jobs", [0, 1, 2])]),
        ],
        epoch=7,
        assignment_epoch=6,
        operations=0x1F,
    ),
    sgroup("idle", state="Empty", epoch=2, assignment_epoch=2, assignor=""),
    sgroup(
        "gone",
        error=69,
        message="Group gone not found.",
        state="",
        epoch=0,
        assignment_epoch=0,
        assignor="",
    ),  # fmt: skip
    throttle=3,
)


def test_share_group_describe_response() -> None:
    result = decode_share_group_describe_response(DESCRIBED, 1)
    assert result.throttle_time_ms == 3
    q, idle, gone = result.groups
    assert q == ShareGroupDescription(
        group="q",
        state="Stable",
        group_epoch=7,
        assignment_epoch=6,
        assignor="simple",
        members=(
            ShareMember(
                "m1",
                None,
                3,
                "c1",
                "/127.0.0.1",
                ("jobs",),
                (("jobs", 0), ("jobs", 1), ("jobs", 2)),
            ),
            ShareMember(
                "m2",
                "r1",
                6,
                "c2",
                "/10.0.0.2",
                ("jobs", "mail"),
                (("jobs", 0), ("jobs", 2), ("mail", 0)),
            ),
        ),  # fmt: skip
        topic_ids=(("jobs", uuid_str(TOPIC_A)), ("mail", uuid_str(TOPIC_B))),
        authorized_operations=0x1F,
    )
    assert (idle.state, idle.assignor, idle.members, idle.ok) == ("Empty", None, (), True)
    assert not gone.ok and gone.error_name == "GROUP_ID_NOT_FOUND"
    assert (gone.state, gone.group_epoch, gone.error_message) == (
        None, None, "Group gone not found.",
    )  # fmt: skip


@pytest.mark.parametrize("cut", [1, 5, 20, 60])
def test_share_group_describe_truncated_names_a_field(cut: int) -> None:
    with pytest.raises(WireError, match="truncated|reading"):
        decode_share_group_describe_response(DESCRIBED[:-cut], 1)


# --- DescribeShareGroupOffsets ----------------------------------------------------------------

OFFSET_REQUESTS = [
    # (groups, topics, expected body)
    (["q"], None, carr([cs("q") + b"\x00" + NO_TAGS]) + NO_TAGS),
    (
        ["q1", "q2"],
        [("jobs", [0, 2])],
        carr(
            [
                cs(g) + carr([cs("jobs") + carr([i32(0), i32(2)]) + NO_TAGS]) + NO_TAGS
                for g in ("q1", "q2")
            ]
        )
        + NO_TAGS,
    ),  # fmt: skip
]


@pytest.mark.parametrize(("groups", "topics", "body"), OFFSET_REQUESTS)
def test_describe_share_group_offsets_request(
    groups: list[str], topics: list[tuple[str, list[int]]] | None, body: bytes
) -> None:
    for version in (0, 1):  # the same request: v1 only adds Lag to the answer
        assert encode_describe_share_group_offsets_request(version, groups, topics) == body


def _jobs(version: int) -> bytes:
    return offsets_response(
        ogroup("q", [
            otopic("jobs", TOPIC_A, [
                opart(1, 40, lag=7, version=version),
                opart(0, 120, epoch=3, lag=0, version=version),
                opart(2, -1, epoch=-1, lag=-1, version=version),  # not initialised
            ]),
            otopic("mail", TOPIC_B, [
                opart(0, 0, error=3, message="unknown", version=version),
            ]),
        ]),
        ogroup("gone", error=69, message="Group gone not found."),
        throttle=1,
    )  # fmt: skip


OFFSET_RESPONSES = [
    # (version, lags of jobs/0, jobs/1, jobs/2 as decoded, lag_reported)
    (1, [0, 7, None], True),
    (0, [None, None, None], False),
]


@pytest.mark.parametrize(("version", "lags", "reported"), OFFSET_RESPONSES)
def test_describe_share_group_offsets_response(
    version: int, lags: list[int | None], reported: bool
) -> None:
    result = decode_describe_share_group_offsets_response(_jobs(version), version)
    q, gone = result.groups
    assert q.ok and q.lag_reported is reported
    a, b = uuid_str(TOPIC_A), uuid_str(TOPIC_B)
    assert q.partitions == (
        SharePartitionOffset("jobs", a, 0, 120, 3, lags[0]),
        SharePartitionOffset("jobs", a, 1, 40, 0, lags[1]),
        SharePartitionOffset("jobs", a, 2, None, None, lags[2]),
        SharePartitionOffset("mail", b, 0, 0, 0, None, 3, "unknown"),
    )
    assert q.partitions[3].error_name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert (gone.ok, gone.error_name, gone.partitions) == (False, "GROUP_ID_NOT_FOUND", ())


def test_a_v0_answer_read_as_v1_is_refused_not_misread() -> None:
    with pytest.raises(WireError):
        decode_describe_share_group_offsets_response(_jobs(0), 1)


UPPER_BOUNDS = [
    # (start offset, log end, bound, why)
    (40, 100, 60, "every record from the start offset counts, acknowledged or not"),
    (100, 100, 0, "at the end"),
    (120, 100, 0, "start past the end (records deleted meanwhile): never negative"),
    (None, 100, None, "not initialised: unknown"),
    (40, None, None, "log end unknown"),
]


@pytest.mark.parametrize(("start", "end", "bound", "why"), UPPER_BOUNDS)
def test_lag_upper_bound(start: int | None, end: int | None, bound: int | None, why: str) -> None:
    assert lag_upper_bound(start, end) == bound, why

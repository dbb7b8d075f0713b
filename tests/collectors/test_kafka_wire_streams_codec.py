"""The streams groups' codec (pure): StreamsGroupDescribe v0/v1 and ListGroups' "streams"
filter, as tables of hand-built bytes.

Expected bytes are written out from ``StreamsGroupDescribeRequest.json`` and
``StreamsGroupDescribeResponse.json`` of Kafka 4.4.0 (``kafka-clients-4.4.0.jar``,
``common/message/``) with this module's own builders, never with the encoders under test.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from collectors.kafka_wire.codec import (
    STREAMS_GROUP_DESCRIBE,
    ListedGroup,
    StreamsGroupDescription,
    StreamsMember,
    StreamsTasks,
    Subtopology,
    WireError,
    choose_version,
    decode_list_groups_response,
    decode_streams_group_describe_response,
    encode_list_groups_request,
    encode_streams_group_describe_request,
    is_flexible,
)
from tests.collectors.kafka_wire_fakes import NO_TAGS, carr, cs, i8, i16, i32, i64, tags

# --- byte builders, straight from the schema ------------------------------------------------

NULL = i8(-1)  # a nullable struct's marker: -1 null, 1 present
PRESENT = i8(1)


def kv(key: str, value: str) -> bytes:
    return cs(key) + cs(value) + NO_TAGS


def topic_info(name: str, partitions: int = 0, replication: int = 0,
               configs: Sequence[bytes] = ()) -> bytes:  # fmt: skip
    """Name, Partitions, ReplicationFactor, TopicConfigs, tags."""
    return cs(name) + i32(partitions) + i16(replication) + carr(configs) + NO_TAGS


def subtopology(sub_id: str, sources: Sequence[str] = (), sinks: Sequence[str] = (),
                changelogs: Sequence[bytes] = (), repartition: Sequence[bytes] = (),
                tagged: bytes = NO_TAGS) -> bytes:  # fmt: skip
    return (
        cs(sub_id) + carr([cs(t) for t in sources]) + carr([cs(t) for t in sinks])
        + carr(changelogs) + carr(repartition) + tagged
    )  # fmt: skip


def topology(epoch: int, subtopologies: Sequence[bytes] | None) -> bytes:
    subs = b"\x00" if subtopologies is None else carr(subtopologies)
    return PRESENT + i32(epoch) + subs + NO_TAGS


def task_ids(sub_id: str, partitions: Sequence[int]) -> bytes:
    return cs(sub_id) + carr([i32(p) for p in partitions]) + NO_TAGS


def tasks(active: Sequence[bytes] = (), standby: Sequence[bytes] = (),
          warmup: Sequence[bytes] = ()) -> bytes:  # fmt: skip
    return carr(active) + carr(standby) + carr(warmup) + NO_TAGS


def task_offset(sub_id: str, partition: int, offset: int) -> bytes:
    return cs(sub_id) + i32(partition) + i64(offset) + NO_TAGS


def endpoint(host: str, port: int) -> bytes:
    return PRESENT + cs(host) + port.to_bytes(2, "big") + NO_TAGS


def smember(member_id: str = "m1", epoch: int = 5, instance: str | None = None,
            rack: str | None = None, client_id: str = "app-1-StreamThread-1-consumer",
            host: str = "/127.0.0.1", topology_epoch: int = 0, process: str = "p1",
            user_endpoint: bytes = NULL, client_tags: Sequence[bytes] = (),
            offsets: Sequence[bytes] = (), end_offsets: Sequence[bytes] = (),
            assignment: bytes = tasks(), target: bytes = tasks(), is_classic: bool = False,
            tagged: bytes = NO_TAGS) -> bytes:  # fmt: skip
    """MemberId, MemberEpoch, InstanceId, RackId, ClientId, ClientHost, TopologyEpoch,
    ProcessId, UserEndpoint, ClientTags, TaskOffsets, TaskEndOffsets, Assignment,
    TargetAssignment, IsClassic, tags."""
    return (
        cs(member_id) + i32(epoch) + cs(instance) + cs(rack) + cs(client_id) + cs(host)
        + i32(topology_epoch) + cs(process) + user_endpoint + carr(client_tags)
        + carr(offsets) + carr(end_offsets) + assignment + target
        + (b"\x01" if is_classic else b"\x00") + tagged
    )  # fmt: skip


def node(name: str, node_type: int = 1, sources: Sequence[str] = (), sink: str | None = None,
         stores: Sequence[str] = (), successors: Sequence[str] = ()) -> bytes:  # fmt: skip
    return (
        cs(name) + i8(node_type) + carr([cs(t) for t in sources]) + cs(sink)
        + carr([cs(s) for s in stores]) + carr([cs(s) for s in successors]) + NO_TAGS
    )  # fmt: skip


def description(*subs: tuple[str, Sequence[bytes]], stores: Sequence[bytes] = ()) -> bytes:
    """A TopologyDescription (v1): Subtopologies {SubtopologyId, Nodes}, GlobalStores."""
    return (
        PRESENT + carr([cs(s) + carr(nodes) + NO_TAGS for s, nodes in subs])
        + carr(stores) + NO_TAGS
    )  # fmt: skip


def sgroup(group: str = "app", members: Sequence[bytes] = (), error: int = 0,
           message: str | None = None, state: str = "Stable", epoch: int = 4,
           assignment_epoch: int = 4, topo: bytes = NULL, operations: int = -(2**31),
           version: int = 1, topo_description: bytes = NULL, status: int = 0,
           assignor: str | None = "sticky", tagged: bytes = NO_TAGS) -> bytes:  # fmt: skip
    """ErrorCode, ErrorMessage, GroupId, GroupState, GroupEpoch, AssignmentEpoch, Topology,
    Members, AuthorizedOperations, [v1: TopologyDescription, TopologyDescriptionStatus,
    AssignorName], tags."""
    v1 = topo_description + i8(status) + cs(assignor) if version >= 1 else b""
    return (
        i16(error) + cs(message) + cs(group) + cs(state) + i32(epoch) + i32(assignment_epoch)
        + topo + carr(members) + i32(operations) + v1 + tagged
    )  # fmt: skip


def response(*groups: bytes, throttle: int = 0) -> bytes:
    return i32(throttle) + carr(groups) + NO_TAGS


# --- versions ---------------------------------------------------------------------------------

VERSION_CASES = [
    # (the broker's range, what we speak, why)
    ((0, 1), 1, "4.4.0: KIP-1331's topology description and assignor"),
    ((0, 0), 0, "4.1-4.3: v0"),
    ((2, 3), None, "a future layout we do not read"),
]


@pytest.mark.parametrize(("theirs", "ours", "why"), VERSION_CASES)
def test_versions_chosen(theirs: tuple[int, int], ours: int | None, why: str) -> None:
    assert choose_version(STREAMS_GROUP_DESCRIBE, {STREAMS_GROUP_DESCRIBE: theirs}) == ours, why


def test_none_when_the_broker_lacks_the_api() -> None:
    assert choose_version(STREAMS_GROUP_DESCRIBE, {69: (0, 1)}) is None
    assert is_flexible(STREAMS_GROUP_DESCRIBE, 0)


# --- requests ---------------------------------------------------------------------------------

REQUESTS = [
    # (version, groups, include operations, expected body)
    (0, ["a", "b"], False, carr([cs("a"), cs("b")]) + b"\x00" + NO_TAGS),
    (1, ["a"], False, carr([cs("a")]) + b"\x00" + b"\x00" + NO_TAGS),
    (1, ["a"], True, carr([cs("a")]) + b"\x01" + b"\x00" + NO_TAGS),
    (0, [], False, carr([]) + b"\x00" + NO_TAGS),
]


@pytest.mark.parametrize(("version", "groups", "operations", "body"), REQUESTS)
def test_request(version: int, groups: list[str], operations: bool, body: bytes) -> None:
    assert encode_streams_group_describe_request(version, groups, operations) == body


def test_a_version_we_do_not_speak_is_refused() -> None:
    with pytest.raises(ValueError, match="not implemented"):
        encode_streams_group_describe_request(2, ["a"])


def test_list_groups_by_the_streams_type() -> None:
    assert encode_list_groups_request(5, (), ("streams",)) == (
        carr([]) + carr([cs("streams")]) + NO_TAGS
    )
    body = i32(0) + i16(0) + carr(
        [cs("wordcount") + cs("streams") + cs("Stable") + cs("streams") + NO_TAGS]
    ) + NO_TAGS  # fmt: skip
    (group,) = decode_list_groups_response(body, 5).groups
    assert group == ListedGroup("wordcount", "streams", "Stable", "streams")


# --- answers ----------------------------------------------------------------------------------

ACTIVE = tasks(active=[task_ids("0", [2, 0])], standby=[task_ids("1", [1])])
TARGET = tasks(active=[task_ids("0", [0, 2]), task_ids("1", [0])], warmup=[task_ids("1", [1])])
COMPACT = kv("cleanup.policy", "compact")
TOPOLOGY = topology(
    2,
    [
        subtopology(
            "1",
            sources=["app-counts-repartition"],
            changelogs=[topic_info("app-counts-changelog", configs=[COMPACT])],
            repartition=[topic_info("app-counts-repartition", 3, 1)],
        ),
        subtopology("0", sources=["words", "lines"], sinks=["app-counts-repartition"]),
    ],
)  # fmt: skip


def _stable(version: int) -> bytes:
    return response(
        sgroup(
            "app",
            [
                smember(
                    "m2", epoch=6, instance="i-2", rack="r1", host="/10.0.0.2", process="p2",
                    topology_epoch=2, user_endpoint=endpoint("10.0.0.2", 65000),
                    client_tags=[kv("zone", "b"), kv("az", "1")],
                    offsets=[task_offset("1", 1, 40)], end_offsets=[task_offset("1", 1, 42)],
                    assignment=ACTIVE, target=TARGET, tagged=tags((7, b"x")),
                ),
                smember("m1", instance="", rack=""),
            ],
            epoch=7, assignment_epoch=6, topo=TOPOLOGY, operations=0x1F, version=version,
        ),
        sgroup("idle", state="Empty", epoch=1, assignment_epoch=0, version=version,
               assignor=None),
        sgroup("gone", error=69, message="Group gone not found.", state="", epoch=0,
               assignment_epoch=0, version=version, assignor=None),
        throttle=3,
    )  # fmt: skip


EXPECTED_M2 = StreamsMember(
    member_id="m2",
    member_epoch=6,
    instance_id="i-2",
    rack_id="r1",
    client_id="app-1-StreamThread-1-consumer",
    client_host="/10.0.0.2",
    topology_epoch=2,
    process_id="p2",
    user_endpoint=("10.0.0.2", 65000),
    client_tags=(("az", "1"), ("zone", "b")),
    task_offsets=(("1", 1, 40),),
    task_end_offsets=(("1", 1, 42),),
    assignment=StreamsTasks(active=(("0", 0), ("0", 2)), standby=(("1", 1),)),
    target_assignment=StreamsTasks(active=(("0", 0), ("0", 2), ("1", 0)), warmup=(("1", 1),)),
)


@pytest.mark.parametrize(("version", "assignor", "status"), [(1, "sticky", "NOT_REQUESTED"),
                                                             (0, None, None)])  # fmt: skip
def test_a_stable_group_every_field(version: int, assignor: str | None, status: str | None) -> None:
    result = decode_streams_group_describe_response(_stable(version), version)
    assert result.throttle_time_ms == 3
    app, idle, gone = result.groups
    m1, m2 = app.members
    assert m2 == EXPECTED_M2
    assert (m1.member_id, m1.instance_id, m1.rack_id, m1.user_endpoint) == ("m1", None, None, None)
    assert m1.assignment == StreamsTasks() and not m1.is_classic
    assert app == StreamsGroupDescription(
        group="app",
        state="Stable",
        group_epoch=7,
        assignment_epoch=6,
        assignor=assignor,
        members=(m1, m2),
        authorized_operations=0x1F,
        topology_epoch=2,
        subtopologies=(
            Subtopology("0", ("lines", "words"), ("app-counts-repartition",)),
            Subtopology(
                "1",
                ("app-counts-repartition",),
                (),
                ("app-counts-changelog",),
                ("app-counts-repartition",),
            ),
        ),
        description_status=status,
    )
    assert app.source_topics("0") == ("lines", "words")
    assert app.source_topics("1") == ("app-counts-repartition",)
    assert app.source_topics("9") == ()
    assert (idle.state, idle.topology_epoch, idle.subtopologies) == ("Empty", None, None)
    assert idle.ok
    assert not gone.ok and gone.error_name == "GROUP_ID_NOT_FOUND"
    assert (gone.state, gone.group_epoch, gone.members) == (None, None, ())
    assert gone.error_message == "Group gone not found."


def test_a_topology_without_subtopologies_is_an_uninitialised_group() -> None:
    body = response(sgroup("new", state="NotReady", topo=topology(0, None)))
    (group,) = decode_streams_group_describe_response(body, 1).groups
    assert (group.state, group.topology_epoch, group.subtopologies) == ("NotReady", 0, None)


def test_a_topology_description_sent_anyway_is_read_through() -> None:
    nodes = [
        node("KSTREAM-SOURCE-0000000000", 1, sources=["words"], successors=["KSTREAM-MAP-1"]),
        node("KSTREAM-SINK-2", 3, sink="out"),
    ]
    store = node("src", 1, sources=["globals"]) + node("proc", 2, stores=["g"]) + NO_TAGS
    body = response(
        sgroup("app", topo_description=description(("0", nodes), stores=[store]), status=3)
    )
    (group,) = decode_streams_group_describe_response(body, 1).groups
    assert (group.description_status, group.assignor) == ("AVAILABLE", "sticky")


def test_a_classic_member_not_upgraded_yet() -> None:
    body = response(sgroup("app", [smember(is_classic=True)]))
    (group,) = decode_streams_group_describe_response(body, 1).groups
    assert group.members[0].is_classic


GARBLED = [
    # (body, version, what the error names)
    (_stable(1)[:-1], 1, "truncated"),
    (_stable(1) + b"\x00", 1, "unexpected bytes"),
    (_stable(0), 1, "reading"),  # a v0 answer is not misread as v1
    (response(sgroup(topo=i8(2) + i32(0) + b"\x00" + NO_TAGS)), 1, r"marker 2 .*Topology"),
    (response(sgroup(members=[smember()[:-20]])), 1, r"Members\[0\]"),
]


@pytest.mark.parametrize(("body", "version", "match"), GARBLED)
def test_garbled_answers_name_the_field(body: bytes, version: int, match: str) -> None:
    with pytest.raises(WireError, match=match):
        decode_streams_group_describe_response(body, version)


@pytest.mark.parametrize("cut", [1, 5, 20, 60, 120])
def test_truncated_anywhere_is_refused(cut: int) -> None:
    with pytest.raises(WireError):
        decode_streams_group_describe_response(_stable(1)[:-cut], 1)

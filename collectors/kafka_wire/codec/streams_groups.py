"""Streams groups (KIP-1071): StreamsGroupDescribe (API 89).

Spoken because confluent-kafka 2.16's AdminClient has no call for streams groups (Kafka
Streams applications on the "streams" rebalance protocol, ``group.protocol=streams``): their
coordinator assigns *tasks*, not partitions, from the application's topology, which the
application sends it. A task is (subtopology, partition): it processes that partition of every
source topic of the subtopology. A streams group commits offsets as a consumer group does
(OffsetCommit), so its progress is read with OffsetFetch; this answer adds what only the
coordinator knows: the topology as it initialised it, each member's process, its active,
standby and warm-up tasks, and the epochs.

Versions 0 and 1 (KIP-1331 adds ``IncludeTopologyDescription`` and, in the answer,
``TopologyDescription``, ``TopologyDescriptionStatus`` and ``AssignorName``), from
``StreamsGroupDescribeRequest.json`` and ``StreamsGroupDescribeResponse.json`` of Kafka 4.4.0
(``kafka-clients-4.4.0.jar``, ``common/message/``). The full topology description (its
processor nodes) is never asked for; a broker that sends one anyway is read through, its
nodes checked and dropped, so that the rest of the answer is not misread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectors.kafka_wire.codec.consumer_group_describe import BrokerGroup
from collectors.kafka_wire.codec.framing import (
    NO_TAGGED_FIELDS,
    STREAMS_GROUP_DESCRIBE,
    check_version,
    compact_string_array,
)
from collectors.kafka_wire.codec.reader import Reader

__all__ = [
    "StreamsGroupDescribeResult",
    "StreamsGroupDescription",
    "StreamsMember",
    "StreamsTasks",
    "Subtopology",
    "decode_streams_group_describe_response",
    "encode_streams_group_describe_request",
]

# AuthorizedOperations when the request did not ask for them (the schema's default).
_OPERATIONS_NOT_REQUESTED = -(2**31)
# TopologyDescriptionStatus (v1): 0 NOT_REQUESTED, 1 NOT_STORED, 2 ERROR, 3 AVAILABLE.
DESCRIPTION_STATUSES = {0: "NOT_REQUESTED", 1: "NOT_STORED", 2: "ERROR", 3: "AVAILABLE"}

Task = tuple[str, int]  # (subtopology id, partition)


@dataclass(frozen=True)
class StreamsTasks:
    """A member's tasks as sorted (subtopology id, partition) pairs. Active tasks process
    records (and commit); standby tasks keep a replica of a task's state stores from its
    changelog; warm-up tasks are standbys catching up before they are made active."""

    active: tuple[Task, ...] = ()
    standby: tuple[Task, ...] = ()
    warmup: tuple[Task, ...] = ()


@dataclass(frozen=True)
class Subtopology:
    """One subtopology as the coordinator initialised it: the topics it reads (user topics
    and the repartition topics Kafka Streams creates) and writes. Changelog and repartition
    source topics are names only here (their partition counts and configs are dropped)."""

    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class StreamsMember:
    """One member of a streams group (one Kafka Streams client; a ``process_id`` is one
    application instance, which may run several). ``instance_id`` and ``rack_id`` are None
    where unset (null or ""); ``user_endpoint`` is the Interactive Queries (host, port), or
    None. ``task_offsets``/``task_end_offsets`` are the changelog positions the member
    reported, as (subtopology id, partition, offset). ``is_classic``: a classic-protocol
    member not upgraded yet."""

    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    topology_epoch: int
    process_id: str
    user_endpoint: tuple[str, int] | None
    client_tags: tuple[tuple[str, str], ...]
    task_offsets: tuple[tuple[str, int, int], ...]
    task_end_offsets: tuple[tuple[str, int, int], ...]
    assignment: StreamsTasks
    target_assignment: StreamsTasks
    is_classic: bool = False


@dataclass(frozen=True)
class StreamsGroupDescription(BrokerGroup):
    """One group's StreamsGroupDescribe answer, or why there is none (the other fields are
    then None/empty). ``state`` ("Empty", "NotReady", "Assigning", "Reconciling", "Stable",
    "Dead") is None where the broker sent "". ``topology_epoch`` None: no topology yet;
    ``subtopologies`` None: the group is not initialised (no member sent a topology, or its
    source topics are missing or wrongly partitioned). ``assignor`` (v1) None on v0.
    ``description_status``: TopologyDescriptionStatus's name (v1), None on v0."""

    members: tuple[StreamsMember, ...]
    topology_epoch: int | None = None
    subtopologies: tuple[Subtopology, ...] | None = None
    description_status: str | None = None

    def source_topics(self, subtopology_id: str) -> tuple[str, ...]:
        """The topics a task of ``subtopology_id`` reads, repartition topics included."""
        for sub in self.subtopologies or ():
            if sub.subtopology_id == subtopology_id:
                return tuple(sorted({*sub.source_topics, *sub.repartition_source_topics}))
        return ()


@dataclass(frozen=True)
class StreamsGroupDescribeResult:
    throttle_time_ms: int
    groups: tuple[StreamsGroupDescription, ...]


def encode_streams_group_describe_request(
    version: int, groups: Sequence[str], include_authorized_operations: bool = False
) -> bytes:
    """StreamsGroupDescribe body; v1's IncludeTopologyDescription is always false (the
    processor nodes are not what a monitor shows)."""
    check_version(STREAMS_GROUP_DESCRIBE, version)
    body = compact_string_array(groups, "GroupIds")
    body += b"\x01" if include_authorized_operations else b"\x00"
    if version >= 1:
        body += b"\x00"  # IncludeTopologyDescription
    return body + NO_TAGGED_FIELDS


def decode_streams_group_describe_response(body: bytes, version: int) -> StreamsGroupDescribeResult:
    """StreamsGroupDescribe v0/v1 answer, every field read (unknown tags skipped)."""
    check_version(STREAMS_GROUP_DESCRIBE, version)
    reader = Reader(body, f"StreamsGroupDescribeResponse v{version}")
    throttle = reader.int32("ThrottleTimeMs")
    groups = reader.compact_array("Groups", lambda: _described_group(reader, version), 20)
    reader.tagged_fields()
    reader.end()
    return StreamsGroupDescribeResult(throttle, tuple(groups))


def _described_group(reader: Reader, version: int) -> StreamsGroupDescription:
    error_code = reader.int16("ErrorCode")
    error_message = reader.compact_nullable_string("ErrorMessage")
    group = reader.compact_string("GroupId")
    state = reader.compact_string("GroupState")
    group_epoch = reader.int32("GroupEpoch")
    assignment_epoch = reader.int32("AssignmentEpoch")
    topology_epoch: int | None = None
    subtopologies: list[Subtopology] | None = None
    if reader.present("Topology"):
        reader.enter("Topology")
        topology_epoch = reader.int32("Epoch")
        subtopologies = reader.compact_nullable_array(
            "Subtopologies", lambda: _subtopology(reader), 6
        )
        reader.tagged_fields()
        reader.leave()
    members = reader.compact_array("Members", lambda: _member(reader), 28)
    operations = reader.int32("AuthorizedOperations")
    status: str | None = None
    assignor: str | None = None
    if version >= 1:
        if reader.present("TopologyDescription"):
            _skip_topology_description(reader)
        code = reader.int8("TopologyDescriptionStatus")
        status = DESCRIPTION_STATUSES.get(code, f"STATUS_{code}")
        assignor = reader.compact_nullable_string("AssignorName")
    reader.tagged_fields()
    if error_code:
        return StreamsGroupDescription.failed(group, error_code, error_message)
    return StreamsGroupDescription(
        group=group,
        state=state or None,
        group_epoch=group_epoch,
        assignment_epoch=assignment_epoch,
        assignor=assignor or None,
        members=tuple(sorted(members, key=lambda m: m.member_id)),
        error_message=error_message,
        authorized_operations=None if operations == _OPERATIONS_NOT_REQUESTED else operations,
        topology_epoch=topology_epoch,
        subtopologies=(
            None
            if subtopologies is None
            else tuple(sorted(subtopologies, key=lambda s: s.subtopology_id))
        ),
        description_status=status,
    )


def _topic_info(reader: Reader) -> str:
    """A TopicInfo: Name, Partitions, ReplicationFactor, TopicConfigs; the name is kept."""
    name = reader.compact_string("Name")
    reader.int32("Partitions")
    reader.int16("ReplicationFactor")
    reader.compact_array("TopicConfigs", lambda: _key_value(reader), 3)
    reader.tagged_fields()
    return name


def _key_value(reader: Reader) -> tuple[str, str]:
    key = reader.compact_string("Key")
    value = reader.compact_string("Value")
    reader.tagged_fields()
    return key, value


def _subtopology(reader: Reader) -> Subtopology:
    subtopology_id = reader.compact_string("SubtopologyId")
    sources = reader.string_array("SourceTopics")
    sinks = reader.string_array("RepartitionSinkTopics")
    changelogs = reader.compact_array("StateChangelogTopics", lambda: _topic_info(reader), 9)
    repartition = reader.compact_array("RepartitionSourceTopics", lambda: _topic_info(reader), 9)
    reader.tagged_fields()
    return Subtopology(
        subtopology_id=subtopology_id,
        source_topics=tuple(sorted(sources)),
        repartition_sink_topics=tuple(sorted(sinks)),
        state_changelog_topics=tuple(sorted(changelogs)),
        repartition_source_topics=tuple(sorted(repartition)),
    )


def _task_offset(reader: Reader) -> tuple[str, int, int]:
    subtopology = reader.compact_string("SubtopologyId")
    partition = reader.int32("Partition")
    offset = reader.int64("Offset")
    reader.tagged_fields()
    return subtopology, partition, offset


def _tasks(reader: Reader, leaf: str) -> tuple[Task, ...]:
    pairs: list[Task] = []

    def task_ids() -> None:
        subtopology = reader.compact_string("SubtopologyId")
        partitions = reader.int32_array("Partitions")
        reader.tagged_fields()
        pairs.extend((subtopology, p) for p in partitions)

    reader.compact_array(leaf, task_ids, 3)
    return tuple(sorted(pairs))


def _assignment(reader: Reader, leaf: str) -> StreamsTasks:
    reader.enter(leaf)
    active = _tasks(reader, "ActiveTasks")
    standby = _tasks(reader, "StandbyTasks")
    warmup = _tasks(reader, "WarmupTasks")
    reader.tagged_fields()
    reader.leave()
    return StreamsTasks(active, standby, warmup)


def _member(reader: Reader) -> StreamsMember:
    member_id = reader.compact_string("MemberId")
    member_epoch = reader.int32("MemberEpoch")
    instance_id = reader.compact_nullable_string("InstanceId")
    rack_id = reader.compact_nullable_string("RackId")
    client_id = reader.compact_string("ClientId")
    client_host = reader.compact_string("ClientHost")
    topology_epoch = reader.int32("TopologyEpoch")
    process_id = reader.compact_string("ProcessId")
    endpoint: tuple[str, int] | None = None
    if reader.present("UserEndpoint"):
        reader.enter("UserEndpoint")
        host = reader.compact_string("Host")
        port = reader.int16("Port") & 0xFFFF  # uint16
        reader.tagged_fields()
        reader.leave()
        endpoint = (host, port)
    client_tags = reader.compact_array("ClientTags", lambda: _key_value(reader), 3)
    offsets = reader.compact_array("TaskOffsets", lambda: _task_offset(reader), 14)
    end_offsets = reader.compact_array("TaskEndOffsets", lambda: _task_offset(reader), 14)
    assignment = _assignment(reader, "Assignment")
    target = _assignment(reader, "TargetAssignment")
    is_classic = reader.boolean("IsClassic")
    reader.tagged_fields()
    return StreamsMember(
        member_id=member_id,
        member_epoch=member_epoch,
        instance_id=instance_id or None,
        rack_id=rack_id or None,
        client_id=client_id,
        client_host=client_host,
        topology_epoch=topology_epoch,
        process_id=process_id,
        user_endpoint=endpoint,
        client_tags=tuple(sorted(client_tags)),
        task_offsets=tuple(sorted(offsets)),
        task_end_offsets=tuple(sorted(end_offsets)),
        assignment=assignment,
        target_assignment=target,
        is_classic=is_classic,
    )


def _skip_node(reader: Reader) -> None:
    """A TopologyDescriptionNode, read and dropped."""
    reader.compact_string("Name")
    reader.int8("NodeType")
    reader.string_array("SourceTopics")
    reader.compact_nullable_string("SinkTopic")
    reader.string_array("Stores")
    reader.string_array("Successors")
    reader.tagged_fields()


def _skip_topology_description(reader: Reader) -> None:
    """v1's TopologyDescription (never asked for: see the module), read and dropped."""
    reader.enter("TopologyDescription")

    def subtopology() -> None:
        reader.compact_string("SubtopologyId")
        reader.compact_array("Nodes", lambda: _skip_node(reader), 7)
        reader.tagged_fields()

    def global_store() -> None:
        for leaf in ("Source", "Processor"):
            reader.enter(leaf)
            _skip_node(reader)
            reader.leave()
        reader.tagged_fields()

    reader.compact_array("Subtopologies", subtopology, 3)
    reader.compact_array("GlobalStores", global_store, 15)
    reader.tagged_fields()
    reader.leave()

"""The cycle's streams groups (KIP-1071, Kafka Streams on the "streams" rebalance protocol):
listed (``typed_groups``), described and their committed offsets read through the wire client,
as ``GroupSnapshot`` (type "streams") and ``CommittedOffset`` records.

Through the wire client because confluent-kafka 2.16's AdminClient has no streams-group call:
it cannot describe one, and its listing does not say which groups are streams groups.
A streams group's coordinator assigns *tasks* (subtopology, partition) from the topology the
application sent it; an active task processes that partition of every source topic of its
subtopology and commits its position there with OffsetCommit, as a consumer group does. So a
streams group's progress is its committed offsets (OffsetFetch) and its lag the log end minus
them, judged by the consumer groups' rules; each member's assignment here is the partitions
of its active tasks, which is what makes it the owner of those partitions' commits.

Internal topics (repartition topics, which Kafka Streams both writes and reads) are source
topics of a subtopology: their commits and lag are shown as any other's, as
``kafka-streams-groups.sh --describe --offsets`` shows them.
"""

from __future__ import annotations

from collectors.kafka.cycle import Cycle
from collectors.kafka.typed_groups import read_typed_groups
from collectors.kafka_wire import (
    NO_OFFSET,
    GroupClient,
    GroupListing,
    GroupOffsets,
    StreamsGroupDescription,
)
from collectors.kafka_wire import (
    StreamsTasks as WireTasks,
)
from collectors.records import (
    CommittedOffset,
    GroupMember,
    GroupSnapshot,
    Source,
    StreamsTasks,
    Subtopology,
)

__all__ = ["STREAMS", "read_streams_groups", "streams_commits", "streams_snapshot"]

STREAMS = "streams"  # Kafka's GroupType name, as ``GroupSnapshot.protocol_type``


def read_streams_groups(
    groups: GroupClient | None, listing: GroupListing, cycle: Cycle
) -> tuple[list[GroupSnapshot], list[CommittedOffset]]:
    """Every streams group ``listing`` names (ListGroups by type: ``typed_groups``), with
    StreamsGroupDescribe and OffsetFetch of their coordinators. A failure is the cycle's
    warning for the groups it concerns, never more; a broker without streams groups (before
    Kafka 4.1, or with the protocol switched off) lists none and is no warning."""
    if groups is None:
        return [], []
    return read_typed_groups(
        groups, STREAMS, listing, cycle,
        (("StreamsGroupDescribe", groups.describe_streams),
         ("OffsetFetch", groups.fetch_committed)),
        gone=lambda description, committed: (
            description.error_name == "GROUP_ID_NOT_FOUND" and not committed.offsets
        ),
        snapshot=streams_snapshot, commits=streams_commits,
    )  # fmt: skip


def _partitions(
    description: StreamsGroupDescription, tasks: WireTasks
) -> tuple[tuple[str, int], ...]:
    """The (topic, partition) pairs an assignment's active tasks process."""
    return tuple(
        sorted(
            {
                (topic, partition)
                for subtopology, partition in tasks.active
                for topic in description.source_topics(subtopology)
            }
        )
    )


def _tasks(tasks: WireTasks) -> StreamsTasks:
    return StreamsTasks(tasks.active, tasks.standby, tasks.warmup)


def streams_snapshot(
    description: StreamsGroupDescription,
    committed: GroupOffsets,
    listed_state: str | None = None,
    coordinator: str | None = None,
) -> GroupSnapshot:
    """A streams group as its coordinator describes it (pure). The group epoch is its
    generation, the assignment epoch its target's. A member's assignment is the partitions of
    its active tasks now, its target those of its target's active tasks (a member whose two
    differ is still reconciling). A description that failed keeps the listed state and says
    the members are unknown."""
    members = tuple(
        GroupMember(
            member_id=m.member_id,
            client_id=m.client_id or None,
            host=m.client_host or None,
            assignment=_partitions(description, m.assignment),
            instance_id=m.instance_id,
            member_epoch=m.member_epoch,
            target_assignment=_partitions(description, m.target_assignment),
            process_id=m.process_id or None,
            tasks=_tasks(m.assignment),
            target_tasks=_tasks(m.target_assignment),
        )
        for m in description.members
    )
    subtopologies = (
        None
        if description.subtopologies is None
        else tuple(
            Subtopology(
                subtopology_id=s.subtopology_id,
                source_topics=tuple(sorted({*s.source_topics, *s.repartition_source_topics})),
                repartition_sink_topics=s.repartition_sink_topics,
                state_changelog_topics=s.state_changelog_topics,
            )
            for s in description.subtopologies
        )
    )
    topics = {t for s in subtopologies or () for t in s.source_topics}
    topics |= {t for m in members for t, _ in m.assignment}
    topics |= {p.topic for p in committed.offsets if not p.error_code}
    return GroupSnapshot(
        source=Source.KAFKA,
        group=description.group,
        state=description.state or listed_state,
        generation=description.group_epoch,
        assignment_epoch=description.assignment_epoch,
        assignor=description.assignor,
        coordinator=coordinator,
        protocol_type=STREAMS,
        members=members,
        members_known=description.ok,
        topics=tuple(sorted(topics)),
        topology_epoch=description.topology_epoch,
        subtopologies=subtopologies,
    )


def streams_commits(
    snapshot: GroupSnapshot, committed: GroupOffsets, cycle: Cycle | None = None
) -> list[CommittedOffset]:
    """Each committed offset, owned by the member whose active task processes its partition;
    a partition without a commit (-1: the task has not committed yet) has nothing to judge
    and is left out, as a consumer group's."""
    owners = {tp: m.member_id for m in snapshot.members for tp in m.assignment}
    commits = []
    for p in committed.offsets:
        if p.error_code:
            if cycle is not None:
                where = f"group {snapshot.group} {p.topic}/{p.partition}"
                cycle.error(where, f"OffsetFetch: {p.error_name}")
            continue
        if p.offset == NO_OFFSET or p.offset < 0:
            continue
        commits.append(
            CommittedOffset(
                source=Source.KAFKA,
                group=snapshot.group,
                topic=p.topic,
                partition=p.partition,
                offset=p.offset,
                owner=owners.get((p.topic, p.partition)),
                where=f"group {snapshot.group}",
            )
        )
    return commits

"""What the brokers' answers become: ``GroupSnapshot`` and ``CommittedOffset`` records.

Kept pure (no client, no I/O), so the mapping from what Apache Kafka answers can be tested
with the clients' own model objects, including answers the lab broker never gives. Where an
answer is missing or incomplete (a describe that failed, a Kafka-protocol broker that lists
no members), the records say "unknown" rather than guess (``members_known=False``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaError, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription

from collectors.kafka.cycle import Cycle, describe_exc, is_code
from collectors.kafka_wire import ClassicGroup, ConsumerGroupEpochs
from collectors.records import CommittedOffset, GroupMember, GroupSnapshot, Source
from collectors.storm_commit_metadata import parse_commit_metadata, topology_of

__all__ = [
    "commits_of",
    "group_outcome",
    "snapshot_from_classic",
    "snapshot_from_description",
    "snapshot_from_epochs",
    "state_name",
    "type_name",
    "with_epochs",
]

# Kafka's own spelling of the states (GroupState / ConsumerGroupState in the broker), which the
# rest of Lagwatch compares against. UNKNOWN maps to None: "the source did not say".
_STATE_NAMES: dict[ConsumerGroupState, str | None] = {
    ConsumerGroupState.UNKNOWN: None,
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}

# Kafka's GroupType names (KIP-848): "classic" groups rebalance through JoinGroup/SyncGroup,
# "consumer" groups through the broker-side heartbeat protocol.
_TYPE_NAMES: dict[ConsumerGroupType, str | None] = {
    ConsumerGroupType.UNKNOWN: None,
    ConsumerGroupType.CLASSIC: "classic",
    ConsumerGroupType.CONSUMER: "consumer",
}

# States in which a group necessarily has members. A broker that describes such a group with
# none has not told us who they are; Apache Kafka always lists them.
_STATES_WITH_MEMBERS = frozenset({"Stable", "PreparingRebalance", "CompletingRebalance"})

# Answers that mean "this group no longer exists": skipped, not reported as an error, because
# a group deleted between ListGroups and the next request is a normal race, not a fault.
_GONE_STATES = frozenset({"Dead"})


def state_name(state: Any) -> str | None:
    return _STATE_NAMES.get(state) if isinstance(state, ConsumerGroupState) else None


def type_name(group_type: Any) -> str | None:
    return _TYPE_NAMES.get(group_type) if isinstance(group_type, ConsumerGroupType) else None


def _pairs(assignment: Any) -> tuple[tuple[str, int], ...]:
    topic_partitions = assignment.topic_partitions if assignment is not None else None
    return tuple(sorted((tp.topic, tp.partition) for tp in topic_partitions or ()))


def snapshot_from_description(
    desc: ConsumerGroupDescription,
    *,
    listed_type: str | None = None,
    topics: Iterable[str] = (),
) -> GroupSnapshot:
    """Turn the AdminClient's description of one group into a ``GroupSnapshot``.

    Kept pure (no client, no I/O) so the mapping from what Apache Kafka answers can be tested
    with the client's own model objects, including answers the lab broker never gives.

    ``listed_type`` is the type ListGroups reported: preferred, because librdkafka describes a
    group through ConsumerGroupDescribe first and a broker may answer that for a classic group
    too, while ListGroups reports the group's real type.

    ``generation`` stays None here: librdkafka 2.16 exposes neither the group epoch of a
    KIP-848 group nor the generation of a classic one. ``with_epochs`` adds the former (from
    ConsumerGroupDescribe, ``collectors.kafka_wire``); the ``__consumer_offsets`` reader the
    latter.
    """
    state = state_name(getattr(desc, "state", None))
    group_type = listed_type or type_name(getattr(desc, "type", None))
    members = tuple(
        sorted(
            (
                GroupMember(
                    member_id=m.member_id,
                    client_id=m.client_id or None,
                    host=m.host or None,
                    assignment=_pairs(m.assignment),
                    instance_id=getattr(m, "group_instance_id", None) or None,
                    # Only KIP-848 groups have a target; a classic member's is "not said".
                    target_assignment=(
                        _pairs(getattr(m, "target_assignment", None))
                        if group_type == "consumer"
                        else None
                    ),
                )
                for m in desc.members or []
            ),
            key=lambda m: m.member_id,
        )
    )
    members_known = bool(members) or state not in _STATES_WITH_MEMBERS
    coordinator = None
    if desc.coordinator is not None and desc.coordinator.host:
        coordinator = f"{desc.coordinator.host}:{desc.coordinator.port}"
    assigned_topics = {t for m in members for t, _ in m.assignment}
    return GroupSnapshot(
        source=Source.KAFKA,
        group=desc.group_id,
        state=state,
        generation=None,
        assignor=desc.partition_assignor or None,
        coordinator=coordinator,
        protocol_type=group_type,
        members=members,
        members_known=members_known,
        topics=tuple(sorted(assigned_topics | set(topics))),
    )


def snapshot_from_classic(group: ClassicGroup, coordinator: str | None = None) -> GroupSnapshot:
    """A classic group as DescribeGroups (our wire client) says it; the assignor is the
    protocol name only for the "consumer" protocol type (Connect and others use their own).
    A member whose assignment bytes could not be decoded keeps ``()``: "unknown"."""
    members = tuple(
        sorted(
            (
                GroupMember(
                    member_id=m.member_id,
                    client_id=m.client_id or None,
                    host=m.client_host or None,
                    assignment=m.assignment or (),
                    instance_id=m.instance_id,
                    subscription=m.subscription,
                )
                for m in group.members
            ),
            key=lambda m: m.member_id,
        )
    )
    return GroupSnapshot(
        source=Source.KAFKA,
        group=group.group,
        state=group.state,
        assignor=(group.protocol or None) if group.protocol_type == "consumer" else None,
        coordinator=coordinator,
        protocol_type="classic",
        members=members,
        members_known=bool(members) or group.state not in _STATES_WITH_MEMBERS,
        topics=tuple(sorted({t for m in members for t, _ in m.assignment})),
    )


def snapshot_from_epochs(
    group: ConsumerGroupEpochs, coordinator: str | None = None
) -> GroupSnapshot:
    """A KIP-848 group as ConsumerGroupDescribe says it: members with their epochs and
    target assignments, the group epoch as the generation."""
    members = tuple(
        sorted(
            (
                GroupMember(
                    member_id=m.member_id,
                    client_id=m.client_id or None,
                    host=m.client_host or None,
                    assignment=tuple(m.assignment),
                    instance_id=m.instance_id,
                    member_epoch=m.member_epoch,
                    target_assignment=tuple(m.target_assignment),
                    # A regex subscription's names are the broker's current resolution of
                    # it; the what-if would read them as fixed, so they are "not said".
                    subscription=(
                        None
                        if m.subscribed_topic_regex
                        else tuple(sorted(m.subscribed_topics))
                    ),
                )
                for m in group.members
            ),
            key=lambda m: m.member_id,
        )
    )
    return GroupSnapshot(
        source=Source.KAFKA,
        group=group.group,
        state=group.state,
        generation=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor=group.assignor,
        coordinator=coordinator,
        protocol_type="consumer",
        members=members,
        members_known=True,
        topics=tuple(sorted({t for m in members for t, _ in m.assignment})),
    )


def with_epochs(snapshot: GroupSnapshot, epochs: ConsumerGroupEpochs) -> GroupSnapshot:
    """A KIP-848 group's snapshot completed with what ConsumerGroupDescribe says.

    The group epoch is the group's generation (it rises with every membership or
    subscription change); the assignment epoch trails it while the broker computes a new
    target (state Assigning), and a member whose epoch or partitions differ from its target
    is still reconciling. The broker's own state wins: librdkafka reports Assigning and
    Reconciling as "unknown". Members are matched by id; a member only one answer lists keeps
    what that answer said (they were read a moment apart).
    """
    if not epochs.ok:
        return snapshot
    by_id = {m.member_id: m for m in epochs.members}
    members = []
    for member in snapshot.members:
        described = by_id.get(member.member_id)
        if described is not None:
            member = dataclasses.replace(
                member,
                member_epoch=described.member_epoch,
                instance_id=member.instance_id or described.instance_id,
                target_assignment=described.target_assignment,
            )
        members.append(member)
    return dataclasses.replace(
        snapshot,
        state=epochs.state or snapshot.state,
        generation=epochs.group_epoch,
        assignment_epoch=epochs.assignment_epoch,
        assignor=snapshot.assignor or epochs.assignor,
        members=tuple(members),
    )


def group_outcome(
    group: str,
    listed: tuple[str | None, str | None],
    describe_future: Future,
    offsets_future: Future,
    cycle: Cycle,
) -> tuple[GroupSnapshot, list[TopicPartition]] | None:
    """One group's snapshot and committed offsets; None if the group is gone. A group whose
    commits name a Storm 2 topology (their metadata) is that topology's spout: the snapshot
    says which instance (``topology_of``), and is a Kafka group's in every other respect."""
    listed_state, listed_type = listed
    where = f"group {group}"

    tps: list[TopicPartition] = []
    if not offsets_future.done():
        cycle.error(where, "OffsetFetch timed out")
    elif (exc := offsets_future.exception()) is not None:
        if is_code(exc, KafkaError.GROUP_ID_NOT_FOUND):
            return None
        cycle.error(where, f"OffsetFetch: {describe_exc(exc)}")
    else:
        for tp in offsets_future.result().topic_partitions or []:
            if tp.error is not None and tp.error.code() != KafkaError.NO_ERROR:
                cycle.error(f"{where} {tp.topic}/{tp.partition}", f"OffsetFetch: {tp.error}")
            elif tp.offset >= 0:  # -1001: no commit on this partition
                tps.append(tp)
    committed_topics = {tp.topic for tp in tps}

    if not describe_future.done():
        cycle.error(where, "DescribeGroups timed out")
        desc = None
    elif (exc := describe_future.exception()) is not None:
        if is_code(exc, KafkaError.GROUP_ID_NOT_FOUND):
            return None
        cycle.error(where, f"DescribeGroups: {describe_exc(exc)}")
        desc = None
    else:
        desc = describe_future.result()

    if desc is None:
        # Still report the group: its commits are good evidence; membership is unknown.
        snapshot = GroupSnapshot(
            source=Source.KAFKA,
            group=group,
            state=listed_state,
            protocol_type=listed_type,
            members_known=False,
            topics=tuple(sorted(committed_topics)),
        )
    else:
        if isinstance(desc, GroupSnapshot):
            snapshot = dataclasses.replace(
                desc,
                protocol_type=listed_type or desc.protocol_type,
                topics=tuple(sorted(set(desc.topics) | committed_topics)),
            )
        else:
            snapshot = snapshot_from_description(
                desc, listed_type=listed_type, topics=committed_topics
            )
        if snapshot.state in _GONE_STATES and not tps:
            return None
    topology = topology_of(parse_commit_metadata(tp.metadata) for tp in tps if tp.metadata)
    if topology is not None:
        snapshot = dataclasses.replace(snapshot, topology_id=topology)
    return snapshot, tps


def commits_of(
    snapshots: Iterable[GroupSnapshot], committed: Mapping[str, list[TopicPartition]]
) -> list[CommittedOffset]:
    """Every group's commits, each with the member that owns its partition (if one does) and,
    for a Storm 2 spout's, the topology instance its metadata names."""
    owners = {
        (snap.group, t, p): m.member_id
        for snap in snapshots
        for m in snap.members
        for t, p in m.assignment
    }
    return [
        CommittedOffset(
            source=Source.KAFKA,
            group=group,
            topic=tp.topic,
            partition=tp.partition,
            offset=tp.offset,
            owner=owners.get((group, tp.topic, tp.partition)),
            # Most clients commit without metadata: no call for them (100,000 commits).
            topology_id=_topology_id(md) if (md := tp.metadata) else None,
            where=f"group {group}",
        )
        for group, tps in committed.items()
        for tp in tps
    ]


def _topology_id(metadata: str | None) -> str | None:
    """The Storm 2 topology instance a commit's metadata names, or None (any other client)."""
    found = parse_commit_metadata(metadata)
    return found.topology_id if found is not None else None

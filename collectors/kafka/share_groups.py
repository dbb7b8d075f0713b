"""The cycle's share groups (KIP-932, Kafka 4.1+): listed (``typed_groups``), described and
their progress read through the wire client, as ``GroupSnapshot`` (type "share") and
``CommittedOffset`` records.

Through the wire client because confluent-kafka 2.16's AdminClient has no share-group call:
its listing knows the types "classic" and "consumer" only (a share group is not in it), and it
can neither describe a share group nor read its offsets. A share group is a queue: its members
share partitions (several members may hold one, each record goes to one of them), and its
progress is no commit but each partition's *start offset*, below which every record is
delivered and acknowledged or given up. That offset is the partition's commit here, and the
broker's own lag (KIP-1226, Kafka 4.2+) its lag; before KIP-1226 the lag is computed from the
log end and marked as an upper bound (``collectors/figures.py``).

A cluster whose security the wire client cannot speak is not read at all (the source's
error names the setting), share groups included.
"""

from __future__ import annotations

from collectors.kafka.cycle import Cycle
from collectors.kafka.typed_groups import read_typed_groups
from collectors.kafka_wire import (
    GroupClient,
    GroupListing,
    ShareGroupDescription,
    ShareGroupOffsets,
)
from collectors.records import CommittedOffset, GroupMember, GroupSnapshot, Source

__all__ = ["SHARE", "read_share_groups", "share_commits", "share_snapshot"]

SHARE = "share"  # Kafka's GroupType name, as ``GroupSnapshot.protocol_type``


def read_share_groups(
    groups: GroupClient | None, listing: GroupListing, cycle: Cycle
) -> tuple[list[GroupSnapshot], list[CommittedOffset]]:
    """Every share group ``listing`` names (ListGroups by type: ``typed_groups``), with
    ShareGroupDescribe and DescribeShareGroupOffsets of their coordinators. A failure is the
    cycle's warning for the groups it concerns, never more."""
    if groups is None:
        return [], []
    return read_typed_groups(
        groups, SHARE, listing, cycle,
        (("ShareGroupDescribe", groups.describe_share),
         ("DescribeShareGroupOffsets", groups.fetch_share_offsets)),
        gone=lambda description, _: description.error_name == "GROUP_ID_NOT_FOUND",
        snapshot=share_snapshot, commits=share_commits,
    )  # fmt: skip


def share_snapshot(
    description: ShareGroupDescription,
    progress: ShareGroupOffsets,
    listed_state: str | None = None,
    coordinator: str | None = None,
) -> GroupSnapshot:
    """A share group as its coordinator describes it (pure). The group epoch is its
    generation; a member has no target assignment (it takes what it is given at its next
    heartbeat), so none is said. A description that failed keeps the listed state and says
    the members are unknown."""
    members = tuple(
        GroupMember(
            member_id=m.member_id,
            client_id=m.client_id or None,
            host=m.client_host or None,
            assignment=m.assignment,
            member_epoch=m.member_epoch,
            subscription=tuple(sorted(m.subscribed_topics)),
        )
        for m in description.members
    )
    topics = {t for m in members for t, _ in m.assignment}
    topics |= {t for m in members for t in m.subscription or ()}
    topics |= {p.topic for p in progress.partitions}
    return GroupSnapshot(
        source=Source.KAFKA,
        group=description.group,
        state=description.state or listed_state,
        generation=description.group_epoch,
        assignment_epoch=description.assignment_epoch,
        assignor=description.assignor,
        coordinator=coordinator,
        protocol_type=SHARE,
        members=members,
        members_known=description.ok,
        topics=tuple(sorted(topics)),
    )


def share_commits(
    snapshot: GroupSnapshot, progress: ShareGroupOffsets, cycle: Cycle | None = None
) -> list[CommittedOffset]:
    """Each partition's start offset as the group's commit, with the broker's lag where the
    answer carries one; a partition not initialised yet (no start offset: nobody fetched it
    since the group came) has nothing to judge and is left out. The owner is the first member
    (by id) holding the partition: others may hold it too."""
    holders: dict[tuple[str, int], str] = {}
    for member in snapshot.members:
        for tp in member.assignment:
            holders.setdefault(tp, member.member_id)
    commits = []
    for p in progress.partitions:
        if p.error_code:
            if cycle is not None:
                why = p.error_message or p.error_name
                cycle.error(f"group {snapshot.group} {p.topic}/{p.partition}", why)
            continue
        if p.start_offset is None:
            continue
        commits.append(
            CommittedOffset(
                source=Source.KAFKA,
                group=snapshot.group,
                topic=p.topic,
                partition=p.partition,
                offset=p.start_offset,
                owner=holders.get((p.topic, p.partition)),
                where=f"group {snapshot.group}",
                share=True,
                reported_lag=p.lag if progress.lag_reported else None,
                topic_id=p.topic_id,
            )
        )
    return commits

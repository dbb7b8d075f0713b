"""What the folded ``__consumer_offsets`` picture is made of, and why generations change.

Kept apart from the folding (``state``) because these are what the rest of Lagwatch reads:
the Kafka adapter turns commits, classic groups and generation changes into its records, and
the causes of a change are a table of rules on two consecutive metadata records of a group,
pure enough to be read (and tested) on their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple

__all__ = [
    "ALL_MEMBERS_LEFT",
    "ASSIGNMENT_CHANGED",
    "FIRST_SEEN",
    "LEADER_CHANGED",
    "MEMBERS_JOINED",
    "MEMBERS_LEFT",
    "PROTOCOL_CHANGED",
    "SAME_MEMBERS",
    "CommitInfo",
    "Event",
    "GenerationChange",
    "GroupDeleted",
    "GroupInfo",
    "MemberInfo",
    "OffsetDeleted",
    "generation_causes",
    "group_info",
]

# Causes of a generation change, derived from the group's two consecutive metadata records.
FIRST_SEEN: Final = "first_seen"  # no earlier record of the group (or it was deleted since)
MEMBERS_JOINED: Final = "members_joined"
MEMBERS_LEFT: Final = "members_left"
ALL_MEMBERS_LEFT: Final = "all_members_left"  # the group went Empty
LEADER_CHANGED: Final = "leader_changed"
ASSIGNMENT_CHANGED: Final = "assignment_changed"  # a member present before and after moved
PROTOCOL_CHANGED: Final = "protocol_changed"  # assignor or protocol type
# A new generation with the same members, leader and assignment: a member rejoined (new
# subscription or metadata, a restart within the session timeout) without visible effect.
SAME_MEMBERS: Final = "same_members"


class CommitInfo(NamedTuple):
    """The last commit of one (group, topic, partition).

    ``commit_timestamp_ms`` is the value's commit timestamp (the coordinator's clock when it
    accepted the commit), falling back to the record's timestamp when the value has none.
    ``log_partition``/``log_offset`` locate the record in ``__consumer_offsets``.
    """

    offset: int
    commit_timestamp_ms: int
    metadata: str
    record_timestamp_ms: int
    leader_epoch: int | None
    log_partition: int
    log_offset: int


@dataclass(frozen=True, slots=True)
class MemberInfo:
    """One member of a classic group as its group-metadata record lists it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: dict[str, list[int]]  # topic -> sorted partitions; {} = none or not decodable


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """The last metadata of one classic group (GroupMetadataValue), as of ``time_ms``."""

    group: str
    generation: int
    protocol_type: str
    protocol: str | None  # the assignor name for "consumer" groups; None when Empty
    leader: str | None
    members: tuple[MemberInfo, ...]  # sorted by member_id
    current_state_timestamp_ms: int | None
    time_ms: int  # the record's timestamp
    log_partition: int
    log_offset: int


@dataclass(frozen=True, slots=True)
class GenerationChange:
    """A classic group's generation differs between two consecutive metadata records.

    ``generation_before`` is None the first time a group is seen (``causes`` = first_seen).
    ``log_partition``/``log_offset`` identify the record uniquely and survive a re-read of the
    topic, so a caller can store events idempotently.
    """

    group: str
    generation_before: int | None
    generation_after: int
    time_ms: int
    causes: tuple[str, ...]
    members_joined: tuple[str, ...]
    members_left: tuple[str, ...]
    leader_before: str | None
    leader_after: str | None
    protocol_before: str | None
    protocol_after: str | None
    members_after: int
    log_partition: int
    log_offset: int


@dataclass(frozen=True, slots=True)
class GroupDeleted:
    """A group-metadata tombstone: the group was deleted or expired (empty, offsets gone)."""

    group: str
    time_ms: int
    generation_before: int | None  # None when the group's metadata was never seen
    log_partition: int
    log_offset: int


@dataclass(frozen=True, slots=True)
class OffsetDeleted:
    """An offset tombstone: a commit expired, or was deleted (alone or with its group).

    The tombstone does not say which; ``offset_before`` is None when no commit was seen.
    """

    group: str
    topic: str
    partition: int
    time_ms: int
    offset_before: int | None
    log_partition: int
    log_offset: int


Event = GenerationChange | GroupDeleted | OffsetDeleted


def _sorted_assignment(assignment: dict[str, list[int]]) -> dict[str, list[int]]:
    return {topic: sorted(partitions) for topic, partitions in sorted(assignment.items())}


def group_info(record: dict[str, Any], time_ms: int, partition: int, offset: int) -> GroupInfo:
    members = tuple(
        sorted(
            (
                MemberInfo(
                    member_id=m["member_id"],
                    group_instance_id=m["group_instance_id"],
                    client_id=m["client_id"],
                    client_host=m["client_host"],
                    assignment=_sorted_assignment(m["assignment"]),
                )
                for m in record["members"]
            ),
            key=lambda m: m.member_id,
        )
    )
    return GroupInfo(
        group=record["group"],
        generation=record["generation"],
        protocol_type=record["protocol_type"],
        protocol=record["protocol"],
        leader=record["leader"],
        members=members,
        current_state_timestamp_ms=record["current_state_timestamp_ms"],
        time_ms=time_ms,
        log_partition=partition,
        log_offset=offset,
    )


def generation_causes(before: GroupInfo | None, after: GroupInfo) -> tuple[str, ...]:
    """Why a group's generation changed, from its two member lists (a table of rules).

    An emptied group is only ``all_members_left``: its leader and protocol going to null and
    its assignment going away say nothing more. Leader and protocol changes count only between
    two known (non-null) values, so a group filling up again is just ``members_joined``.
    """
    if before is None:
        return (FIRST_SEEN,)
    before_ids = {m.member_id: m for m in before.members}
    after_ids = {m.member_id: m for m in after.members}
    if before_ids and not after_ids:
        return (ALL_MEMBERS_LEFT,)
    causes = []
    if after_ids.keys() - before_ids.keys():
        causes.append(MEMBERS_JOINED)
    if before_ids.keys() - after_ids.keys():
        causes.append(MEMBERS_LEFT)
    if before.leader and after.leader and before.leader != after.leader:
        causes.append(LEADER_CHANGED)
    if any(
        before_ids[member_id].assignment != member.assignment
        for member_id, member in after_ids.items()
        if member_id in before_ids
    ):
        causes.append(ASSIGNMENT_CHANGED)
    if (before.protocol and after.protocol and before.protocol != after.protocol) or (
        before.protocol_type and after.protocol_type and before.protocol_type != after.protocol_type
    ):
        causes.append(PROTOCOL_CHANGED)
    return tuple(causes) or (SAME_MEMBERS,)

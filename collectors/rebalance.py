"""Rebalance events derived from two consecutive snapshots of a group (SPEC §2.2, DOMAIN §3).

Kafka's classic DescribeGroups answer carries no generation id, and a poller sees a group
only every few seconds, so most rebalances are never seen happening: they are inferred from
what differs between two cycles. DOMAIN §3 names the triggers, and those are what we look
for: a member joining or leaving (a member that vanished without a LeaveGroup timed out, and
the two look alike between polls), a subscription change, a subscribed topic's partition
count changing; plus the symptoms: the state passing through PreparingRebalance or
CompletingRebalance, and the assignment moving.

Where a generation is known on both sides (ZooKeeper ``cversion``, KIP-848 group epoch,
librdkafka ``rebalance_cnt``), it is authoritative: a generation change is an event, with the
cause read from the same diff, or ``"unknown"`` when nothing else visibly changed.

One event at most per group and cycle; the first observation of a group gives none, and an
unchanged group gives none. A rebalance seen in progress (the group was in a rebalancing state
at the previous cycle) is reported when it is first seen; its completion is the same rebalance
and is not reported again. The core is the pure function ``derive_rebalance_events``;
``RebalanceTracker`` only remembers the previous cycle for callers that keep it in memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from collectors.records import CollectionResult, GroupSnapshot, Source

__all__ = [
    "ASSIGNMENT_CHANGED",
    "CAUSES",
    "GROUP_DELETED",
    "LIFECYCLE_CAUSES",
    "OFFSETS_DELETED",
    "LEADER_CHANGED",
    "MEMBER_REJOINED",
    "PROTOCOL_CHANGED",
    "MEMBER_JOINED",
    "MEMBER_LEFT",
    "PARTITIONS_ADDED",
    "REBALANCING",
    "REBALANCING_STATES",
    "SUBSCRIPTION_CHANGED",
    "UNKNOWN",
    "RebalanceEvent",
    "RebalanceTracker",
    "derive_rebalance_events",
    "deletion_events",
    "recorded_rebalance_events",
]

MEMBER_LEFT = "member_left"
MEMBER_JOINED = "member_joined"
SUBSCRIPTION_CHANGED = "subscription_changed"
PARTITIONS_ADDED = "partitions_added"
ASSIGNMENT_CHANGED = "assignment_changed"
REBALANCING = "rebalancing"
UNKNOWN = "unknown"
# Only a recorded generation change (``__consumer_offsets``) can tell these apart: a new
# leader with the same members, a changed assignor, a member that rejoined unchanged.
LEADER_CHANGED = "leader_changed"
PROTOCOL_CHANGED = "protocol_changed"
MEMBER_REJOINED = "member_rejoined"
# Not rebalances but the group's lifecycle, on the same timeline: only the coordinator's log
# (``__consumer_offsets`` tombstones) records them; a poll sees a group no longer listed.
GROUP_DELETED = "group_deleted"
OFFSETS_DELETED = "offsets_deleted"
LIFECYCLE_CAUSES = frozenset({GROUP_DELETED, OFFSETS_DELETED})

# Most telling first: an event's ``cause`` is the first of its causes in this order. Triggers
# (membership, subscription, metadata) come before symptoms (assignment moved, state seen
# rebalancing), which only say that a rebalance happened, not why.
CAUSES = (
    MEMBER_LEFT,
    MEMBER_JOINED,
    SUBSCRIPTION_CHANGED,
    PARTITIONS_ADDED,
    ASSIGNMENT_CHANGED,
    LEADER_CHANGED,
    PROTOCOL_CHANGED,
    MEMBER_REJOINED,
    REBALANCING,
    GROUP_DELETED,
    OFFSETS_DELETED,
    UNKNOWN,
)

# Classic protocol: PreparingRebalance, CompletingRebalance. KIP-848 consumer groups:
# Assigning (new target assignment), Reconciling (members converging on it).
REBALANCING_STATES = frozenset(
    {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}
)
# Going back from the second phase to the first means a new rebalance started before the
# previous one completed (e.g. a member joined during CompletingRebalance).
_RESTARTS = frozenset({("CompletingRebalance", "PreparingRebalance"), ("Reconciling", "Assigning")})
# A group has members in these states; Empty means it has none. Leaving Empty therefore means
# a member joined, and entering it means the last one left, even when the source cannot list
# the members (a failed describe, a broker that lists none).
_ACTIVE_STATES = frozenset({"Stable"}) | REBALANCING_STATES
_EMPTY = "Empty"


@dataclass(frozen=True, slots=True)
class RebalanceEvent:
    """One observed rebalance of one group.

    ``generation`` is the group's generation after the event as far as the source knows it
    (None: unknown). ``detail`` is JSON-serialisable evidence: all causes found, members
    joined and left, partitions moved, topics and partition counts changed, states and
    generations before and after.
    """

    group: str
    source: Source
    time_ms: int
    generation: int | None
    cause: str
    detail: dict[str, Any] = field(default_factory=dict)


def _assignments_known(snapshot: GroupSnapshot) -> bool:
    # GroupMember.assignment () means "unknown"; a group whose members all show () tells
    # nothing about who owns what.
    return snapshot.members_known and any(m.assignment for m in snapshot.members)


def _owners(snapshot: GroupSnapshot) -> dict[tuple[str, int], str]:
    return {tp: m.member_id for m in snapshot.members for tp in m.assignment}


def _subscribed(snapshot: GroupSnapshot, use_assignment: bool) -> set[str]:
    if use_assignment:
        return {t for m in snapshot.members for t, _ in m.assignment}
    return set(snapshot.topics)


def _diff(
    previous: GroupSnapshot,
    current: GroupSnapshot,
    counts_before: dict[str, int],
    counts_now: dict[str, int],
) -> tuple[list[str], dict[str, Any]]:
    """Causes visible between two snapshots, in ``CAUSES`` order, and their evidence."""
    causes: set[str] = set()
    detail: dict[str, Any] = {}

    if previous.members_known and current.members_known:
        before = {m.member_id for m in previous.members}
        now = {m.member_id for m in current.members}
        if joined := sorted(now - before):
            causes.add(MEMBER_JOINED)
            detail["joined"] = joined
        if left := sorted(before - now):
            causes.add(MEMBER_LEFT)
            detail["left"] = left
            # A LeaveGroup and a session time-out look the same from one poll to the next.
            detail["departure"] = "left or timed out"
    else:
        # Members not listed by the source: the Empty state still tells presence from absence.
        if previous.state == _EMPTY and current.state in _ACTIVE_STATES:
            causes.add(MEMBER_JOINED)
            detail["joined"] = "unknown members (group left Empty)"
        elif previous.state in _ACTIVE_STATES and current.state == _EMPTY:
            causes.add(MEMBER_LEFT)
            detail["left"] = "all members (group became Empty)"
            detail["departure"] = "left or timed out"

    both_assigned = _assignments_known(previous) and _assignments_known(current)
    if both_assigned:
        owners_before, owners_now = _owners(previous), _owners(current)
        moved = [
            [t, p, owners_before.get((t, p)), owners_now.get((t, p))]
            for t, p in sorted(owners_before.keys() | owners_now.keys())
            if owners_before.get((t, p)) != owners_now.get((t, p))
        ]
        if moved:
            causes.add(ASSIGNMENT_CHANGED)
            detail["moved_partitions"] = moved

    topics_before = _subscribed(previous, both_assigned)
    topics_now = _subscribed(current, both_assigned)
    if topics_now != topics_before:
        causes.add(SUBSCRIPTION_CHANGED)
        detail["topics_added"] = sorted(topics_now - topics_before)
        detail["topics_removed"] = sorted(topics_before - topics_now)

    changed_counts = {}
    for topic in sorted(topics_now | set(current.topics)):
        b, n = counts_before.get(topic), counts_now.get(topic)
        if b is not None and n is not None and b != n:
            changed_counts[topic] = [b, n]
            # Kafka only adds partitions; fewer means the topic was deleted and re-created
            # under the same name, which to the group is a different topic it subscribes to.
            causes.add(PARTITIONS_ADDED if n > b else SUBSCRIPTION_CHANGED)
    if changed_counts:
        detail["partition_counts"] = changed_counts

    return [c for c in CAUSES if c in causes], detail


def derive_rebalance_events(
    previous: GroupSnapshot | None,
    current: GroupSnapshot,
    partition_counts_before: dict[str, int],
    partition_counts_now: dict[str, int],
    now_ms: int,
) -> list[RebalanceEvent]:
    """The rebalance (zero or one event) that happened between two snapshots of one group.

    ``partition_counts_before`` / ``_now`` are the topics' partition counts at the previous
    and the current cycle; only the group's own topics are looked at.
    """
    if previous is None:
        return []
    if (previous.source, previous.group) != (current.source, current.group):
        raise ValueError(
            f"snapshots of different groups: {previous.source}/{previous.group} "
            f"vs {current.source}/{current.group}"
        )

    causes, detail = _diff(previous, current, partition_counts_before, partition_counts_now)
    was_rebalancing = previous.state in REBALANCING_STATES
    is_rebalancing = current.state in REBALANCING_STATES
    entered = is_rebalancing and (
        not was_rebalancing or (previous.state, current.state) in _RESTARTS
    )
    g0, g1 = previous.generation, current.generation

    if g0 is not None and g1 is not None:
        if g1 == g0:
            happened = entered
        elif was_rebalancing and g1 == g0 + 1:
            # The rebalance reported when it was seen in progress has completed.
            happened = entered
        else:
            happened = True
        fallback = REBALANCING if entered and g1 == g0 else UNKNOWN
    elif was_rebalancing and not entered:
        # Whatever moved belongs to the rebalance already reported, except a metadata change
        # seen only now, which starts a new one.
        happened = PARTITIONS_ADDED in causes
        fallback = REBALANCING
    else:
        happened = entered or bool(causes)
        fallback = REBALANCING

    if not happened:
        return []
    if entered:
        causes.append(REBALANCING)  # _diff never yields it, and it sorts after the rest
    if not causes:
        causes = [fallback]
    detail["causes"] = causes
    detail["state"] = [previous.state, current.state]
    detail["generation"] = [g0, g1]
    if g0 is not None and g1 is not None:
        detail["generations_advanced"] = g1 - g0
        if g1 < g0:
            # A generation going back: the group (or its ZooKeeper node) was re-created.
            detail["generation_reset"] = True
    detail["members_known"] = previous.members_known and current.members_known
    return [
        RebalanceEvent(
            group=current.group,
            source=current.source,
            time_ms=now_ms,
            generation=g1,
            cause=causes[0],
            detail=detail,
        )
    ]


def recorded_rebalance_events(result: CollectionResult) -> dict[str, list[RebalanceEvent]]:
    """The source's recorded generation changes as events, by group (the first record of a
    group a reader ever sees is its state, not a rebalance it witnessed: skipped)."""
    events: dict[str, list[RebalanceEvent]] = {}
    for change in result.generation_changes:
        if change.generation_before is None:
            continue
        causes = [c for c in CAUSES if c in change.causes] or [UNKNOWN]
        detail = {
            **change.detail,
            "causes": causes,
            "generation": [change.generation_before, change.generation],
            "generations_advanced": change.generation - change.generation_before,
            "recorded": True,
        }
        if change.generation < change.generation_before:
            detail["generation_reset"] = True
        events.setdefault(change.group, []).append(
            RebalanceEvent(
                group=change.group,
                source=result.source,
                time_ms=change.time_ms,
                generation=change.generation,
                cause=causes[0],
                detail=detail,
            )
        )
    return events


def deletion_events(result: CollectionResult) -> list[RebalanceEvent]:
    """The source's recorded deletions (a group, or some of its commits) as timeline events."""
    return [
        RebalanceEvent(
            group=d.group,
            source=result.source,
            time_ms=d.time_ms,
            generation=None,
            cause=d.kind,
            detail={**d.detail, "causes": [d.kind], "recorded": True},
        )
        for d in result.deletions
    ]


class RebalanceTracker:
    """Keeps the previous cycle in memory and feeds ``derive_rebalance_events``.

    Groups missing from a cycle keep their last snapshot: a group absent once (an error, a
    describe that timed out) must not count as a first observation when it comes back, which
    would hide the rebalance it went through meanwhile.
    """

    def __init__(self) -> None:
        self._snapshots: dict[tuple[Source, str], GroupSnapshot] = {}
        self._counts: dict[str, int] = {}

    def observe(self, result: CollectionResult, now_ms: int | None = None) -> list[RebalanceEvent]:
        """Events for one collection; an unreachable source changes nothing.

        A group whose generation changes the source recorded (``generation_changes``) gets
        those, one event each at its own time and number; nothing is inferred for it then,
        as the record is the better witness of the same rebalance.
        """
        if not result.reachable:
            return []
        when = now_ms if now_ms is not None else (result.finished_ms or result.started_ms)
        counts_now = result.partition_counts or self._counts
        recorded = recorded_rebalance_events(result)
        events: list[RebalanceEvent] = [e for group in recorded.values() for e in group]
        for snapshot in result.groups:
            key = (snapshot.source, snapshot.group)
            if snapshot.group not in recorded:
                events += derive_rebalance_events(
                    self._snapshots.get(key), snapshot, self._counts, counts_now, when
                )
            self._snapshots[key] = snapshot
        self._counts = dict(counts_now)
        listed = {s.group for s in result.groups}
        for event in deletion_events(result):
            if event.cause == GROUP_DELETED and event.group not in listed:
                # Gone: if a group of that name comes back, it is a new group.
                self._snapshots.pop((result.source, event.group), None)
            events.append(event)
        return events

    def restore(self, snapshots: Iterable[GroupSnapshot]) -> None:
        """Start again from another process's last cycle: ``snapshots`` are the groups as the
        store holds them, which is what that process's tracker held after its cycle.

        Several collector processes share a cluster's cycles; one that takes a cycle after
        another's compares with the stored groups, not with its own stale memory (which would
        report again what the other already reported, at a new time) nor with nothing (which
        would miss what changed since). The partition counts are not stored: they restart
        unknown, so a partition count that changed across the hand-over is not a cause (the
        assignment that moved with it still is).
        """
        self._snapshots = {(s.source, s.group): s for s in snapshots}
        self._counts = {}

    def forget(self, source: Source, group: str) -> None:
        """Drop a group that is known to be gone (deleted), so it is new if it comes back."""
        self._snapshots.pop((source, group), None)

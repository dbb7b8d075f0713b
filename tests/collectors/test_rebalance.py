"""Rebalance events derived from consecutive group snapshots: pure, table-driven."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from collectors.consumer_offsets.picture import GroupDeleted, OffsetDeleted
from collectors.kafka.offsets_topic import deletions
from collectors.rebalance import (
    ASSIGNMENT_CHANGED,
    GROUP_DELETED,
    MEMBER_JOINED,
    MEMBER_LEFT,
    OFFSETS_DELETED,
    PARTITIONS_ADDED,
    REBALANCING,
    SUBSCRIPTION_CHANGED,
    UNKNOWN,
    RebalanceEvent,
    RebalanceTracker,
    derive_rebalance_events,
)
from collectors.records import (
    CollectionResult,
    GenerationChange,
    GroupMember,
    GroupSnapshot,
    RecordedDeletion,
    Source,
)

NOW = 1_700_000_000_000


def snap(
    state: str | None = "Stable",
    members: dict[str, list[tuple[str, int]]] | None = None,
    *,
    generation: int | None = None,
    known: bool = True,
    topics: tuple[str, ...] | None = None,
    group: str = "g",
    source: Source = Source.KAFKA,
) -> GroupSnapshot:
    members = members or {}
    if topics is None:
        topics = tuple(sorted({t for tps in members.values() for t, _ in tps}))
    return GroupSnapshot(
        source=source,
        group=group,
        state=state,
        generation=generation,
        members=tuple(
            GroupMember(member_id=mid, assignment=tuple(tps)) for mid, tps in members.items()
        ),
        members_known=known,
        topics=topics,
    )


T3 = [("t", 0), ("t", 1), ("t", 2)]
ONE = {"a": T3}
TWO = {"a": [("t", 0), ("t", 1)], "b": [("t", 2)]}
SWAPPED = {"a": [("t", 2)], "b": [("t", 0), ("t", 1)]}
REPLACED = {"c": T3}
TWO_TOPICS = {"a": [*T3, ("u", 0)]}
UNASSIGNED = {"a": [], "b": []}
COUNTS = {"t": 3, "u": 1, "other": 4}

# id, previous, current, counts before, counts now, expected causes (first = event cause) or
# None for "no event"
CASES: list[tuple[str, GroupSnapshot | None, GroupSnapshot, dict, dict, list[str] | None]] = [
    ("first observation", None, snap(members=ONE), COUNTS, COUNTS, None),
    ("unchanged stable", snap(members=ONE), snap(members=ONE), COUNTS, COUNTS, None),
    (
        "unchanged empty",
        snap("Empty", topics=("t",)),
        snap("Empty", topics=("t",)),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "member joined",
        snap(members=ONE),
        snap(members=TWO),
        COUNTS,
        COUNTS,
        [MEMBER_JOINED, ASSIGNMENT_CHANGED],
    ),
    (
        "member left",
        snap(members=TWO),
        snap(members=ONE),
        COUNTS,
        COUNTS,
        [MEMBER_LEFT, ASSIGNMENT_CHANGED],
    ),
    (
        "member replaced",
        snap(members=ONE),
        snap(members=REPLACED),
        COUNTS,
        COUNTS,
        [MEMBER_LEFT, MEMBER_JOINED, ASSIGNMENT_CHANGED],
    ),
    (
        "last member left, group empty",
        snap(members=ONE),
        snap("Empty", topics=("t",)),
        COUNTS,
        COUNTS,
        [MEMBER_LEFT],
    ),
    (
        "first member joined an empty group",
        snap("Empty", topics=("t",)),
        snap(members=ONE),
        COUNTS,
        COUNTS,
        [MEMBER_JOINED],
    ),
    (
        "assignment moved, same members",
        snap(members=TWO),
        snap(members=SWAPPED),
        COUNTS,
        COUNTS,
        [ASSIGNMENT_CHANGED],
    ),
    (
        "new topic assigned",
        snap(members=ONE),
        snap(members=TWO_TOPICS),
        COUNTS,
        COUNTS,
        [SUBSCRIPTION_CHANGED, ASSIGNMENT_CHANGED],
    ),
    (
        "topic dropped from assignment",
        snap(members=TWO_TOPICS),
        snap(members=ONE),
        COUNTS,
        COUNTS,
        [SUBSCRIPTION_CHANGED, ASSIGNMENT_CHANGED],
    ),
    (
        "new topic, members unknown",
        snap(known=False, topics=("t",)),
        snap(known=False, topics=("t", "u")),
        COUNTS,
        COUNTS,
        [SUBSCRIPTION_CHANGED],
    ),
    (
        "partitions added to a subscribed topic",
        snap(members=ONE),
        snap(members=ONE),
        {"t": 3},
        {"t": 5},
        [PARTITIONS_ADDED],
    ),
    (
        "partitions added, members unknown",
        snap(known=False, topics=("t",)),
        snap(known=False, topics=("t",)),
        {"t": 3},
        {"t": 4},
        [PARTITIONS_ADDED],
    ),
    (
        "partitions added to another topic",
        snap(members=ONE),
        snap(members=ONE),
        {"t": 3, "other": 4},
        {"t": 3, "other": 8},
        None,
    ),
    (
        "topic re-created with fewer partitions",
        snap(members=ONE),
        snap(members=ONE),
        {"t": 6},
        {"t": 3},
        [SUBSCRIPTION_CHANGED],
    ),
    ("count unknown before", snap(members=ONE), snap(members=ONE), {}, {"t": 5}, None),
    ("count unknown now", snap(members=ONE), snap(members=ONE), {"t": 3}, {}, None),
    (
        "entered PreparingRebalance",
        snap(members=ONE),
        snap("PreparingRebalance", ONE),
        COUNTS,
        COUNTS,
        [REBALANCING],
    ),
    (
        "entered PreparingRebalance with a joiner",
        snap(members=ONE),
        snap("PreparingRebalance", {**ONE, "b": []}),
        COUNTS,
        COUNTS,
        [MEMBER_JOINED, REBALANCING],
    ),
    (
        "still PreparingRebalance",
        snap("PreparingRebalance", ONE),
        snap("PreparingRebalance", ONE),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "still rebalancing, another joiner",
        snap("PreparingRebalance", ONE),
        snap("PreparingRebalance", {**ONE, "b": []}),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "PreparingRebalance to CompletingRebalance",
        snap("PreparingRebalance", ONE),
        snap("CompletingRebalance", TWO),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "rebalance seen in progress completes",
        snap("PreparingRebalance", ONE),
        snap(members=TWO),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "rebalance completes while partitions were added",
        snap("PreparingRebalance", ONE),
        snap(members=TWO),
        {"t": 3},
        {"t": 6},
        [MEMBER_JOINED, PARTITIONS_ADDED, ASSIGNMENT_CHANGED],
    ),
    (
        "restart: CompletingRebalance back to PreparingRebalance",
        snap("CompletingRebalance", TWO),
        snap("PreparingRebalance", TWO),
        COUNTS,
        COUNTS,
        [REBALANCING],
    ),
    (
        "KIP-848 Stable to Assigning",
        snap(members=ONE),
        snap("Assigning", ONE),
        COUNTS,
        COUNTS,
        [REBALANCING],
    ),
    (
        "KIP-848 Reconciling back to Assigning",
        snap("Reconciling", TWO),
        snap("Assigning", TWO),
        COUNTS,
        COUNTS,
        [REBALANCING],
    ),
    (
        "KIP-848 Assigning to Reconciling",
        snap("Assigning", TWO),
        snap("Reconciling", TWO),
        COUNTS,
        COUNTS,
        None,
    ),
    # The lab broker lists no members (LAB.md): Empty/active transitions still tell.
    (
        "members unknown: Empty to Stable",
        snap("Empty", topics=("t",)),
        snap(known=False, topics=("t",)),
        COUNTS,
        COUNTS,
        [MEMBER_JOINED],
    ),
    (
        "members unknown: Stable to Empty",
        snap(known=False, topics=("t",)),
        snap("Empty", topics=("t",)),
        COUNTS,
        COUNTS,
        [MEMBER_LEFT],
    ),
    (
        "members unknown: unchanged",
        snap(known=False, topics=("t",)),
        snap(known=False, topics=("t",)),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "members unknown on one side only: no membership diff",
        snap(members=ONE),
        snap(known=False, topics=("t",)),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "state unknown both times",
        snap(None, known=False, topics=("t",)),
        snap(None, known=False, topics=("t",)),
        COUNTS,
        COUNTS,
        None,
    ),
    # GroupMember.assignment () means "unknown", not "nothing": no assignment diff from it.
    (
        "assignments unknown both times",
        snap(members=UNASSIGNED, topics=("t",)),
        snap(members=UNASSIGNED, topics=("t",)),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "assignment became unknown",
        snap(members=TWO),
        snap(members=UNASSIGNED, topics=("t",)),
        COUNTS,
        COUNTS,
        None,
    ),
    # Known generations are authoritative.
    (
        "generation advanced, nothing else visible",
        snap(members=ONE, generation=4),
        snap(members=ONE, generation=5),
        COUNTS,
        COUNTS,
        [UNKNOWN],
    ),
    (
        "generation advanced with a joiner",
        snap(members=ONE, generation=4),
        snap(members=TWO, generation=5),
        COUNTS,
        COUNTS,
        [MEMBER_JOINED, ASSIGNMENT_CHANGED],
    ),
    (
        "generation advanced, partitions added",
        snap(members=ONE, generation=4),
        snap(members=ONE, generation=5),
        {"t": 3},
        {"t": 4},
        [PARTITIONS_ADDED],
    ),
    (
        "generation unchanged although members differ",
        snap(members=ONE, generation=4),
        snap(members=TWO, generation=4),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "generation unchanged, entered PreparingRebalance",
        snap(members=ONE, generation=4),
        snap("PreparingRebalance", ONE, generation=4),
        COUNTS,
        COUNTS,
        [REBALANCING],
    ),
    (
        "generation +1 completes the rebalance seen",
        snap("PreparingRebalance", ONE, generation=4),
        snap(members=TWO, generation=5),
        COUNTS,
        COUNTS,
        None,
    ),
    (
        "generation +2 after a rebalance seen: one more",
        snap("PreparingRebalance", ONE, generation=4),
        snap(members=TWO, generation=6),
        COUNTS,
        COUNTS,
        [MEMBER_JOINED, ASSIGNMENT_CHANGED],
    ),
    (
        "generation went back: group re-created",
        snap(members=ONE, generation=9),
        snap(members=ONE, generation=1),
        COUNTS,
        COUNTS,
        [UNKNOWN],
    ),
    (
        "generation known before only: diff decides",
        snap(members=ONE, generation=3),
        snap(members=TWO),
        COUNTS,
        COUNTS,
        [MEMBER_JOINED, ASSIGNMENT_CHANGED],
    ),
    (
        "ZooKeeper cversion bump, consumer id changed",
        snap(None, ONE, generation=10, source=Source.ZOOKEEPER),
        snap(None, REPLACED, generation=12, source=Source.ZOOKEEPER),
        COUNTS,
        COUNTS,
        [MEMBER_LEFT, MEMBER_JOINED, ASSIGNMENT_CHANGED],
    ),
]


@pytest.mark.parametrize(
    ("previous", "current", "before", "now", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_derive(
    previous: GroupSnapshot | None,
    current: GroupSnapshot,
    before: dict[str, int],
    now: dict[str, int],
    expected: list[str] | None,
) -> None:
    events = derive_rebalance_events(previous, current, before, now, NOW)
    if expected is None:
        assert events == []
        return
    assert len(events) == 1
    event = events[0]
    assert event.detail["causes"] == expected
    assert event.cause == expected[0]
    assert event.group == current.group
    assert event.source == current.source
    assert event.time_ms == NOW
    assert event.generation == current.generation
    json.dumps(event.detail)  # evidence must be storable as JSON as it is


def _one(previous: GroupSnapshot, current: GroupSnapshot, **counts: Any) -> RebalanceEvent:
    events = derive_rebalance_events(
        previous, current, counts.get("before", COUNTS), counts.get("now", COUNTS), NOW
    )
    assert len(events) == 1
    return events[0]


def test_membership_detail_names_the_members() -> None:
    event = _one(snap(members=ONE), snap(members=REPLACED))
    assert event.detail["joined"] == ["c"]
    assert event.detail["left"] == ["a"]
    assert event.detail["departure"] == "left or timed out"
    assert event.detail["members_known"] is True


def test_moved_partitions_show_old_and_new_owner() -> None:
    event = _one(snap(members=ONE), snap(members=TWO))
    assert event.detail["moved_partitions"] == [["t", 2, "a", "b"]]


def test_partition_count_detail() -> None:
    event = _one(snap(members=ONE), snap(members=ONE), before={"t": 3}, now={"t": 5})
    assert event.detail["partition_counts"] == {"t": [3, 5]}


def test_subscription_detail() -> None:
    event = _one(snap(members=TWO_TOPICS), snap(members=ONE))
    assert event.detail["topics_added"] == []
    assert event.detail["topics_removed"] == ["u"]


def test_state_and_generation_detail() -> None:
    event = _one(snap(members=ONE, generation=4), snap("PreparingRebalance", TWO, generation=7))
    assert event.detail["state"] == ["Stable", "PreparingRebalance"]
    assert event.detail["generation"] == [4, 7]
    assert event.detail["generations_advanced"] == 3
    assert "generation_reset" not in event.detail
    assert event.generation == 7


def test_generation_reset_is_flagged() -> None:
    event = _one(snap(members=ONE, generation=9), snap(members=ONE, generation=1))
    assert event.detail["generation_reset"] is True


def test_members_unknown_is_said() -> None:
    event = _one(snap("Empty", topics=("t",)), snap(known=False, topics=("t",)))
    assert event.detail["members_known"] is False
    assert "unknown" in event.detail["joined"]


def test_snapshots_of_different_groups_are_refused() -> None:
    with pytest.raises(ValueError, match="different groups"):
        derive_rebalance_events(snap(group="a"), snap(group="b"), {}, {}, NOW)
    with pytest.raises(ValueError, match="different groups"):
        derive_rebalance_events(snap(source=Source.ZOOKEEPER), snap(), {}, {}, NOW)


def test_event_is_frozen() -> None:
    event = _one(snap(members=ONE), snap(members=TWO))
    with pytest.raises(FrozenInstanceError):
        event.cause = "x"  # type: ignore[misc]


def test_inputs_are_not_modified() -> None:
    before, now = {"t": 3}, {"t": 5}
    derive_rebalance_events(snap(members=ONE), snap(members=TWO), before, now, NOW)
    assert before == {"t": 3} and now == {"t": 5}


# --- RebalanceTracker --------------------------------------------------------------------------


def result(
    *groups: GroupSnapshot,
    counts: dict[str, int] | None = None,
    reachable: bool = True,
    at: int = NOW,
) -> CollectionResult:
    return CollectionResult(
        source=Source.KAFKA,
        started_ms=at,
        finished_ms=at + 5,
        reachable=reachable,
        groups=list(groups),
        partition_counts=dict(COUNTS if counts is None else counts),
    )


def test_tracker_first_cycle_then_change() -> None:
    tracker = RebalanceTracker()
    assert tracker.observe(result(snap(members=ONE), snap(members=ONE, group="h"))) == []
    assert tracker.observe(result(snap(members=ONE), snap(members=ONE, group="h"))) == []
    events = tracker.observe(result(snap(members=TWO), snap(members=ONE, group="h"), at=NOW + 9))
    assert [(e.group, e.cause, e.time_ms) for e in events] == [("g", MEMBER_JOINED, NOW + 14)]


def test_tracker_explicit_time_wins() -> None:
    tracker = RebalanceTracker()
    tracker.observe(result(snap(members=ONE)))
    events = tracker.observe(result(snap(members=TWO)), now_ms=42)
    assert [e.time_ms for e in events] == [42]


def test_tracker_ignores_unreachable_cycles() -> None:
    tracker = RebalanceTracker()
    tracker.observe(result(snap(members=ONE)))
    assert tracker.observe(result(reachable=False, counts={})) == []
    assert [e.cause for e in tracker.observe(result(snap(members=TWO)))] == [MEMBER_JOINED]


def test_tracker_keeps_a_group_missing_for_a_cycle() -> None:
    tracker = RebalanceTracker()
    tracker.observe(result(snap(members=ONE)))
    assert tracker.observe(result()) == []
    assert [e.cause for e in tracker.observe(result(snap(members=TWO)))] == [MEMBER_JOINED]


def test_tracker_forget_makes_the_group_new() -> None:
    tracker = RebalanceTracker()
    tracker.observe(result(snap(members=ONE)))
    tracker.forget(Source.KAFKA, "g")
    assert tracker.observe(result(snap(members=TWO))) == []


def test_tracker_partition_counts_between_cycles() -> None:
    tracker = RebalanceTracker()
    tracker.observe(result(snap(members=ONE), counts={"t": 3}))
    # A cycle without metadata keeps the last counts rather than forgetting them.
    assert tracker.observe(result(snap(members=ONE), counts={})) == []
    events = tracker.observe(result(snap(members=ONE), counts={"t": 4}))
    assert [(e.cause, e.detail["partition_counts"]) for e in events] == [
        (PARTITIONS_ADDED, {"t": [3, 4]})
    ]
    assert tracker.observe(result(snap(members=ONE), counts={"t": 4})) == []


def test_tracker_separates_sources() -> None:
    tracker = RebalanceTracker()
    tracker.observe(result(snap(members=ONE), snap(None, ONE, source=Source.ZOOKEEPER)))
    events = tracker.observe(result(snap(members=ONE), snap(None, TWO, source=Source.ZOOKEEPER)))
    assert [(e.source, e.cause) for e in events] == [(Source.ZOOKEEPER, MEMBER_JOINED)]


# --- generation changes the source recorded (__consumer_offsets) ------------------------------


def _recorded(
    *changes: GenerationChange, groups: tuple[GroupSnapshot, ...] = ()
) -> CollectionResult:
    return CollectionResult(
        source=Source.KAFKA, started_ms=0, groups=list(groups), generation_changes=list(changes)
    )


@pytest.mark.parametrize(
    ("before", "after", "causes", "cause", "advanced"),
    [
        (3, 4, ("member_joined",), "member_joined", 1),
        (4, 5, ("member_left", "assignment_changed"), "member_left", 1),
        (5, 6, ("leader_changed",), "leader_changed", 1),
        (6, 7, ("member_rejoined",), "member_rejoined", 1),
        (7, 8, (), "unknown", 1),
        (9, 2, ("member_joined",), "member_joined", -7),  # re-created: the number went back
        # Causes are ordered most telling first whatever order the source gave them in.
        (1, 2, ("assignment_changed", "member_left"), "member_left", 1),
    ],
)
def test_a_recorded_change_is_one_event_at_its_own_time_and_number(
    before: int, after: int, causes: tuple[str, ...], cause: str, advanced: int
) -> None:
    change = GenerationChange("g", 1234, after, before, causes, {"joined": ["m-2"]})
    [event] = RebalanceTracker().observe(_recorded(change), now_ms=9999)
    assert (event.group, event.time_ms, event.generation, event.cause) == ("g", 1234, after, cause)
    assert event.detail["generation"] == [before, after]
    assert event.detail["generations_advanced"] == advanced
    assert event.detail["recorded"] is True
    assert event.detail["joined"] == ["m-2"]
    assert event.detail.get("generation_reset", False) is (after < before)


def test_the_first_record_of_a_group_is_its_state_not_a_rebalance() -> None:
    change = GenerationChange("g", 1234, 7, None, ("first_seen",))
    assert RebalanceTracker().observe(_recorded(change)) == []


def test_recorded_changes_replace_the_inferred_event_of_their_group_only() -> None:
    tracker = RebalanceTracker()
    one = GroupSnapshot(Source.KAFKA, "recorded", "Stable", members=(GroupMember("a"),))
    two = GroupSnapshot(Source.KAFKA, "inferred", "Stable", members=(GroupMember("a"),))
    tracker.observe(_recorded(groups=(one, two)), now_ms=1)
    joined = (GroupMember("a"), GroupMember("b"))
    one2 = dataclasses.replace(one, members=joined)
    two2 = dataclasses.replace(two, members=joined)
    changes = (
        GenerationChange("recorded", 10, 2, 1, ("member_joined",)),
        GenerationChange("recorded", 20, 3, 2, ("leader_changed",)),
    )
    events = tracker.observe(_recorded(*changes, groups=(one2, two2)), now_ms=30)
    assert [(e.group, e.time_ms, e.cause) for e in events] == [
        ("recorded", 10, "member_joined"),
        ("recorded", 20, "leader_changed"),
        ("inferred", 30, "member_joined"),
    ]


def test_recorded_deletions_are_timeline_events_and_a_deleted_group_starts_over() -> None:
    tracker = RebalanceTracker()
    group = GroupSnapshot(Source.KAFKA, "g", "Stable", members=(GroupMember("a"),))
    tracker.observe(_recorded(groups=(group,)), now_ms=1)
    gone = CollectionResult(Source.KAFKA, started_ms=0, finished_ms=2)
    gone.deletions.append(RecordedDeletion("g", 15, "group_deleted", {"offsets_deleted": 3}))
    gone.deletions.append(
        RecordedDeletion("h", 16, "offsets_deleted", {"partitions": [["t", 0, 5]]})
    )
    events = tracker.observe(gone, now_ms=20)
    assert [(e.group, e.time_ms, e.cause, e.generation) for e in events] == [
        ("g", 15, GROUP_DELETED, None),
        ("h", 16, OFFSETS_DELETED, None),
    ]
    assert events[0].detail == {"offsets_deleted": 3, "causes": ["group_deleted"], "recorded": True}
    # Re-created under the same name, with other members: a first observation, no "rebalance".
    again = dataclasses.replace(group, members=(GroupMember("z"),))
    assert tracker.observe(_recorded(groups=(again,)), now_ms=30) == []


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([], []),
        # A group deleted with its two commits: one record, the commits counted in it.
        (
            [OffsetDeleted("g", "t", 0, 10, 5, 0, 1), OffsetDeleted("g", "t", 1, 10, 6, 0, 2),
             GroupDeleted("g", 11, 4, 0, 3)],
            [("g", 11, "group_deleted", {"generation_before": 4, "offsets_deleted": 2})],
        ),
        # Commits expired while the group lives: one record per group, partitions in order.
        (
            [OffsetDeleted("g", "u", 1, 30, None, 0, 9), OffsetDeleted("g", "t", 2, 20, 7, 0, 8),
             OffsetDeleted("h", "t", 0, 25, 1, 1, 4)],
            [("h", 25, "offsets_deleted", {"partitions": [["t", 0, 1]]}),
             ("g", 30, "offsets_deleted", {"partitions": [["t", 2, 7], ["u", 1, None]]})],
        ),
        # A group tombstone of a group never seen: still a deletion, generation unknown.
        (
            [GroupDeleted("x", 5, None, 2, 0)],
            [("x", 5, "group_deleted", {"generation_before": None, "offsets_deleted": 0})],
        ),
    ],
)  # fmt: skip
def test_tombstones_fold_into_one_deletion_per_group(events: list, expected: list) -> None:
    assert [(d.group, d.time_ms, d.kind, d.detail) for d in deletions(events)] == expected

"""What ``__consumer_offsets`` adds to a Kafka cycle (SPEC §2.2, §4).

The AdminClient and the wire client say what is; only the coordinator's own log says when a
commit was made and what each generation change of a classic group was. The reader
(``collectors.consumer_offsets``) runs beside the cycle's requests on a thread of its own;
this module merges its picture into the cycle's records once both are done.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from collectors.consumer_offsets.picture import GenerationChange as RecordedChange
from collectors.consumer_offsets.picture import GroupDeleted, OffsetDeleted
from collectors.consumer_offsets.reader import ReaderOutcome
from collectors.consumer_offsets.state import OffsetsTopicState
from collectors.kafka.cycle import Cycle
from collectors.records import (
    CommittedOffset,
    GenerationChange,
    GroupSnapshot,
    RecordedDeletion,
)

__all__ = ["apply_offsets_topic"]


def apply_offsets_topic(
    outcome: ReaderOutcome, state: OffsetsTopicState | None, cycle: Cycle
) -> None:
    """What ``__consumer_offsets`` adds to the cycle: each Kafka commit's own timestamp
    (SPEC §4 names it the best commit time), each classic group's generation, and the
    generation changes recorded since the last cycle. A reader that cannot read the topic
    leaves the AdminClient's figures as they are and says so (a warning, not an outage:
    lag and status do not depend on it)."""
    result = cycle.result
    if not result.reachable:
        return  # the cluster is down: the adapter already says so
    result.errors.extend(outcome.errors)
    if not outcome.readable:
        cycle.error(
            "__consumer_offsets",
            "not readable: commit times and classic generations unknown (offsets and "
            "groups from the AdminClient only)",
        )
        return
    if not outcome.caught_up:
        behind = outcome.records_behind
        cycle.error(
            "__consumer_offsets",
            f"catching up: {behind if behind is not None else 'some'} records behind",
        )
    if state is None:
        return
    if outcome.caught_up:
        state.read_to_end = True
    _add_commit_times(result.commits, state)
    if outcome.caught_up:
        _hidden_topics(cycle, state)
    classic = {s.group for s in result.groups if s.protocol_type == "classic"}
    if state.read_to_end:
        # Before its first read to the end, a reader may have folded a group's old metadata
        # and not yet its last: that generation is not the group's, and a rebalance tracker
        # rebuilt from the store (another collector's cycles) would read the step back as a
        # re-created group. Unknown until then, as the AdminClient leaves it.
        result.groups[:] = [
            _with_generation(s, state) if s.group in classic else s for s in result.groups
        ]
    events = state.drain_settled_events()
    result.generation_changes.extend(
        _generation_change(e)
        for e in events
        if isinstance(e, RecordedChange) and e.group in classic
    )
    result.deletions.extend(deletions(events))


def _add_commit_times(commits: list[CommittedOffset], state: OffsetsTopicState) -> None:
    """Each commit's own timestamp, where the record read is the commit the AdminClient saw.
    Set on the cycle's own records, which nothing else holds yet (``CommittedOffset``)."""
    known = state.commits
    for commit in commits:
        info = known.get((commit.group, commit.topic, commit.partition))
        if info is not None and info.offset == commit.offset:
            commit.commit_time_ms = info.commit_timestamp_ms


def _hidden_topics(cycle: Cycle, state: OffsetsTopicState) -> None:
    """A warning for each group's topic that ``__consumer_offsets`` holds commits of but the
    brokers hide: OffsetFetch (all topics) leaves out, without an error, every topic the
    principal may not Describe, and so does the metadata; the commits' own records name them.
    A deleted topic is not hidden (OffsetFetch still answers its commits, until the
    coordinator writes their tombstones), so it is not warned about; a group whose OffsetFetch
    failed already has its own warning.

    Only a topic seen hidden at two caught-up cycles in a row is warned about: a topic deleted
    between the reader's end and the metadata request looks hidden for one cycle, until the
    tombstones of its offsets are read; a hidden topic stays hidden, so it costs one poll.
    """
    result = cycle.result
    failed = {e.where.removeprefix("group ") for e in result.errors if e.where.startswith("group ")}
    wanted = {s.group for s in result.groups} - failed
    fetched = {(c.group, c.topic) for c in result.commits}
    hidden = {
        (group, topic)
        for group, topic, _ in state.commits
        if group in wanted
        and topic not in result.partition_counts
        and (group, topic) not in fetched
    }
    confirmed, state.hidden_topics_seen = hidden & state.hidden_topics_seen, hidden
    for group, topic in sorted(confirmed):
        cycle.error(
            f"group {group} topic {topic}",
            "committed offsets not readable: the broker hides the topic (no Describe "
            "permission on it for this principal?); __consumer_offsets holds commits of it",
        )


def _with_generation(snapshot: GroupSnapshot, state: OffsetsTopicState) -> GroupSnapshot:
    """A classic group's generation from its last group-metadata record."""
    info = state.groups.get(snapshot.group)
    if info is None:
        return snapshot
    return dataclasses.replace(
        snapshot, generation=info.generation, assignor=snapshot.assignor or info.protocol
    )


# The reader's causes in ``collectors.rebalance``'s names.
_RECORDED_CAUSES = {
    "members_joined": "member_joined",
    "members_left": "member_left",
    "all_members_left": "member_left",
    "assignment_changed": "assignment_changed",
    "leader_changed": "leader_changed",
    "protocol_changed": "protocol_changed",
    "same_members": "member_rejoined",
}


def _generation_change(change: RecordedChange) -> GenerationChange:
    detail: dict[str, Any] = {"members": change.members_after}
    if change.members_joined:
        detail["joined"] = list(change.members_joined)
    if change.members_left:
        detail["left"] = list(change.members_left)
    if change.leader_before != change.leader_after:
        detail["leader"] = [change.leader_before, change.leader_after]
    if change.protocol_before != change.protocol_after:
        detail["protocol"] = [change.protocol_before, change.protocol_after]
    return GenerationChange(
        group=change.group,
        time_ms=change.time_ms,
        generation=change.generation_after,
        generation_before=change.generation_before,
        causes=tuple(_RECORDED_CAUSES[c] for c in change.causes if c in _RECORDED_CAUSES),
        detail=detail,
    )


def deletions(events: list) -> list[RecordedDeletion]:
    """A group's deletion as one record, and its offsets' tombstones folded into one record
    per group and drain (a group deleted with 500 offsets is one line on its timeline, not
    500). The offsets a deleted group lost are part of its deletion: not listed twice."""
    deleted = {e.group: e for e in events if isinstance(e, GroupDeleted)}
    lost: dict[str, list[OffsetDeleted]] = {}
    for e in events:
        if isinstance(e, OffsetDeleted):
            lost.setdefault(e.group, []).append(e)
    out = [
        RecordedDeletion(
            group=e.group,
            time_ms=e.time_ms,
            kind="group_deleted",
            detail={
                "generation_before": e.generation_before,
                "offsets_deleted": len(lost.get(e.group, ())),
            },
        )
        for e in deleted.values()
    ]
    for group, offsets in lost.items():
        if group in deleted:
            continue
        out.append(
            RecordedDeletion(
                group=group,
                time_ms=max(o.time_ms for o in offsets),
                kind="offsets_deleted",
                detail={
                    "partitions": [
                        [o.topic, o.partition, o.offset_before]
                        for o in sorted(offsets, key=lambda o: (o.topic, o.partition))
                    ]
                },
            )
        )
    return sorted(out, key=lambda d: (d.time_ms, d.group))

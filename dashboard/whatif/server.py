"""The broker's ``uniform`` assignor (KIP-848 groups, group type ``consumer``).

Ports of Kafka's group-coordinator ``UniformHomogeneousAssignmentBuilder`` (with KAFKA-18688's
stability fix, Kafka 4.1: a member already holding an extra partition keeps it) and
``UniformHeterogeneousAssignmentBuilder`` (KAFKA-17710), without racks. The broker starts from
each member's previous *target* assignment (``Member.owned``), not from what the member
holds while it reconciles. Its ``range`` assignor recomputes from scratch and equals
``classic.range_assign``.

Two orders are the broker's own: members iterate in the ``HashMap`` order of their ids
(``java.hashmap_order``), and topics in the order of their ids, which Lagwatch does not
store: topic names stand in for them (it matters only for which partition moves, and for
topics equal in partitions per subscriber). A member's partitions of a topic iterate as a
``HashSet<Integer>`` does (``java.int_set_order``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dashboard.whatif.java import hashmap_order, int_set_order, string_key
from dashboard.whatif.model import Assignment, AssignorError, Member, finished
from dashboard.whatif.uniform_balance import heterogeneous


def uniform(members: Sequence[Member], partitions: Mapping[str, int]) -> Assignment:
    """What the broker's uniform assignor would make the group's target assignment now."""
    if not members:
        return {}
    by_id = {m.member_id: m for m in members}
    order = hashmap_order([m.member_id for m in members])
    existing = {mid: [t for t in _topic_order(by_id[mid].subscription) if partitions.get(t, 0) > 0]
                for mid in order}  # fmt: skip
    previous = {mid: _previous(by_id[mid], partitions) for mid in order}
    if len({by_id[mid].subscription for mid in order}) == 1:  # ModernGroup.subscriptionType
        result = _homogeneous(order, existing[order[0]], previous, partitions)
    else:
        result = heterogeneous(order, existing, previous, partitions)
    return finished(result)


def _topic_order(topics: frozenset[str]) -> list[str]:
    return sorted(topics, key=string_key)


def _previous(m: Member, partitions: Mapping[str, int]) -> dict[str, list[int]]:
    """A member's previous target by topic, partitions in ``HashSet<Integer>`` order."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in m.owned:
        if 0 <= p < partitions.get(topic, 0):
            by_topic.setdefault(topic, []).append(p)
    return {
        t: int_set_order(sorted(set(ps)))
        for t, ps in sorted(by_topic.items(), key=lambda i: string_key(i[0]))
    }


@dataclass
class _Unfilled:
    member_id: str
    quota: int


@dataclass
class _Homogeneous:
    minimum: int
    extra: int  # remainingMembersToGetAnExtraPartition
    unassigned: list[tuple[str, int]]
    target: Assignment = field(default_factory=dict)
    unfilled: list[_Unfilled] = field(default_factory=list)


def _homogeneous(
    order: list[str],
    topics: list[str],
    previous: Mapping[str, dict[str, list[int]]],
    partitions: Mapping[str, int],
) -> Assignment:
    if not topics:
        return {mid: [] for mid in order}
    taken = {(t, p) for tps in previous.values() for t, ps in tps.items() for p in ps}
    total = sum(partitions[t] for t in topics)
    state = _Homogeneous(
        minimum=total // len(order),
        extra=total % len(order),
        unassigned=[(t, p) for t in topics for p in range(partitions[t]) if (t, p) not in taken],
    )
    subscribed = set(topics)
    for mid in order:
        _revoke(state, mid, previous[mid], subscribed)
    _fill(state)
    return state.target


def _revoke(
    state: _Homogeneous, mid: str, previous: dict[str, list[int]], subscribed: set[str]
) -> None:
    """``maybeRevokePartitions`` for one member: keep up to its quota (the minimum, plus one
    while members may still take an extra), give up the rest and any unsubscribed topic."""
    quota = state.minimum
    has_extra = state.extra > 0
    if has_extra:
        quota += 1
    kept: list[tuple[str, int]] = []
    for topic, ps in previous.items():
        if topic not in subscribed:
            continue
        if len(ps) <= quota:
            quota -= len(ps)
            kept.extend((topic, p) for p in ps)
            continue
        for p in ps:
            if quota > 0:
                quota -= 1
                kept.append((topic, p))
            else:
                state.unassigned.append((topic, p))
    if quota > 0 and has_extra:
        quota -= 1  # not holding the extra partition: leave it to a member that does
        has_extra = False
    if quota == 0 and has_extra:
        state.extra -= 1
    if quota > 0 or (state.extra > 0 and not has_extra):
        state.unfilled.append(_Unfilled(mid, quota))
    state.target[mid] = kept


def _fill(state: _Homogeneous) -> None:
    """``assignRemainingPartitions``: the extras left go to the *last* unfilled members, then
    each unfilled member takes its quota from the unassigned partitions in order."""
    for u in reversed(state.unfilled):
        if state.extra > 0:
            state.extra -= 1
            u.quota += 1
    queue = iter(state.unassigned)
    for u in state.unfilled:
        for _ in range(u.quota):
            tp = next(queue, None)
            if tp is None:
                return
            state.target[u.member_id].append(tp)
    if next(queue, None) is not None:  # a partition two previous targets shared, counted twice
        raise AssignorError("Partitions were left unassigned")

"""The sticky assignors' general case: members subscribed to different topics.

A port of ``AbstractStickyAssignor.GeneralAssignmentBuilder`` and its ``PartitionMovements``
without racks and with every member in the same generation (so no partition has a "previous
owner" of an older generation to return to). Kept apart from ``sticky`` because it is most of
the code and runs only for heterogeneous groups.

The steps, as Kafka's: keep each member's owned partitions of topics it still subscribes to;
give every other partition, least subscribed topics first, to the least loaded member that
may take it; then, while the assignment is not balanced, move a partition from a member
holding at least two more than another subscriber of its topic to the least loaded subscriber
— and undo it all if the balance score (the sum of count differences over all pairs) did not
improve. ``PartitionMovements`` keeps a partition of a topic from bouncing between two members:
a move that reverses an earlier one moves the earlier partition back instead.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.whatif.java import JavaHashSet, string_key, topic_partition_hash
from dashboard.whatif.model import Assignment, TopicPartition

Pair = tuple[str, str]  # (source member, destination member)


class _Movements:
    """``PartitionMovements``: where each partition moved from and to during this rebalance."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[Pair, JavaHashSet]] = {}
        self.moves: dict[TopicPartition, Pair] = {}

    def _forget(self, tp: TopicPartition) -> Pair:
        pair = self.moves.pop(tp)
        pairs = self.by_topic[tp[0]]
        pairs[pair].remove(tp)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp[0]]
        return pair

    def _record(self, tp: TopicPartition, pair: Pair) -> None:
        self.moves[tp] = pair
        pairs = self.by_topic.setdefault(tp[0], {})
        pairs.setdefault(pair, JavaHashSet(lambda k: topic_partition_hash(*k))).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            source, _ = self._forget(tp)
            if source != new:  # not going back where it came from
                self._record(tp, (source, new))
        else:
            self._record(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()


def general_assign(
    order: list[str],
    subscriptions: Mapping[str, frozenset[str]],
    owned: Mapping[str, list[TopicPartition]],
    per_topic: Mapping[str, int],
) -> Assignment:
    """The general builder; ``order`` is Kafka's iteration order of the members."""
    return _General(order, subscriptions, owned, per_topic).build()


class _General:
    def __init__(
        self,
        order: list[str],
        subscriptions: Mapping[str, frozenset[str]],
        owned: Mapping[str, list[TopicPartition]],
        per_topic: Mapping[str, int],
    ) -> None:
        self.per_topic = per_topic
        self.total = sum(per_topic.values())
        self.subscriptions = subscriptions
        self.topic_members: dict[str, list[str]] = {t: [] for t in per_topic}
        self.member_topics: dict[str, list[str]] = {}
        for mid in order:
            self.member_topics[mid] = [t for t in subscriptions[mid] if t in per_topic]
            for t in self.member_topics[mid]:
                self.topic_members[t].append(mid)
        self.current: dict[str, list[TopicPartition]] = {mid: list(owned[mid]) for mid in order}
        self.owner: dict[TopicPartition, str] = {
            tp: mid for mid, tps in self.current.items() for tp in tps
        }
        topics = sorted(per_topic, key=lambda t: (len(self.topic_members[t]), string_key(t)))
        self.all_sorted = [(t, p) for t in topics for p in range(per_topic[t])]
        self.members: set[str] = set()  # sortedCurrentSubscriptions, kept sorted on demand
        self.keys = {mid: string_key(mid) for mid in order}
        self.revocation_required = False
        self.movements = _Movements()

    def _sorted(self) -> list[str]:
        """``sortedCurrentSubscriptions``: fewest partitions first, then member id."""
        return sorted(self.members, key=lambda m: (len(self.current[m]), self.keys[m]))

    def build(self) -> Assignment:
        assigned: list[TopicPartition] = []
        for mid, tps in self.current.items():
            kept = []
            for tp in tps:
                if tp[0] not in self.subscriptions[mid]:
                    self.revocation_required = True  # its owner no longer subscribes
                else:
                    kept.append(tp)
                    assigned.append(tp)
            self.current[mid] = kept
        held = set(assigned)
        unassigned = (
            [tp for tp in self.all_sorted if tp not in held] if assigned else self.all_sorted
        )
        self.members.update(self.current)
        self._balance(unassigned)
        return self.current

    def _max_size(self, topics: list[str]) -> int:
        if len(topics) == len(self.per_topic):
            return self.total
        return sum(self.per_topic[t] for t in topics)

    def _is_balanced(self) -> bool:
        """``isBalanced``: counts differ by at most one, or no member could take a partition of
        its topics from a holder with two more than itself. Kafka walks every partition of
        every member's topics; the two most loaded holders of each topic give the same answer
        without that walk (the only holder that cannot count is the member itself)."""
        ranked = self._sorted()
        if len(self.current[ranked[0]]) >= len(self.current[ranked[-1]]) - 1:
            return True
        top: dict[str, list[tuple[int, str]]] = {}
        for mid in reversed(ranked):  # most loaded first: the first two met per topic
            for topic in {t for t, _ in self.current[mid]}:
                best = top.setdefault(topic, [])
                if len(best) < 2:
                    best.append((len(self.current[mid]), mid))
        for mid in ranked:
            count = len(self.current[mid])
            if count == self._max_size(self.member_topics[mid]):
                continue
            for topic in self.member_topics[mid]:
                other = next((n for n, holder in top.get(topic, ()) if holder != mid), None)
                if other is not None and count + 1 < other:
                    return False
        return True

    def _can_move_topic(self, topic: str) -> bool:
        return len(self.topic_members[topic]) >= 2

    def _can_move_member(self, mid: str) -> bool:
        if len(self.current[mid]) < self._max_size(self.member_topics[mid]):
            return True
        return any(self._can_move_topic(t) for t, _ in self.current[mid])

    def _give(self, tp: TopicPartition) -> None:
        """``maybeAssignPartition``: to the least loaded member subscribed to its topic."""
        for mid in self._sorted():
            if tp[0] in self.member_topics[mid]:
                self.current[mid].append(tp)
                self.owner[tp] = mid
                return

    def _balance(self, unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self._sorted()[-1]]
        for tp in unassigned:
            if self.topic_members[tp[0]]:
                self._give(tp)
        fixed_topics = {t for t in self.topic_members if not self._can_move_topic(t)}
        # removeAll on both lists (the same list when nothing was owned, as in Kafka)
        self.all_sorted[:] = [tp for tp in self.all_sorted if tp[0] not in fixed_topics]
        if unassigned is not self.all_sorted:
            unassigned[:] = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed: dict[str, list[TopicPartition]] = {}
        for mid in self.member_topics:
            if not self._can_move_member(mid):
                self.members.discard(mid)
                fixed[mid] = self.current.pop(mid)
        before = {mid: list(tps) for mid, tps in self.current.items()}
        owners_before = dict(self.owner)
        if not self.revocation_required:
            self._reassign(unassigned)  # first try moving only the newly assigned ones
        moved = self._reassign(self.all_sorted)
        if not initializing and moved and _score(self.current) >= _score(before):
            self.current = before
            self.owner = owners_before
        self.current.update(fixed)
        self.members.update(fixed)

    def _reassign(self, candidates: list[TopicPartition]) -> bool:
        """``performReassignments``: sweep the candidates until a sweep moves nothing."""
        performed = False
        while True:
            modified = False
            for tp in candidates:
                if self._is_balanced():
                    break
                mid = self.owner[tp]
                if any(
                    len(self.current[mid]) > len(self.current[other]) + 1
                    for other in self.topic_members[tp[0]]
                    if other in self.current  # always: a fixed member holds no such topic
                ):
                    self._reassign_partition(tp)
                    performed = modified = True
            if not modified:
                return performed

    def _reassign_partition(self, tp: TopicPartition) -> None:
        new = next(m for m in self._sorted() if tp[0] in self.member_topics[m])
        moving = self.movements.partition_to_move(tp, self.owner[tp], new)
        old = self.owner[moving]
        self.movements.move(moving, old, new)
        self.current[old].remove(moving)
        self.current[new].append(moving)
        self.owner[moving] = new


def _score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    """``getBalanceScore``: the sum over member pairs of their partition count difference."""
    sizes = [len(tps) for tps in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])

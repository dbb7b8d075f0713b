"""The broker's uniform assignor for members subscribed to different topics.

A port of Kafka's ``UniformHeterogeneousAssignmentBuilder`` (KAFKA-17710) without racks, kept
apart from ``server`` for its size. Members are numbered in the broker's iteration order.
Each member keeps its previous target partitions of topics it still subscribes to; the
unassigned partitions go, topic by topic (most partitions per subscriber first), to the least
loaded subscribers; then each topic with two subscribers or more is balanced by moving
partitions from its most loaded subscribers to its least loaded ones, up to 16 rounds over
the topics, stopping when a whole round moves nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.whatif.java import string_key
from dashboard.whatif.model import Assignment

MAX_ITERATION_COUNT = 16


class _Balancer:
    """``MemberAssignmentBalancer``: a topic's subscribers sorted by load, with a least loaded
    range growing rightwards and a most loaded range growing leftwards."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.members: list[int] = []

    def initialize(self, members: list[int]) -> int:
        self.members = sorted(members, key=lambda m: (self.sizes[m], m))
        self.least_end = 0
        self.least_count = self.sizes[self.members[0]] - 1
        self.next_least = 0
        self.most_start = len(self.members)
        self.most_end = len(self.members)
        self.most_count = self.sizes[self.members[-1]] + 1
        self.next_most = len(self.members) - 1
        return self.sizes[self.members[-1]] - self.sizes[self.members[0]]

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while (
                self.least_end < len(self.members)
                and self.sizes[self.members[self.least_end]] == self.least_count
            ):
                self.least_end += 1
            self.next_least = 0
        member = self.members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = self.sizes[self.members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while (
                self.most_start > 0
                and self.sizes[self.members[self.most_start - 1]] == self.most_count
            ):
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        i, j = self.next_most + 1, self.most_end - 1
        self.members[i], self.members[j] = self.members[j], self.members[i]
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


def heterogeneous(
    order: list[str],
    subscriptions: Mapping[str, list[str]],
    previous: Mapping[str, dict[str, list[int]]],
    partitions: Mapping[str, int],
) -> Assignment:
    """``subscriptions``: each member's existing subscribed topics; ``previous``: its previous
    target by topic. Returns the new target."""
    return _Heterogeneous(order, subscriptions, previous, partitions).build()


class _Heterogeneous:
    def __init__(
        self,
        order: list[str],
        subscriptions: Mapping[str, list[str]],
        previous: Mapping[str, dict[str, list[int]]],
        partitions: Mapping[str, int],
    ) -> None:
        self.order = order
        self.subscriptions = subscriptions
        self.previous = previous
        self.partitions = partitions
        self.subscribers: dict[str, list[int]] = {}
        for index, mid in enumerate(order):
            for topic in subscriptions[mid]:
                self.subscribers.setdefault(topic, []).append(index)
        self.sizes = [0] * len(order)
        self.owners = {t: [-1] * partitions[t] for t in self.subscribers}
        self.target: dict[int, dict[str, set[int]]] = {}

    def _topic_key(self, topic: str) -> tuple[float, int, bytes]:
        """Most partitions per subscriber first, then fewest subscribers, then the topic (its id
        in Kafka)."""
        n = len(self.subscribers[topic])
        return (-self.partitions[topic] / n, n, string_key(topic))

    def build(self) -> Assignment:
        if not self.subscribers:
            return {mid: [] for mid in self.order}
        for index, mid in enumerate(self.order):  # maybeRevokePartitions
            kept = {
                t: set(ps) for t, ps in self.previous[mid].items() if t in self.subscriptions[mid]
            }
            self.target[index] = kept
            for topic, ps in kept.items():
                self.sizes[index] += len(ps)
                for p in ps:
                    self.owners[topic][p] = index
        unassigned = {
            t: [p for p in range(self.partitions[t]) if self.owners[t][p] == -1]
            for t in self.subscribers
        }
        balancer = _Balancer(self.sizes)
        for topic in sorted((t for t, ps in unassigned.items() if ps), key=self._topic_key):
            balancer.initialize(self.subscribers[topic])
            for p in unassigned[topic]:
                self._assign(topic, p, balancer.next_least_loaded())
        movable = [t for t in self.subscribers if len(self.subscribers[t]) >= 2]
        if movable:
            self._balance_topics(sorted(movable, key=self._topic_key))
        return {
            mid: [(t, p) for t, ps in self.target[i].items() for p in ps]
            for i, mid in enumerate(self.order)
        }

    def _balance_topics(self, topics: list[str]) -> None:
        last = -1
        balancer = _Balancer(self.sizes)
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic in enumerate(topics):
                if index == last:
                    return  # a whole round since the last move: nothing more to do
                if self._balance_topic(topic, balancer) > 0 or last == -1:
                    last = index

    def _balance_topic(self, topic: str, balancer: _Balancer) -> int:
        moved = 0
        if balancer.initialize(self.subscribers[topic]) <= 1:
            return moved
        owners = self.owners[topic]
        ordered = sorted(range(self.partitions[topic]), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(ordered):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        while not balancer.balanced():
            most = balancer.next_most_loaded()
            while most != -1 and end.get(most, 0) - start.get(most, 0) <= 0:
                balancer.exclude_most_loaded()
                most = balancer.next_most_loaded()
            if most == -1:
                break
            partition = ordered[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.balanced():
                break
            self._assign(topic, partition, least)
            moved += 1
        return moved

    def _assign(self, topic: str, partition: int, index: int) -> None:
        old = self.owners[topic][partition]
        if old != -1:
            ps = self.target[old].get(topic, set())
            ps.discard(partition)
            if not ps:
                self.target[old].pop(topic, None)
            self.sizes[old] -= 1
        self.target[index].setdefault(topic, set()).add(partition)
        self.owners[topic][partition] = index
        self.sizes[index] += 1

"""What every assignor takes and gives: members with their subscriptions and what they hold,
partition counts per topic, and an assignment (member id -> partitions).

Kafka numbers a topic's partitions 0…n-1 and never shrinks a topic, so a topic is its name and
its count. A member's ``owned`` partitions are the starting point of the sticky assignors (the
client's ``ownedPartitions``, the broker's previous target for KIP-848); range and round-robin
ignore it. Every member is taken to be of the current generation: the what-if asks what a
rebalance would do now, not how the group got here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dashboard.whatif.java import hashmap_order, string_key

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]


class AssignorError(ValueError):
    """An input Kafka's assignor refuses (its ``PartitionAssignorException``)."""


@dataclass(frozen=True)
class Member:
    member_id: str
    subscription: frozenset[str]
    instance_id: str | None = None  # static membership (group.instance.id)
    owned: tuple[TopicPartition, ...] = ()


def member(
    member_id: str,
    topics: Iterable[str],
    owned: Iterable[TopicPartition] = (),
    instance_id: str | None = None,
) -> Member:
    """A member, for callers and tests that think in lists."""
    return Member(member_id, frozenset(topics), instance_id, tuple(owned))


def sorted_members(members: Iterable[Member]) -> list[Member]:
    """Kafka's member order for range and round-robin (``AbstractPartitionAssignor.MemberInfo``,
    and the broker's range assignor): static members first, by ``group.instance.id``, then the
    others by member id; Java's string order, and a stable sort of the members in their
    ``HashMap`` order."""
    members = list(members)
    rank = {mid: i for i, mid in enumerate(hashmap_order([m.member_id for m in members]))}
    members.sort(key=lambda m: rank[m.member_id])  # ties (a repeated instance id) as in Kafka
    static = [m for m in members if m.instance_id is not None]
    dynamic = [m for m in members if m.instance_id is None]
    static.sort(key=lambda m: string_key(m.instance_id or ""))
    dynamic.sort(key=lambda m: string_key(m.member_id))
    return static + dynamic


def subscribed_partitions(
    members: Sequence[Member], partitions: Mapping[str, int]
) -> dict[str, int]:
    """The topics some member subscribes to that exist with at least one partition: Kafka skips
    a subscribed topic the metadata does not know (``partitionsPerTopic``)."""
    topics = {t for m in members for t in m.subscription}
    return {t: partitions[t] for t in sorted(topics, key=string_key) if partitions.get(t, 0) > 0}


def all_partitions(per_topic: Mapping[str, int]) -> list[TopicPartition]:
    """Every partition, topics in Java string order, partitions ascending."""
    return [(t, p) for t in sorted(per_topic, key=string_key) for p in range(per_topic[t])]


def empty_assignment(members: Sequence[Member]) -> Assignment:
    return {m.member_id: [] for m in members}


def finished(assignment: Assignment) -> Assignment:
    """Each member's partitions sorted (topic, then partition): the result's order carries no
    meaning in Kafka's answers either."""
    topics = {t for tps in assignment.values() for t, _ in tps}
    rank = {t: i for i, t in enumerate(sorted(topics, key=string_key))}
    return {
        mid: sorted(tps, key=lambda tp: (rank[tp[0]], tp[1])) for mid, tps in assignment.items()
    }

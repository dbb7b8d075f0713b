"""The classic protocol's sticky assignors (``sticky`` and ``cooperative-sticky``).

A port of Kafka's ``AbstractStickyAssignor`` without racks. Both assignors compute the same
final assignment; cooperative-sticky only reaches it in two rebalances (first revoking what
moves). The what-if shows the final one.

Kafka picks one of two algorithms. When every member subscribes to the same topics (the usual
case) the *constrained* builder here: each member keeps up to its quota of what it owns (the
quota being ⌊P/M⌋ or ⌈P/M⌉ partitions), then the orphans fill the members below quota in
member-id order. Otherwise the *general* builder (``sticky_general``): keep what is still
valid, hand out the rest to the least loaded, then move partitions one at a time while that
improves balance. Either way survivors keep their partitions after a member leaves
(DOMAIN §3), where range and round-robin reshuffle.

Ties follow Kafka's iteration orders (``java``): which of two members owning the same number
of partitions keeps the extra one depends on the ``HashMap`` order of their ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dashboard.whatif.java import hashmap_order, string_key
from dashboard.whatif.model import (
    Assignment,
    Member,
    TopicPartition,
    all_partitions,
    finished,
    subscribed_partitions,
)
from dashboard.whatif.sticky_general import general_assign


def sticky(members: Sequence[Member], partitions: Mapping[str, int]) -> Assignment:
    """What the sticky assignors would assign now, starting from what each member owns."""
    if not members:
        return {}
    per_topic = subscribed_partitions(members, partitions)
    by_id = {m.member_id: m for m in members}
    order = hashmap_order([m.member_id for m in members])  # Kafka's `subscriptions` map
    owned, doubly_claimed = _owned(order, by_id, per_topic)
    if _all_subscriptions_equal(order, by_id):
        result = _constrained(order, owned, doubly_claimed, per_topic)
    else:
        subscriptions = {mid: by_id[mid].subscription for mid in order}
        result = general_assign(order, subscriptions, owned, per_topic)
    return finished(result)


def _all_subscriptions_equal(order: list[str], by_id: dict[str, Member]) -> bool:
    """Kafka's ``allSubscriptionsEqual``, quirk included: the reference set is the first
    *non-empty* subscription met, so a member subscribed to nothing that comes first in the
    map's order does not make the group heterogeneous (one met later does)."""
    reference: frozenset[str] = frozenset()
    for mid in order:
        topics = by_id[mid].subscription
        if not reference:
            reference = topics
        elif topics != reference:
            return False
    return True


def _owned(
    order: list[str], by_id: dict[str, Member], per_topic: Mapping[str, int]
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]]:
    """Each member's owned partitions of topics still assigned; a partition two members claim
    (in the same generation, as every member is here) is taken from both (Kafka logs an error
    and reassigns it)."""
    owned: dict[str, list[TopicPartition]] = {}
    owner_of: dict[TopicPartition, str] = {}
    doubly: set[TopicPartition] = set()
    for mid in order:
        mine: list[TopicPartition] = []
        owned[mid] = mine
        for tp in dict.fromkeys(by_id[mid].owned):
            topic, partition = tp
            if partition >= per_topic.get(topic, 0):
                continue  # not a partition of a subscribed topic (Kafka cannot shrink one)
            other = owner_of.get(tp)
            if other is None:
                mine.append(tp)
            else:
                doubly.add(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
            owner_of[tp] = mid
    return owned, doubly


def _constrained(
    order: list[str],
    owned: dict[str, list[TopicPartition]],
    doubly: set[TopicPartition],
    per_topic: Mapping[str, int],
) -> Assignment:
    """``ConstrainedAssignmentBuilder``: quotas first, owned partitions kept up to them, the
    rest dealt round-robin to members under quota (sorted by id), then to those at the
    minimum while some may still take the extra one."""
    total = sum(per_topic.values())
    n = len(order)
    min_quota, max_quota, expected_over = total // n, -(-total // n), total % n
    over = 0
    assignment: Assignment = {mid: [] for mid in order}
    assigned: set[TopicPartition] = set()
    under: list[str] = []  # unfilledMembersWithUnderMinQuotaPartitions
    at_min: list[str] = []  # unfilledMembersWithExactlyMinQuotaPartitions
    for mid in order:
        mine = sorted(owned[mid], key=lambda tp: (tp[1], string_key(tp[0])))
        mine = [tp for tp in mine if tp not in doubly]
        if len(mine) < min_quota:
            keep = mine
            under.append(mid)
        elif len(mine) >= max_quota and over < expected_over:
            over += 1
            if over == expected_over:
                at_min.clear()
            keep = mine[:max_quota]
        else:
            keep = mine[:min_quota]
            if over < expected_over:
                at_min.append(mid)
        assignment[mid].extend(keep)
        assigned.update(keep)
    unassigned = [tp for tp in all_partitions(per_topic) if tp not in assigned]
    under.sort(key=string_key)
    at_min.sort(key=string_key)
    # assignRoundRobin: a Java iterator over `under`, restarted when it runs out.
    cursor, last = 0, -1
    for tp in unassigned:
        if cursor < len(under):
            mid, last = under[cursor], cursor
            cursor += 1
        elif not under and not at_min:
            raise RuntimeError("no member left below quota")  # Kafka's IllegalStateException
        elif not under:
            mid = at_min.pop(0)
        else:
            mid, last, cursor = under[0], 0, 1
        assignment[mid].append(tp)
        count = len(assignment[mid])
        if count == min_quota:
            del under[last]
            cursor = last
            at_min.append(mid)
        elif count == max_quota:
            over += 1
    return assignment

"""The classic protocol's eager client-side assignors: range and round-robin.

Ports of Kafka's ``RangeAssignor`` and ``RoundRobinAssignor`` (clients module) without racks:
Lagwatch does not know consumer racks (``client.rack``), and without them Kafka's rack-aware
branches are skipped. The broker's KIP-848 ``range`` assignor (rewritten in KAFKA-16944, it
no longer keeps previous assignments) orders members the same way and splits each topic the
same way, so :func:`range_assign` answers for it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dashboard.whatif.model import (
    Assignment,
    Member,
    all_partitions,
    empty_assignment,
    finished,
    sorted_members,
    subscribed_partitions,
)


def range_assign(members: Sequence[Member], partitions: Mapping[str, int]) -> Assignment:
    """Per topic, its subscribers in Kafka's member order each take a contiguous range; the first
    ``count % subscribers`` take one partition more (DOMAIN §3: 10 over a, b, c is 4/3/3).

    Topics are independent: a member subscribed to several topics may be first in each and
    collect every topic's extra partition, which is range's known imbalance.
    """
    out = empty_assignment(members)
    ordered = sorted_members(members)
    for topic, count in subscribed_partitions(members, partitions).items():
        subscribers = [m for m in ordered if topic in m.subscription]
        each, extra = divmod(count, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            n = each + (1 if i < extra else 0)
            out[m.member_id].extend((topic, p) for p in range(start, start + n))
            start += n
    return finished(out)


def round_robin(members: Sequence[Member], partitions: Mapping[str, int]) -> Assignment:
    """Every subscribed partition, topics in name order, dealt to the members in Kafka's member
    order in turn, skipping a member not subscribed to the partition's topic (so it is even
    only when all members subscribe to the same topics: DOMAIN §3)."""
    out = empty_assignment(members)
    ring = sorted_members(members)
    turn = 0
    for topic, partition in all_partitions(subscribed_partitions(members, partitions)):
        while topic not in ring[turn].subscription:
            turn = (turn + 1) % len(ring)
        out[ring[turn].member_id].append((topic, partition))
        turn = (turn + 1) % len(ring)
    return finished(out)

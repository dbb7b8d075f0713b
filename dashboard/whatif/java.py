"""The orders Kafka's Java assignors iterate in, reproduced so that ties break as Kafka's do.

Kafka's assignors are deterministic only given Java's orders: member ids and topic names
compare by ``String.compareTo`` (UTF-16 code units, not Unicode code points: a name with an
emoji sorts differently in Python), and several loops walk a ``java.util.HashMap`` keyed by
member id, whose order comes from ``String.hashCode``. Which of two equally loaded members
keeps the extra partition depends on that order, so a what-if that iterated in Python's
order would disagree with the broker or the group leader in exactly the cases users ask about.

What is reproduced: a ``HashMap``/``HashSet`` built by default construction and ``put``/``add``
(capacity 16, doubled past 3/4 full, never shrunk) iterates bucket by bucket, and within a
bucket in insertion order (a resize splits a bucket without reordering it). What is not: a
bucket holding eight or more colliding keys (Java turns it into a tree), which needs hundreds
of members or partitions hashing alike; and the insertion order itself, which for members is
the broker's JoinGroup answer: callers pass the stored member order as the best stand-in, and
it matters only for two members in one bucket.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

_MASK = 0xFFFFFFFF
DEFAULT_CAPACITY = 16


@functools.lru_cache(maxsize=65_536)
def string_key(text: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo``: UTF-16 code units compared unsigned, which
    is what big-endian UTF-16 bytes compared lexicographically give."""
    return text.encode("utf-16-be", "surrogatepass")


@functools.lru_cache(maxsize=65_536)
def string_hash(text: str) -> int:
    """``String.hashCode`` as an unsigned 32-bit value: ``s[0]*31^(n-1) + … + s[n-1]``."""
    data = string_key(text)
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
    return h


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return (31 * (31 + partition) + string_hash(topic)) & _MASK


def bucket(h: int, capacity: int) -> int:
    """``HashMap.hash`` spreads the high bits down (``h ^ h >>> 16``), then masks."""
    return (h ^ (h >> 16)) & (capacity - 1)


def capacity_for(size: int, initial: int = DEFAULT_CAPACITY) -> int:
    """The table size after ``size`` insertions into a map created with ``initial`` buckets."""
    capacity = initial
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def hashmap_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a default ``HashMap<String, …>`` filled with ``keys`` in that order."""
    capacity = capacity_for(len(keys))
    ranked = sorted(
        (bucket(string_hash(k), capacity), i, k) for i, k in enumerate(dict.fromkeys(keys))
    )
    return [k for _, _, k in ranked]


def int_set_order(values: Sequence[int]) -> list[int]:
    """Iteration order of ``new HashSet<>(values)`` (``Integer.hashCode`` is the value; the copy
    constructor sizes the table for the collection, 16 buckets at least)."""
    unique = list(dict.fromkeys(values))
    wanted = max(int(len(values) / 0.75) + 1, DEFAULT_CAPACITY)
    capacity = 1 << (wanted - 1).bit_length()
    if unique and min(unique) >= 0 and max(unique) < min(capacity, 1 << 16):
        return sorted(unique)  # each value is its own bucket: ascending (the common case)
    ranked = sorted((bucket(v & _MASK, capacity), i, v) for i, v in enumerate(unique))
    return [v for _, _, v in ranked]


class JavaHashSet:
    """A default ``HashSet`` of keys whose hash ``hash_of`` gives: add, remove and the first
    element its iterator would return (all the sticky assignor asks of its sets)."""

    def __init__(self, hash_of: Callable[[Any], int]) -> None:
        self._hash_of = hash_of
        self._seq: dict[Any, int] = {}
        self._added = 0
        self._capacity = DEFAULT_CAPACITY

    def add(self, key: Hashable) -> None:
        if key in self._seq:
            return
        self._added += 1
        self._seq[key] = self._added
        if len(self._seq) > self._capacity * 3 // 4:
            self._capacity *= 2  # a HashSet grows and never shrinks

    def remove(self, key: Hashable) -> None:
        self._seq.pop(key, None)

    def __len__(self) -> int:
        return len(self._seq)

    def __contains__(self, key: object) -> bool:
        return key in self._seq

    def first(self) -> Any:
        return min(
            self._seq, key=lambda k: (bucket(self._hash_of(k), self._capacity), self._seq[k])
        )

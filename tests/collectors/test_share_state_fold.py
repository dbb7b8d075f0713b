"""``__share_group_state`` folded (``collectors/share_state/state.py``): the lab broker's real
records of a record released until archived, then tables of batches laid over batches, start
offsets pruning them, snapshots, tombstones, archived records remembered, and the figures."""

from __future__ import annotations

import uuid

import pytest

from collectors.share_state import ACKNOWLEDGED, ARCHIVED, AVAILABLE, StateBatch
from collectors.share_state.state import (
    MAX_ARCHIVED_KEPT,
    ArchivedRecord,
    ShareStateFigures,
    ShareStateTopic,
    combine,
    prune,
)
from tests.collectors.test_share_state_decode import (
    REAL_ARCHIVED,
    REAL_FIRST_UPDATE,
    REAL_SNAPSHOT,
    REAL_SNAPSHOT_KEY,
    REAL_UPDATE_KEY,
    TOPIC,
    batch,
    key,
    snapshot,
    update,
)

A, K, X = AVAILABLE, ACKNOWLEDGED, ARCHIVED


def b(first: int, last: int, state: int, count: int) -> StateBatch:
    return StateBatch(first, last, state, count)


def test_real_records_fold_to_the_archived_record() -> None:
    topic = ShareStateTopic()
    topic.apply(0, 0, 1000, REAL_SNAPSHOT_KEY, REAL_SNAPSHOT)
    assert topic.figures("g-7bff2d", TOPIC, 0) == ShareStateFigures()
    topic.apply(0, 1, 2000, REAL_UPDATE_KEY, REAL_FIRST_UPDATE)
    assert topic.figures("g-7bff2d", TOPIC, 0) == ShareStateFigures(
        max_deliveries=1, redelivered_offset=7, redelivered_count=1
    )
    topic.apply(0, 2, 3000, REAL_UPDATE_KEY, REAL_ARCHIVED)
    assert topic.partitions[("g-7bff2d", TOPIC, 0)].batches == [b(7, 7, X, 5), b(8, 19, K, 1)]
    assert topic.figures("g-7bff2d", TOPIC, 0) == ShareStateFigures(
        max_deliveries=5, archived=1, archived_offset=7, archived_count=5, archived_ms=3000
    )
    assert (topic.records_decoded, topic.positions, dict(topic.skipped)) == (3, {0: 3}, {})
    assert topic.figures("g-7bff2d", TOPIC, 1) is None
    assert topic.figures("other", TOPIC, 0) is None


# fmt: off
COMBINE = [
    # name                               held                               new                              result
    ("nothing held",                     [],                                [b(0, 4, K, 1)],                 [b(0, 4, K, 1)]),
    ("nothing new",                      [b(0, 4, K, 1)],                   [],                              [b(0, 4, K, 1)]),
    ("apart",                            [b(0, 4, K, 1)],                   [b(8, 9, A, 1)],                 [b(0, 4, K, 1), b(8, 9, A, 1)]),
    ("contiguous, same kind: joined",    [b(0, 4, K, 1)],                   [b(5, 9, K, 1)],                 [b(0, 9, K, 1)]),
    ("contiguous, another kind",         [b(0, 4, K, 1)],                   [b(5, 9, A, 2)],                 [b(0, 4, K, 1), b(5, 9, A, 2)]),
    ("released record redelivered",      [b(0, 6, K, 1), b(7, 7, A, 1), b(8, 19, K, 1)], [b(7, 7, A, 2)], [b(0, 6, K, 1), b(7, 7, A, 2), b(8, 19, K, 1)]),
    ("archived at the limit",            [b(7, 7, A, 4), b(8, 19, K, 1)],   [b(7, 7, X, 5)],                 [b(7, 7, X, 5), b(8, 19, K, 1)]),
    ("acknowledged at the same count",   [b(3, 3, A, 2)],                   [b(3, 3, K, 2)],                 [b(3, 3, K, 2)]),
    ("an older write loses",             [b(3, 3, A, 3)],                   [b(3, 3, A, 2)],                 [b(3, 3, A, 3)]),
    ("new inside held: split",           [b(0, 9, K, 1)],                   [b(4, 5, A, 2)],                 [b(0, 3, K, 1), b(4, 5, A, 2), b(6, 9, K, 1)]),
    ("new over two held",                [b(0, 3, A, 1), b(6, 9, A, 1)],    [b(2, 7, K, 1)],                 [b(0, 1, A, 1), b(2, 7, K, 1), b(8, 9, A, 1)]),
    ("new wider, part of it loses",      [b(4, 5, A, 3)],                   [b(0, 9, K, 1)],                 [b(0, 3, K, 1), b(4, 5, A, 3), b(6, 9, K, 1)]),
    ("two new, unsorted",                [],                                [b(5, 6, A, 1), b(0, 1, K, 1)],  [b(0, 1, K, 1), b(5, 6, A, 1)]),
]
PRUNE = [
    ("no start offset",                  [b(0, 4, K, 1)],                   None,                            [b(0, 4, K, 1)]),
    ("all above",                        [b(5, 9, K, 1)],                   5,                               [b(5, 9, K, 1)]),
    ("one wholly below",                 [b(0, 4, K, 1), b(5, 9, A, 1)],    5,                               [b(5, 9, A, 1)]),
    ("one straddling: cut",              [b(0, 9, K, 1)],                   7,                               [b(7, 9, K, 1)]),
    ("all below",                        [b(0, 9, K, 1)],                   10,                              []),
]
# fmt: on


@pytest.mark.parametrize(("name", "held", "new", "expected"), COMBINE, ids=[c[0] for c in COMBINE])
def test_combine(name: str, held: list, new: list, expected: list) -> None:
    assert combine(held, new) == expected


@pytest.mark.parametrize(("name", "held", "start", "expected"), PRUNE, ids=[c[0] for c in PRUNE])
def test_prune(name: str, held: list, start: int | None, expected: list) -> None:
    assert prune(held, start) == expected


def fold(*records: tuple[bytes, bytes | None]) -> ShareStateTopic:
    topic = ShareStateTopic()
    for offset, (k, v) in enumerate(records):
        topic.apply(0, offset, 1000 * (offset + 1), k, v)
    return topic


def test_a_snapshot_replaces_the_state_an_update_lays_over_it() -> None:
    topic = fold(
        (key(0), snapshot(10, (batch(10, 12, AVAILABLE, 2), batch(13, 20, ACKNOWLEDGED, 1)))),
        (key(1), update(-1, (batch(12, 12, AVAILABLE, 3),))),  # start offset not moved
    )
    state = topic.partitions[("q", TOPIC, 3)]
    assert (state.start_offset, state.state_epoch) == (10, 3)
    assert state.batches == [b(10, 11, A, 2), b(12, 12, A, 3), b(13, 20, K, 1)]
    assert topic.figures("q", TOPIC, 3) == ShareStateFigures(
        max_deliveries=3, redelivered_offset=12, redelivered_count=3
    )
    topic.apply(0, 2, 3000, key(0), snapshot(21))
    assert topic.partitions[("q", TOPIC, 3)].batches == []
    assert topic.figures("q", TOPIC, 3) == ShareStateFigures()


def test_the_start_offset_passing_an_archived_record_keeps_it_remembered() -> None:
    topic = fold(
        (key(), update(5, (batch(5, 5, ARCHIVED, 4), batch(6, 8, AVAILABLE, 1)))),
        (key(), update(9, ())),  # everything done: the state holds nothing
        (key(0), snapshot(9, (batch(5, 5, ARCHIVED, 4),))),  # a snapshot repeating it
    )
    state = topic.partitions[("q", TOPIC, 3)]
    assert state.batches == []
    assert list(state.archived.values()) == [ArchivedRecord(5, 5, 4, 1000)]  # first seen
    assert topic.figures("q", TOPIC, 3) == ShareStateFigures(
        archived=1, archived_offset=5, archived_count=4, archived_ms=1000
    )


def test_archived_records_kept_are_bounded_newest_reported() -> None:
    topic = ShareStateTopic()
    n = MAX_ARCHIVED_KEPT + 3
    for i in range(n):
        topic.apply(0, i, 1000 + i, key(), update(i, (batch(i, i + 1, ARCHIVED, 1),)))
    figures = topic.figures("q", TOPIC, 3)
    assert figures is not None
    assert figures.archived == 2 * MAX_ARCHIVED_KEPT  # two records a batch, the oldest dropped
    assert (figures.archived_offset, figures.archived_count) == (n - 1, 1)


def test_a_tombstone_forgets_the_share_partition() -> None:
    topic = fold((key(0), snapshot(10, (batch(10, 10, ARCHIVED, 5),))), (key(0), None))
    assert topic.figures("q", TOPIC, 3) is None


def test_undecodable_and_stale_records_change_nothing() -> None:
    topic = fold((key(0), snapshot(10, (batch(10, 11, AVAILABLE, 2),))))
    topic.apply(0, 1, 2000, key(7), b"\x00")  # a record type of no share-partition
    topic.apply(0, 2, 3000, key(), b"\x00\x01")  # an unknown version, cut short
    topic.apply(0, 0, 4000, key(0), snapshot(99))  # below the position: applied already
    assert topic.figures("q", TOPIC, 3) == ShareStateFigures(
        max_deliveries=2, redelivered_offset=10, redelivered_count=2
    )
    assert sum(topic.skipped.values()) == 2 and topic.records_stale == 1
    assert topic.positions == {0: 3}


def test_share_partitions_apart() -> None:
    other = uuid.uuid4()
    topic = ShareStateTopic()
    topic.apply(0, 0, 1, key(0, "q", 3), snapshot(1, (batch(1, 1, AVAILABLE, 2),)))
    topic.apply(1, 0, 1, key(0, "q", 4), snapshot(1))
    assert topic.figures("q", TOPIC, 4) == ShareStateFigures()
    assert topic.figures("q", other, 3) is None
    assert topic.positions == {0: 1, 1: 1}

"""Lag and time lag per partition, joined from commits and broker offsets."""

import pytest

from collectors.figures import TimeTables, lag_of, partition_figures
from collectors.records import CommittedOffset, PartitionOffsets, Source


@pytest.mark.parametrize(
    ("committed", "earliest", "latest", "lag", "finding"),
    [
        (100, 0, 150, 50, None),
        (150, 0, 150, 0, None),
        (160, 0, 150, None, "ahead_of_latest"),  # never a negative lag
        (5, 10, 150, 145, "behind_earliest"),  # retention deleted unread data
        (5, None, 150, 145, None),
        (5, 0, None, None, None),  # broker offsets unknown: lag unknown, not zero
    ],
)
def test_lag_of(committed, earliest, latest, lag, finding) -> None:
    assert lag_of(committed, earliest, latest) == (lag, finding)


def commit(offset: int, partition: int = 0) -> CommittedOffset:
    return CommittedOffset(Source.KAFKA, "g", "t", partition, offset)


def test_figures_join_commits_with_broker_offsets_and_time_lag() -> None:
    tables = TimeTables()
    tables.observe([PartitionOffsets("t", 0, 0, 100, 10_000)])
    tables.observe([PartitionOffsets("t", 0, 0, 200, 20_000)])
    (fig,) = partition_figures(
        [commit(150)], [PartitionOffsets("t", 0, 0, 200, 20_000)], tables, now_ms=30_000
    )
    assert fig.lag == 50
    assert fig.time_lag_s == pytest.approx(15.0)
    assert fig.time_lag_kind == "interpolated"


def test_missing_broker_offsets_give_unknown_lag() -> None:
    (fig,) = partition_figures([commit(150, partition=3)], [], TimeTables(), now_ms=1)
    assert fig.lag is None and fig.time_lag_s is None and fig.time_lag_kind == "unknown"


def test_a_recreated_topic_restarts_its_time_table() -> None:
    tables = TimeTables()
    tables.observe([PartitionOffsets("t", 0, 0, 500, 1000)])
    tables.observe([PartitionOffsets("t", 0, 0, 600, 2000)])
    tables.observe([PartitionOffsets("t", 0, 0, 3, 3000)])
    assert [p.offset for p in tables.table("t", 0).points] == [3]


def test_groups_sharing_a_partition_each_get_the_time_lag_of_their_own_offset() -> None:
    """One time-lag lookup serves every group at the same offset of a partition; groups at
    other offsets, or on another partition at the same offset, get their own."""
    from collectors.timelag import time_lag

    tables = TimeTables()
    for latest, at in [(100, 10_000), (200, 20_000), (300, 40_000)]:
        tables.observe([PartitionOffsets("t", p, 0, latest + p, at) for p in range(2)])
    offsets = [PartitionOffsets("t", p, 0, 300 + p, 40_000) for p in range(2)]
    cases = [("a", 0, 150), ("b", 0, 150), ("c", 0, 250), ("d", 1, 150), ("e", 0, 300),
             ("f", 1, 301), ("g", 0, 50), ("h", 0, 150)]  # fmt: skip
    commits = [CommittedOffset(Source.KAFKA, g, "t", p, o) for g, p, o in cases]
    figures = partition_figures(commits, offsets, tables, now_ms=50_000)
    for (group, partition, offset), fig in zip(cases, figures, strict=True):
        want = time_lag(tables.table("t", partition), offset, 50_000)
        assert (fig.group, fig.committed) == (group, offset)
        assert (fig.time_lag_s, fig.time_lag_kind, fig.time_lag_from_ms) == (
            want.seconds, str(want.kind), want.from_ms,
        )  # fmt: skip
    by_group = {f.group: f for f in figures}
    assert by_group["a"].time_lag_s == by_group["b"].time_lag_s == by_group["h"].time_lag_s
    assert len({by_group[g].time_lag_s for g in "acdeg"}) == 5

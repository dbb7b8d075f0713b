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

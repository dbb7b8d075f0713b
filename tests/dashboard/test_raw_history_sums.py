"""A group's sums in its raw-history row, every group of a cycle at once, against SQL's
``SUM``/``MAX`` over one row per partition stated directly (nulls left out; null when every
partition's figure is), case by case."""

from __future__ import annotations

import pytest

from dashboard.store import raw_history


def fig(partition: int, lag=None, time_lag_s=None, pending=None, stale=False, topic="t"):
    return (topic, partition, 5, 9, lag, time_lag_s, pending, None, 3, stale)


def reference(figures: list[tuple]) -> dict:
    def agg(i: int, how):
        present = [f[i] for f in figures if f[i] is not None]
        return how(present) if present else None

    return {
        "partitions": len(figures), "lag": agg(4, sum), "max_time_lag_s": agg(5, max),
        "pending": agg(6, sum), "failed": agg(7, sum), "acked": agg(8, sum),
        "stale": any(f[9] for f in figures),
    }  # fmt: skip


CASES = {
    "one group, every figure present": [[fig(0, 4, 1.5, 2), fig(1, 6, 0.5, 1)]],
    "a null among figures": [[fig(0, None, None, 2), fig(1, 6, 2.0, None)]],
    "every lag null": [[fig(0), fig(1)], [fig(0, 3, 1.0)]],
    "an empty group between two": [[fig(0, 1, 1.0)], [], [fig(0, 2, 0.0, stale=True)]],
    "empty groups only": [[], []],
    "a stale partition": [[fig(0, 1, stale=False), fig(1, 1, stale=True)], [fig(0, 1)]],
    "negative and large lags": [[fig(0, -5), fig(1, 2**62), fig(2, 7)]],
    "unsorted partitions": [[fig(3, 1, 9.0, topic="b"), fig(0, 2, 1.0, topic="a")]],
}


@pytest.mark.parametrize("groups", CASES.values(), ids=CASES.keys())
def test_group_sums_are_sql_sums_over_the_partitions(groups: list[list[tuple]]) -> None:
    rows = raw_history.sample_rows(groups)
    assert len(rows) == len(groups)
    for row, figures in zip(rows, groups, strict=True):
        got = {k: v for k, v in row.items() if k != "figures"}
        assert got == reference(figures)
        assert type(got["stale"]) is bool
        for key in ("lag", "pending", "acked"):
            assert got[key] is None or type(got[key]) is int
        assert got["max_time_lag_s"] is None or type(got["max_time_lag_s"]) is float

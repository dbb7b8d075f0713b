"""Rollups on real local Spark, against figures worked out by hand.

Four partitions polled together every 30 s for two minutes (five polls, T0 is an hour start):

======  ===========  ==========================  ===========================  ==================
 name    key          latest                      committed                    lag
======  ===========  ==========================  ===========================  ==================
 P1      g1/t1/0      1000 +300 per poll (10/s)   400 1000 1600 1800 2200      600 300 0 100 0
 P2      g1/t1/1      500 +150 per poll (5/s)     200 (stuck)                  300 450 600 750 900
 P3      g1/t2/0      100 (quiet)                 100                          0
 P4      g2/t1/0      as P1                       as P1's latest               0
======  ===========  ==========================  ===========================  ==================

Minute buckets: [0, 60 s) holds polls 0 and 30 s, [60, 120 s) holds 60 and 90 s, [120, 180 s)
holds 120 s. The interval ending at a poll belongs to that poll's bucket.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_jobs.rollups import RESOLUTIONS, bucket_ms, rollup
from spark_jobs.sample_reader import empty_samples
from tests.spark_jobs.samples import SEC, T0, frame, sample

POLLS = [T0 + i * 30 * SEC for i in range(5)]
P1_LATEST = [1000 + 300 * i for i in range(5)]
P1_COMMITTED = [400, 1000, 1600, 1800, 2200]
P1_TIME_LAG = [60.0, 30.0, 0.0, 10.0, 0.0]


def rows() -> list[dict[str, Any]]:
    out = []
    for i, ts in enumerate(POLLS):
        g1 = {"group": "g1", "topic": "t1"}
        out += [
            sample(ts, P1_COMMITTED[i], **g1, latest=P1_LATEST[i], time_lag_s=P1_TIME_LAG[i]),
            sample(ts, 200, **g1, partition=1, latest=500 + 150 * i, time_lag_s=60.0 + 30 * i),
            sample(ts, 100, group="g1", topic="t2", latest=100, time_lag_s=0.0),
            sample(ts, P1_LATEST[i], group="g2", topic="t1", latest=P1_LATEST[i], time_lag_s=0.0),
        ]
    return out


@pytest.fixture(scope="module")
def samples(spark: SparkSession) -> DataFrame:
    return frame(spark, rows()).persist()


@pytest.fixture(scope="module")
def minutes(samples: DataFrame) -> dict[str, dict[tuple, dict]]:
    return collect(rollup(samples, "1m"))


@pytest.fixture(scope="module")
def hours(samples: DataFrame) -> dict[str, dict[tuple, dict]]:
    return collect(rollup(samples, "1h"))


def collect(frames: dict[str, DataFrame]) -> dict[str, dict[tuple, dict]]:
    """Each level's rows keyed by (key columns..., bucket offset from T0 in seconds)."""
    keys = {
        "partition": ("group", "topic", "partition"),
        "topic": ("group", "topic"),
        "group": ("group",),
        "cluster": ("cluster",),
    }
    out = {}
    for level, df in frames.items():
        out[level] = {
            (*(r[k] for k in keys[level]), (r["bucket_start_ms"] - T0) // SEC): r.asDict()
            for r in df.collect()
        }
    return out


def figures(row: dict, *names: str) -> tuple:
    return tuple(row[n] for n in names)


RATES = ("produce_per_s", "consume_per_s", "lag_slope_per_s", "eta_s")


# Partitions -----------------------------------------------------------------------------------


def test_partition_minute_buckets(minutes: dict) -> None:
    p = minutes["partition"]
    assert sorted(k for k in p if k[:3] == ("g1", "t1", 0)) == [
        ("g1", "t1", 0, 0),
        ("g1", "t1", 0, 60),
        ("g1", "t1", 0, 120),
    ]
    first = p[("g1", "t1", 0, 0)]
    assert figures(first, "samples", "committed", "latest", "lag", "max_lag") == (
        2,
        1000,
        1300,
        300,
        600,
    )
    assert first["avg_lag"] == 450.0 and first["max_time_lag_s"] == 60.0
    # One interval of 30 s: +300 produced, +600 consumed; lag 300 drains at 10/s in 30 s.
    assert figures(first, *RATES) == pytest.approx((10.0, 20.0, -10.0, 30.0))
    # The interval from 30 s to 60 s counts in the second bucket: 60 s, +600, +800, -200.
    second = p[("g1", "t1", 0, 60)]
    assert figures(second, "committed", "latest", "lag", "max_lag", "avg_lag") == (
        1800,
        1900,
        100,
        100,
        50.0,
    )
    assert figures(second, *RATES) == pytest.approx((10.0, 40 / 3, -10 / 3, 30.0))
    last = p[("g1", "t1", 0, 120)]
    assert figures(last, "samples", "lag") == (1, 0)
    assert figures(last, *RATES) == pytest.approx((10.0, 40 / 3, -10 / 3, 0.0))  # drained


def test_a_stuck_partition_never_drains_and_a_lone_sample_has_no_rates(minutes: dict) -> None:
    p = minutes["partition"]
    stuck = p[("g1", "t1", 1, 60)]
    assert figures(stuck, "lag", "max_lag", "avg_lag", "max_time_lag_s") == (
        750,
        750,
        675.0,
        150.0,
    )
    assert figures(stuck, *RATES) == (5.0, 0.0, 5.0, None)  # never drains: null
    quiet = p[("g1", "t2", 0, 0)]
    assert figures(quiet, *RATES) == (0.0, 0.0, 0.0, 0.0)  # nothing waits: 0


def test_partition_hour_bucket(hours: dict) -> None:
    p = hours["partition"]
    assert {k[3] for k in p} == {0}
    p1 = p[("g1", "t1", 0, 0)]
    assert figures(p1, "samples", "committed", "latest", "lag", "max_lag", "avg_lag") == (
        5,
        2200,
        2200,
        0,
        600,
        200.0,
    )
    assert p1["max_time_lag_s"] == 60.0 and p1["resolution"] == "1h"
    assert figures(p1, *RATES) == pytest.approx((10.0, 15.0, -5.0, 0.0))
    p2 = p[("g1", "t1", 1, 0)]
    assert figures(p2, "lag", "max_lag", "avg_lag", "max_time_lag_s") == (900, 900, 600.0, 180.0)
    assert figures(p2, *RATES) == (5.0, 0.0, 5.0, None)


# Topics, groups, cluster -----------------------------------------------------------------------


def test_topic_group_and_cluster_sums_per_minute(minutes: dict) -> None:
    names = ("partitions", "lag", "max_lag", "avg_lag", "max_time_lag_s")
    # g1/t1 in the first minute: lags 300 + 450; totals per poll 900 then 750.
    topic = minutes["topic"][("g1", "t1", 0)]
    assert figures(topic, *names) == (2, 750, 900, 825.0, 90.0)
    assert figures(topic, *RATES) == pytest.approx((15.0, 20.0, -5.0, 150.0))
    group = minutes["group"][("g1", 0)]  # t2 adds a partition but no lag and no rate
    assert figures(group, *names) == (3, 750, 900, 825.0, 90.0)
    assert figures(group, *RATES) == pytest.approx((15.0, 20.0, -5.0, 150.0))
    assert figures(minutes["group"][("g2", 0)], *RATES) == (10.0, 10.0, 0.0, 0.0)
    cluster = minutes["cluster"][("c1", 0)]
    assert figures(cluster, *names) == (4, 750, 900, 825.0, 90.0)
    assert figures(cluster, *RATES) == pytest.approx((25.0, 30.0, -5.0, 150.0))
    # Second minute: 100 + 750 waits, totals per poll 600 then 850, and it no longer drains.
    later = minutes["topic"][("g1", "t1", 60)]
    assert figures(later, *names) == (2, 850, 850, 725.0, 150.0)
    assert figures(later, *RATES[:3]) == pytest.approx((15.0, 40 / 3, 5 / 3))
    assert later["eta_s"] is None
    assert minutes["cluster"][("c1", 60)]["eta_s"] is None


def test_topic_group_and_cluster_sums_per_hour(hours: dict) -> None:
    names = ("partitions", "lag", "max_lag", "avg_lag", "max_time_lag_s")
    topic = hours["topic"][("g1", "t1", 0)]  # totals per poll: 900 750 600 850 900
    assert figures(topic, *names) == (2, 900, 900, 800.0, 180.0)
    assert figures(topic, *RATES) == pytest.approx((15.0, 15.0, 0.0, None))
    cluster = hours["cluster"][("c1", 0)]
    assert figures(cluster, *names) == (4, 900, 900, 800.0, 180.0)
    assert figures(cluster, *RATES) == pytest.approx((25.0, 25.0, 0.0, None))
    assert cluster["resolution"] == "1h"


def test_level_columns(samples: DataFrame) -> None:
    frames = rollup(samples, "1m")
    tail = [
        "resolution", "bucket_start_ms", "partitions", "lag", "max_lag", "avg_lag",
        "max_time_lag_s", "produce_per_s", "consume_per_s", "lag_slope_per_s", "eta_s",
    ]  # fmt: skip
    assert frames["cluster"].columns == ["cluster", *tail]
    assert frames["group"].columns == ["cluster", "source", "group", *tail]
    assert frames["topic"].columns == ["cluster", "source", "group", "topic", *tail]
    assert frames["partition"].columns[:8] == [
        "cluster", "source", "group", "topic", "partition", "resolution", "bucket_start_ms",
        "samples",
    ]  # fmt: skip


# Windows and inputs -----------------------------------------------------------------------------


def test_start_ms_drops_earlier_buckets_but_keeps_their_samples_as_predecessors(
    samples: DataFrame,
) -> None:
    frames = rollup(samples, "1m", start_ms=T0 + 60 * SEC)
    p = collect({"partition": frames["partition"], "cluster": frames["cluster"]})
    assert {k[3] for k in p["partition"]} == {60, 120}
    # Same figures as without start_ms: the 30 s → 60 s interval still counts.
    assert figures(p["partition"][("g1", "t1", 0, 60)], *RATES) == pytest.approx(
        (10.0, 40 / 3, -10 / 3, 30.0)
    )
    assert figures(p["cluster"][("c1", 60)], "max_lag", "avg_lag") == (850, 725.0)


def test_stale_samples_leave_their_intervals_out(spark: SparkSession) -> None:
    """A poll without broker offsets (stale) drops the intervals touching it from the produce
    rate and lag slope, time included, and does not blank the bucket's last lag."""
    stale = frame(
        spark,
        [
            sample(T0, 100, latest=200),
            sample(T0 + 10 * SEC, 150, latest=260),
            sample(T0 + 20 * SEC, 170, stale=True),
        ],
    )
    row = rollup(stale, "1m")["partition"].collect()[0]
    assert figures(row, "lag", "max_lag", "samples") == (110, 110, 3)
    assert figures(row, "produce_per_s", "consume_per_s", "lag_slope_per_s") == pytest.approx(
        (6.0, 3.5, 1.0)
    )


def test_no_samples_no_rows(spark: SparkSession) -> None:
    frames = rollup(empty_samples(spark), "1h")
    assert {level: df.count() for level, df in frames.items()} == dict.fromkeys(frames, 0)


def test_resolutions() -> None:
    assert {r: bucket_ms(r) for r in RESOLUTIONS} == {"1m": 60_000, "1h": 3_600_000}
    with pytest.raises(ValueError, match="resolution"):
        bucket_ms("5m")

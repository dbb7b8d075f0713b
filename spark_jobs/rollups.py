"""Trends and rollups of the sample log per minute and per hour (SPEC §3, §6).

Pure transformations on a samples frame (``SAMPLE_SCHEMA`` columns, one row per key, as
``read_samples`` gives it), built from Spark's own functions only: no Python UDF, so the work
stays in the JVM and runs on a cluster as fast as Spark can.

**Rates come from consecutive samples.** For each partition, every pair of consecutive samples
gives an interval (Δt, Δlatest, Δcommitted, Δlag), found with ``lag`` over a window ordered by
``ts_ms``. An interval belongs to the bucket its later sample falls in, and a bucket's rate is
the sum of its intervals' deltas over the sum of their durations. Offsets are counters, so that
equals (last − value before the bucket) / elapsed time: the change between two buckets is never
lost, and a missed poll changes nothing (``spark_jobs.evaluator.rates`` makes the same
argument for endpoints). An interval with an unknown value on either side (a stale sample
without broker offsets) is left out of that rate, time included. To give the first bucket its
first interval, read from a little before it and pass ``start_ms``: earlier samples then serve
only as predecessors.

**Levels.** A partition's lag belongs to its consumer group, so the "topic" level is a group's
topic (cluster, source, group, topic); then group (cluster, source, group) and cluster. At every
level ``lag`` is the sum of the partitions' last lags in the bucket, ``max_lag``/``avg_lag`` are
the maximum and mean of the level's total lag over the bucket's polls (a cycle samples every
partition at the same ``ts_ms``), ``max_time_lag_s`` the largest of the partitions', and the rates
are sums. ``produce_per_s`` is thus the rate at which messages arrive *for the consumers in
scope*: at the cluster level a topic read by three groups counts three times, which is what makes
``eta_s`` = lag / (consume − produce) mean the same thing at every level.

``eta_s`` is 0 when nothing waits, ``lag / (consume − produce)`` while the lag drains, and null
when it never drains at current rates, or when the rates are unknown (a single sample).
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

__all__ = [
    "LEVEL_KEYS",
    "RESOLUTIONS",
    "bucket_ms",
    "eta_seconds",
    "level_rollup",
    "partition_rollup",
    "rollup",
]

RESOLUTIONS: Final = {"1m": 60_000, "1h": 3_600_000}
PARTITION_KEY: Final = ("cluster", "source", "group", "topic", "partition")
LEVEL_KEYS: Final = {
    "topic": ("cluster", "source", "group", "topic"),
    "group": ("cluster", "source", "group"),
    "cluster": ("cluster",),
}
_BUCKET = "bucket_start_ms"
_RATES = ("produce_per_s", "consume_per_s", "lag_slope_per_s")


def bucket_ms(resolution: str) -> int:
    """Milliseconds of a bucket at ``resolution`` (``"1m"`` or ``"1h"``)."""
    try:
        return RESOLUTIONS[resolution]
    except KeyError:
        raise ValueError(
            f"resolution must be one of {sorted(RESOLUTIONS)}, got {resolution!r}"
        ) from None


def eta_seconds(lag: Column, consume_per_s: Column, produce_per_s: Column) -> Column:
    """Seconds to drain ``lag`` at current rates: 0 when nothing waits, null when it never
    drains (consumption no faster than production) or the rates are unknown."""
    drain = consume_per_s - produce_per_s
    return (
        F.when(lag <= 0, F.lit(0.0))
        .when(drain > 0, lag.cast("double") / drain)
        .otherwise(F.lit(None).cast("double"))
    )


def _rate(delta: str, elapsed: str) -> Column:
    """Per second, from summed deltas and summed milliseconds; null with no interval."""
    return F.when(F.col(elapsed) > 0, F.col(delta) * 1000.0 / F.col(elapsed))


def _with_bucket(samples: DataFrame, size: int) -> DataFrame:
    return samples.withColumn(_BUCKET, F.col("ts_ms") - F.pmod(F.col("ts_ms"), F.lit(size)))


def _last(column: str) -> Column:
    """The value of the bucket's latest sample where it is known (``max_by`` skips null
    orderings, so a trailing stale sample does not blank the figure)."""
    return F.max_by(F.col(column), F.when(F.col(column).isNotNull(), F.col("ts_ms")))


def partition_rollup(samples: DataFrame, resolution: str, start_ms: int | None = None) -> DataFrame:
    """One row per partition and bucket: last committed/latest/lag, max and mean lag, max time
    lag, produce and consume rates, lag slope (per second) and ETA.

    Buckets starting before ``start_ms`` are dropped (their samples still serve as the
    predecessors of the first kept bucket's first interval).
    """
    size = bucket_ms(resolution)
    ordered = Window.partitionBy(*PARTITION_KEY).orderBy("ts_ms")
    previous = {c: F.lag(c).over(ordered) for c in ("ts_ms", "latest", "committed", "lag")}
    deltas = _with_bucket(samples, size).select(
        *PARTITION_KEY,
        _BUCKET,
        "ts_ms",
        "committed",
        "latest",
        "lag",
        "time_lag_s",
        (F.col("ts_ms") - previous["ts_ms"]).alias("_dt"),
        (F.col("latest") - previous["latest"]).alias("_d_latest"),
        (F.col("committed") - previous["committed"]).alias("_d_committed"),
        (F.col("lag") - previous["lag"]).alias("_d_lag"),
    )
    if start_ms is not None:
        deltas = deltas.where(F.col(_BUCKET) >= F.lit(start_ms))

    def elapsed(delta: str) -> Column:
        return F.sum(F.when(F.col(delta).isNotNull(), F.col("_dt")))

    rolled = deltas.groupBy(*PARTITION_KEY, _BUCKET).agg(
        F.count(F.lit(1)).alias("samples"),
        _last("committed").alias("committed"),
        _last("latest").alias("latest"),
        _last("lag").alias("lag"),
        F.max("lag").alias("max_lag"),
        F.avg("lag").alias("avg_lag"),
        F.max("time_lag_s").alias("max_time_lag_s"),
        F.sum("_d_latest").alias("_d_latest"),
        elapsed("_d_latest").alias("_t_latest"),
        F.sum("_d_committed").alias("_d_committed"),
        elapsed("_d_committed").alias("_t_committed"),
        F.sum("_d_lag").alias("_d_lag"),
        elapsed("_d_lag").alias("_t_lag"),
    )
    produce = _rate("_d_latest", "_t_latest")
    consume = _rate("_d_committed", "_t_committed")
    return rolled.select(
        *PARTITION_KEY,
        F.lit(resolution).alias("resolution"),
        _BUCKET,
        "samples",
        "committed",
        "latest",
        "lag",
        "max_lag",
        "avg_lag",
        "max_time_lag_s",
        produce.alias("produce_per_s"),
        consume.alias("consume_per_s"),
        _rate("_d_lag", "_t_lag").alias("lag_slope_per_s"),
        eta_seconds(F.col("lag"), consume, produce).alias("eta_s"),
    )


def level_rollup(
    samples: DataFrame,
    partitions: DataFrame,
    level: str,
    resolution: str,
    start_ms: int | None = None,
) -> DataFrame:
    """One row per ``level`` key (``"topic"``, ``"group"``, ``"cluster"``) and bucket, from the
    samples (for the total lag over the bucket's polls) and ``partition_rollup``'s rows (for
    the last lags, time lags and rates)."""
    keys = LEVEL_KEYS[level]
    size = bucket_ms(resolution)
    per_poll = (
        _with_bucket(samples, size)
        .groupBy(*keys, _BUCKET, "ts_ms")
        .agg(F.sum("lag").alias("_total_lag"))
    )
    if start_ms is not None:
        per_poll = per_poll.where(F.col(_BUCKET) >= F.lit(start_ms))
    over_polls = per_poll.groupBy(*keys, _BUCKET).agg(
        F.max("_total_lag").alias("max_lag"), F.avg("_total_lag").alias("avg_lag")
    )
    sums = partitions.groupBy(*keys, _BUCKET).agg(
        F.count(F.lit(1)).alias("partitions"),
        F.sum("lag").alias("lag"),
        F.max("max_time_lag_s").alias("max_time_lag_s"),
        *(F.sum(rate).alias(rate) for rate in _RATES),
    )
    joined = sums.join(over_polls, [*keys, _BUCKET], "left")
    return joined.select(
        *keys,
        F.lit(resolution).alias("resolution"),
        _BUCKET,
        "partitions",
        "lag",
        "max_lag",
        "avg_lag",
        "max_time_lag_s",
        *_RATES,
        eta_seconds(F.col("lag"), F.col("consume_per_s"), F.col("produce_per_s")).alias("eta_s"),
    )


def rollup(
    samples: DataFrame, resolution: str, start_ms: int | None = None
) -> dict[str, DataFrame]:
    """Every level of the rollup at ``resolution``: ``{"partition", "topic", "group",
    "cluster"}`` to frames (lazy; the levels share the partition frame, so persist it when
    writing several)."""
    partitions = partition_rollup(samples, resolution, start_ms)
    frames = {"partition": partitions}
    for level in LEVEL_KEYS:
        frames[level] = level_rollup(samples, partitions, level, resolution, start_ms)
    return frames

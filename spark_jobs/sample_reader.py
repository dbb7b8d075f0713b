"""Read a time window of the Parquet sample log into Spark (the jobs' only input, SPEC §5-6).

The log's layout and guarantees belong to ``collectors.sample_log``; this module is its Spark
side. Three things matter here:

- **Pruning.** A job reads minutes or hours out of weeks of history, so only the hour
  directories the window touches are listed and opened: the read path is one Hadoop glob over
  the window's dates and hours (object stores list a prefix per glob level, not the whole log),
  and a predicate on the ``date``/``hour`` partition columns drops the glob's overmatch (the
  cross product of dates and hours) before any file is opened. ``ts_ms`` bounds then push down
  into the Parquet scan.
- **Duplicates.** During compaction an hour briefly holds the same samples twice (and a dead
  compactor can leave them so until the next run): ``dropDuplicates(KEY_COLUMNS)``. Duplicates
  of a key are the same sample, so which copy survives does not matter.
- **Nothing there yet.** A fresh install, a retention sweep or a window before the first cycle
  gives an empty frame with the schema, not an error: a scheduled job then writes empty
  results instead of failing every minute.

The frame always has exactly ``SAMPLE_SCHEMA``'s columns in its order (``date``/``hour`` are
dropped once used), so a frame built in a test and a frame read from the log are alike.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from collectors.sample_log import COLUMNS, HOUR_MS, KEY_COLUMNS, SAMPLE_SCHEMA

__all__ = ["SAMPLE_SPARK_SCHEMA", "empty_samples", "read_samples", "window_paths"]

_SPARK_TYPES = {
    pa.int64(): T.LongType(),
    pa.int32(): T.IntegerType(),
    pa.string(): T.StringType(),
    pa.float64(): T.DoubleType(),
    pa.bool_(): T.BooleanType(),
}
SAMPLE_SPARK_SCHEMA = T.StructType(
    [T.StructField(f.name, _SPARK_TYPES[f.type], f.nullable) for f in SAMPLE_SCHEMA]
)
# What Spark's partition discovery adds; the types the log's directories always parse to.
_READ_SCHEMA = T.StructType(
    [
        *SAMPLE_SPARK_SCHEMA.fields,
        T.StructField("date", T.DateType()),
        T.StructField("hour", T.IntegerType()),
    ]
)
# Spark's condition for a read path (or a glob) that matches nothing.
_PATH_NOT_FOUND = "PATH_NOT_FOUND"


def _hours(start_ms: int, end_ms: int) -> range:
    """Indices (ms // HOUR_MS) of the hours overlapping ``[start_ms, end_ms)``."""
    return range(start_ms // HOUR_MS, (end_ms - 1) // HOUR_MS + 1)


def window_paths(url: str, start_ms: int, end_ms: int) -> str:
    """The one glob of the hour directories that may hold samples of ``[start_ms, end_ms)``.

    Every cluster is matched (``cluster=*``): cluster names are percent-encoded on disk, and
    selecting the cluster by column keeps that encoding in one place (``sample_log``).
    """
    dates: dict[str, None] = {}
    hours: dict[str, None] = {}
    for index in _hours(start_ms, end_ms):
        at = datetime.fromtimestamp(index * HOUR_MS / 1000, UTC)
        dates[at.date().isoformat()] = None
        hours[f"{at.hour:02d}"] = None
    day_glob = "{" + ",".join(dates) + "}"
    hour_glob = "{" + ",".join(sorted(hours)) + "}"
    return f"{url.rstrip('/')}/cluster=*/date={day_glob}/hour={hour_glob}"


def _in_hours(start_ms: int, end_ms: int) -> Column:
    """True for a ``date``/``hour`` partition overlapping the window: only partition columns,
    so Spark evaluates it on directory names and never opens the other hours' files."""
    # unix_date counts days, so this holds whatever the session's time zone.
    hour_start_ms = F.unix_date(F.col("date")).cast("long") * (24 * HOUR_MS) + F.col("hour").cast(
        "long"
    ) * F.lit(HOUR_MS)
    first = start_ms // HOUR_MS * HOUR_MS
    return (hour_start_ms >= F.lit(first)) & (hour_start_ms < F.lit(end_ms))


def empty_samples(spark: SparkSession) -> DataFrame:
    """A frame with the samples' schema and no rows."""
    return spark.createDataFrame([], SAMPLE_SPARK_SCHEMA)


def read_samples(
    spark: SparkSession,
    url: str,
    start_ms: int,
    end_ms: int,
    cluster: str | None = None,
    dedup: bool = True,
) -> DataFrame:
    """Samples with ``start_ms <= ts_ms < end_ms`` (of one cluster if given), one per key
    (``dedup=False``: duplicates left in, for a caller that drops them in a shuffle of its own).

    ``url`` is the log's base, as Spark addresses it: a local path, ``file://``, ``s3a://``.
    Lazy like any read: the files are listed now, opened when an action runs.
    """
    if end_ms <= start_ms:
        return empty_samples(spark)
    try:
        frame = (
            spark.read.schema(_READ_SCHEMA)
            .option("basePath", url)
            .parquet(window_paths(url, start_ms, end_ms))
        )
    except AnalysisException as exc:
        if exc.getCondition() == _PATH_NOT_FOUND:
            return empty_samples(spark)
        raise
    frame = frame.where(_in_hours(start_ms, end_ms))
    if cluster is not None:
        frame = frame.where(F.col("cluster") == F.lit(cluster))
    frame = frame.where((F.col("ts_ms") >= F.lit(start_ms)) & (F.col("ts_ms") < F.lit(end_ms)))
    frame = frame.select(*COLUMNS)
    return frame.dropDuplicates(list(KEY_COLUMNS)) if dedup else frame

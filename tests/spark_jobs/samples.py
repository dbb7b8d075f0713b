"""Sample rows and frames for the Spark job tests, built from a few fields each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from collectors.sample_log import COLUMNS
from spark_jobs.sample_reader import SAMPLE_SPARK_SCHEMA

T0 = 1_714_557_600_000  # 2024-05-01T10:00:00Z, on an hour boundary
SEC = 1_000
MIN = 60_000
HOUR = 3_600_000


def sample(ts_ms: int, committed: int, **fields: Any) -> dict[str, Any]:
    """One sample row: Kafka partition ``c1/g/t/0`` unless told otherwise. ``lag`` defaults to
    latest − committed when ``latest`` is given."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(
        ts_ms=ts_ms, cluster="c1", source="kafka", group="g", topic="t", partition=0,
        committed=committed, stale=False,
    )  # fmt: skip
    row.update(fields)
    if "lag" not in fields and row["latest"] is not None:
        row["lag"] = row["latest"] - committed
    return row


def frame(spark: SparkSession, rows: list[Mapping[str, Any]]) -> DataFrame:
    """A samples frame with the reader's schema."""
    return spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], SAMPLE_SPARK_SCHEMA)


def columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Sample rows as the column lists ``evaluate_group_samples`` reads."""
    return {name: [r[name] for r in rows] for name in rows[0]}

"""Reading the real sample log (written by ``SampleLog.write_batch``) into Spark for a window."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from collectors.sample_log import COLUMNS, SampleLog
from spark_jobs.sample_reader import (
    SAMPLE_SPARK_SCHEMA,
    empty_samples,
    read_samples,
    window_paths,
)
from tests.spark_jobs.samples import HOUR, MIN, T0, sample

HOSTILE = "a/b ../42"  # percent-encoded on disk


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> SampleLog:
    """Samples every 20 minutes from 09:00 to 12:40 for two clusters, some written twice."""
    log = SampleLog(tmp_path_factory.mktemp("log") / "samples")
    for cluster in ("prod", HOSTILE):
        rows = [
            sample(T0 - HOUR + i * 20 * MIN, 100 + i, cluster=cluster, latest=200)
            for i in range(12)
        ]
        log.write_batch(cluster, "cycle-1", rows)
        log.write_batch(cluster, "cycle-2", rows[3:6])  # the same keys again
    # A file no window read below may open: reading it would fail the query.
    broken = Path(log.base) / "cluster=prod" / "date=2024-05-01" / "hour=13"
    broken.mkdir(parents=True)
    (broken / "batch-broken.parquet").write_bytes(b"not parquet")
    return log


def types(frame: DataFrame) -> list[tuple[str, object]]:
    """Names and types: files read back are nullable everywhere, whatever was written."""
    return [(f.name, f.dataType) for f in frame.schema]


def offsets(frame: DataFrame) -> list[tuple[str, int]]:
    return sorted((r["cluster"], (r["ts_ms"] - T0) // MIN) for r in frame.collect())


def test_a_window_reads_its_samples_once_each(spark: SparkSession, log: SampleLog) -> None:
    frame = read_samples(spark, log.base, T0 + 30 * MIN, T0 + 90 * MIN)
    assert types(frame) == types(empty_samples(spark)) and tuple(frame.columns) == COLUMNS
    assert offsets(frame) == [(c, m) for c in sorted(("prod", HOSTILE)) for m in (40, 60, 80)]
    # Only the window's hours were listed (10:00 and 11:00), not 09:00, 12:00 or 13:00.
    assert {Path(f).parent.name for f in frame.inputFiles()} == {"hour=10", "hour=11"}


def test_one_cluster_and_a_file_url(spark: SparkSession, log: SampleLog) -> None:
    url = Path(log.base).as_uri()
    frame = read_samples(spark, url, T0 - HOUR, T0, cluster=HOSTILE)
    assert offsets(frame) == [(HOSTILE, -60), (HOSTILE, -40), (HOSTILE, -20)]
    row = frame.where(f"ts_ms = {T0 - 40 * MIN}").collect()[0].asDict()
    assert row == sample(T0 - 40 * MIN, 101, cluster=HOSTILE, latest=200)


def test_a_window_across_midnight_prunes_the_globs_overmatch(
    tmp_path: Path, spark: SparkSession
) -> None:
    """23:00-01:00 globs date={d1,d2}/hour={23,00}: d1/00 and d2/23 match too, and must be
    pruned before any file is opened."""
    log = SampleLog(tmp_path / "samples")
    midnight = T0 + 14 * HOUR  # 2024-05-02T00:00Z
    log.write_batch("prod", "late", [sample(midnight - 10 * MIN, 1, cluster="prod")])
    log.write_batch("prod", "early", [sample(midnight + 10 * MIN, 2, cluster="prod")])
    for overmatch in ("date=2024-05-01/hour=00", "date=2024-05-02/hour=23"):
        directory = tmp_path / "samples" / "cluster=prod" / overmatch
        directory.mkdir(parents=True)
        (directory / "batch-broken.parquet").write_bytes(b"not parquet")
    glob = window_paths(log.base, midnight - HOUR, midnight + HOUR)
    assert glob.endswith("/cluster=*/date={2024-05-01,2024-05-02}/hour={00,23}")
    frame = read_samples(spark, log.base, midnight - HOUR, midnight + HOUR)
    assert sorted(r["committed"] for r in frame.collect()) == [1, 2]


def test_a_missing_or_empty_log_reads_as_no_samples(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for url in (str(tmp_path / "missing"), str(tmp_path / "empty")):
        frame = read_samples(spark, url, T0, T0 + HOUR)
        assert frame.schema == SAMPLE_SPARK_SCHEMA and frame.count() == 0
    assert read_samples(spark, str(tmp_path), T0, T0).count() == 0

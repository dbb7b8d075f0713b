"""The jobs' entry points on real local Spark (no Django): a window of the sample log in, one
run's results out, published atomically, old runs pruned, a failed run invisible."""

from __future__ import annotations

import json
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from collectors.sample_log import SampleLog
from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.jobs import (
    DEFAULT_ROLLUPS_WINDOW_MS,
    SUCCESS_MARKER,
    completed_runs,
    latest_run,
    run_dir,
    run_rollups_job,
    run_status_job,
)
from spark_jobs.session import job_pool
from spark_jobs.status import GROUP_VERDICT_SCHEMA, PARTITION_VERDICT_SCHEMA
from tests.spark_jobs.samples import HOUR, MIN, T0, sample
from tests.spark_jobs.test_status_slice import random_group

NOW = T0 + 10 * MIN


def rows() -> list[dict[str, Any]]:
    """Two partitions of one group, ten polls a minute apart: one stuck, one keeping up."""
    out = []
    for i in range(10):
        out.append(sample(T0 + i * MIN, 1000, earliest=0, latest=1100 + 100 * i))
        out.append(sample(T0 + i * MIN, 100 * i, partition=1, earliest=0, latest=100 * i))
    return out


@pytest.fixture
def log(tmp_path: Path) -> SampleLog:
    log = SampleLog(tmp_path / "samples")
    log.write_batch("c1", "cycles", rows())
    return log


def names(path: str | Path) -> set[str]:
    """Entries of a directory, without the checksum files Hadoop's local file system adds."""
    return {p.name for p in Path(path).iterdir() if not p.name.endswith(".crc")}


def test_status_run_is_published_whole(spark: SparkSession, log: SampleLog, tmp_path: Path) -> None:
    results = str(tmp_path / "results")
    result = run_status_job(spark, log.base, results, NOW, HOUR, EvaluatorConfig())

    assert result.output_path == run_dir(results, "status", NOW) == f"{results}/status/run={NOW}"
    assert (result.input_rows, result.partitions, result.groups) == (20, 2, 1)
    assert names(f"{results}/status") == {f"run={NOW}"}  # no temp directory left behind
    assert {"partitions", "groups", SUCCESS_MARKER} <= names(result.output_path)
    summary = json.loads(Path(result.output_path, SUCCESS_MARKER).read_text())
    assert summary == {
        "job": "status",
        "now_ms": NOW,
        "window_ms": HOUR,
        "input_rows": 20,
        "tables": {"partitions": 2, "groups": 1},
    }

    partitions = pq.read_table(f"{result.output_path}/partitions")
    assert partitions.column_names == PARTITION_VERDICT_SCHEMA.fieldNames()
    statuses = dict(
        zip(partitions["partition"].to_pylist(), partitions["status"].to_pylist(), strict=True)
    )
    assert statuses == {0: "STOP", 1: "OK"}
    groups = pq.read_table(f"{result.output_path}/groups")
    assert groups.column_names == GROUP_VERDICT_SCHEMA.fieldNames()
    assert groups.to_pylist()[0]["status"] == "ERR"
    assert latest_run(spark, results, "status") == result.output_path


def test_the_look_back_bounds_what_is_read(
    spark: SparkSession, log: SampleLog, tmp_path: Path
) -> None:
    """Five minutes back from poll 9 (both ends included) hold polls 4 to 9 of both
    partitions, and nothing after ``now_ms``."""
    result = run_status_job(spark, log.base, str(tmp_path / "r"), T0 + 9 * MIN, 5 * MIN)
    assert result.input_rows == 2 * 6
    result = run_status_job(spark, log.base, str(tmp_path / "r"), T0 + 5 * MIN, 5 * MIN)
    assert result.input_rows == 2 * 6  # polls 0 to 5


def test_an_empty_log_gives_an_empty_run(spark: SparkSession, tmp_path: Path) -> None:
    """A fresh install: the job succeeds with no verdicts rather than failing every minute."""
    result = run_status_job(spark, str(tmp_path / "none"), str(tmp_path / "r"), NOW, HOUR)
    assert (result.input_rows, result.partitions, result.groups) == (0, 0, 0)
    assert pq.read_table(f"{result.output_path}/partitions").num_rows == 0
    assert (Path(result.output_path) / SUCCESS_MARKER).exists()


def test_old_runs_are_pruned_and_unmarked_runs_are_invisible(
    spark: SparkSession, log: SampleLog, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    base = results / "status"
    for ms in (1, 2, 3, 4):  # complete runs, older than the one about to be written
        (base / f"run={ms}").mkdir(parents=True)
        (base / f"run={ms}" / SUCCESS_MARKER).write_text("{}")
    (base / f"run={NOW - 1}").mkdir()  # no marker: cut short, or still being copied
    old_temp = base / f".tmp-{NOW - 2 * HOUR}-dead"  # a run that died long ago
    young_temp = base / f".tmp-{NOW - MIN}-busy"  # may belong to a run still writing
    old_temp.mkdir()
    young_temp.mkdir()
    assert latest_run(spark, str(results), "status") == f"{results}/status/run=4"

    run_status_job(spark, log.base, str(results), NOW, HOUR, keep=2)

    assert names(base) == {f"run={NOW}", f"run={NOW - 1}", "run=4", young_temp.name}
    assert completed_runs(spark, str(results), "status") == [
        f"{results}/status/run={NOW}",
        f"{results}/status/run=4",
    ]


def test_a_failed_run_leaves_the_previous_runs_alone(
    spark: SparkSession, log: SampleLog, tmp_path: Path
) -> None:
    results = str(tmp_path / "results")
    first = run_status_job(spark, log.base, results, NOW, HOUR)
    hour_dir = Path(log.base) / "cluster=c1" / "date=2024-05-01" / "hour=10"
    (hour_dir / "batch-corrupt.parquet").write_bytes(b"not parquet at all")

    with pytest.raises(Exception, match="(?i)parquet"):
        run_status_job(spark, log.base, results, NOW + MIN, HOUR)

    assert names(f"{results}/status") == {f"run={NOW}"}  # no new run, no temp directory
    assert latest_run(spark, results, "status") == first.output_path
    assert pq.read_table(f"{first.output_path}/partitions").num_rows == 2


def test_a_run_at_the_same_time_replaces_its_earlier_self(
    spark: SparkSession, log: SampleLog, tmp_path: Path
) -> None:
    """A retried run (same ``now_ms``) must not nest the new run inside the old one."""
    results = str(tmp_path / "results")
    run_status_job(spark, log.base, results, NOW, HOUR)
    again = run_status_job(spark, log.base, results, NOW, HOUR)
    assert names(again.output_path) == {"partitions", "groups", SUCCESS_MARKER}
    assert pq.read_table(f"{again.output_path}/partitions").num_rows == 2


def test_the_window_must_be_positive(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="positive"):
        run_status_job(spark, str(tmp_path), str(tmp_path / "r"), NOW, 0)


ROLLUP_PARTITION_COLUMNS = [
    "cluster",
    "source",
    "group",
    "topic",
    "partition",
    "resolution",
    "bucket_start_ms",
    "samples",
    "committed",
    "latest",
    "lag",
    "max_lag",
    "avg_lag",
    "max_time_lag_s",
    "produce_per_s",
    "consume_per_s",
    "lag_slope_per_s",
    "eta_s",
]
LEVEL_COLUMNS = [
    "resolution",
    "bucket_start_ms",
    "partitions",
    "lag",
    "max_lag",
    "avg_lag",
    "max_time_lag_s",
    "produce_per_s",
    "consume_per_s",
    "lag_slope_per_s",
    "eta_s",
]


def test_rollups_run_holds_every_level_at_both_resolutions(
    spark: SparkSession, log: SampleLog, tmp_path: Path
) -> None:
    results = str(tmp_path / "results")
    result = run_rollups_job(spark, log.base, results, NOW, DEFAULT_ROLLUPS_WINDOW_MS)

    assert result.output_path == f"{results}/rollups/run={NOW}"
    assert result.input_rows == 20
    assert names(result.output_path) == {
        "partitions",
        "topics",
        "groups",
        "clusters",
        SUCCESS_MARKER,
    }
    tables = {t: pq.read_table(f"{result.output_path}/{t}") for t in result.tables}
    assert tables["partitions"].column_names == ROLLUP_PARTITION_COLUMNS
    assert tables["topics"].column_names == ["cluster", "source", "group", "topic", *LEVEL_COLUMNS]
    assert tables["groups"].column_names == ["cluster", "source", "group", *LEVEL_COLUMNS]
    assert tables["clusters"].column_names == ["cluster", *LEVEL_COLUMNS]
    # Ten minute buckets and one hour bucket per partition; one of each per cluster.
    partitions = tables["partitions"].to_pylist()
    assert sorted(r["resolution"] for r in partitions) == ["1h"] * 2 + ["1m"] * 20
    clusters = tables["clusters"].to_pylist()
    assert sorted(r["resolution"] for r in clusters) == ["1h"] + ["1m"] * 10
    hour = next(r for r in clusters if r["resolution"] == "1h")
    assert (hour["bucket_start_ms"], hour["lag"]) == (T0, 1000)  # stuck 1000 behind, other 0
    assert result.tables == {"partitions": 22, "topics": 11, "groups": 11, "clusters": 11}


def tables_of(run: str) -> dict[str, list[dict[str, Any]]]:
    """Every table of a published run, its rows sorted: comparable across runs."""
    out = {}
    for table in sorted(names(run) - {SUCCESS_MARKER}):
        got = pq.read_table(f"{run}/{table}").to_pylist()
        out[table] = sorted(got, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


def test_both_jobs_on_threads_of_one_session_give_what_each_gives_alone(
    spark: SparkSession, log: SampleLog, tmp_path: Path
) -> None:
    """The worker runs the jobs on threads sharing its session, each in its scheduler pool
    (docs/SPARK_JOBS.md): running at once changes nothing in what they publish."""
    jobs = {
        "status": lambda r: run_status_job(spark, log.base, r, NOW, HOUR, EvaluatorConfig()),
        "rollups": lambda r: run_rollups_job(spark, log.base, r, NOW, DEFAULT_ROLLUPS_WINDOW_MS),
    }
    alone = {job: run(str(tmp_path / "alone")).output_path for job, run in jobs.items()}
    start = threading.Barrier(len(jobs))

    def at_once(job: str) -> str:
        job_pool(spark, job)
        start.wait()
        return jobs[job](str(tmp_path / "together")).output_path

    with ThreadPoolExecutor(len(jobs)) as pool:
        together = dict(zip(jobs, pool.map(at_once, jobs), strict=True))
    for job in jobs:
        assert tables_of(together[job]) == tables_of(alone[job]), job
        assert tables_of(together[job]), f"{job} published nothing"


# -- a file compacted away between the listing and the scan -----------------------------------


def split_log(tmp_path: Path) -> SampleLog:
    """The fixture's samples as one micro-batch a poll, as the collector writes them."""
    split = SampleLog(tmp_path / "split")
    for i, row in enumerate(rows()):
        split.write_batch("c1", f"cycle-{i}", [row])
    return split


def read_then(monkeypatch: pytest.MonkeyPatch, act: Any) -> list[int]:
    """``read_samples`` lists the window's files as before, then ``act(attempt)`` runs before
    any is opened; returns the attempts made."""
    import spark_jobs.jobs as jobs

    real, attempts = jobs.read_samples, []

    def listed_then_acted(*args: Any, **kwargs: Any) -> Any:
        frame = real(*args, **kwargs)
        attempts.append(len(attempts) + 1)
        act(attempts[-1])
        return frame

    monkeypatch.setattr(jobs, "read_samples", listed_then_acted)
    return attempts


@pytest.mark.parametrize("job", ["status", "rollups"])
def test_a_window_compacted_under_the_read_is_read_again(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job: str
) -> None:
    split = split_log(tmp_path)
    run = {"status": lambda r: run_status_job(spark, split.base, r, NOW, HOUR),
           "rollups": lambda r: run_rollups_job(spark, split.base, r, NOW)}[job]  # fmt: skip
    expected = run(str(tmp_path / "expected"))

    def compact_once(attempt: int) -> None:
        if attempt == 1:
            assert split.compact_closed_hours(NOW + HOUR), "nothing compacted: no race made"

    attempts = read_then(monkeypatch, compact_once)
    result = run(str(tmp_path / "results"))

    assert attempts == [1, 2]
    assert (result.input_rows, dict(result.tables)) == (expected.input_rows, dict(expected.tables))
    for table in result.tables:
        assert sorted(
            map(str, pq.read_table(f"{result.output_path}/{table}").to_pylist())
        ) == sorted(map(str, pq.read_table(f"{expected.output_path}/{table}").to_pylist()))


def test_a_file_that_keeps_going_missing_fails_the_run(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file deleted without a compacted copy (lost, not merged) is never silently skipped."""
    split = split_log(tmp_path)
    results = str(tmp_path / "results")

    def lose_a_file(attempt: int) -> None:
        next(Path(split.base).rglob("batch-*.parquet")).unlink()

    attempts = read_then(monkeypatch, lose_a_file)
    with pytest.raises(Exception, match="FILE_NOT_EXIST|FileNotFound"):
        run_status_job(spark, split.base, results, NOW, HOUR)
    assert attempts == [1, 2, 3]
    assert not Path(results, "status").exists() or names(f"{results}/status") == set()


# -- groups judged from the window's slice ----------------------------------------------------


def test_a_run_from_the_slice_publishes_what_the_whole_window_gives(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Random groups (tests/spark_jobs/test_status_slice.py) in one log, judged with and
    without a slice read first: the same tables, some groups from their slice, some sent back
    to their whole window, every sample counted once."""
    groups = [random_group(random.Random(seed)) for seed in range(80)]
    end = max(r["ts_ms"] for g in groups for r in g)
    groups = [  # every group polled up to the end, so that short ones lie inside the slice
        [dict(r, group=f"g{i}", ts_ms=r["ts_ms"] + end - max(r["ts_ms"] for r in g)) for r in g]
        for i, g in enumerate(groups)
    ]
    log = SampleLog(tmp_path / "samples")
    log.write_batch("c1", "all", [r for g in groups for r in g])
    now = end + 2_000
    config = EvaluatorConfig(window=5, rebalance_storm_count=2)

    def run(slice_ms: int | None) -> Any:
        return run_status_job(spark, log.base, str(tmp_path / f"r{slice_ms}"), now, HOUR, config,
                              slice_ms=slice_ms, slice_from_rows=0)  # fmt: skip

    whole, sliced = run(None), run(3 * MIN)

    assert tables_of(sliced.output_path) == tables_of(whole.output_path)
    assert whole.whole_groups is None
    assert 10 <= sliced.whole_groups <= 70, sliced.whole_groups
    assert sliced.input_rows == whole.input_rows == sum(map(len, groups))
    assert (sliced.partitions, sliced.groups) == (whole.partitions, whole.groups)


def test_the_slice_is_read_once_the_previous_run_counted_enough_samples(
    spark: SparkSession, log: SampleLog, tmp_path: Path
) -> None:
    """A small window costs less read whole than sliced (benchmarks/RESULTS.md): the first
    run, with nothing to go by, and any run after one that read fewer than ``slice_from_rows``
    samples read the whole window."""
    results = str(tmp_path / "results")

    def run(at: int, from_rows: int) -> Any:
        return run_status_job(spark, log.base, results, at, HOUR, EvaluatorConfig(),
                              slice_ms=5 * MIN, slice_from_rows=from_rows)  # fmt: skip

    assert run(NOW, 20).whole_groups is None  # no previous run
    # The previous run read 20 samples: sliced, and the stuck partition's group sent back.
    assert run(NOW + 1, 20).whole_groups == 1
    assert run(NOW + 2, 21).whole_groups is None
    assert run(NOW + 3, 0).whole_groups == 1


# -- runs from the previous run's state -------------------------------------------------------


def step_against_whole(
    spark: SparkSession, log: SampleLog, tmp_path: Path, now: int, look_back: int,
    config: EvaluatorConfig, settle: int,
) -> tuple[Any, Any, dict[str, list[dict[str, Any]]]]:
    """An incremental run at ``now`` (results under ``step``) and the whole window's run at the
    same moment (under ``whole``), checked to publish the same verdict tables; returns both
    runs and the incremental run's tables."""
    step = run_status_job(spark, log.base, str(tmp_path / "step"), now, look_back, config,
                          incremental=True, settle_ms=settle)  # fmt: skip
    whole = run_status_job(spark, log.base, str(tmp_path / "whole"), now, look_back, config,
                           slice_ms=None)  # fmt: skip
    got, expected = tables_of(step.output_path), tables_of(whole.output_path)
    assert {t: got[t] for t in expected} == expected, now
    return step, whole, got


def test_runs_from_state_publish_what_the_whole_window_gives(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Random groups (tests/spark_jobs/test_status_slice.py) written into the log cycle by
    cycle, each cycle landing up to the settle time after its poll time; runs at a few polls'
    distance, each from the previous run's state, against the whole window's run at the same
    moment: the same verdict tables, most groups judged from their state."""
    rng = random.Random(5)
    groups = [random_group(random.Random(seed)) for seed in range(40)]
    rows = [dict(r, group=f"g{i}") for i, g in enumerate(groups) for r in g]
    settle, look_back = 15_000, 4 * MIN
    lands = {ts: ts + rng.randint(0, settle) for ts in {r["ts_ms"] for r in rows}}
    log = SampleLog(tmp_path / "samples")
    config = EvaluatorConfig(window=5, rebalance_storm_count=2)
    written: set[int] = set()
    now = T0 + 3 * MIN
    runs, read_whole = [], []
    while now < T0 + 6 * MIN:
        for ts in sorted(t for t in lands if lands[t] <= now and t not in written):
            log.write_batch("c1", f"cycle-{ts}", [r for r in rows if r["ts_ms"] == ts])
            written.add(ts)
        step, whole, _ = step_against_whole(spark, log, tmp_path, now, look_back, config, settle)
        runs.append(step)
        read_whole.append(whole.input_rows)
        now += rng.choice([10_000, 25_000, 40_000]) + rng.randint(0, 999)
    assert runs[0].notes["mode"] == "whole"
    assert runs[0].notes["whole_reason"] == "no previous run"
    assert all(r.notes["mode"] == "incremental" for r in runs[1:])
    assert sum(r.whole_groups for r in runs[1:]) < len(runs) * len(groups) / 10
    # Each run read the log from the previous run's cut, not the whole look-back.
    for before, after in zip(runs, runs[1:], strict=False):
        assert after.notes["read_from_ms"] == before.notes["cut_ms"]
    assert sum(r.input_rows for r in runs[1:]) < sum(read_whole[1:]) / 2


def test_runs_leave_no_accumulator_behind(
    spark: SparkSession, log: SampleLog, tmp_path: Path
) -> None:
    """The worker keeps one session for days: a run's counters must not stay in pyspark's
    registry of accumulators (three a run, never removed by pyspark)."""
    from pyspark import accumulators

    before = set(accumulators._accumulatorRegistry)
    results = str(tmp_path / "results")
    run_status_job(spark, log.base, results, NOW, HOUR, slice_ms=None)  # the whole window
    run_status_job(spark, log.base, results, NOW + 1, HOUR, slice_ms=5 * MIN, slice_from_rows=0)
    for at in (NOW + 2, NOW + 3):  # from no state, then from the previous run's
        run_status_job(spark, log.base, str(tmp_path / "state"), at, HOUR, incremental=True)
    assert set(accumulators._accumulatorRegistry) - before == set()


def test_a_run_goes_on_from_the_state_this_process_published_without_reading_it_back(
    spark: SparkSession, log: SampleLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker runs the status job every poll in one process: the state its last run
    published is taken from memory, the same table as its files; a state some other run
    published (another token, or none kept here) is read from its files."""
    from spark_jobs import jobs

    reads: list[str] = []
    read_arrow = jobs._read_arrow

    def counted(files: Any, url: str) -> Any:
        reads.append(url)
        return read_arrow(files, url)

    monkeypatch.setattr(jobs, "_read_arrow", counted)
    kept, through_files = str(tmp_path / "kept"), str(tmp_path / "files")
    for results in (kept, through_files):
        run_status_job(spark, log.base, results, NOW, HOUR, incremental=True)  # no state yet
    assert reads == []
    for at in (NOW + MIN, NOW + 2 * MIN):
        mine = run_status_job(spark, log.base, kept, at, HOUR, incremental=True)
        assert reads == [], "the state this process published was read back"
        jobs._PUBLISHED_STATE.pop(through_files)  # as if another process had published it
        theirs = run_status_job(spark, log.base, through_files, at, HOUR, incremental=True)
        assert reads == [f"{run_dir(through_files, 'status', at - MIN)}/state"]
        reads.clear()
        assert mine.notes["mode"] == theirs.notes["mode"] == "incremental"
        assert tables_of(mine.output_path) == tables_of(theirs.output_path)
    # A state whose token is not the one kept here (a retry elsewhere replaced the run).
    token, table = jobs._PUBLISHED_STATE[kept]
    jobs._PUBLISHED_STATE[kept] = ("another run's", table)
    run_status_job(spark, log.base, kept, NOW + 3 * MIN, HOUR, incremental=True)
    assert reads == [f"{run_dir(kept, 'status', NOW + 2 * MIN)}/state"]
    assert jobs._PUBLISHED_STATE[kept][0] not in (token, "another run's")


def test_a_group_no_longer_polled_is_judged_from_its_state_alone(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A group whose partitions stopped being polled has no sample since the cut for Spark to
    group: it is judged from its state (by the driver), with the rows the whole window gives,
    until its samples leave the look-back."""
    log = SampleLog(tmp_path / "samples")
    polls = range(0, 12 * MIN, MIN // 6)
    kept = [sample(T0 + t, 100 + t // 1000, latest=110 + t // 1000) for t in polls]
    gone = [sample(T0 + t, 500, latest=500 + t // 1000, group="gone", partition=p)
            for t in polls if t < 4 * MIN for p in (0, 1)]  # fmt: skip
    for t in polls:
        log.write_batch("c1", f"cycle-{t}", [r for r in kept + gone if r["ts_ms"] == T0 + t])
    look_back, settle = 10 * MIN, 15_000
    config = EvaluatorConfig(window=5)
    judged_gone = []
    for now in range(T0 + 3 * MIN, T0 + 12 * MIN, MIN):
        step, _, got = step_against_whole(spark, log, tmp_path, now, look_back, config, settle)
        judged_gone.append(sum(r["group"] == "gone" for r in got["partitions"]))
        if now > T0 + 3 * MIN:
            assert step.notes["mode"] == "incremental"
    # Judged from state in every run while its samples were in the look-back.
    assert judged_gone == [2] * len(judged_gone)

"""Entry points of the Spark jobs: read a window of the sample log, compute, write results
atomically (SPEC §6). No Django here: a thin Celery task (``dashboard.status.runs``)
calls these and loads the status results into the database.

Jobs:

- **status** (:func:`run_status_job`): status, diagnosis and reason of every partition and
  group (``spark_jobs.status``, the evaluator's rules). It reads a *look-back* (default 1 h)
  rather than the evaluator's window: the window is the partition's last N commits, and a
  stuck partition's last commit may be long ago, so the read must reach back far enough to
  hold it. A commit older than the look-back is not seen; the partition is then judged on
  its first sample in the look-back, as if that were its first commit. With ``incremental``
  (the product's runs) a run goes on from the previous run's state and reads only the log
  since its cut (``spark_jobs.state``); its driver then writes the run's tables itself.
- **rollups** (:func:`run_rollups_job`): per-minute and per-hour trends of every partition,
  topic, group and cluster (``spark_jobs.rollups``).

**Result layout**, under ``results_url`` (a local path, ``file://``, ``s3a://``)::

    status/run=<now_ms>/_SUCCESS               the run's summary (JSON), written last
    status/run=<now_ms>/partitions/*.parquet   PARTITION_VERDICT_SCHEMA
    status/run=<now_ms>/groups/*.parquet       GROUP_VERDICT_SCHEMA
    status/run=<now_ms>/state/*.parquet        spark_jobs.state.STATE_SCHEMA (incremental runs)
    rollups/run=<now_ms>/_SUCCESS
    rollups/run=<now_ms>/{partitions,topics,groups,clusters}/*.parquet   1m and 1h rows
    <job>/.tmp-<now_ms>-<hex>/                 a run being written (hidden from readers)

**Atomicity.** A run writes its tables into a hidden temp directory beside the runs, renames
it to ``run=<now_ms>`` and only then writes the run's ``_SUCCESS`` marker. On a local file
system and HDFS the rename of a directory is atomic, so a reader listing runs sees a whole run
or none. On an object store (``s3a://``) a rename is a copy then a delete, object by object,
so a reader could see half a directory: that is what the marker is for. **Readers consider
only runs with a ``_SUCCESS`` marker, newest first** (``latest_run``), and since the marker
is written after the last table is in place, a run with a marker is whole everywhere. A run
that fails leaves at most a temp directory or an unmarked run, both invisible to readers and
removed by a later run; the previous runs stay as they were.

**Retention.** Each run keeps the ``keep`` newest complete runs of its job and deletes older
ones (marked or not), plus temp directories older than an hour (a crashed run's leftovers;
younger ones may belong to a run still writing). One run of a job at a time is the caller's
business (a Redis lock in ``dashboard.status.runs``).

Files are handled with Hadoop's ``FileSystem`` through the driver's JVM: the same connector,
configuration and credentials Spark itself writes with, whatever the URL's scheme.

**Why one module of some 690 lines**: the two jobs (and the status job's three ways to read:
the whole window, the slice first, from the previous run's state) share the result layout,
the atomic publish and the re-read after compaction; they are kept beside the code that relies
on them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs import state
from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.rollups import rollup
from spark_jobs.sample_reader import read_samples
from spark_jobs.state import DEFAULT_SETTLE_MS
from spark_jobs.status import (
    GROUP_KEY,
    Counters,
    TopicRetention,
    evaluate_recent,
    evaluate_verdicts,
    group_verdicts,
    partition_verdicts,
)

__all__ = [
    "DEFAULT_KEEP_RUNS",
    "DEFAULT_ROLLUPS_WINDOW_MS",
    "DEFAULT_STATUS_LOOKBACK_MS",
    "DEFAULT_STATUS_SLICE_FROM_ROWS",
    "DEFAULT_STATUS_SLICE_MS",
    "JOBS",
    "ROLLUP_LOOKBEHIND_MS",
    "ROLLUP_TABLES",
    "STATUS_TABLES",
    "SUCCESS_MARKER",
    "JobResult",
    "completed_runs",
    "latest_run",
    "run_dir",
    "run_rollups_job",
    "run_status_job",
]

JOBS = ("status", "rollups")
SUCCESS_MARKER = "_SUCCESS"
STATUS_TABLES = ("partitions", "groups")
# Table name -> rollups level (spark_jobs.rollups: partition, topic, group, cluster).
ROLLUP_TABLES = {"partitions": "partition", "topics": "topic", "groups": "group",
                 "clusters": "cluster"}  # fmt: skip
DEFAULT_STATUS_LOOKBACK_MS = 3_600_000
# The status job's slice (``run_status_job``): ten minutes hold Burrow's window of 10 commits
# for a consumer committing more often than once a minute; a group whose window reaches
# further back is read whole.
DEFAULT_STATUS_SLICE_MS = 10 * 60_000
DEFAULT_STATUS_SLICE_FROM_ROWS = 500_000
DEFAULT_ROLLUPS_WINDOW_MS = 2 * 3_600_000
DEFAULT_KEEP_RUNS = 5
# Samples read before the first rollup bucket, only as the predecessors of its first interval:
# comfortably more than a poll interval.
ROLLUP_LOOKBEHIND_MS = 10 * 60_000
# A temp directory this old belongs to a run that died: no run of a job takes an hour.
_TEMP_MAX_AGE_MS = 3_600_000
_RUN_PREFIX = "run="
_TEMP_PREFIX = ".tmp-"
# A read whose file was compacted away between the listing and the scan (Spark's error class,
# and the Hadoop exception older versions name) is tried again this many times in all.
_READ_ATTEMPTS = 3
_FILE_GONE = ("FAILED_READ_FILE.FILE_NOT_EXIST", "java.io.FileNotFoundException")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobResult:
    """What a run produced: its rows in and out, and where its results are.

    ``tables`` maps each table of the run to its row count; ``partitions`` and ``groups`` are
    the status job's verdict counts (for rollups, the partition and group rollup rows).
    """

    job: str
    now_ms: int
    window_ms: int
    input_rows: int
    output_path: str
    tables: Mapping[str, int] = field(default_factory=dict)
    # The status job from a slice: the groups its slice could not tell, judged from the whole
    # window (None: the whole window was read for every group).
    whole_groups: int | None = None
    # The status job's incremental read (``spark_jobs.state``): how it read, and what it
    # carried to the next run, as its ``_SUCCESS`` summary says.
    notes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return self.tables.get("partitions", 0)

    @property
    def groups(self) -> int:
        return self.tables.get("groups", 0)

    @property
    def output_rows(self) -> int:
        return sum(self.tables.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job, "now_ms": self.now_ms, "window_ms": self.window_ms,
            "input_rows": self.input_rows, "output_path": self.output_path,
            "tables": dict(self.tables), "whole_groups": self.whole_groups, **self.notes,
        }  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Files, through Hadoop's FileSystem in the driver's JVM


class _Files:
    """The few file operations a run needs, on whatever file system ``url`` names."""

    def __init__(self, spark: SparkSession, url: str) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        self._fs = self.path(url).getFileSystem(self._conf)

    def path(self, url: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(url)

    def exists(self, url: str) -> bool:
        return bool(self._fs.exists(self.path(url)))

    def delete(self, url: str) -> None:
        self._fs.delete(self.path(url), True)

    def rename(self, src: str, dst: str) -> None:
        if not self._fs.rename(self.path(src), self.path(dst)):
            raise OSError(f"could not rename {src} to {dst}")

    def read_bytes(self, url: str) -> bytes:
        stream = self._fs.open(self.path(url))
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def read_text(self, url: str) -> str:
        stream = self._fs.open(self.path(url))
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def write(self, url: str, data: bytes) -> None:
        out = self._fs.create(self.path(url), True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()

    def children(self, url: str) -> list[str]:
        """Names in directory ``url``; none if it does not exist."""
        if not self.exists(url):
            return []
        return [status.getPath().getName() for status in self._fs.listStatus(self.path(url))]


def _job_dir(results_url: str, job: str) -> str:
    return f"{results_url.rstrip('/')}/{job}"


def run_dir(results_url: str, job: str, now_ms: int) -> str:
    """Where the run of ``job`` at ``now_ms`` lands (``<results>/<job>/run=<now_ms>``)."""
    return f"{_job_dir(results_url, job)}/{_RUN_PREFIX}{now_ms}"


def _run_ms(name: str) -> int | None:
    if name.startswith(_RUN_PREFIX) and name[len(_RUN_PREFIX) :].isdigit():
        return int(name[len(_RUN_PREFIX) :])
    return None


def _temp_ms(name: str) -> int | None:
    stamp = name[len(_TEMP_PREFIX) :].split("-", 1)[0] if name.startswith(_TEMP_PREFIX) else ""
    return int(stamp) if stamp.isdigit() else None


def completed_runs(spark: SparkSession, results_url: str, job: str) -> list[str]:
    """The runs of ``job`` a reader may use (those with a ``_SUCCESS`` marker), newest first."""
    files = _Files(spark, results_url)
    base = _job_dir(results_url, job)
    runs = sorted(
        ((ms, name) for name in files.children(base) if (ms := _run_ms(name)) is not None),
        reverse=True,
    )
    return [f"{base}/{name}" for _, name in runs if files.exists(f"{base}/{name}/{SUCCESS_MARKER}")]


def latest_run(spark: SparkSession, results_url: str, job: str) -> str | None:
    """The newest complete run of ``job``, or None before the first one."""
    runs = completed_runs(spark, results_url, job)
    return runs[0] if runs else None


def _publish(files: _Files, temp: str, final: str, summary: Mapping[str, Any]) -> None:
    """Temp directory → ``run=<now_ms>``, then the marker: the run becomes visible whole.

    A run at the same ``now_ms`` already there (a retried call) is replaced: renaming onto an
    existing directory would move the temp directory *into* it.
    """
    if files.exists(final):
        files.delete(final)
    files.rename(temp, final)
    files.write(f"{final}/{SUCCESS_MARKER}", json.dumps(summary, sort_keys=True).encode())


def _prune(files: _Files, results_url: str, job: str, now_ms: int, keep: int) -> None:
    """Keep the ``keep`` newest complete runs; delete older runs and old temp directories."""
    base = _job_dir(results_url, job)
    names = files.children(base)
    runs = sorted(((ms, n) for n in names if (ms := _run_ms(n)) is not None), reverse=True)
    complete = [ms for ms, n in runs if files.exists(f"{base}/{n}/{SUCCESS_MARKER}")]
    if len(complete) >= keep:
        oldest_kept = complete[keep - 1]
        for ms, name in runs:
            if ms < oldest_kept:
                files.delete(f"{base}/{name}")
    for name in names:
        stamp = _temp_ms(name)
        if stamp is not None and stamp < now_ms - _TEMP_MAX_AGE_MS:
            files.delete(f"{base}/{name}")


def _write(frame: DataFrame, url: str) -> None:
    # Results are thousands of rows, read whole by the loader: one file per table.
    frame.coalesce(1).write.mode("errorifexists").parquet(url)


def _finish(
    spark: SparkSession,
    files: _Files,
    job: str,
    results_url: str,
    temp: str,
    now_ms: int,
    window_ms: int,
    input_rows: int,
    keep: int,
    tables: Mapping[str, int] | None = None,
    whole_groups: int | None = None,
    notes: Mapping[str, Any] | None = None,
) -> JobResult:
    """Publish the run; ``tables`` are its tables' row counts when the job counted them, else
    they are read back from the files."""
    if tables is None:
        tables = {
            name: spark.read.parquet(f"{temp}/{name}").count()  # Parquet footers, no scan
            for name in files.children(temp)
            if not name.startswith(("_", "."))
        }
    final = run_dir(results_url, job, now_ms)
    summary = {"job": job, "now_ms": now_ms, "window_ms": window_ms,
               "input_rows": input_rows, "tables": tables}  # fmt: skip
    if whole_groups is not None:
        summary["whole_groups"] = whole_groups
    summary.update(notes or {})
    _publish(files, temp, final, summary)
    _prune(files, results_url, job, now_ms, keep)
    return JobResult(job, now_ms, window_ms, input_rows, final, tables, whole_groups,
                     dict(notes or {}))  # fmt: skip


def _temp_dir(results_url: str, job: str, now_ms: int) -> str:
    return f"{_job_dir(results_url, job)}/{_TEMP_PREFIX}{now_ms}-{secrets.token_hex(4)}"


def _read_again_if_compacted(run: Callable[[], JobResult]) -> JobResult:
    """``run()``, repeated (at most ``_READ_ATTEMPTS`` times in all) when its read met a file
    of the sample log that was there when the window was listed and gone when it was opened.

    Compaction merges files and deletes them, the open hour's every minute or so
    (``SampleLog.compact_open_hours``), while a job may be between its listing and its scan.
    The merged file holds the same samples, so listing again gives the same window; a run is
    idempotent for a given ``now_ms``. Any other failure, or this one again and again, is
    raised as before.
    """
    for attempt in range(1, _READ_ATTEMPTS + 1):
        try:
            return run()
        except Exception as exc:
            if attempt == _READ_ATTEMPTS or not any(m in str(exc) for m in _FILE_GONE):
                raise
            log.warning("a sample-log file was compacted away under the read; reading again")
    raise AssertionError("unreachable")


def _check_window(now_ms: int, window_ms: int) -> None:
    if window_ms <= 0:
        raise ValueError(f"the window must be positive, got {window_ms} ms")
    if now_ms < window_ms:
        raise ValueError(f"now_ms {now_ms} is before the window's length {window_ms} ms")


# ---------------------------------------------------------------------------------------------
# The jobs


def run_status_job(
    spark: SparkSession,
    sample_url: str,
    results_url: str,
    now_ms: int,
    window_ms: int = DEFAULT_STATUS_LOOKBACK_MS,
    config: EvaluatorConfig | None = None,
    keep: int = DEFAULT_KEEP_RUNS,
    per_cluster: Mapping[str, EvaluatorConfig] | None = None,
    slice_ms: int | None = DEFAULT_STATUS_SLICE_MS,
    slice_from_rows: int = DEFAULT_STATUS_SLICE_FROM_ROWS,
    retention: TopicRetention | None = None,
    incremental: bool = False,
    settle_ms: int = DEFAULT_SETTLE_MS,
) -> JobResult:
    """Status and diagnosis of every partition and group seen in the last ``window_ms`` of
    samples (up to and including ``now_ms``), written as one run; a cluster named in
    ``per_cluster`` is judged with its own thresholds (RETENTION_RISK's horizon among them),
    the others with ``config``. ``retention`` holds the topics' retention settings by
    (cluster, topic), which the sample log does not carry, for the retention forecast.

    ``slice_ms``: groups are judged from the last ``slice_ms`` of the window where that gives
    the rows the whole window gives (``spark_jobs.status.evaluate_recent``), the others from
    the whole window; None, 0 or a slice as long as the window reads the whole window for all.
    The slice pays from ``slice_from_rows`` samples in the window (below, its second pass and
    its summary cost more than moving every sample: benchmarks/RESULTS.md), counted by the
    previous run; 0 slices whatever the size.

    ``incremental``: go on from the previous run's state, reading the log only from its cut
    (``spark_jobs.state``; the slice is then not used), and write this run's state beside its
    results; the run reads the whole window when there is no usable state, and says why.
    ``settle_ms``: how long after its poll time a sample may still land in the log (each run
    reads that much again).

    ``window_ms`` is the look-back of the read, not the evaluator's window (its last
    ``config.window`` commits): see the module's docstring. Raises on any failure (an
    unreadable log, a corrupt file, an unwritable results directory); nothing is then visible
    to readers.
    """
    _check_window(now_ms, window_ms)
    config = config or EvaluatorConfig()
    if incremental:
        how = (spark, sample_url, results_url, now_ms, window_ms, config, keep, per_cluster,
               retention, settle_ms)  # fmt: skip
        return _read_again_if_compacted(lambda: _incremental_run(*how))
    if not _worth_a_slice(spark, results_url, slice_ms, window_ms, slice_from_rows):
        slice_ms = None
    return _read_again_if_compacted(
        lambda: _status_run(
            spark,
            sample_url,
            results_url,
            now_ms,
            window_ms,
            config,
            keep,
            per_cluster,
            slice_ms,
            retention,
        )
    )


def _worth_a_slice(
    spark: SparkSession, results_url: str, slice_ms: int | None, window_ms: int, from_rows: int
) -> bool:
    """Whether the window is large enough for the slice to pay, by the previous run's count
    (in its ``_SUCCESS`` summary); the first run reads the whole window. Without a slice
    shorter than the window, no summary is read."""
    if not slice_ms or slice_ms >= window_ms:
        return False
    if from_rows <= 0:
        return True
    previous = latest_run(spark, results_url, "status")
    if previous is None:
        return False
    summary = json.loads(_Files(spark, results_url).read_text(f"{previous}/{SUCCESS_MARKER}"))
    return int(summary.get("input_rows", 0)) >= from_rows


def _status_run(
    spark: SparkSession,
    sample_url: str,
    results_url: str,
    now_ms: int,
    window_ms: int,
    config: EvaluatorConfig,
    keep: int,
    per_cluster: Mapping[str, EvaluatorConfig] | None,
    slice_ms: int | None,
    retention: TopicRetention | None,
) -> JobResult:
    files = _Files(spark, results_url)
    temp = _temp_dir(results_url, "status", now_ms)
    # Duplicates of a key (an hour being compacted) are dropped per group by the evaluation,
    # which shuffles by group anyway. The window is neither cached nor counted by a scan of
    # its own, nor are the results read back to count them: the evaluation counts both as it
    # runs (``Counters``).
    samples = read_samples(spark, sample_url, now_ms - window_ms, now_ms + 1, dedup=False)
    counters = Counters.of(spark)
    cached: list[DataFrame] = []
    try:
        # Both tables are projections of one evaluation: evaluate once (and count the rows
        # read once: the cached frame is not evaluated again).
        verdicts, whole_groups = _verdicts(
            spark, samples, now_ms, config, per_cluster, counters, slice_ms, cached, retention
        )
        _write(partition_verdicts(verdicts), f"{temp}/partitions")
        _write(group_verdicts(verdicts), f"{temp}/groups")
        tables = {"partitions": counters.partitions.value, "groups": counters.groups.value}
        return _finish(spark, files, "status", results_url, temp, now_ms, window_ms,
                       counters.rows_read.value, keep, tables, whole_groups)  # fmt: skip
    except BaseException:
        _discard(files, temp)
        raise
    finally:
        for frame in cached:
            frame.unpersist()
        counters.release()


def _verdicts(
    spark: SparkSession,
    samples: DataFrame,
    now_ms: int,
    config: EvaluatorConfig,
    per_cluster: Mapping[str, EvaluatorConfig] | None,
    counters: Counters,
    slice_ms: int | None,
    cached: list[DataFrame],
    retention: TopicRetention | None,
) -> tuple[DataFrame, int | None]:
    """The run's verdicts (``VERDICT_SCHEMA``), cached (appended to ``cached``), and how many
    groups were judged from their whole window when a slice was read first (else None).

    From a slice: one evaluation of the slice, then the whole window of the groups the slice
    could not tell (their keys collected, a few rows; the window's other groups filtered out
    by a broadcast join before the shuffle), the two unioned."""
    if not slice_ms:  # run_status_job decided (``_worth_a_slice``)
        verdicts = evaluate_verdicts(samples, now_ms, config, per_cluster, counters, retention)
        cached.append(verdicts.persist(StorageLevel.MEMORY_AND_DISK))
        return cached[-1], None
    first = evaluate_recent(
        samples, now_ms - slice_ms, now_ms, config, per_cluster, counters, retention
    )
    cached.append(first.persist(StorageLevel.MEMORY_AND_DISK))
    whole = [tuple(r) for r in cached[-1].where(F.col("whole")).select(*GROUP_KEY).collect()]
    judged = cached[-1].where(~F.col("whole")).drop("whole")
    if not whole:
        return judged, 0
    keys = spark.createDataFrame(whole, T.StructType([T.StructField(k, T.StringType(), False)
                                                      for k in GROUP_KEY]))  # fmt: skip
    # The slice's pass counted every sample read; this one counts its verdicts only.
    again = dataclasses.replace(counters, rows_read=None)
    rest = evaluate_verdicts(
        samples.join(F.broadcast(keys), list(GROUP_KEY), "left_semi"),
        now_ms, config, per_cluster, again, retention,
    )  # fmt: skip
    cached.append(judged.unionByName(rest).persist(StorageLevel.MEMORY_AND_DISK))
    return cached[-1], len(whole)


def _incremental_run(
    spark: SparkSession,
    sample_url: str,
    results_url: str,
    now_ms: int,
    window_ms: int,
    config: EvaluatorConfig,
    keep: int,
    per_cluster: Mapping[str, EvaluatorConfig] | None,
    retention: TopicRetention | None,
    settle_ms: int,
) -> JobResult:
    """A status run from the previous run's state (``spark_jobs.state``), or from the whole
    window when there is none to go on from; either way it writes its own state. The
    verdicts come back to the driver (``state.Judge``), which writes the run's tables."""
    files = _Files(spark, results_url)
    prints = state.fingerprint(config, per_cluster)
    previous_url = latest_run(spark, results_url, "status")
    previous = None
    if previous_url is not None:
        previous = json.loads(files.read_text(f"{previous_url}/{SUCCESS_MARKER}"))
    how = state.plan(previous, previous_url, now_ms, window_ms, settle_ms, prints)
    counters = Counters.of(spark)
    try:
        start_ms = now_ms - window_ms
        judge = state.Judge(start_ms, how.cut_ms, now_ms, config, dict(per_cluster or {}),
                            dict(retention or {}), counters)  # fmt: skip
        samples = read_samples(spark, sample_url, how.read_from_ms, now_ms + 1, dedup=False)
        whole: list[tuple[str, ...]] = []
        if how.state_url is None:
            judged = judge.whole(samples)
        else:
            previous_state = _previous_state(files, results_url, how.state_url, previous)
            judged = judge.incremental(spark, samples, previous_state)
            whole = state.sent_back(judged)
        if whole:
            keys = spark.createDataFrame(whole, T.StructType(
                [T.StructField(k, T.StringType(), False) for k in GROUP_KEY]))  # fmt: skip
            window = read_samples(spark, sample_url, start_ms, now_ms + 1, dedup=False)
            rest = judge.whole(window.join(F.broadcast(keys), list(GROUP_KEY), "left_semi"))
            judged = pa.concat_tables([judged.filter(pc.invert(judged.column("whole"))), rest])
        tables = state.result_tables(judged)
        temp = _temp_dir(results_url, "status", now_ms)
        try:
            for name, table in tables.items():
                _write_arrow(files, f"{temp}/{name}/part-00000.parquet", table)
            token = secrets.token_hex(8)
            note = {**state.state_note(how, window_ms, settle_ms, prints), "token": token}
            notes = {**how.summary(), "state": note, "carried": state.carried(tables["state"])}
            counts = {name: tables[name].num_rows for name in ("partitions", "groups")}
            result = _finish(spark, files, "status", results_url, temp, now_ms, window_ms,
                             counters.rows_read.value, keep, counts,
                             len(whole) if how.state_url else None, notes)  # fmt: skip
            _PUBLISHED_STATE[results_url] = (token, tables["state"])
            return result
        except BaseException:
            _discard(files, temp)
            raise
    finally:
        counters.release()


# The state table the last incremental run of this process published, per results directory,
# with the token its summary carries: the next run here, which goes on from it, takes it from
# memory rather than reading back through the file system what it has just written (a third
# of a second a run at 10,000 partitions: benchmarks/RESULTS.md). Any other run in between (a
# retry, another worker) published another token, and the state is read from its files.
_PUBLISHED_STATE: dict[str, tuple[str, pa.Table]] = {}


def _previous_state(
    files: _Files, results_url: str, state_url: str, previous: Mapping[str, Any] | None
) -> pa.Table:
    """The state the previous run published (``state_url``, its summary ``previous``): this
    process's copy when that run was this process's last, else its files."""
    token = ((previous or {}).get("state") or {}).get("token")
    kept = _PUBLISHED_STATE.get(results_url)
    if token is not None and kept is not None and kept[0] == token:
        return kept[1]
    return _read_arrow(files, state_url)


def _write_arrow(files: _Files, url: str, table: pa.Table) -> None:
    """One Parquet file of ``table``, written by the driver through Hadoop's file system."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    files.write(url, sink.getvalue().to_pybytes())


def _read_arrow(files: _Files, url: str) -> pa.Table:
    """The Parquet files of directory ``url``, read by the driver through Hadoop's file
    system (the previous run's state: a few MB)."""
    names = sorted(n for n in files.children(url) if n.endswith(".parquet"))
    tables = [pq.read_table(pa.BufferReader(files.read_bytes(f"{url}/{n}"))) for n in names]
    return pa.concat_tables(tables) if tables else state.STATE_ARROW_SCHEMA.empty_table()


def run_rollups_job(
    spark: SparkSession,
    sample_url: str,
    results_url: str,
    now_ms: int,
    window_ms: int = DEFAULT_ROLLUPS_WINDOW_MS,
    keep: int = DEFAULT_KEEP_RUNS,
) -> JobResult:
    """Per-minute and per-hour rollups of the last ``window_ms`` of samples, written as one run.

    Minute buckets start at the first minute the window touches, hour buckets at the first
    hour (so every hour bucket but the current one is whole); samples up to
    ``ROLLUP_LOOKBEHIND_MS`` before that are read only to give the first bucket its first
    interval. The current buckets are partial, and complete in a later run.
    """
    _check_window(now_ms, window_ms)
    return _read_again_if_compacted(
        lambda: _rollups_run(spark, sample_url, results_url, now_ms, window_ms, keep)
    )


def _rollups_run(
    spark: SparkSession,
    sample_url: str,
    results_url: str,
    now_ms: int,
    window_ms: int,
    keep: int,
) -> JobResult:
    files = _Files(spark, results_url)
    temp = _temp_dir(results_url, "rollups", now_ms)
    start = {"1m": (now_ms - window_ms) // 60_000 * 60_000,
             "1h": (now_ms - window_ms) // 3_600_000 * 3_600_000}  # fmt: skip
    read_from = max(0, min(start.values()) - ROLLUP_LOOKBEHIND_MS)
    samples = read_samples(spark, sample_url, read_from, now_ms + 1)
    samples = samples.persist(StorageLevel.MEMORY_AND_DISK)
    persisted: list[DataFrame] = []
    try:
        input_rows = samples.count()
        by_resolution = {}
        for resolution, start_ms in start.items():
            frames = rollup(samples, resolution, start_ms)
            # Every level is built from the partition frame: compute it once.
            frames["partition"] = frames["partition"].persist(StorageLevel.MEMORY_AND_DISK)
            persisted.append(frames["partition"])
            by_resolution[resolution] = frames
        for table, level in ROLLUP_TABLES.items():
            minute, hour = by_resolution["1m"][level], by_resolution["1h"][level]
            _write(minute.unionByName(hour), f"{temp}/{table}")
        return _finish(spark, files, "rollups", results_url, temp, now_ms, window_ms,
                       input_rows, keep)  # fmt: skip
    except BaseException:
        _discard(files, temp)
        raise
    finally:
        for frame in persisted:
            frame.unpersist()
        samples.unpersist()


def _discard(files: _Files, temp: str) -> None:
    """Remove a failed run's temp directory; a failure here must not hide the real error."""
    with contextlib.suppress(Exception):  # best effort: a later run's prune retries
        files.delete(temp)

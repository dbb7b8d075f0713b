"""One run of a Spark job, recorded (SPEC §6): the one code path of the Celery tasks and of
``manage.py spark_job``.

:func:`run_job` records the run (``SparkJobRun``), takes the job's Redis lock so two runs of
one job never overlap (a caller that finds it taken records a *skipped* run and returns),
builds the Spark session (``SPARK_MASTER``), runs the job on the sample log
(``LAGWATCH_SAMPLE_LOG_URL``) into the results directory (``LAGWATCH_RESULTS_URL``), loads the
run into the database (statuses; rollup history), records duration, rows and outcome, and
after a status run sends ``signals.status_applied`` (alerts). It raises only when the
run could not even be recorded (the database is down); a failed job is a *failed* run with its
error, and the previous results stay in place.

The lock expires on its own (``LAGWATCH_SPARK_LOCK_TTL_S``): a worker killed mid-run cannot
block the job forever, at the price that a run outliving the TTL may overlap the next one.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone

from collectors.sample_log.object_store import explain
from dashboard.locks import exclusive
from dashboard.monitoring.models import Cluster, SparkJobOutcome, SparkJobRun, TopicConfig
from dashboard.signals import announce_figures, announce_status
from dashboard.status.results import apply_status_results
from dashboard.status.rollups import apply_rollup_results
from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.windows import RetentionSettings

if TYPE_CHECKING:
    from spark_jobs.jobs import JobResult

log = logging.getLogger(__name__)

__all__ = [
    "JOBS",
    "default_window_s",
    "error_text",
    "cluster_evaluator_configs",
    "evaluator_config",
    "lock_key",
    "parse_window",
    "run_job",
    "topic_retention",
]

JOBS = ("status", "rollups")  # spark_jobs.jobs.JOBS, without importing pyspark here
_WINDOW = re.compile(r"(\d+)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_MAX_WINDOW_S = 366 * 86400
# Long enough for any error a user needs to read; a JVM stack trace is not that.
_ERROR_CHARS = 4000


def parse_window(text: str) -> int:
    """Seconds in a window written ``30m``, ``1h``, ``2d`` (or ``90s``).

    Raises ``ValueError`` with the expected form, for the command line to show as is.
    """
    match = _WINDOW.fullmatch(text.strip().lower())
    if match is None or int(match.group(1)) == 0:
        raise ValueError(
            f"invalid window {text!r}: a positive whole number and a unit, like 30m, 1h or 2d"
        )
    seconds = int(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds > _MAX_WINDOW_S:
        raise ValueError(f"invalid window {text!r}: at most 366d (the log's retention is days)")
    return seconds


def default_window_s(job: str) -> int:
    """The status job's look-back, or the rollups' window, from the settings."""
    if job == "status":
        return settings.LAGWATCH_STATUS_LOOKBACK_S
    return settings.LAGWATCH_ROLLUPS_WINDOW_S


def lock_key(job: str) -> str:
    """The Redis key that keeps runs of ``job`` from overlapping."""
    return f"lagwatch:spark:{job}"


def evaluator_config() -> EvaluatorConfig:
    """The evaluator's thresholds from ``LAGWATCH_EVALUATOR`` (SPEC §4 defaults otherwise)."""
    return EvaluatorConfig(**settings.LAGWATCH_EVALUATOR)


def cluster_evaluator_configs() -> dict[str, EvaluatorConfig]:
    """Each cluster's thresholds: those it sets itself (``Cluster.evaluator``) over the
    deployment's (a cluster changes only what it names), its RETENTION_RISK horizon
    (``Cluster.retention_risk_s``, a field of its own), which the evaluator decides with, and
    when its offsets history started over (``Cluster.history_from``: rebuilt under the same
    name, ``dashboard/store/identity.py``), before which the evaluator reads nothing."""
    return {
        name: EvaluatorConfig(
            **{
                **settings.LAGWATCH_EVALUATOR,
                **overrides,
                "retention_risk_s": risk_s,
                "history_from_ms": 0 if start is None else int(start.timestamp() * 1000),
            }
        )
        for name, overrides, risk_s, start in Cluster.objects.values_list(
            "name", "evaluator", "retention_risk_s", "history_from"
        )
    }


def topic_retention() -> dict[tuple[str, str], RetentionSettings]:
    """Each topic's stored retention settings by (cluster, topic), for the status job's
    retention forecast: the Kafka source reads them every few minutes into ``TopicConfig``,
    and the sample log the job reads does not carry them (one query, whatever the number of
    partitions)."""
    return {
        (cluster, topic): RetentionSettings(retention_ms, policy)
        for cluster, topic, retention_ms, policy in TopicConfig.objects.order_by().values_list(
            "cluster__name", "topic", "retention_ms", "cleanup_policy"
        )
    }


def _execute(job: str, window_s: int, now_ms: int) -> JobResult:
    """The job itself; pyspark is imported here so a web process never loads it."""
    from spark_jobs.jobs import run_rollups_job, run_status_job
    from spark_jobs.session import job_pool, spark_session

    spark = spark_session(
        f"lagwatch-{job}", settings.SPARK_MASTER,
        s3=settings.LAGWATCH_S3, jars=settings.LAGWATCH_SPARK_JARS,
    )  # fmt: skip
    job_pool(spark, job)
    sample_url = settings.LAGWATCH_SAMPLE_LOG_URL
    results_url = settings.LAGWATCH_RESULTS_URL
    keep = settings.LAGWATCH_SPARK_KEEP_RUNS
    window_ms = window_s * 1000
    if job == "status":
        return run_status_job(
            spark, sample_url, results_url, now_ms, window_ms, evaluator_config(), keep,
            per_cluster=cluster_evaluator_configs(),
            slice_ms=settings.LAGWATCH_STATUS_SLICE_S * 1000,
            slice_from_rows=settings.LAGWATCH_STATUS_SLICE_FROM_ROWS,
            retention=topic_retention(),
            incremental=settings.LAGWATCH_STATUS_INCREMENTAL,
            settle_ms=settings.LAGWATCH_STATUS_SETTLE_S * 1000,
        )  # fmt: skip
    return run_rollups_job(spark, sample_url, results_url, now_ms, window_ms, keep)


def error_text(exc: BaseException) -> str:
    """The error as a user reads it: a JVM error's message and its causes, without the stack
    frames (``\tat …``, ``\t… 42 more``) that make a Py4J error ten thousand characters."""
    lines = f"{type(exc).__name__}: {exc}".splitlines()
    kept = [line.rstrip() for line in lines if line.strip() and not line[:1].isspace()]
    text = "\n".join(kept)
    hint = _store_hint(text)
    return (f"{hint}\n{text}" if hint else text)[:_ERROR_CHARS]


def _store_hint(text: str) -> str | None:
    """What to check when the run failed on the sample log's object store (refused
    credentials, no answer, or no ``s3a`` connector), ahead of the JVM's own words."""
    if 'No FileSystem for scheme "s3a"' in text or "S3AFileSystem not found" in text:
        return (
            "Spark has no s3a connector: set LAGWATCH_SPARK_JARS to hadoop-aws and its AWS SDK "
            "bundle (deploy/spark/pom.xml)"
        )
    if "s3a://" not in text and "S3A" not in text:
        return None
    return explain(text, settings.LAGWATCH_S3.where)


def _finish(run: SparkJobRun, outcome: str, started: float, error: str = "") -> SparkJobRun:
    run.outcome = outcome
    run.error = error
    run.finished_at = timezone.now()
    run.duration_s = time.monotonic() - started
    run.save()
    return run


def run_job(
    job: str,
    window_s: int | None = None,
    now_ms: int | None = None,
    wait_s: float = 0.0,
    on_lock: Callable[[], object] | None = None,
) -> SparkJobRun:
    """Run ``job`` (``"status"`` or ``"rollups"``) once over the last ``window_s`` seconds
    (default: the settings'), as of ``now_ms`` (default: when the lock is taken); returns the
    recorded run. ``wait_s``: how long to wait for a run in progress to end before skipping
    (beat never waits, its next tick comes anyway; an operator's run by hand may, and so does
    the run a stored cycle asks for, ``dashboard.status.requests``). ``on_lock`` is called
    once the lock is held, before the run reads anything: what is stored after it is for the
    next run."""
    if job not in JOBS:
        raise ValueError(f"unknown Spark job {job!r}: one of {', '.join(JOBS)}")
    window_s = window_s or default_window_s(job)
    as_of_now = now_ms is None
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    started = time.monotonic()
    run = SparkJobRun.objects.create(
        job=job, started_at=timezone.now(), window_s=window_s, as_of_ms=now_ms
    )
    lock = exclusive(lock_key(job), ttl_s=settings.LAGWATCH_SPARK_LOCK_TTL_S, wait_s=wait_s)
    try:
        with lock as mine:
            if not mine:
                log.warning("spark job %s: previous run still going, this one skipped", job)
                return _finish(
                    run, SparkJobOutcome.SKIPPED, started, "another run of this job holds the lock"
                )
            if on_lock is not None:
                on_lock()
            if as_of_now and wait_s > 0:  # "now" is after the wait for the lock
                now_ms = int(time.time() * 1000)
                run.as_of_ms = now_ms
                run.save(update_fields=["as_of_ms"])
            _close_orphans(job, run)
            result = _execute(job, window_s, now_ms)
            run.input_rows = result.input_rows
            run.output_rows = result.output_rows
            run.output_path = result.output_path
            if job == "status":
                applied = apply_status_results(result.output_path)
                log.info("status results applied", extra={"applied": applied.as_dict()})
            else:
                kept = apply_rollup_results(result.output_path)
                log.info("rollups kept", extra={"rows": kept})
    except Exception as exc:  # the run failed: record why; the previous results stay
        log.exception("spark job %s failed", job)
        return _finish(run, SparkJobOutcome.FAILED, started, error_text(exc))
    _finish(run, SparkJobOutcome.OK, started)
    if job == "status":
        announce_status(run, applied.changes)
    announce_figures(run=run)
    _prune_runs(job)
    log.info("spark job done", extra={"run": run.as_dict()})
    return run


def _close_orphans(job: str, current: SparkJobRun) -> int:
    """Runs of ``job`` still "running" while this one holds the job's lock were cut short (a
    worker killed mid-run): no live run can be without the lock, so record them as failed."""
    return (
        SparkJobRun.objects.filter(job=job, outcome=SparkJobOutcome.RUNNING)
        .exclude(pk=current.pk)
        .update(
            outcome=SparkJobOutcome.FAILED,
            error="cut short: the worker running it stopped before the run finished",
        )
    )


def _prune_runs(job: str) -> None:
    """Forget runs older than ``LAGWATCH_SPARK_RUNS_KEEP_DAYS``: 1,440 status runs a day."""
    cutoff = timezone.now() - timedelta(days=settings.LAGWATCH_SPARK_RUNS_KEEP_DAYS)
    SparkJobRun.objects.filter(job=job, started_at__lt=cutoff).delete()

"""The one place that builds a SparkSession for Lagwatch's jobs (SPEC §6).

Every entry point and test calls :func:`spark_session`, so the choices live here once:

- ``SPARK_MASTER`` (default ``local[*]``) points the jobs at a real cluster without code changes;
- the jobs handle thousands of partitions, not billions of rows, so a small number of shuffle
  partitions beats Spark's default of 200 (each is a task to schedule);
- times are epoch milliseconds and the sample log's ``date``/``hour`` directories are UTC, so
  the session time zone is UTC whatever the host's;
- Arrow carries rows to and from Python (``applyInArrow``);
- the web UI is off and the logs are quiet: the jobs run every minute from Celery, and a port
  per run or a screen of INFO lines helps nobody;
- a sample log on an object store (``s3a://``) is read by Hadoop's ``hadoop-aws`` connector:
  its jars (``LAGWATCH_SPARK_JARS``, fetched by Maven coordinates from ``deploy/spark/pom.xml``)
  go in ``spark.jars``, which Spark ships to the executors itself, and the store's options
  (``collectors.sample_log.object_store.S3Options``) in ``spark.hadoop.fs.s3a.*``.

In local mode the Python workers must be the driver's interpreter (the one with pandas and
pyarrow) and must import this project: both are set here, since a bare ``python3`` on ``PATH``
usually has neither. On a cluster, the image is the same everywhere (see ``Dockerfile``).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from collectors.sample_log.object_store import S3Options

__all__ = [
    "DEFAULT_MASTER",
    "SparkMasterUnreachable",
    "check_master",
    "jar_paths",
    "job_pool",
    "resolve_master",
    "spark_session",
]

DEFAULT_MASTER = "local[*]"
_PROJECT_ROOT = Path(__file__).resolve().parent.parent

_COMMON_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The sample log is never a streaming sink's output; without this every read of a glob
    # logs a stack trace while Spark looks for a ``_spark_metadata`` directory in it.
    "spark.sql.streaming.fileStreamSink.ignoreMetadata": "true",
    "spark.sql.debug.maxToStringFields": "100",  # the samples' 20 columns, without a warning
    # Executors import spark_jobs (the status job's functions and the evaluator they call).
    "spark.executorEnv.PYTHONPATH": _PROJECT_ROOT.as_posix(),
    # The worker runs both jobs on threads of one process, sharing this session (docs/
    # SPARK_JOBS.md); each job submits to a pool of its own (``job_pool``), and FAIR shares the
    # cores between pools, so a status run is not queued behind a long rollups run's stages.
    "spark.scheduler.mode": "FAIR",
    # What Spark's status store keeps of finished jobs, stages, tasks and SQL executions, for a
    # web UI that is off here. At Spark's defaults (1,000 of each, 100,000 tasks) a worker
    # running the status job every poll kept hundreds of MiB of old plans and metrics, and its
    # driver's heap grew for hours before reaching them (benchmarks/RESULTS.md, soak).
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
    "spark.ui.retainedTasks": "1000",
    "spark.ui.retainedDeadExecutors": "10",
    "spark.ui.dagGraph.retainedRootRDDs": "50",
    "spark.sql.ui.retainedExecutions": "20",
    # Each read of the sample log lists its hour directories into a file-status cache shared by
    # the session, under a key of that read's own: no later read finds them, and they stay until
    # the cache holds 250 MB. Size 0: no cache (the read's own index keeps its listing).
    "spark.sql.hive.filesourcePartitionFileCacheSize": "0",
}
# A local run shares a small machine with the web app and the collectors: few shuffle
# partitions, a small heap, the serial collector. The JIT stays whole: a C1-only JIT
# (``-XX:TieredStopAtLevel=1``) starts tiny jobs faster (LAB.md) but made the status job over
# 10,000 partitions take 20.5 s a run instead of 12.1 s (benchmarks/RESULTS.md); the worker
# keeps its session, so steady runs are what count. $LAGWATCH_SPARK_JAVA_OPTIONS overrides
# (the test suite, all tiny jobs, sets the C1 flag).
_LOCAL_CONFIG = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.driver.memory": "1g",
}
_LOCAL_JAVA_OPTIONS = "-XX:+UseSerialGC"
_CLUSTER_CONFIG = {
    "spark.sql.shuffle.partitions": "32",
}


def resolve_master(master: str | None = None) -> str:
    """``master`` if given, else ``SPARK_MASTER``, else ``local[*]``: the same job code runs
    on a laptop and on the compose file's cluster (``spark://spark-master:7077``)."""
    return master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER


class SparkMasterUnreachable(RuntimeError):
    """No standalone master answers at the configured address."""


# How long a standalone master may take to accept a connection before a run is given up.
_MASTER_CONNECT_TIMEOUT_S = 5.0


def master_addresses(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a ``spark://h1:p1,h2:p2`` URL (several: masters with
    ZooKeeper failover); empty for any other kind of master (``local``, ``yarn``, ``k8s://``)."""
    if not master.startswith("spark://"):
        return []
    out = []
    for part in master[len("spark://") :].split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"invalid Spark master {master!r}: expected spark://host:port")
        out.append((host.strip("[]"), int(port)))
    return out


def check_master(master: str, timeout_s: float = _MASTER_CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`SparkMasterUnreachable` unless some master of a ``spark://`` URL accepts a
    connection. Why: with no master, Spark's driver retries registration three times 20 s
    apart and then leaves a context that fails every later call, so a run due while the master
    is down would take a minute to fail with an error naming nothing useful; this fails it in
    seconds, naming the address."""
    errors = []
    for host, port in master_addresses(master):
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError as exc:
            errors.append(f"{host}:{port}: {exc}")
    if errors:
        raise SparkMasterUnreachable(
            f"Spark master {master} does not answer ({'; '.join(errors)}): is it running?"
        )


def _usable(session: SparkSession) -> bool:
    """False once its context is stopped (by ``stop()``, or by Spark after losing its master):
    reusing it would fail every job until the process restarts."""
    try:
        return not session.sparkContext._jsc.sc().isStopped()
    except Exception:  # noqa: BLE001 - a dead JVM gateway is as unusable as a stopped context
        return False


def _jvm_gone() -> bool:
    """True when this process's Spark JVM (the gateway pyspark launched) has died: killed, or
    out of memory. pyspark keeps it in class attributes, so without this every later session,
    even ``getActiveSession``, calls the dead JVM and fails until the process restarts."""
    gateway = SparkContext._gateway
    if gateway is None:
        return False
    proc = getattr(gateway, "proc", None)  # the spark-submit JVM, when pyspark launched it
    return proc is not None and proc.poll() is not None


def _forget_dead_jvm() -> None:
    """Drop pyspark's process-wide references to a dead JVM, so the builder launches a new one
    (a Celery worker's child keeps its session between runs; benchmarks/soak.py kills the JVM
    mid-run and the child's later runs failed, each, until the worker was restarted)."""
    if not _jvm_gone():
        return
    logging.getLogger(__name__).warning("the Spark JVM of this process died: starting a new one")
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


_SESSION_LOCK = threading.Lock()


def jar_paths(setting: str | Sequence[str]) -> list[str]:
    """The jar files a ``LAGWATCH_SPARK_JARS`` value names: comma-separated paths, a folder
    standing for every ``*.jar`` in it (what ``mvn dependency:copy-dependencies`` fills)."""
    items = setting.split(",") if isinstance(setting, str) else list(setting)
    jars = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        path = Path(item).expanduser()
        if path.is_dir():
            found = sorted(str(p) for p in path.glob("*.jar"))
            if not found:
                raise FileNotFoundError(f"LAGWATCH_SPARK_JARS: no *.jar in {path}")
            jars.extend(found)
        elif path.is_file():
            jars.append(str(path))
        else:
            raise FileNotFoundError(f"LAGWATCH_SPARK_JARS: {path} does not exist")
    return jars


def spark_session(
    app_name: str,
    master: str | None = None,
    *,
    s3: S3Options | None = None,
    jars: str | Sequence[str] = "",
) -> SparkSession:
    """The active session if there is one, else a new one configured for Lagwatch's jobs.

    Reusing the active session matters twice: a test suite pays the JVM start (4-9 s) once,
    and a job called from another job does not silently get a second configuration. A session
    whose context has stopped is not reused, and a ``spark://`` master that does not answer
    fails at once (:func:`check_master`); a JVM that died is replaced. The
    jobs themselves depend on none of the settings below for their results (times are integer
    milliseconds throughout), so a session made elsewhere gives the same answers.

    Thread-safe: the worker's threads may ask at once, and must share one session (one JVM).
    ``s3`` and ``jars`` (the ``LAGWATCH_S3_*`` options, ``LAGWATCH_SPARK_JARS``) are for a
    sample log on an object store, and like every setting here count only for a new session.
    """
    with _SESSION_LOCK:
        return _session(app_name, master, s3, jar_paths(jars))


def job_pool(spark: SparkSession, job: str) -> None:
    """Submit this thread's Spark jobs to the scheduler pool ``job`` (created on first use):
    with FAIR scheduling between pools, jobs running at once on one session share its cores
    rather than queue behind the first's stages. The property is the calling thread's only
    (pyspark pins each Python thread to a JVM thread)."""
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", job)


def _session(
    app_name: str, master: str | None, s3: S3Options | None, jars: list[str]
) -> SparkSession:
    _forget_dead_jvm()
    # The builder reuses the process's instantiated session whether or not it is active, and
    # Spark clears the active one when it stops a context itself: look at both.
    active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if active is not None and _usable(active):
        return active
    if active is not None:
        active.stop()  # its context stopped: clear it, so the builder makes a new one
    master = resolve_master(master)
    check_master(master)
    local = master.startswith("local")
    if local:
        # Workers start as PYSPARK_PYTHON, else "python3" from PATH: pin the driver's own.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # Bind to loopback, not to whatever interface the hostname resolves to (LAB.md).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name)
    config = {**_COMMON_CONFIG, **(_LOCAL_CONFIG if local else _CLUSTER_CONFIG)}
    if local:
        java_options = os.environ.get("LAGWATCH_SPARK_JAVA_OPTIONS", _LOCAL_JAVA_OPTIONS)
        config["spark.driver.extraJavaOptions"] = java_options
    if s3 is not None:
        config.update({f"spark.hadoop.{k}": v for k, v in s3.hadoop_conf().items()})
    if jars:
        config["spark.jars"] = ",".join(jars)
    if os.environ.get("SPARK_DRIVER_MEMORY"):
        config.pop("spark.driver.memory", None)  # spark-submit's own variable wins
    for key, value in config.items():
        builder = builder.config(key, value)
    # py4j logs every connection at INFO, and from a finalizer after logging shut down.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark

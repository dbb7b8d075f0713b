"""The session builder: configuration, reuse, and where the master comes from."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_jobs.session import (
    SparkMasterUnreachable,
    check_master,
    job_pool,
    master_addresses,
    resolve_master,
    spark_session,
)
from tests.waiting import wait_for


def test_the_active_session_is_reused(spark: SparkSession) -> None:
    assert spark_session("another-job") is spark


def test_threads_asking_at_once_share_the_one_session(spark: SparkSession) -> None:
    # The worker's threads (docs/SPARK_JOBS.md) must never start a second JVM.
    start = threading.Barrier(4)

    def ask(i: int) -> SparkSession:
        start.wait()
        return spark_session(f"job-{i}")

    with ThreadPoolExecutor(4) as pool:
        assert all(s is spark for s in pool.map(ask, range(4)))


def test_a_job_pool_is_the_calling_threads_own(spark: SparkSession) -> None:
    context = spark.sparkContext
    mine = context.getLocalProperty("spark.scheduler.pool")  # a job run by an earlier test's

    def in_thread(job: str) -> str | None:
        job_pool(spark, job)
        return context.getLocalProperty("spark.scheduler.pool")

    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(in_thread, "pool-a").result() == "pool-a"
        assert pool.submit(in_thread, "pool-b").result() == "pool-b"
    assert context.getLocalProperty("spark.scheduler.pool") == mine


def test_small_machine_configuration(spark: SparkSession) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == "local[2]"
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.scheduler.mode") == "FAIR"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"


def test_the_status_store_keeps_few_finished_jobs_and_executions(spark: SparkSession) -> None:
    """The worker keeps its session for days: what Spark remembers of finished work (for a web
    UI that is off) must stay a few dozen entries, not Spark's default 1,000 of each."""
    for i in range(70):  # each a SQL execution and at least one job
        spark.range(i + 1).selectExpr("sum(id)").collect()
    tracker = spark.sparkContext.statusTracker()
    executions = spark._jsparkSession.sharedState().statusStore()  # type: ignore[attr-defined]
    # The store drops the oldest entries on its own thread, after the events arrive.
    wait_for(
        lambda: len(tracker.getJobIdsForGroup(None)) <= 50 and executions.executionsCount() <= 20,
        timeout=60,
        what=f"at most 50 jobs and 20 executions kept (jobs "
        f"{len(tracker.getJobIdsForGroup(None))}, executions {executions.executionsCount()})",
    )


def test_reads_leave_no_file_listing_in_the_session(spark: SparkSession) -> None:
    """Spark lists a read's directories into a cache of the session's, each read under a key
    of its own that no later read asks for: in a session kept for days they only pile up."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    cls = jvm.java.lang.Class.forName("org.apache.spark.sql.execution.datasources.FileStatusCache$")
    module = cls.getField("MODULE$").get(None)
    cache = module.getOrCreate(spark._jsparkSession)  # type: ignore[attr-defined]
    assert cache.getClass().getSimpleName() == "NoopCache$"  # the Scala object


def test_master_argument_then_environment_then_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_MASTER", raising=False)
    assert resolve_master() == "local[*]"
    monkeypatch.setenv("SPARK_MASTER", "spark://spark-master:7077")
    assert resolve_master() == "spark://spark-master:7077"
    assert resolve_master("local[2]") == "local[2]"


@pytest.mark.parametrize(
    ("master", "addresses"),
    [
        ("spark://spark-master:7077", [("spark-master", 7077)]),
        ("spark://m1:7077,m2:7078", [("m1", 7077), ("m2", 7078)]),  # ZooKeeper failover
        ("spark://[::1]:7077", [("::1", 7077)]),
        ("local[*]", []),
        ("local[2]", []),
        ("yarn", []),
        ("k8s://https://api:6443", []),
    ],
)
def test_master_addresses(master: str, addresses: list[tuple[str, int]]) -> None:
    assert master_addresses(master) == addresses


@pytest.mark.parametrize(
    "master", ["spark://", "spark://host", "spark://host:port", "spark://:7077"]
)
def test_a_malformed_master_is_a_clear_error(master: str) -> None:
    with pytest.raises(ValueError, match="expected spark://host:port"):
        master_addresses(master)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_master_that_answers_passes_and_one_that_does_not_names_itself() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        check_master(f"spark://127.0.0.1:{listening.getsockname()[1]}")
    port = _closed_port()
    with pytest.raises(SparkMasterUnreachable, match=f"spark://127.0.0.1:{port} does not answer"):
        check_master(f"spark://127.0.0.1:{port}")
    check_master("local[*]")  # nothing to reach


def test_a_new_session_with_its_master_down_fails_at_once_naming_it() -> None:
    """What the worker's first run does when the master is down: without the check, Spark
    retries for a minute and leaves a dead context behind."""
    port = _closed_port()
    done = subprocess.run(
        [sys.executable, "-c",
         "from spark_jobs.session import spark_session; "
         f"spark_session('lagwatch-status', 'spark://127.0.0.1:{port}')"],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert f"SparkMasterUnreachable: Spark master spark://127.0.0.1:{port} does not answer" in (
        done.stderr
    )


def _last_line_of(code: str) -> str:
    """Runs ``code`` in a fresh Python (a worker's process) and returns its last output line."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_stopped_context_is_not_reused() -> None:
    """Spark stops a context itself when it gives up on its master; the worker's next run
    must build a new session, not fail for as long as the process lives."""
    code = (
        "from spark_jobs.session import spark_session\n"
        "first = spark_session('a', 'local[1]')\n"
        "first.sparkContext._jsc.sc().stop()\n"
        "second = spark_session('b', 'local[1]')\n"
        "assert second is not first, 'reused a stopped session'\n"
        "print(second.range(5).count())\n"
    )
    assert _last_line_of(code) == "5"


def test_a_dead_jvm_is_replaced() -> None:
    """The JVM of a worker's session killed mid-run (the soak, benchmarks/soak.py): the
    worker's next run must start a new one, not fail for as long as the process lives."""
    code = (
        "import os, signal\n"
        "from spark_jobs.session import spark_session\n"
        "first = spark_session('a', 'local[1]')\n"
        "jvm = first.sparkContext._gateway.proc\n"
        "os.kill(jvm.pid, signal.SIGKILL)\n"
        "jvm.wait(30)\n"
        "second = spark_session('b', 'local[1]')\n"
        "assert second is not first, 'reused a session of the dead JVM'\n"
        "print(second.range(5).count())\n"
    )
    assert _last_line_of(code) == "5"

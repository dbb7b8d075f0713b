"""The Spark jobs wired to Django: ``manage.py spark_job`` (the Celery tasks' code path) on real
local Spark, a real SQLite database and a real Redis for the lock.

The world: a sample log of four partitions polled once a minute for ten minutes, up to the
moment the test starts (the jobs run as of *now*), and the database rows the collectors would
have written for them, plus a partition and a group the log does not mention:

=========  ======================  ==================================================
 name       where                   samples
=========  ======================  ==================================================
 stuck      c1/kafka/orders-app     committed 1000 while latest grows by 100 a poll
 healthy    orders-app/orders/1     keeps up: lag 0 at even polls, 20 at odd ones
 quiet      quiet-app/quiet/0       read to the end (300) long ago, nothing new
 stale      stale-app/t/0           catching up, then the broker unreachable twice
=========  ======================  ==================================================

Each partition's window is written out by hand below; the database must end up with exactly
what ``evaluate_partition`` says for it as of the run's time.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome
from collectors.records import Source
from collectors.sample_log import SampleLog
from dashboard import locks
from dashboard.monitoring.models import (
    Cluster,
    ConsumerGroup,
    LagRollup,
    PartitionState,
    SparkJobOutcome,
    SparkJobRun,
    StatusChange,
)
from dashboard.signals import status_applied
from dashboard.status import results as spark_results
from dashboard.status import tasks
from dashboard.status.results import apply_status_results
from dashboard.status.rollups import apply_rollup_results, prune_rollups
from dashboard.status.runs import _execute as runs_execute
from dashboard.status.runs import lock_key, parse_window, run_job
from dashboard.store.rows import store_cycle
from lab.services import Context, _worker_argv
from spark_jobs.evaluator import (
    Commit,
    EvaluatorConfig,
    PartitionWindow,
    evaluate_group,
    evaluate_partition,
)
from spark_jobs.jobs import SUCCESS_MARKER
from spark_jobs.status import diagnosis_json
from spark_jobs.windows import partition_id
from tests.spark_jobs.samples import MIN, sample

pytestmark = pytest.mark.django_db


# The world ----------------------------------------------------------------------------------


class World:
    """The samples (ten polls up to ``now0``) and the window each partition must be judged on."""

    def __init__(self, now0: int) -> None:
        self.now0 = now0
        self.rows: list[dict[str, Any]] = []
        self.windows: dict[str, PartitionWindow] = {}
        polls = range(10)

        def at(i: int) -> int:
            return now0 - (9 - i) * MIN

        orders = {"group": "orders-app", "topic": "orders"}
        self.stuck = self._add(
            [sample(at(i), 1000, **orders, earliest=0, latest=1100 + 100 * i) for i in polls],
            (Commit(1000, at(0), 100, 0, 1100),),
            tuple(1100 + 100 * i for i in polls),
            1000,
            earliest=0,
            latest=2000,
            polls=10,
        )
        lags = [0 if i % 2 == 0 else 20 for i in polls]
        latest = [500 + 100 * i for i in polls]
        self.healthy = self._add(
            [
                sample(
                    at(i), latest[i] - lags[i], **orders, partition=1, earliest=0, latest=latest[i]
                )
                for i in polls
            ],
            tuple(Commit(latest[i] - lags[i], at(i), lags[i], 0, latest[i]) for i in polls),
            tuple(latest),
            20,
            earliest=0,
            latest=1400,
            polls=10,
        )
        self.quiet = self._add(
            [
                sample(at(i), 300, group="quiet-app", topic="quiet", earliest=0, latest=300)
                for i in polls
            ],
            (Commit(300, at(0), 0, 0, 300),),
            (300,) * 10,
            0,
            earliest=0,
            latest=300,
            polls=10,
        )
        stale = {"group": "stale-app", "topic": "t"}
        self.stale = self._add(
            [
                sample(at(i), 100 + 10 * i, **stale, earliest=0, latest=120 + 10 * i)
                for i in range(8)
            ]
            + [sample(at(i), 170, **stale, stale=True) for i in (8, 9)],
            tuple(Commit(100 + 10 * i, at(i), 20, 0, 120 + 10 * i) for i in range(8)),
            tuple(120 + 10 * i for i in range(8)),
            20,  # the last known lag
            stale=True,
            stale_since_ms=at(8),
            polls=10,
        )

    def _add(self, rows: list[dict[str, Any]], *window: Any, **fields: Any) -> str:
        first = rows[0]
        pid = partition_id("c1", "kafka", first["group"], first["topic"], first["partition"])
        self.rows.extend(rows)
        self.windows[pid] = PartitionWindow(pid, *window, **fields)
        return pid

    def expected(self, now_ms: int) -> dict[str, Any]:
        """pid → the evaluator's verdict as of ``now_ms``."""
        config = EvaluatorConfig(**django_settings.LAGWATCH_EVALUATOR)
        return {pid: evaluate_partition(w, config, now_ms) for pid, w in self.windows.items()}


def figure(group: str, topic: str, partition: int, committed: int, latest: int) -> PartitionFigure:
    return PartitionFigure(
        source=Source.KAFKA,
        group=group,
        topic=topic,
        partition=partition,
        committed=committed,
        earliest=0,
        latest=latest,
        lag=latest - committed,
        time_lag_s=None,
        time_lag_kind="unknown",
        out_of_range=None,
        commit_time_ms=None,
        commit_version=None,
        owner="",
        topology_id=None,
        where="",
    )


@pytest.fixture
def lagwatch(
    settings: Any, tmp_path: Path, redis_url: str, spark: Any, monkeypatch
) -> Iterator[Any]:
    """Settings pointing the jobs at this test's sample log, results and Redis."""
    settings.REDIS_URL = redis_url
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    settings.LAGWATCH_RESULTS_URL = str(tmp_path / "results")
    monkeypatch.setattr(locks, "_client", None)  # the lock client of this test's Redis
    yield settings
    if locks._client is not None:
        locks._client.close()


@pytest.fixture
def world(lagwatch: Any) -> World:
    world = World(int(time.time() * 1000))
    SampleLog(lagwatch.LAGWATCH_SAMPLE_LOG_URL).write_batch("c1", "cycles", world.rows)
    cluster = Cluster.objects.create(name="c1", kafka_bootstrap_servers="k:9092")
    figures = [
        figure("orders-app", "orders", 0, 1000, 2000),
        figure("orders-app", "orders", 1, 1380, 1400),
        figure("orders-app", "orders", 2, 5, 5),  # not in the log
        figure("quiet-app", "quiet", 0, 300, 300),
        figure("stale-app", "t", 0, 170, 190),
        figure("gone-app", "t", 0, 1, 1),  # not in the log
    ]
    store_cycle(cluster, CycleOutcome(cluster="c1", cycle_ms=world.now0, figures=figures))
    PartitionState.objects.filter(partition=2).update(status="WARN", reason="earlier run")
    ConsumerGroup.objects.filter(name="gone-app").update(status="ERR", total_lag=7)
    return world


def spark_job(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("spark_job", *args, stdout=out)
    return json.loads(out.getvalue())


def statuses() -> dict[str, tuple]:
    return {
        partition_id("c1", p.group.source, p.group.name, p.topic, p.partition): (
            p.status,
            p.diagnosis,
            p.reason,
        )
        for p in PartitionState.objects.select_related("group")
    }


def group_row(name: str) -> tuple:
    g = ConsumerGroup.objects.get(name=name)
    return (g.status, g.complete, g.total_lag)


# The status job -----------------------------------------------------------------------------


def test_status_job_stores_the_evaluators_verdicts(world: World) -> None:
    printed = spark_job("status", "--window", "1h")

    run = SparkJobRun.objects.get()
    assert printed == run.as_dict()
    assert (run.job, run.outcome, run.error, run.window_s) == ("status", "ok", "", 3600)
    assert run.input_rows == len(world.rows) == 40
    assert run.output_rows == 4 + 3  # four partition verdicts, three group verdicts
    assert run.duration_s > 0 and run.finished_at >= run.started_at
    assert run.output_path == f"{django_settings.LAGWATCH_RESULTS_URL}/status/run={run.as_of_ms}"

    expected = world.expected(run.as_of_ms)
    stored = statuses()
    for pid, verdict in expected.items():
        assert stored[pid] == (
            verdict.status,
            json.loads(diagnosis_json(verdict)),
            verdict.reason,
        ), pid
    assert {pid: v.status for pid, v in expected.items()} == {
        world.stuck: "STOP",
        world.healthy: "OK",
        world.quiet: "OK",
        world.stale: "UNKNOWN",
    }
    assert stored[world.stale][1][0]["code"] == "SOURCE_UNREACHABLE"
    # Partitions and groups the run did not see keep what they had.
    assert stored[partition_id("c1", "kafka", "orders-app", "orders", 2)] == (
        "WARN",
        [],
        "earlier run",
    )
    assert group_row("gone-app") == ("ERR", None, 7)

    orders = evaluate_group("orders-app", [expected[world.stuck], expected[world.healthy]])
    assert group_row("orders-app") == (orders.status, orders.complete, orders.total_lag)
    assert group_row("orders-app") == ("ERR", 0.5, 1020)
    assert group_row("quiet-app")[0] == "OK" and group_row("stale-app")[0] == "UNKNOWN"
    evaluated = PartitionState.objects.get(partition=1).evaluated_at
    assert int(evaluated.timestamp() * 1000) == run.as_of_ms


def test_lagwatch_status_shows_the_evaluated_status(world: World) -> None:
    spark_job("status")
    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    doc = json.loads(out.getvalue())

    run = SparkJobRun.objects.get()
    expected = world.expected(run.as_of_ms)
    rows = {
        partition_id(r["cluster"], r["source"], r["group"], r["topic"], r["partition"]): r
        for r in doc["partitions"]
    }
    for pid, verdict in expected.items():
        row = rows[pid]
        assert (row["status"], row["reason"]) == (verdict.status, verdict.reason)
        assert row["diagnosis"] == json.loads(diagnosis_json(verdict))
        assert row["complete"] == verdict.complete
    groups = {g["group"]: g for g in doc["groups"]}
    assert (groups["orders-app"]["status"], groups["orders-app"]["complete"]) == ("ERR", 0.5)
    assert groups["stale-app"]["status"] == "UNKNOWN"
    assert doc["spark_jobs"] == [
        {
            "job": "status",
            "finished_at": run.as_dict()["finished_at"],
            "duration_s": round(run.duration_s, 3),
            "input_rows": 40,
            "output_rows": 7,
            "outcome": "ok",
            "error": None,
            "last_ok_at": run.as_dict()["finished_at"],
        }
    ]


def test_a_failed_run_exits_non_zero_and_changes_nothing(world: World) -> None:
    spark_job("status")
    before = statuses()
    groups_before = {
        g.name: (g.status, g.complete, g.total_lag) for g in ConsumerGroup.objects.all()
    }
    # A sample of now, so that the corrupt file lies in an hour the next run reads: an
    # incremental run reads only the hours since the previous run's cut, and the world's
    # oldest samples are in the hour before when the test starts in an hour's first minutes.
    fresh = dict(world.rows[-1], ts_ms=int(time.time() * 1000))
    written = SampleLog(django_settings.LAGWATCH_SAMPLE_LOG_URL).write_batch("c1", "c", [fresh])
    Path(written[0]).with_name("batch-corrupt.parquet").write_bytes(b"not a parquet file")

    with pytest.raises(CommandError, match="spark job status failed") as failed:
        spark_job("status")

    assert failed.value.returncode == 1
    run = SparkJobRun.objects.order_by("-started_at").first()
    assert run.outcome == "failed" and "parquet" in run.error.lower()
    assert run.finished_at is not None and run.input_rows is None
    assert statuses() == before
    assert {g.name: (g.status, g.complete, g.total_lag) for g in ConsumerGroup.objects.all()} == (
        groups_before
    )
    results = Path(django_settings.LAGWATCH_RESULTS_URL) / "status"
    assert [p.name for p in results.iterdir() if p.name.startswith("run=")] == [
        f"run={SparkJobRun.objects.get(outcome='ok').as_of_ms}"
    ]
    (job,) = json.loads(_status_json())["spark_jobs"]
    assert (job["outcome"], job["last_ok_at"] is not None) == ("failed", True)


def _status_json() -> str:
    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    return out.getvalue()


def test_an_unreadable_sample_log_fails_the_run(world: World, lagwatch: Any) -> None:
    lagwatch.LAGWATCH_SAMPLE_LOG_URL = "nosuchfs://bucket/samples"
    run = run_job("status")
    assert run.outcome == SparkJobOutcome.FAILED
    assert "nosuchfs" in run.error
    assert set(PartitionState.objects.values_list("status", flat=True)) == {"UNKNOWN", "WARN"}


def test_a_run_while_another_holds_the_lock_is_skipped(world: World) -> None:
    with locks.exclusive(lock_key("status"), ttl_s=60) as mine:
        assert mine
        with pytest.raises(CommandError, match="skipped") as skipped:
            spark_job("status")
        assert skipped.value.returncode == 3
        with locks.exclusive(lock_key("rollups"), ttl_s=60) as other:
            assert other  # each job has a lock of its own
    run = SparkJobRun.objects.get(job="status")
    assert (run.outcome, run.input_rows, run.output_path) == ("skipped", None, "")
    assert "lock" in run.error
    assert PartitionState.objects.get(partition=1).status == "UNKNOWN"
    assert run_job("status").outcome == "ok"  # the lock was released


def test_a_run_with_wait_runs_once_the_holder_lets_go(world: World) -> None:
    held, release = threading.Event(), threading.Event()
    released_ms: list[int] = []

    def holder() -> None:  # another run of the job, ending while ours waits
        with locks.exclusive(lock_key("status"), ttl_s=60) as mine:
            assert mine
            held.set()
            release.wait(30)
            released_ms.append(int(time.time() * 1000))

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(30)
    threading.Timer(0.5, release.set).start()
    try:
        run = spark_job("status", "--wait", "120")
    finally:
        release.set()
        thread.join()
    assert run["outcome"] == "ok"
    assert run["as_of_ms"] >= released_ms[0]  # "now" is when it ran, not when it was asked


def test_a_run_cut_short_is_closed_as_failed_by_the_next_one(world: World) -> None:
    orphan = SparkJobRun.objects.create(job="status", started_at=timezone.now(), window_s=60)
    other_job = SparkJobRun.objects.create(job="rollups", started_at=timezone.now(), window_s=60)
    assert run_job("status").outcome == "ok"
    orphan.refresh_from_db()
    assert orphan.outcome == "failed" and "cut short" in orphan.error
    other_job.refresh_from_db()
    assert other_job.outcome == "running"  # another job's run: not this lock's to judge


# The rollups job ----------------------------------------------------------------------------


def test_rollups_job_writes_a_complete_run(world: World) -> None:
    printed = spark_job("rollups", "--window", "30m")
    run = SparkJobRun.objects.get()
    assert (printed["outcome"], printed["window_s"], printed["input_rows"]) == ("ok", 1800, 40)
    path = Path(run.output_path)
    assert path.parent.name == "rollups" and path.name == f"run={run.as_of_ms}"
    summary = json.loads((path / SUCCESS_MARKER).read_text())
    assert summary["tables"] == {
        name: pq.read_table(path / name).num_rows
        for name in ("partitions", "topics", "groups", "clusters")
    }
    partitions = pq.read_table(path / "partitions")
    assert {
        "resolution",
        "bucket_start_ms",
        "lag",
        "produce_per_s",
        "consume_per_s",
        "eta_s",
    } <= set(partitions.column_names)
    assert set(partitions["resolution"].to_pylist()) == {"1m", "1h"}
    assert run.output_rows == sum(summary["tables"].values())
    # Rollups never touch the statuses.
    assert PartitionState.objects.get(partition=1).status == "UNKNOWN"


# Loading results ----------------------------------------------------------------------------


def _write_run(run: Path, partitions: list[dict], groups: list[dict]) -> None:
    for name, rows in (("partitions", partitions), ("groups", groups)):
        (run / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), run / name / "part-0.parquet")


def test_loading_a_run_is_all_or_nothing(world: World, tmp_path: Path, monkeypatch) -> None:
    """A load that fails after the partitions were written leaves no partition changed."""
    verdict = {
        "cluster": "c1",
        "source": "kafka",
        "group": "quiet-app",
        "topic": "quiet",
        "partition": 0,
        "status": "WARN",
        "complete": 1.0,
        "diagnosis": "[]",
        "reason": "r",
        "lag": 3,
        "evaluated_at_ms": 1,
    }
    group = {
        "cluster": "c1",
        "source": "kafka",
        "group": "quiet-app",
        "status": "WARN",
        "complete": 1.0,
        "total_lag": 3,
        "partitions": 1,
        "evaluated_at_ms": 1,
    }
    _write_run(tmp_path / "run", [verdict], [group])
    real_update = spark_results._update

    def fail_on_groups(model: type, fields: list[str], rows: list[tuple]) -> None:
        if model is ConsumerGroup:
            raise RuntimeError("database went away")
        real_update(model, fields, rows)

    monkeypatch.setattr(spark_results, "_update", fail_on_groups)
    with pytest.raises(RuntimeError):
        apply_status_results(str(tmp_path / "run"))
    assert PartitionState.objects.get(topic="quiet").status == "UNKNOWN"
    assert not StatusChange.objects.exists()  # rolled back with the rest

    monkeypatch.setattr(spark_results, "_update", real_update)
    report = apply_status_results(str(tmp_path / "run"))
    assert PartitionState.objects.get(topic="quiet").status == "WARN"
    assert ConsumerGroup.objects.get(name="quiet-app").total_lag == 3
    assert report.as_dict() == {
        "partitions": 1,
        "groups": 1,
        "unmatched_partitions": 0,
        "unmatched_groups": 0,
        "changes": 2,  # the partition and its group, UNKNOWN -> WARN
    }


def test_verdicts_without_a_row_are_skipped(world: World, tmp_path: Path) -> None:
    verdict = {
        "cluster": "elsewhere",
        "source": "kafka",
        "group": "g",
        "topic": "t",
        "partition": 0,
        "status": "STOP",
        "complete": 1.0,
        "diagnosis": "[]",
        "reason": "r",
        "lag": 3,
        "evaluated_at_ms": 1,
    }
    group = {
        "cluster": "elsewhere",
        "source": "kafka",
        "group": "g",
        "status": "ERR",
        "complete": 1.0,
        "total_lag": 3,
        "partitions": 1,
        "evaluated_at_ms": 1,
    }
    _write_run(tmp_path / "run", [verdict], [group])
    report = apply_status_results(str(tmp_path / "run"))
    assert report.as_dict() == {
        "partitions": 0,
        "groups": 0,
        "unmatched_partitions": 1,
        "unmatched_groups": 1,
        "changes": 0,
    }
    assert "STOP" not in set(PartitionState.objects.values_list("status", flat=True))


# Windows, schedules, workers ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("1h", 3600), ("2d", 172800), ("90s", 90), (" 1H ", 3600)]
)
def test_window_parsing(text: str, seconds: int) -> None:
    assert parse_window(text) == seconds


@pytest.mark.parametrize("text", ["", "1", "h", "0h", "-1h", "1.5h", "1w", "1h30m", "367d"])
def test_a_bad_window_is_refused_before_anything_runs(text: str) -> None:
    with pytest.raises(CommandError, match="invalid window"):
        call_command("spark_job", "status", f"--window={text}")
    assert not SparkJobRun.objects.exists()


def test_beat_runs_both_jobs_on_the_spark_queue_and_the_lab_worker_consumes_it() -> None:
    schedule = {e["task"]: e for e in django_settings.CELERY_BEAT_SCHEDULE.values()}
    status = schedule[tasks.spark_status.name]
    rollups = schedule[tasks.spark_rollups.name]
    assert (status["schedule"], rollups["schedule"]) == (60.0, 600.0)
    for task in (tasks.spark_status, tasks.spark_rollups):
        assert django_settings.CELERY_TASK_ROUTES[task.name] == {"queue": "spark"}
    argv = _worker_argv(Context(Path("/tmp"), {}))
    assert set(argv[argv.index("-Q") + 1].split(",")) == {"celery", "spark"}
    # Threads, so every run shares the process's one Spark session (docs/SPARK_JOBS.md).
    assert argv[argv.index("--pool") + 1] == "threads"


# History: status changes, the signal to alerts, rollups kept ----------------------------------


def test_status_changes_are_recorded_once_and_announced(world: World) -> None:
    heard: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        heard.append(kwargs)

    status_applied.connect(receiver)
    try:
        spark_job("status")
        first = SparkJobRun.objects.get()
        changes = {
            (c.group.name, c.topic, c.partition): (c.old_status, c.new_status)
            for c in StatusChange.objects.select_related("group")
        }
        # Every partition and group the run judged differently from UNKNOWN (or WARN) changed.
        assert changes[("orders-app", "orders", 0)] == ("UNKNOWN", "STOP")
        assert changes[("orders-app", "orders", 1)] == ("UNKNOWN", "OK")
        assert changes[("orders-app", "", None)] == ("UNKNOWN", "ERR")
        assert ("stale-app", "t", 0) not in changes  # UNKNOWN before and after
        assert ("orders-app", "orders", 2) not in changes  # not in the run
        stuck = PartitionState.objects.get(topic="orders", partition=0)
        assert stuck.status_since == stuck.evaluated_at
        assert [h["run"].pk for h in heard] == [first.pk]
        assert {c.pk for c in heard[0]["changes"]} == set(
            StatusChange.objects.values_list("pk", flat=True)
        )

        # A later run with the same verdicts changes nothing: no rows, status_since stays.
        spark_job("status")
        assert StatusChange.objects.count() == len(changes)
        again = PartitionState.objects.get(topic="orders", partition=0)
        assert again.status_since == stuck.status_since
        assert again.evaluated_at > stuck.evaluated_at
        assert len(heard) == 2 and heard[1]["changes"] == []
    finally:
        status_applied.disconnect(receiver)


# A run after every stored cycle ---------------------------------------------------------------


def test_runs_go_on_from_the_previous_runs_state(world: World, settings: Any) -> None:
    """The product's runs are incremental (LAGWATCH_STATUS_INCREMENTAL): the first reads the
    whole look-back, the next only the log since its cut, with the same verdicts."""
    first = run_job("status", now_ms=world.now0 + 1_000)
    second = run_job("status", now_ms=world.now0 + 6_000)
    summaries = [
        json.loads(Path(r.output_path, SUCCESS_MARKER).read_text()) for r in (first, second)
    ]
    assert [s["mode"] for s in summaries] == ["whole", "incremental"]
    assert summaries[1]["read_from_ms"] == summaries[0]["cut_ms"]
    assert summaries[1]["whole_groups"] == 0
    assert second.input_rows < first.input_rows
    stored = statuses()
    for pid, verdict in world.expected(second.as_of_ms).items():
        assert stored[pid][:2] == (verdict.status, json.loads(diagnosis_json(verdict))), pid


def test_a_stored_cycle_asks_for_one_status_run(
    world: World, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cycles stored while a requested run is queued fold into it; the run clears the request
    once it holds the job's lock, so a cycle stored during it asks for the next."""
    from dashboard.signals import announce_figures
    from dashboard.status import requests

    settings.LAGWATCH_STATUS_AFTER_CYCLE = True
    queued: list[dict[str, Any]] = []
    monkeypatch.setattr(tasks.spark_status, "apply_async", lambda **kw: queued.append(kw))
    announce_figures(cluster="c1")
    announce_figures(cluster="c2")
    announce_figures(run=None)  # a Spark run's figures: no request
    assert [q["kwargs"] for q in queued] == [{"requested": True}]

    during: list[bool] = []
    monkeypatch.setattr(
        "dashboard.status.runs._execute",
        _and_then(lambda: during.append(requests.request_status_run()), runs_execute),
    )
    assert tasks.spark_status(requested=True)["outcome"] == "ok"
    assert during == [True] and len(queued) == 2  # asked for while the run went on
    assert not requests.request_status_run()  # that one is queued


def test_a_requested_run_waits_for_the_run_in_progress(world: World, settings: Any) -> None:
    """A run a stored cycle asked for is not skipped while another run holds the lock: it
    waits, then runs with its "now" after the wait."""
    settings.LAGWATCH_STATUS_AFTER_CYCLE = True
    held, release = threading.Event(), threading.Event()
    released_ms: list[int] = []

    def holder() -> None:
        with locks.exclusive(lock_key("status"), ttl_s=60) as mine:
            assert mine
            held.set()
            release.wait(30)
            released_ms.append(int(time.time() * 1000))

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(30)
    threading.Timer(0.5, release.set).start()
    try:
        run = tasks.spark_status(requested=True)
    finally:
        release.set()
        thread.join()
    assert run["outcome"] == "ok" and run["as_of_ms"] >= released_ms[0]
    assert not locks.client().exists("lagwatch:spark:status:requested")


def _and_then(before: Any, then: Any) -> Any:
    def both(*args: Any, **kwargs: Any) -> Any:
        before()
        return then(*args, **kwargs)

    return both


def test_a_failing_alerts_receiver_does_not_fail_the_run(world: World) -> None:
    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("receiver down")

    status_applied.connect(broken)
    try:
        assert spark_job("status")["outcome"] == "ok"
    finally:
        status_applied.disconnect(broken)


def test_rollups_are_kept_as_history_without_duplicates(world: World) -> None:
    spark_job("rollups", "--window", "30m")
    run = SparkJobRun.objects.get()
    groups = pq.read_table(Path(run.output_path) / "groups").to_pylist()
    stored = {
        (r.group, r.resolution, int(r.bucket_start.timestamp() * 1000)): r.lag
        for r in LagRollup.objects.filter(level="group")
    }
    assert stored == {(g["group"], g["resolution"], g["bucket_start_ms"]): g["lag"] for g in groups}
    # Partitions are kept at an hour only; topics and clusters at both resolutions.
    assert set(
        LagRollup.objects.filter(level="partition").values_list("resolution", flat=True)
    ) == {"1h"}
    assert set(LagRollup.objects.filter(level="cluster").values_list("resolution", flat=True)) == {
        "1m",
        "1h",
    }
    before = sorted(
        LagRollup.objects.values_list(
            "level", "resolution", "group", "topic", "partition", "bucket_start", "lag"
        )
    )
    # The same run applied again (a retried load) rewrites only the newest buckets: same rows.
    assert 0 < apply_rollup_results(run.output_path) < len(before)
    after = sorted(
        LagRollup.objects.values_list(
            "level", "resolution", "group", "topic", "partition", "bucket_start", "lag"
        )
    )
    assert after == before


def test_old_rollups_are_pruned(world: World, lagwatch: Any) -> None:
    now = timezone.now()
    for resolution, age_h in (("1m", 49), ("1m", 47), ("1h", 24 * 31), ("1h", 24 * 29)):
        LagRollup.objects.create(
            cluster="c1", level="cluster", resolution=resolution,
            bucket_start=now - timedelta(hours=age_h), lag=1,
        )  # fmt: skip
    assert prune_rollups() == 2
    assert sorted(
        round((now - r.bucket_start).total_seconds() / 3600) for r in LagRollup.objects.all()
    ) == [47, 24 * 29]

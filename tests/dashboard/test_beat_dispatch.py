"""Collection dispatch in beat's own process (dashboard/store/beat.py), against a real Redis.

What is checked: a dispatch sends one cycle per enabled cluster whose poll slot has started, to
queue "collectors", through the producer it is given, and nothing more in the same slot; the
scheduler dispatches on its period whatever its other entries are, sleeps no longer than until
the next dispatch, and survives a Redis or a database that does not answer.
"""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest
from celery import Celery
from kombu import Connection

from dashboard import locks
from dashboard.monitoring.models import Cluster
from dashboard.store.beat import DispatchingScheduler
from dashboard.store.tasks import dispatch_due


def queued(redis_url: str, queue: str = "collectors") -> list[tuple[str, list]]:
    """(task name, args) of every message waiting on ``queue``, oldest first."""
    raw = locks.client().lrange(queue, 0, -1)
    messages = [json.loads(m) for m in reversed(raw)]
    return [(m["headers"]["task"], list(ast.literal_eval(m["headers"]["argsrepr"])))
            for m in messages]  # fmt: skip


def scheduler(broker: str, tmp_path: Path, every_s: float) -> DispatchingScheduler:
    app = Celery("beat-test", broker=broker)
    app.conf.task_routes = {"dashboard.store.tasks.collect_cluster": {"queue": "collectors"}}
    app.conf.beat_schedule = {}
    sched = DispatchingScheduler(app=app, schedule_filename=str(tmp_path / "schedule"))
    sched.dispatch_every_s = every_s
    return sched


@pytest.mark.django_db(transaction=True)
def test_one_cycle_per_enabled_cluster_and_slot(redis: str) -> None:
    # An hour-long poll: the two dispatches below fall in one slot (but at an hour's turn).
    Cluster.objects.create(name="eu", kafka_bootstrap_servers="k:9092", poll_interval_s=3600)
    Cluster.objects.create(name="us", kafka_bootstrap_servers="k:9092", poll_interval_s=3600)
    Cluster.objects.create(name="off", kafka_bootstrap_servers="k:9092", enabled=False)
    with Connection(redis) as conn:
        producer = conn.Producer()
        before = time.time()
        first = dispatch_due(producer=producer)
        again = dispatch_due(producer=producer)  # the same slot: claimed already
    slot = (int(before * 1000) // 3_600_000) * 3_600_000
    assert (first, again) == (2, 0)
    sent = queued(redis)
    assert sorted(name for _, (name, _) in sent) == ["eu", "us"]
    assert {task for task, _ in sent} == {"dashboard.store.tasks.collect_cluster"}
    # The slot is the one that had started when dispatch ran (unless a slot began meanwhile).
    assert all(args[1] in (slot, slot + 3_600_000) for _, args in sent)


@pytest.mark.django_db(transaction=True)
def test_the_scheduler_dispatches_on_its_period(redis: str, tmp_path: Path) -> None:
    Cluster.objects.create(name="eu", kafka_bootstrap_servers="k:9092", poll_interval_s=1)
    sched = scheduler(redis, tmp_path, every_s=1.0)
    try:
        delays = []
        began = time.monotonic()
        # Ticked as beat's loop does, until three slots were sent (a wide deadline: a loaded
        # machine slows the ticks, it does not change what each one does).
        while len(queued(redis)) < 3 and time.monotonic() - began < 60:
            delay = sched.tick()
            delays.append(delay)
            time.sleep(delay)
        elapsed = time.monotonic() - began
        assert max(delays) <= 1.0
        # One slot per second at most, each slot once.
        slots = [args[1] for _, args in queued(redis)]
        assert 3 <= len(slots) <= elapsed + 1 and len(set(slots)) == len(slots)
    finally:
        sched.close()


@pytest.mark.django_db(transaction=True)
def test_a_redis_that_does_not_answer_is_logged_and_beat_goes_on(
    redis: str, settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    Cluster.objects.create(name="eu", kafka_bootstrap_servers="k:9092", poll_interval_s=5)
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    locks._client = None
    sched = scheduler(redis, tmp_path, every_s=60.0)
    try:
        assert sched.dispatch() == 0
        assert sched.tick() <= 60.0  # the tick itself did not raise either
    finally:
        sched.close()
    assert "collection dispatch failed" in caplog.text
    assert "Connection refused" in caplog.text or "Error" in caplog.text

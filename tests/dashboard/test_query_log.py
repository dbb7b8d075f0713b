"""With ``DEBUG`` on, Django logs each connection's queries (up to 9,000, parameters inlined)
and empties the log only before a web request. Workers and beat run for days without one: each
task, and each of beat's dispatches, starts with an empty log, so what a process keeps is its
last task's queries, not its last 9,000."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import shared_task
from django.db import connection
from django.test import override_settings

from dashboard.monitoring.models import Cluster
from tests.dashboard.test_beat_dispatch import scheduler

QUERIES = 25


@shared_task(name="tests.query_log_probe")
def probe(queries: int) -> int:
    for _ in range(queries):
        Cluster.objects.filter(name="eu").exists()
    return len(connection.queries_log)


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_each_task_starts_with_an_empty_query_log() -> None:
    logged = [probe.apply(args=(QUERIES,)).get() for _ in range(4)]
    assert logged == [QUERIES] * 4  # without the reset: 25, 50, 75, 100


@pytest.mark.django_db(transaction=True)
@override_settings(DEBUG=True)
def test_beat_keeps_only_its_last_dispatchs_queries(redis: str, tmp_path: Path) -> None:
    Cluster.objects.create(name="eu", kafka_bootstrap_servers="k:9092", poll_interval_s=3600)
    sched = scheduler(redis, tmp_path, every_s=60)
    sched.dispatch()
    one = len(connection.queries_log)
    for _ in range(3):
        sched.dispatch()
    assert 0 < len(connection.queries_log) <= one

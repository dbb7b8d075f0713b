"""PostgreSQL restarted under a running stack: nothing dies, the health check says so, and the
collection resumes on its own (issue "Beyond one machine", Bad input and faults).

The production database goes away mid-run (a failover, a restart for an upgrade). Django's
persistent connections in the web server and Celery's workers are then broken; the product
must drop them and connect again, not keep failing until someone restarts it. A stack of its
own with the lab's private PostgreSQL server (``lab/postgres.py``) as the database of every
process; what the collector stored is read from that server.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from lab.postgres import stack_database_url
from lab.services import LAB_CLUSTER
from lab.stack import Stack
from tests.waiting import wait_for

pytestmark = pytest.mark.lab

SERVICES = ["postgres", "zookeeper", "kafka", "redis", "web", "worker", "collector", "beat"]
OUTAGE_S = 20


def cycles(url: str) -> dict[str, tuple[datetime, bool]]:
    """The lab cluster's sources: when a cycle last tried each, and whether it answered."""
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            rows = conn.execute(
                "SELECT h.source, h.last_attempt_at, h.reachable FROM monitoring_sourcehealth h "
                "JOIN monitoring_cluster c ON c.id = h.cluster_id "
                "WHERE c.name = %s AND h.last_attempt_at IS NOT NULL",
                (LAB_CLUSTER,),
            ).fetchall()
    except psycopg.Error:  # down, or not migrated yet
        return {}
    return {source: (at, bool(ok)) for source, at, ok in rows}


def later_than(url: str, before: dict[str, tuple[datetime, bool]]) -> dict | None:
    now = cycles(url)
    if set(now) >= {"kafka", "zookeeper"} and all(
        now[s][0] > before[s][0] for s in before if s in now
    ):
        return now
    return None


def health(web: str) -> int:
    try:
        with urllib.request.urlopen(web + "health/", timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_collection_and_pages_resume_after_postgresql_restarted(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    try:
        endpoints = stack.up(SERVICES)
        url = stack_database_url(tmp_path, endpoints["postgres"])
        web = endpoints["web"]
        first = wait_for(lambda: later_than(url, {}), 90, "a first cycle stored in PostgreSQL")
        running = wait_for(lambda: later_than(url, first), 60, "a second cycle stored")
        assert all(ok for _, ok in running.values()), running
        assert health(web) == 200

        stack.stop_service("postgres")
        stopped_at = time.monotonic()
        wait_for(lambda: health(web) == 503, 30, "the health check reporting the database down")
        while time.monotonic() - stopped_at < OUTAGE_S:
            services = stack.status()["services"]
            for name in ("beat", "worker", "collector", "web"):
                assert services[name]["state"] == "running", (name, services[name])
            time.sleep(1)

        stack.start_service("postgres")
        back = wait_for(lambda: later_than(url, running), 90, "a cycle stored after the restart")
        assert all(ok for _, ok in back.values()), back
        # On schedule again, not one lucky cycle: the next one comes within a few polls.
        after = wait_for(lambda: later_than(url, back), 60, "the cycle after that")
        gap = max(after[s][0] - back[s][0] for s in back)
        assert gap < timedelta(seconds=30), gap
        wait_for(lambda: health(web) == 200, 30, "the health check passing again")
        services = stack.status()["services"]
        assert {n: s["state"] for n, s in services.items()} == dict.fromkeys(SERVICES, "running")
    finally:
        stack.down()

"""Redis stopped under a running beat: collection stops, nothing dies, and it resumes.

Redis is Celery's broker and holds the collection locks: beat schedules
``dispatch_collection`` every 2 s, a worker runs it and sends ``collect_cluster`` to the
collector's queue. While Redis is down nothing can be sent or taken; no process may die of
it, and once Redis is back (empty: the lab's Redis keeps nothing, not even the queues'
bindings) cycles must be stored again without anyone restarting anything. A whole lab stack
of its own (ZooKeeper, broker, Redis, web for the migrated database and the imported lab
cluster, worker, collector, beat); what the collector stored is read from the stack's SQLite
file, read-only.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lab.services import LAB_CLUSTER
from lab.stack import Stack
from tests.waiting import wait_for

pytestmark = pytest.mark.lab

SERVICES = ["zookeeper", "kafka", "redis", "web", "worker", "collector", "beat"]
OUTAGE_S = 15


def query(db: Path, sql: str) -> list[tuple]:
    """Rows about the lab cluster from the stack's database, opened read-only."""
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, (LAB_CLUSTER,)).fetchall()
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        conn.close()


def cycles(db: Path) -> dict[str, tuple[datetime, bool]]:
    """The lab cluster's sources: when a cycle last tried each, and whether it answered."""
    found = query(
        db,
        "SELECT h.source, h.last_attempt_at, h.reachable FROM monitoring_sourcehealth h "
        "JOIN monitoring_cluster c ON c.id = h.cluster_id "
        "WHERE c.name = ? AND h.last_attempt_at IS NOT NULL",
    )
    return {source: (datetime.fromisoformat(at), bool(ok)) for source, at, ok in found}


def poll_interval_s(db: Path) -> int:
    ((interval,),) = query(db, "SELECT poll_interval_s FROM monitoring_cluster WHERE name = ?")
    return interval


def later_than(db: Path, before: dict[str, tuple[datetime, bool]]) -> dict | None:
    """The sources' latest cycle, once every source has one stored after ``before``."""
    now = cycles(db)
    if set(now) >= {"kafka", "zookeeper"} and all(
        now[s][0] > before[s][0] for s in before if s in now
    ):
        return now
    return None


def test_collection_resumes_after_redis_stopped_under_beat(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    db = tmp_path / "data" / "lagwatch.sqlite3"
    try:
        stack.up(SERVICES)
        first = wait_for(lambda: later_than(db, {}), 60, "a first cycle stored")
        running = wait_for(lambda: later_than(db, first), 30, "a second cycle stored")
        assert all(ok for _, ok in running.values()), running

        stack.stop_service("redis")
        stopped_at = time.monotonic()
        while time.monotonic() - stopped_at < OUTAGE_S:
            services = stack.status()["services"]
            assert services["redis"]["state"] == "stopped"
            for name in ("beat", "worker", "collector", "web"):
                assert services[name]["state"] == "running", (name, services[name])
            time.sleep(1)
        during = cycles(db)
        # Collection did pause: at most the cycle in flight when Redis went was stored since.
        interval = timedelta(seconds=poll_interval_s(db))
        assert all(during[s][0] <= running[s][0] + interval for s in running), (running, during)

        stack.start_service("redis")
        back = wait_for(lambda: later_than(db, during), 30, "a cycle stored after Redis came back")
        assert all(ok for _, ok in back.values()), back
        wait_for(lambda: later_than(db, back), 30, "the cycle after that")  # on schedule again
        services = stack.status()["services"]
        assert {n: s["state"] for n, s in services.items()} == dict.fromkeys(SERVICES, "running")
    finally:
        stack.down()

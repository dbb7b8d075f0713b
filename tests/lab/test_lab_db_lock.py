"""The database held locked 10 s under the collection, in the lab (SQLite and PostgreSQL): the
cycle running when the lock comes waits on it, and the two or three slots that start meanwhile
wait for the cluster's lease. Once the database is free, every slot is stored, in slot order:
none is lost because a newer one took the lease first (a soak run once lost one that way).

The lock is what an operator's long transaction or a backup does: ``BEGIN EXCLUSIVE`` on the
SQLite file, ``LOCK TABLE … IN EXCLUSIVE MODE`` on PostgreSQL's cycle table (every cycle writes
it). Marked ``faults`` (scripts/test-faults): a stack of its own.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lab.services import LAB_CLUSTER
from lab.stack import Stack
from tests.waiting import wait_for

pytestmark = [pytest.mark.lab, pytest.mark.faults]

# A 10-s lock then holds the cycle under way and two more start waiting for the lease; each
# waits up to its poll, the lease's TTL (4 s) and a second past its slot: 13 s, enough to be
# collected late rather than skipped (the skip of a cycle so late it is worth less than the
# next one is by design, docs/OPERATIONS.md).
POLL_S = 4
LOCK_S = 10
# Beat dispatches the slots in its own process (dashboard/store/beat.py): no worker is needed,
# and none runs (no Spark job in this stack).
SERVICES = ["zookeeper", "kafka", "redis", "web", "collector", "beat"]


def stored_slots(lab: Stack, vendor: str) -> list[tuple[int, int]]:
    """(row id, slot in ms) of the lab cluster's stored cycles, in the order they were written."""
    query = (
        "SELECT cc.id, cc.at FROM monitoring_collectedcycle cc "
        "JOIN monitoring_cluster c ON c.id = cc.cluster_id WHERE c.name = %s ORDER BY cc.id"
    )
    if vendor == "sqlite":
        path = lab.run_dir / "data" / "lagwatch.sqlite3"
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            rows = db.execute(query.replace("%s", "?"), (LAB_CLUSTER,)).fetchall()
        return [(i, int(_utc(at).timestamp() * 1000)) for i, at in rows]
    import psycopg

    with psycopg.connect(lab.django_env()["DATABASE_URL"]) as db:
        rows = db.execute(query, (LAB_CLUSTER,)).fetchall()
    return [(i, int(at.timestamp() * 1000)) for i, at in rows]


def _utc(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def hold_database(lab: Stack, vendor: str, seconds: float) -> tuple[float, float]:
    """Lock the database for ``seconds``; returns when the lock was held and let go."""
    if vendor == "sqlite":
        db = sqlite3.connect(str(lab.run_dir / "data" / "lagwatch.sqlite3"), timeout=60,
                             isolation_level=None)  # fmt: skip
        try:
            db.execute("BEGIN EXCLUSIVE")
            held = time.time()
            time.sleep(seconds)  # the fault itself: the lock held this long
            db.execute("ROLLBACK")
        finally:
            db.close()
        return held, time.time()
    import psycopg

    with psycopg.connect(lab.django_env()["DATABASE_URL"]) as db:
        db.execute("LOCK TABLE monitoring_collectedcycle IN EXCLUSIVE MODE")
        held = time.time()
        time.sleep(seconds)  # the fault itself
        db.rollback()
    return held, time.time()


@pytest.fixture(params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Stack, str]]:
    monkeypatch.setenv("LAGWATCH_LAB_POLL_S", str(POLL_S))
    monkeypatch.setenv("LAGWATCH_STATUS_AFTER_CYCLE", "0")
    monkeypatch.setenv("LAGWATCH_STATUS_EVERY_S", "3600")
    monkeypatch.setenv("LAGWATCH_ROLLUPS_EVERY_S", "3600")
    lab = Stack(tmp_path)
    services = SERVICES + (["postgres"] if request.param == "postgresql" else [])
    try:
        lab.up(services)
        yield lab, request.param
    finally:
        lab.down()


def test_slots_waiting_behind_a_locked_database_are_all_stored_in_order(
    stack: tuple[Stack, str],
) -> None:
    lab, vendor = stack
    wait_for(lambda: len(stored_slots(lab, vendor)) >= 3, 120, "three cycles stored")
    held, released = hold_database(lab, vendor, LOCK_S)
    wait_for(
        lambda: max(at for _, at in stored_slots(lab, vendor)) >= (released + 2 * POLL_S) * 1000,
        120, "cycles stored after the lock",
    )  # fmt: skip
    rows = stored_slots(lab, vendor)
    around = [at for _, at in rows if (held - 2 * POLL_S) * 1000 <= at <= released * 1000]
    print(f"{vendor}: slots around the {LOCK_S}-s lock: {around}")
    step = POLL_S * 1000
    first, last = around[0], around[-1]
    assert around == list(range(first, last + step, step)), "a slot was lost"
    assert len(around) >= LOCK_S // POLL_S
    assert [at for _, at in rows] == sorted(at for _, at in rows), "stored out of slot order"

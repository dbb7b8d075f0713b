"""Several collector processes on one database and one Redis (docs/ARCHITECTURE.md, "What
runs concurrently"): the stored groups are the rebalance tracker's memory, each stored cycle
names its process, a cycle older than a stored one is refused, and the Redis lease and mark
run each slot of a cluster once, in whichever worker, even after one was killed.

Redis is a real ``redis-server`` of a private lab stack; the whole-system test with two
collector workers and three clusters is tests/lab/test_sharded_collectors.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from collectors.cycle import runner
from collectors.outcome import CycleOutcome
from collectors.rebalance import GROUP_DELETED, RebalanceEvent
from collectors.records import GroupMember, GroupSnapshot, Source
from dashboard import locks
from dashboard.monitoring.models import Cluster, CollectedCycle
from dashboard.store.cycle import OrmCycleStore
from dashboard.store.rows import SupersededCycle, store_cycle
from dashboard.store.tasks import collect_cluster
from tests.dashboard.test_cycle_runner import FakeSources
from tests.raw_points import stored_points

REPO = Path(__file__).resolve().parents[2]

KIP848 = GroupSnapshot(
    Source.KAFKA, "orders", "Reconciling", generation=7, assignor="uniform",
    coordinator="127.0.0.1:9092", protocol_type="consumer", assignment_epoch=6,
    members=(
        GroupMember("m-1", client_id="c1", host="/10.0.0.1", assignment=(("orders", 0),),
                    member_epoch=6, target_assignment=(("orders", 0), ("orders", 1)),
                    subscription=("orders",)),
        GroupMember("m-2", client_id="c2", host="/10.0.0.2", assignment=(("orders", 1),),
                    instance_id="static-2", member_epoch=7, target_assignment=()),
    ),
    topics=("orders", "payments"),
)  # fmt: skip
CLASSIC = GroupSnapshot(
    Source.KAFKA, "ledger", "Stable", generation=3, assignor="range", protocol_type="classic",
    members=(GroupMember("l-1", assignment=(("ledger", 0), ("ledger", 1))),), topics=("ledger",),
)  # fmt: skip
# ZooKeeper consumer whose /ids could not be read: no state, members unknown.
ZK_UNKNOWN = GroupSnapshot(
    Source.ZOOKEEPER, "zk-group", None, generation=None, members_known=False, topics=("zk",)
)


@pytest.fixture
def cluster(db) -> Cluster:
    return Cluster.objects.create(name="shared", kafka_bootstrap_servers="k:9092")


@pytest.mark.django_db
def test_the_stored_groups_are_the_snapshots_the_tracker_held(cluster: Cluster) -> None:
    store = OrmCycleStore(cluster)
    assert store.last_cycle() is None and store.group_snapshots() == []
    store_cycle(cluster, CycleOutcome("shared", 1_000_000, groups=[KIP848, CLASSIC, ZK_UNKNOWN],
                                      collected_by="host:1"))  # fmt: skip
    assert sorted(store.group_snapshots(), key=lambda s: s.group) == [CLASSIC, KIP848, ZK_UNKNOWN]
    assert store.last_cycle() == (1_000_000, "host:1")


@pytest.mark.django_db
def test_a_deleted_group_is_not_rebuilt_until_it_is_seen_again(cluster: Cluster) -> None:
    store = OrmCycleStore(cluster)
    store_cycle(cluster, CycleOutcome("shared", 1_000_000, groups=[CLASSIC, KIP848]))
    deleted = RebalanceEvent("ledger", Source.KAFKA, 1_005_000, None, GROUP_DELETED)
    store_cycle(cluster, CycleOutcome("shared", 1_010_000, groups=[KIP848], rebalances=[deleted]))
    assert [s.group for s in store.group_snapshots()] == ["orders"]
    store_cycle(cluster, CycleOutcome("shared", 1_020_000, groups=[CLASSIC, KIP848]))
    assert sorted(s.group for s in store.group_snapshots()) == ["ledger", "orders"]


@pytest.mark.django_db
def test_a_cycle_older_than_a_stored_one_is_refused_and_a_retry_rewrites(cluster: Cluster) -> None:
    store_cycle(cluster, CycleOutcome("shared", 1_010_000, groups=[CLASSIC], collected_by="a:1"))
    with pytest.raises(SupersededCycle, match="a:1"):
        store_cycle(cluster, CycleOutcome("shared", 1_000_000, groups=[KIP848], collected_by="b:2"))
    assert [s.group for s in OrmCycleStore(cluster).group_snapshots()] == ["ledger"]
    # The same slot again (a retry after a failed write, here by another process) is allowed.
    store_cycle(cluster, CycleOutcome("shared", 1_010_000, groups=[CLASSIC], collected_by="b:2"))
    assert list(CollectedCycle.objects.values_list("collected_by", flat=True)) == ["b:2"]


# --- Redis: the lease and the mark ------------------------------------------------------------


HOLDER = """
import sys, time, django
django.setup()
from dashboard.locks import lease
with lease(sys.argv[1], float(sys.argv[2])) as mine:
    print("held" if mine else "refused", flush=True)
    time.sleep(120)
"""


def test_a_lease_outlives_its_ttl_while_held_and_not_its_holders_death(redis: str) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings.base", "REDIS_URL": redis}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "lagwatch:test-lease", "2"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        time.sleep(3.5)  # beyond the TTL: renewed
        with locks.lease("lagwatch:test-lease", 2) as mine:
            assert not mine
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(10)
        started = time.monotonic()
        with locks.lease("lagwatch:test-lease", 2, wait_s=10) as mine:
            waited = time.monotonic() - started
            assert mine and waited <= 2.5, waited
            time.sleep(3)  # this holder's thread renews it too
            assert locks.client().pttl("lagwatch:test-lease") > 0
        assert locks.client().get("lagwatch:test-lease") is None  # released on exit
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(10)


def test_a_mark_only_rises(redis: str) -> None:
    assert locks.newest_mark("lagwatch:test-mark") is None
    assert locks.raise_mark("lagwatch:test-mark", 20, ttl_s=60)
    assert not locks.raise_mark("lagwatch:test-mark", 10, ttl_s=60)
    assert not locks.raise_mark("lagwatch:test-mark", 20, ttl_s=60)
    assert locks.newest_mark("lagwatch:test-mark") == 20


@pytest.mark.django_db(transaction=True)
def test_a_slot_is_collected_once_and_an_older_one_not_after_it(
    redis: str, monkeypatch, settings, tmp_path
) -> None:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    monkeypatch.setattr(runner, "ClusterSources", FakeSources)
    Cluster.objects.create(name="fake", kafka_bootstrap_servers="k:9092", poll_interval_s=10)
    slot = (int(time.time() * 1000) // 10_000) * 10_000
    try:
        first = collect_cluster.apply(args=("fake", slot)).get()
        assert first["cycle_ms"] == slot and first["collected_by"] == runner.collector_id()
        assert collect_cluster.apply(args=("fake", slot)).get() is None  # redelivered
        assert collect_cluster.apply(args=("fake", slot - 10_000)).get() is None  # late
        assert stored_points() == 3  # one cycle's three partitions
        assert collect_cluster.apply(args=("fake", slot + 10_000)).get()["cycle_ms"] > slot
        assert stored_points() == 6
        assert locks.newest_mark("lagwatch:collected:fake") == slot + 10_000
    finally:
        runner.forget_clusters()


def test_waiting_slots_take_the_lease_in_slot_order(redis: str) -> None:
    """Two cycles wait behind a holder; the newer slot asked first and polls as often, yet
    the older is served first (a newer slot first would mark the older one stored)."""
    key = "lagwatch:test-ordered"
    taken: list[int] = []
    started = threading.Event()

    def wait_for_lease(slot: int) -> None:
        started.set()
        with locks.lease(key, 5, wait_s=30, order=slot) as mine:
            assert mine
            taken.append(slot)
            time.sleep(0.3)

    with locks.lease(key, 5, order=0) as mine:
        assert mine
        newer = threading.Thread(target=wait_for_lease, args=(2_000,))
        newer.start()
        started.wait(5)
        time.sleep(1)  # the newer one has asked several times already
        older = threading.Thread(target=wait_for_lease, args=(1_000,))
        older.start()
        time.sleep(1)
    newer.join(30)
    older.join(30)
    assert taken == [1_000, 2_000]
    assert locks.client().zcard(f"{key}:queue") == 0  # nobody left waiting


def test_a_dead_waiter_does_not_hold_the_queue(redis: str) -> None:
    """A waiter that stopped asking (its process died) is passed over after a second or so."""
    key = "lagwatch:test-dead-waiter"
    locks.client().zadd(f"{key}:queue", {f"{1:020d}/dead": 1})
    locks.client().hset(f"{key}:queue:seen", f"{1:020d}/dead", 0)
    started = time.monotonic()
    with locks.lease(key, 5, wait_s=10, order=5) as mine:
        assert mine and time.monotonic() - started < 3
    # One that asked a moment ago is waited for, until it stops asking.
    locks.client().zadd(f"{key}:queue", {f"{1:020d}/slow": 1})
    locks.client().hset(f"{key}:queue:seen", f"{1:020d}/slow", int(time.time() * 1000))
    with locks.lease(key, 5, wait_s=0.5, order=5) as mine:
        assert not mine

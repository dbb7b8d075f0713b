"""Two collector workers share three clusters, and one is killed mid-run.

A whole lab stack of its own (ZooKeeper, broker, Redis, workload, web, worker, beat) with two
collector processes (``collector`` and ``collector2``), and a second real Kafka broker from a
second stack. Three clusters: the lab's (its broker, ZooKeeper spouts and consumers, Storm
UI), ``lab-b`` (the second broker, with groups this test runs) and ``lab-zk`` (ZooKeeper
only: the workload's ZooKeeper consumer and one this test registers by hand). Beat dispatches
each cluster's slot every few seconds; whichever collector takes it runs it.

Midway a member joins a KIP-848 group and a ZooKeeper consumer group, then the first
collector is killed with SIGKILL (its whole process group) while it holds a cluster's lease,
in a cycle, and the members leave again.
What is checked, from the stack's database and both collectors' logs:

- no (cluster, slot) collected twice, and each stored cycle names the process the log does;
- both collectors ran cycles of every cluster before the kill, the survivor all after it;
- no two stored cycles of a cluster more than two polls apart;
- every membership change one event, none repeated by the other collector, and no event for
  a group whose generation did not change;
- the time lag of a group that stopped consuming grows without a gap across hand-overs.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from dashboard.store.packing import unpack
from dashboard.store.raw_history import KINDS
from lab.stack import LAB_POLL_VAR, Stack
from lab.workload.clients import leave_and_close
from tests.waiting import wait_for

pytestmark = pytest.mark.lab

POLL_S = 4
SERVICES = [
    "zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "collector2", "beat",
]  # fmt: skip
CLUSTERS = ("lab", "lab-b", "lab-zk")
TOPIC = "shard-b"
PARTITIONS = 4
ZK_GROUP = "shards-zk"
PHASE_S = 40
COLLECTED = re.compile(r"cluster (\S+): slot (\d+) collected by (\S+)")


def extra_clusters(bootstrap_b: str, zk_hosts: str) -> str:
    return (
        "clusters:\n"
        "  - name: lab-b\n"
        f"    poll_interval_s: {POLL_S}\n"
        f"    kafka: {{bootstrap_servers: {json.dumps(bootstrap_b)}, "
        "read_consumer_offsets_topic: true}\n"
        "  - name: lab-zk\n"
        f"    poll_interval_s: {POLL_S}\n"
        f"    zookeeper: {{hosts: {json.dumps(zk_hosts)}, "
        'storm_spout_roots: ["/kafka-spout"], zk_consumers: true}\n'
    )


class Database:
    """The stack's SQLite file, opened read-only for each query."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self, sql: str, *args: object) -> list[tuple]:
        if not self.path.exists():
            return []
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError:  # not migrated yet
            return []
        finally:
            conn.close()

    def cycles(self) -> dict[str, list[tuple[int, str]]]:
        """(slot ms, process) of each stored cycle, per cluster, oldest first."""
        out: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for cluster, at, by in self.rows(
            "SELECT c.name, cc.at, cc.collected_by FROM monitoring_collectedcycle cc "
            "JOIN monitoring_cluster c ON c.id = cc.cluster_id ORDER BY cc.at"
        ):
            out[cluster].append((ms(at), by))
        return out

    def groups(self) -> dict[tuple[str, str, str], tuple[int | None, list[str]]]:
        """(cluster, source, group) -> (generation, member ids)."""
        return {
            (cluster, source, name): (generation, [m["member_id"] for m in json.loads(members)])
            for cluster, source, name, generation, members in self.rows(
                "SELECT c.name, g.source, g.name, g.generation, g.members "
                "FROM monitoring_consumergroup g JOIN monitoring_cluster c ON c.id = g.cluster_id"
            )
        }

    def events(self) -> list[tuple[str, str, str, int, int | None, str]]:
        """(cluster, source, group, at ms, generation, cause) of every rebalance event."""
        return [
            (cluster, source, name, ms(at), generation, cause)
            for cluster, source, name, at, generation, cause in self.rows(
                "SELECT c.name, g.source, g.name, e.at, e.generation, e.cause "
                "FROM monitoring_rebalanceevent e "
                "JOIN monitoring_consumergroup g ON g.id = e.group_id "
                "JOIN monitoring_cluster c ON c.id = g.cluster_id ORDER BY e.at"
            )
        ]

    def time_lags(self, cluster: str, group: str) -> dict[int, list[tuple[int, int, float]]]:
        """partition -> (at ms, lag, time lag s) of each stored sample, oldest first."""
        out: dict[int, list] = defaultdict(list)
        for at, figures in self.rows(
            "SELECT s.at, s.figures FROM monitoring_groupsample s "
            "JOIN monitoring_consumergroup g ON g.id = s.group_id "
            "JOIN monitoring_cluster c ON c.id = g.cluster_id "
            "WHERE c.name = ? AND g.name = ? ORDER BY s.at",
            cluster,
            group,
        ):
            columns = unpack(figures, KINDS)  # the raw history's packed partitions
            for partition, lag, time_lag in zip(
                columns["partition"], columns["lag"], columns["time_lag_s"], strict=True
            ):
                out[partition].append((ms(at), lag, time_lag))
        return out


def ms(text: str) -> int:
    at = datetime.fromisoformat(text)
    return int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000)


class BrokerBLoad:
    """The second broker's traffic: a producer, a classic group and a KIP-848 group that keep
    consuming, and a group that committed once and stopped (its lag and time lag grow)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.extra_stop = threading.Event()

    def start(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
            future.result(30)
        idle = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "shard-idle"})
        idle.commit(
            offsets=[TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)], asynchronous=False
        )
        idle.close()
        self._run(self._produce)
        self._run(self._consume, "shard-classic", {}, self.stop)
        self._run(self._consume, "shard-848", {"group.protocol": "consumer"}, self.stop)

    def add_848_member(self) -> None:
        self._run(self._consume, "shard-848", {"group.protocol": "consumer"}, self.extra_stop)

    def _run(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 50})
        n = 0
        while not self.stop.is_set():
            for p in range(PARTITIONS):
                producer.produce(TOPIC, f"m{n}".encode(), partition=p)
            n += 1
            producer.poll(0.1)
        producer.flush(10)

    def _consume(self, group: str, extra: dict, stop: threading.Event) -> None:
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": group,
             "auto.offset.reset": "earliest", **extra}
        )  # fmt: skip
        consumer.subscribe([TOPIC])
        try:
            while not stop.is_set() and not self.stop.is_set():
                consumer.poll(0.5)
        finally:
            leave_and_close(consumer)

    def close(self) -> None:
        self.stop.set()
        self.extra_stop.set()
        for thread in self.threads:
            thread.join(30)


def register(zk: KazooClient, member: str) -> None:
    registration = {"version": 1, "subscription": {TOPIC: 1}, "pattern": "static",
                    "timestamp": str(int(time.time() * 1000))}  # fmt: skip
    zk.create(
        f"/consumers/{ZK_GROUP}/ids/{member}", json.dumps(registration).encode(),
        ephemeral=True, makepath=True,
    )  # fmt: skip


def collected_in_logs(logs: Path) -> list[tuple[str, int, str, str]]:
    """(cluster, slot, process, log) of every "collected by" line of both collectors."""
    found = []
    for name in ("collector", "collector2"):
        path = logs / f"{name}.log"
        for match in COLLECTED.finditer(path.read_text(errors="replace")):
            found.append((match[1], int(match[2]), match[3], name))
    return found


@pytest.fixture
def second_broker(tmp_path: Path) -> Iterator[str]:
    stack = Stack(tmp_path / "broker-b")
    try:
        yield stack.up(["kafka"])["kafka"]
    finally:
        stack.down()


def test_two_collectors_share_three_clusters_and_survive_one_killed(
    tmp_path: Path, second_broker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LAB_POLL_VAR, str(POLL_S))
    stack = Stack(tmp_path / "lab")
    db = Database(stack.run_dir / "data" / "lagwatch.sqlite3")
    load = BrokerBLoad(second_broker)
    zk: KazooClient | None = None
    try:
        endpoints = stack.up(SERVICES)
        clusters_file = tmp_path / "more-clusters.yaml"
        clusters_file.write_text(extra_clusters(second_broker, endpoints["zookeeper"]))
        subprocess.run(
            [stack.python, "manage.py", "lagwatch_config", "import", str(clusters_file)],
            cwd=Path(__file__).resolve().parents[2], env=stack.django_env(), check=True,
            capture_output=True, timeout=120,
        )  # fmt: skip
        load.start()
        zk = KazooClient(hosts=endpoints["zookeeper"])
        zk.start(timeout=15)
        zk.ensure_path(f"/consumers/{ZK_GROUP}/offsets/{TOPIC}")
        zk.create(f"/consumers/{ZK_GROUP}/offsets/{TOPIC}/0", b"0")
        register(zk, "zk-1")
        pids = {
            name: stack.status()["services"][name]["pid"] for name in ("collector", "collector2")
        }

        def warm() -> bool:
            by = db.cycles()
            groups = db.groups()
            return all(
                {p.split(":")[-1] for _, p in by.get(c, [])} >= {str(pid) for pid in pids.values()}
                for c in CLUSTERS
            ) and all(
                len(groups.get(key, (None, []))[1]) == 1
                for key in (("lab-b", "kafka", "shard-classic"), ("lab-b", "kafka", "shard-848"),
                            ("lab-zk", "zookeeper", ZK_GROUP))
            )  # fmt: skip

        wait_for(warm, 240, "every cluster collected by both collectors, the test's groups seen", 1)
        time.sleep(2 * POLL_S)  # the joins of the start reported
        t0 = int(time.time() * 1000)
        before = db.groups()

        time.sleep(PHASE_S / 2)
        load.add_848_member()
        register(zk, "zk-2")
        time.sleep(PHASE_S / 2)
        # Killed mid-cycle: while it holds a cluster's lease (its value names the process).
        leases = redis.Redis.from_url(endpoints["redis"])
        doomed = f":{pids['collector']}/"

        def in_a_cycle() -> str | None:
            for key in leases.scan_iter("lagwatch:collecting:*"):
                holder = leases.get(key)
                if holder is not None and doomed in holder.decode():
                    return key.decode()
            return None

        held = wait_for(in_a_cycle, 60, "the first collector in a cycle", 0.005)
        killed_at = int(time.time() * 1000)
        stack.kill_service("collector")
        leases.close()
        time.sleep(PHASE_S / 2)
        load.extra_stop.set()
        zk.delete(f"/consumers/{ZK_GROUP}/ids/zk-2")
        time.sleep(PHASE_S / 2)
        key_848 = ("lab-b", "kafka", "shard-848")
        wait_for(lambda: len(db.groups()[key_848][1]) == 1, 60, "the second member gone", 1)
        time.sleep(3 * POLL_S)
        end = int(time.time() * 1000)
        after = db.groups()
        cycles = db.cycles()
        events = db.events()
        # A cycle's "collected by" line is written after its transaction commits: a cycle
        # stored just before ``cycles`` was read may not be in the log yet (a fresh-clone run
        # under load). Wait for the lines of every stored cycle; one that never comes fails.
        # The one exception: the cycle the SIGKILL cut between its commit and its log line
        # (a fresh-clone run killed the first collector right there), at most one, the
        # killed process's, in flight at the kill.
        stored = {(cluster, slot): p for cluster, rows in cycles.items() for slot, p in rows}
        killed_tag = f":{pids['collector']}"

        def cut_at_the_kill(found: list) -> set:
            have = {(cluster, slot) for cluster, slot, _, _ in found}
            return {
                key for key, p in stored.items()
                if key not in have and p.endswith(killed_tag) and key[1] <= killed_at
            }  # fmt: skip

        def every_line(found: list) -> bool:
            have = {(cluster, slot) for cluster, slot, _, _ in found}
            return set(stored) <= have | cut_at_the_kill(found)

        logged = wait_for(
            lambda: (found := collected_in_logs(stack.run_dir / "logs"))
            and every_line(found)
            and found,
            120,
            "a log line for every stored cycle",
            every=0.5,
        )
        unlogged = cut_at_the_kill(logged)
        assert len(unlogged) <= 1, unlogged
        idle_lags = db.time_lags("lab-b", "shard-idle")
    finally:
        load.close()
        if zk is not None:
            zk.stop()
            zk.close()
        stack.down()

    # No slot collected twice, and the store names the process the log does.
    slots: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)
    for cluster, slot, process, log in logged:
        slots[(cluster, slot)].append((process, log))
    twice = {key: who for key, who in slots.items() if len(who) > 1}
    assert not twice, twice
    for cluster in CLUSTERS:
        for slot, process in cycles[cluster]:
            if (cluster, slot) in unlogged:
                continue
            assert (cluster, slot) in slots and slots[(cluster, slot)][0][0] == process

    # Both shared every cluster before the kill; only the survivor ran cycles after it.
    killed, survivor = str(pids["collector"]), str(pids["collector2"])
    for cluster in CLUSTERS:
        ran_before = {p.split(":")[-1] for slot, p in cycles[cluster] if slot < killed_at}
        ran_after = {
            p.split(":")[-1] for slot, p in cycles[cluster] if slot > killed_at + POLL_S * 1000
        }
        assert ran_before >= {killed, survivor}, (cluster, ran_before)
        assert ran_after == {survivor}, (cluster, ran_after)

    # The cluster whose cycle was cut short went on, on the survivor, once the lease expired.
    cut = held.rsplit(":", 1)[1]
    assert any(slot > killed_at and p.endswith(f":{survivor}") for slot, p in cycles[cut]), held

    # No gap over two polls, the kill included.
    for cluster in CLUSTERS:
        slots_ms = [slot for slot, _ in cycles[cluster] if slot >= t0]
        assert slots_ms and slots_ms[-1] >= end - 3 * POLL_S * 1000, (cluster, slots_ms[-3:])
        gaps = [b - a for a, b in zip(slots_ms, slots_ms[1:], strict=False)]
        assert max(gaps) <= 2 * POLL_S * 1000, (cluster, gaps)

    # Every membership change one event; none repeated; none where nothing changed.
    since = [e for e in events if e[3] > t0]
    seen: dict[tuple, list[int]] = defaultdict(list)
    for cluster, source, group, at, generation, cause in since:
        seen[(cluster, source, group, generation, cause)].append(at)
    repeated = {key: ats for key, ats in seen.items() if len(ats) > 1}
    assert not repeated, repeated
    zk_changes = [(e[4], e[5]) for e in since if e[:3] == ("lab-zk", "zookeeper", ZK_GROUP)]
    g0 = before[("lab-zk", "zookeeper", ZK_GROUP)][0]
    assert zk_changes == [(g0 + 1, "member_joined"), (g0 + 2, "member_left")], zk_changes
    causes_848 = [e[5] for e in since if e[:3] == ("lab-b", "kafka", "shard-848")]
    assert "member_joined" in causes_848 and "member_left" in causes_848, causes_848
    unchanged = {
        key for key, (generation, _) in before.items()
        if generation is not None and after.get(key, (None,))[0] == generation
    }  # fmt: skip
    assert ("lab-b", "kafka", "shard-classic") in unchanged
    false = [e for e in since if e[:3] in unchanged]
    assert not false, false

    # The stopped group's time lag is known at every stored cycle and never falls back.
    for partition, samples in idle_lags.items():
        window = [(at, lag, time_lag) for at, lag, time_lag in samples if at >= t0]
        assert window, partition
        assert all(time_lag is not None for _, lag, time_lag in window if lag), window
        lags = [time_lag for _, lag, time_lag in window if lag]
        assert all(b >= a - 1.0 for a, b in zip(lags, lags[1:], strict=False)), (partition, lags)

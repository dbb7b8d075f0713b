"""KafkaSpoutSim and the Storm UI against the real ZooKeeper and the real Apache Kafka broker.

What the product reads must be exactly what storm-kafka leaves: the znode path and JSON, an
``offset`` pinned by a poison message with an mtime that stops moving, and Storm UI shapes.
"""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kazoo.client import KazooClient

from lab.storm.partition_manager import PartitionCounters
from lab.storm.spout import STORM_TOO_MANY_FAILURES, BoltPolicy, KafkaSpoutSim, PartitionStats
from lab.storm.ui_api import StormUIServer, TopologyRegistry, pretty_uptime
from tests.waiting import wait_for

pytestmark = pytest.mark.lab

INTERVAL_MS = 200


def make_topic(bootstrap: str, partitions: int) -> str:
    name = f"storm-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=20)
    return name


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=f"m{i}".encode(), partition=partition)
    assert producer.flush(20) == 0


@pytest.fixture
def new_spout(zk_hosts: str, kafka_bootstrap: str) -> Iterator[Callable[..., KafkaSpoutSim]]:
    """Start spouts with test-friendly defaults; stop them all afterwards."""
    started: list[KafkaSpoutSim] = []

    def factory(topic: str, **overrides: Any) -> KafkaSpoutSim:
        kwargs: dict[str, Any] = {
            "bootstrap": kafka_bootstrap,
            "zk_hosts": zk_hosts,
            "topic": topic,
            "topology_name": "orders",
            "spout_id": "orders-spout",
            "zk_root": f"/storm-test-{uuid.uuid4().hex[:10]}",
            "force_from_start": True,
            "state_update_interval_ms": INTERVAL_MS,
            "policy": BoltPolicy(process_ms=0.5),
            "seed": 7,
        }
        kwargs.update(overrides)
        spout = KafkaSpoutSim(**kwargs)
        spout.start()
        started.append(spout)
        return spout

    yield factory
    for spout in started:
        spout.stop()


def znode(zk: KazooClient, path: str) -> tuple[dict[str, Any], Any] | None:
    if not zk.exists(path):
        return None
    raw, stat = zk.get(path)
    return json.loads(raw), stat


def committed_offset(zk: KazooClient, path: str) -> int | None:
    found = znode(zk, path)
    return found[0]["offset"] if found else None


def partition_stats(spout: KafkaSpoutSim, partition: int) -> PartitionStats | None:
    return next((p for p in spout.stats().partitions if p.partition == partition), None)


def manager_of(spout: KafkaSpoutSim, partition: int) -> PartitionCounters:
    found = wait_for(lambda: partition_stats(spout, partition), what="partition manager")
    return found.manager


def acked_on(spout: KafkaSpoutSim, partition: int) -> int:
    found = partition_stats(spout, partition)
    return found.acked if found else 0


def test_commit_writes_storm_kafka_json_at_spout_path(
    zk: KazooClient, kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=2)
    produce(kafka_bootstrap, topic, 12, partition=0)
    produce(kafka_bootstrap, topic, 7, partition=1)
    spout = new_spout(topic, topology_id="orders-3-1700000000")

    path0 = f"{spout.zk_root}/orders-spout/partition_0"
    assert spout.zk_path(0) == path0
    wait_for(lambda: committed_offset(zk, path0) == 12, what="partition 0 committed")
    wait_for(lambda: committed_offset(zk, spout.zk_path(1)) == 7, what="partition 1 committed")

    host, port = kafka_bootstrap.rsplit(":", 1)
    raw, _ = zk.get(path0)
    assert (
        raw
        == json.dumps(
            {
                "topology": {"id": "orders-3-1700000000", "name": "orders"},
                "offset": 12,
                "partition": 0,
                "broker": {"host": host, "port": int(port)},
                "topic": topic,
            },
            separators=(",", ":"),
        ).encode()
    )
    assert sorted(zk.get_children(f"{spout.zk_root}/orders-spout")) == [
        "partition_0",
        "partition_1",
    ]

    # No progress, no write: the znode's version and mtime stay put across many intervals.
    _, stat = zk.get(path0)
    time.sleep(INTERVAL_MS / 1000 * 5)
    _, later = zk.get(path0)
    assert (later.version, later.mtime) == (stat.version, stat.mtime)

    produce(kafka_bootstrap, topic, 3, partition=0)
    wait_for(lambda: committed_offset(zk, path0) == 15, what="progress committed")
    _, moved = zk.get(path0)
    assert moved.version > stat.version
    assert moved.mtime > stat.mtime


def test_poison_offset_pins_commit_while_failures_rise_and_mtime_stops(
    zk: KazooClient, kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 30)
    spout = new_spout(topic, policy=BoltPolicy(process_ms=0.5, poison=frozenset({(0, 10)})))
    path = spout.zk_path(0)

    wait_for(lambda: committed_offset(zk, path) == 10, what="commit pinned at the poison")
    _, pinned = zk.get(path)
    before = spout.stats()
    produce(kafka_bootstrap, topic, 20)  # the spout goes on fetching and acking around it
    wait_for(lambda: acked_on(spout, 0) == 49, what="later offsets acked")
    time.sleep(INTERVAL_MS / 1000 * 5)

    after = spout.stats()
    _, still = zk.get(path)
    assert committed_offset(zk, path) == 10
    assert (still.version, still.mtime) == (pinned.version, pinned.mtime)
    assert after.failed > before.failed + 3
    assert after.emitted > before.emitted
    manager = manager_of(spout, 0)
    assert manager.last_completed_offset == 10
    assert manager.emitted_to_offset == 50

    spout.clear_poison()  # a fix deployed: the partition catches up at once
    wait_for(lambda: committed_offset(zk, path) == 50, what="commit released")
    assert zk.get(path)[1].mtime > pinned.mtime


def test_same_topology_resumes_and_new_one_with_force_from_start_rereads(
    zk: KazooClient, kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 20)
    root = f"/storm-test-{uuid.uuid4().hex[:10]}"
    first = new_spout(topic, zk_root=root, topology_id="orders-1-1")
    wait_for(lambda: committed_offset(zk, first.zk_path(0)) == 20, what="first commit")
    first.stop()
    produce(kafka_bootstrap, topic, 5)

    same = new_spout(topic, zk_root=root, topology_id="orders-1-1")
    wait_for(lambda: committed_offset(zk, same.zk_path(0)) == 25, what="resumed commit")
    wait_for(lambda: same.stats().emitted >= 5, what="stats")
    time.sleep(0.5)
    assert same.stats().emitted == 5  # resumed at the stored offset despite forceFromStart
    same.stop()

    fresh = new_spout(topic, zk_root=root, topology_id="orders-2-2")
    wait_for(lambda: fresh.stats().emitted >= 25, what="re-read from the start")
    time.sleep(0.5)
    assert fresh.stats().emitted == 25
    assert znode(zk, fresh.zk_path(0))[0]["topology"]["id"] == "orders-2-2"  # type: ignore[index]


def test_failed_share_is_retried_and_max_pending_caps_in_flight(
    zk: KazooClient, kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 40)
    spout = new_spout(
        topic, max_spout_pending=5, policy=BoltPolicy(process_ms=20.0, fail_share=0.3)
    )
    peak = 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        peak = max(peak, spout.stats().pending)
        time.sleep(0.02)
    assert 0 < peak <= 5
    spout.update_policy(fail_share=0.0, process_ms=0.5)
    wait_for(lambda: committed_offset(zk, spout.zk_path(0)) == 40, what="all done")
    wait_for(lambda: spout.stats().acked >= 40, what="stats")
    time.sleep(0.5)
    stats = spout.stats()
    assert stats.failed > 0
    assert stats.acked == 40  # every failed tuple was replayed until acked, once


def test_timed_out_tuples_fail_after_the_message_timeout(
    kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 5)
    spout = new_spout(
        topic, message_timeout_s=1.0, policy=BoltPolicy(process_ms=0.5, timeout_share=1.0)
    )
    wait_for(lambda: spout.stats().emitted >= 5, what="emitted")
    emitted_at = time.monotonic()
    assert spout.stats().failed == 0  # the bolt never acks, but the acker has not given up yet
    wait_for(lambda: spout.stats().failed >= 5, what="timeouts")
    assert time.monotonic() - emitted_at > 0.5
    assert spout.stats().acked == 0


def test_bolt_policy_decisions() -> None:
    rng = random.Random(1)
    poisoned = BoltPolicy(poison=frozenset({(2, 40)}))
    assert all(poisoned.decide(2, 40, rng) == "fail" for _ in range(50))
    assert poisoned.decide(2, 41, rng) == "ack"
    mixed = BoltPolicy(fail_share=0.2, timeout_share=0.3)
    outcomes = [mixed.decide(0, o, rng) for o in range(5000)]
    assert 0.15 < outcomes.count("fail") / 5000 < 0.25
    assert 0.25 < outcomes.count("timeout") / 5000 < 0.35
    with pytest.raises(ValueError):
        BoltPolicy(fail_share=0.8, timeout_share=0.3)


def test_spout_rides_out_a_zookeeper_outage(
    lab_services: Any,
    zk: KazooClient,
    kafka_bootstrap: str,
    new_spout: Callable[..., KafkaSpoutSim],
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 10)
    spout = new_spout(topic)
    wait_for(lambda: committed_offset(zk, spout.zk_path(0)) == 10, what="first commit")

    lab_services.stop("zookeeper")
    produce(kafka_bootstrap, topic, 15)
    wait_for(lambda: spout.stats().acked == 25, what="processing without ZooKeeper")
    assert spout.running
    lab_services.start("zookeeper")

    wait_for(lambda: zk.connected, timeout=30, what="test client reconnected")
    wait_for(
        lambda: committed_offset(zk, spout.zk_path(0)) == 25, timeout=30, what="catch-up commit"
    )


def log_start(bootstrap: str, topic: str, partition: int = 0) -> int:
    tp = TopicPartition(topic, partition)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(timeout=20).offset


def test_stored_offset_below_the_log_start_jumps_to_latest_skipping(
    zk: KazooClient, kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 30)
    root = f"/storm-test-{uuid.uuid4().hex[:10]}"
    first = new_spout(topic, zk_root=root, topology_id="orders-4-4")
    wait_for(lambda: committed_offset(zk, first.zk_path(0)) == 30, what="first commit")
    first.stop()  # the worker is down while retention passes its offset

    produce(kafka_bootstrap, topic, 10)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    deleted = admin.delete_records([TopicPartition(topic, 0, 35)])
    assert next(iter(deleted.values())).result(timeout=20).low_watermark == 35
    assert log_start(kafka_bootstrap, topic) == 35  # ZooKeeper keeps offset 30, below it
    again = new_spout(topic, zk_root=root, topology_id="orders-4-4", force_from_start=False)
    # The broker answers OFFSET_OUT_OF_RANGE for 30: the spout jumps to the latest offset,
    # and the 5 messages still on the broker (35..39) are never read (DOMAIN §1).
    wait_for(lambda: committed_offset(zk, again.zk_path(0)) == 40, what="jump committed")
    wait_for(lambda: manager_of(again, 0).out_of_range_jumps == 1, what="jump counted")
    assert manager_of(again, 0).skipped_messages == 5
    assert again.stats().emitted == 0
    produce(kafka_bootstrap, topic, 2)
    wait_for(lambda: committed_offset(zk, again.zk_path(0)) == 42, what="reading again")
    wait_for(lambda: again.stats().emitted == 2, what="the 2 newest emitted")


def test_stored_offset_beyond_a_recreated_log_jumps_to_latest(
    zk: KazooClient, kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 30)
    root = f"/storm-test-{uuid.uuid4().hex[:10]}"
    first = new_spout(topic, zk_root=root, topology_id="orders-6-6")
    wait_for(lambda: committed_offset(zk, first.zk_path(0)) == 30, what="first commit")
    # Stopped before the topic goes: librdkafka 2.16 can crash a process whose assign()ed
    # consumer reads a topic being deleted (docs/LAB.md).
    first.stop()

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=30)
    wait_for(
        lambda: admin.create_topics([NewTopic(topic, 1, 1)])[topic].exception(timeout=30) is None,
        what="topic re-created",
    )
    produce(kafka_bootstrap, topic, 6)
    again = new_spout(topic, zk_root=root, topology_id="orders-6-6", force_from_start=False)
    # 30 lies beyond the new log end: out of range too, and the jump skips the new log's 6.
    wait_for(lambda: committed_offset(zk, again.zk_path(0)) == 6, what="jump committed")
    wait_for(lambda: manager_of(again, 0).out_of_range_jumps == 1, what="jump counted")
    assert manager_of(again, 0).skipped_messages == 6
    assert again.stats().emitted == 0


def test_spout_rides_out_a_broker_restart(
    lab_services: Any,
    zk: KazooClient,
    kafka_bootstrap: str,
    new_spout: Callable[..., KafkaSpoutSim],
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 30)
    spout = new_spout(topic)
    wait_for(lambda: committed_offset(zk, spout.zk_path(0)) == 30, what="commit")

    lab_services.stop("kafka")
    lab_services.start("kafka")  # Kafka keeps the topic and its records across the restart
    produce(kafka_bootstrap, topic, 6)

    # Seconds on a quiet machine; a reader that never fetched again after the restart (seen
    # under a loaded suite) is replaced by the lab's watchdog ~55 s after the broker's return.
    wait_for(lambda: committed_offset(zk, spout.zk_path(0)) == 36, timeout=150, what="recovered")
    assert spout.running
    wait_for(lambda: spout.stats().emitted == 36, what="the 6 new messages emitted")
    manager = manager_of(spout, 0)
    assert (manager.out_of_range_jumps, manager.skipped_messages) == (0, 0), "nothing lost"
    assert log_start(kafka_bootstrap, topic) == 0


def test_too_many_tuple_failures_restarts_the_worker_and_reports_it(
    zk: KazooClient, kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=1)
    produce(kafka_bootstrap, topic, 10)
    spout = new_spout(
        topic,
        max_offset_behind=3,
        restart_delay_s=0.2,
        policy=BoltPolicy(process_ms=0.5, fail_share=1.0),
    )
    wait_for(lambda: spout.stats().restarts >= 2, what="worker restarts")
    stats = spout.stats()
    assert stats.last_error == STORM_TOO_MANY_FAILURES
    assert stats.error_time is not None and stats.error_time <= time.time()
    assert stats.acked == 0
    assert not zk.exists(spout.zk_path(0))  # never any progress to commit

    server = StormUIServer("127.0.0.1", 0, TopologyRegistry([spout]))
    server.start()
    try:
        status, page = get_json(f"{server.url}/api/v1/topology/{spout.topology_id}")
    finally:
        server.stop()
    assert status == 200
    (entry,) = page["spouts"]
    assert entry["lastError"] == STORM_TOO_MANY_FAILURES
    assert isinstance(entry["errorTime"], int) and entry["errorLapsedSecs"] >= 0
    assert page["lagwatch"]["spouts"][0]["restarts"] >= 2

    spout.update_policy(fail_share=0.0)
    # Seconds on a quiet machine (the whole test: 9 s); a fresh-clone run under load missed 20 s.
    wait_for(lambda: committed_offset(zk, spout.zk_path(0)) == 10, 90, what="recovered")
    assert spout.running


def get_json(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_storm_ui_rest_shapes(
    kafka_bootstrap: str, new_spout: Callable[..., KafkaSpoutSim]
) -> None:
    topic = make_topic(kafka_bootstrap, partitions=2)
    produce(kafka_bootstrap, topic, 8, partition=0)
    produce(kafka_bootstrap, topic, 4, partition=1)
    spout = new_spout(
        topic,
        topology_id="orders-5-1700000001",
        component_id="kafka-spout",
        policy=BoltPolicy(process_ms=0.5, poison=frozenset({(1, 2)})),
    )
    registry = TopologyRegistry([spout])
    server = StormUIServer("127.0.0.1", 0, registry)
    server.start()
    try:
        wait_for(lambda: spout.stats().acked == 11, what="acks")
        wait_for(lambda: spout.stats().failed >= 2, what="failures")

        status, summary = get_json(f"{server.url}/api/v1/topology/summary")
        assert status == 200
        (topo,) = summary["topologies"]
        assert topo["id"] == "orders-5-1700000001"
        assert topo["name"] == "orders"
        assert topo["status"] == "ACTIVE"
        assert isinstance(topo["uptime"], str) and topo["uptime"].endswith("s")
        assert isinstance(topo["uptimeSeconds"], int)
        assert topo["tasksTotal"] == 2 and topo["executorsTotal"] == 2
        assert topo["workersTotal"] == 1

        status, page = get_json(f"{server.url}/api/v1/topology/orders-5-1700000001")
        assert status == 200
        assert page["id"] == "orders-5-1700000001" and page["name"] == "orders"
        assert page["msgTimeout"] == 30
        (spout_entry,) = page["spouts"]
        assert spout_entry["spoutId"] == "kafka-spout"
        assert spout_entry["executors"] == 1 and spout_entry["tasks"] == 1
        assert spout_entry["acked"] == 11
        assert spout_entry["failed"] >= 2
        assert spout_entry["emitted"] == spout_entry["transferred"] >= 13
        assert isinstance(spout_entry["completeLatency"], str)
        float(spout_entry["completeLatency"])
        assert spout_entry["lastError"] == ""
        (stats_all_time,) = page["topologyStats"]
        assert stats_all_time["window"] == ":all-time"
        assert stats_all_time["acked"] == 11
        (bolt,) = page["bolts"]
        assert bolt["boltId"] == "process" and bolt["failed"] >= 2

        extra = page["lagwatch"]["spouts"][0]
        assert extra["spoutConfigId"] == "orders-spout"
        assert extra["maxSpoutPending"] == 1000
        by_partition = {p["partition"]: p for p in extra["partitions"]}
        assert by_partition[1]["lastCompletedOffset"] == 2
        assert by_partition[1]["pending"] >= 1
        assert by_partition[0]["pending"] == 0
        assert by_partition[0]["zkPath"] == spout.zk_path(0)

        status, missing = get_json(f"{server.url}/api/v1/topology/nope-1-1")
        assert status == 500  # as real Storm 1.2.4's UI answers (tests/data/storm_ui_1.2.4/)
        assert missing["errorMessage"].startswith("NotAliveException(msg:nope-1-1)")

        spout.stop()
        status, summary = get_json(f"{server.url}/api/v1/topology/summary")
        assert summary["topologies"][0]["status"] == "INACTIVE"
        registry.remove(spout)
        status, summary = get_json(f"{server.url}/api/v1/topology/summary")
        assert summary["topologies"] == []
    finally:
        server.stop()


def test_pretty_uptime_matches_storm() -> None:
    assert pretty_uptime(5) == "5s"
    assert pretty_uptime(65) == "1m 5s"
    assert pretty_uptime(3600) == "1h 0m 0s"
    assert pretty_uptime(2 * 86400 + 3 * 3600 + 1) == "2d 3h 0m 1s"

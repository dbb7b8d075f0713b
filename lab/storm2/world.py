"""The lab's Storm 2 world: a topic on the lab's broker, a trickle of records, and a real Storm
2.8 topology reading it with storm-kafka-client's KafkaSpout in a LocalCluster.

``python -m lab.storm2.world`` is the lab's ``storm2`` service (``lab/storm2/services.py``). It
creates the topic, produces a steady stream to it, runs the LocalCluster JVM (Nimbus, a
supervisor and the topology's worker in one process, ``topology/Storm2Topology.java``) as its
child, and logs ``READY_LINE`` once the spout's consumer group has committed with metadata
naming the topology instance: what the product reads to link the group to its topology.

The spout is an ordinary Kafka consumer of group ``GROUP`` that assigns its partitions itself
(no group membership: the group is ``Empty`` while the spout runs) and commits every
``COMMIT_MS`` with metadata ``{"topologyId": ..., "taskId": ..., "threadName": ...}``. Storm's
state lives under ``ZK_ROOT`` in the lab's ZooKeeper, cleared at each start: a LocalCluster
keeps its blobs in temporary folders that die with it, and a Nimbus finding the previous
run's topology in ZooKeeper without its blobs halts. There is no Storm UI (storm-webapp is not
on Maven Central), so no port: the service is only this process and its JVM.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from lab.services import LOG4J2
from lab.storm2 import dist

log = logging.getLogger("lab.storm2")

TOPIC = "storm2-orders"
GROUP = "storm2-orders-spout"
TOPOLOGY = "orders-storm2"
ZK_ROOT = "/storm2"
PARTITIONS = 2
SPOUT_TASKS = 2  # one partition each: each partition's commits name its own task
RATE_PER_S = 4  # records a second, over the partitions
COMMIT_MS = 2000
READY_LINE = "storm2 world: ready"
_READY_TIMEOUT_S = 240.0
_STOP_GRACE_S = 20.0
# A small JVM on the serial collector and the C1 JIT, like the lab's other Storm JVMs.
_JAVA_OPTS = ["-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
              "-Djava.awt.headless=true"]  # fmt: skip
# Storm's own log4j2.xml logs every ZooKeeper session and executor start at INFO (1,600 lines
# in the first minute); the lab keeps warnings and the spout's own lines.
_LOG4J2 = (
    LOG4J2.replace("rootLogger.level = info", "rootLogger.level = warn")
    + "logger.spout.name = org.apache.storm.kafka.spout\nlogger.spout.level = info\n"
)


def clear_storm_state(zookeeper: str) -> None:
    """Remove the previous run's Storm state (``ZK_ROOT``) from the lab's ZooKeeper."""
    zk = KazooClient(hosts=zookeeper, timeout=10)
    zk.start(timeout=15)
    try:
        zk.delete(ZK_ROOT, recursive=True)
    finally:
        zk.stop()
        zk.close()


def create_topic(admin: AdminClient) -> None:
    if TOPIC in admin.list_topics(timeout=10).topics:
        return
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        future.result(timeout=30)


def produce_forever(kafka: str, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": kafka, "linger.ms": 5})
    n = 0
    while not stop.wait(1.0 / RATE_PER_S):
        producer.produce(TOPIC, value=f"order-{n}".encode(), partition=n % PARTITIONS)
        producer.poll(0)
        n += 1
    producer.flush(5)


def committed_topologies(admin: AdminClient) -> dict[int, str]:
    """The topology instance each partition's last commit of ``GROUP`` names (a partition
    without such a commit is left out)."""
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])[GROUP]
    found = {}
    for tp in future.result(timeout=10).topic_partitions or ():
        try:
            topology = json.loads(tp.metadata or "").get("topologyId")
        except (ValueError, AttributeError):
            continue
        if tp.offset >= 0 and isinstance(topology, str):
            found[tp.partition] = topology
    return found


def jvm_argv(run_dir: Path, zookeeper: str, kafka: str) -> list[str]:
    from lab.services import java

    return [java(), *_JAVA_OPTS, f"-Djava.io.tmpdir={run_dir / 'tmp'}",
            f"-Dlog4j2.configurationFile={run_dir / 'log4j2.properties'}",
            "-cp", dist.class_path(), dist.TOPOLOGY_CLASS,
            "--name", TOPOLOGY, "--bootstrap", kafka, "--topic", TOPIC, "--group", GROUP,
            "--zookeeper", zookeeper, "--zk-root", ZK_ROOT, "--commit-ms", str(COMMIT_MS),
            "--spout-tasks", str(SPOUT_TASKS)]  # fmt: skip


def _stop_jvm(jvm: subprocess.Popen[bytes]) -> None:
    if jvm.poll() is not None:
        return
    jvm.send_signal(signal.SIGTERM)  # its shutdown hook closes the LocalCluster
    try:
        jvm.wait(_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        jvm.kill()
        jvm.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--kafka", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    dist.installed()  # a clear error before anything starts when the cache is not filled
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())

    run_dir = args.run_dir
    (run_dir / "tmp").mkdir(parents=True, exist_ok=True)
    (run_dir / "log4j2.properties").write_text(_LOG4J2)
    started = time.monotonic()
    clear_storm_state(args.zookeeper)
    admin = AdminClient({"bootstrap.servers": args.kafka})
    create_topic(admin)
    producer = threading.Thread(
        target=produce_forever, args=(args.kafka, stopping), name="producer", daemon=True
    )
    producer.start()
    sys.stdout.flush()
    # A restarted service finds its previous run's commits: ready is when this run's are in.
    earlier = set(committed_topologies(admin).values())
    # stdin a pipe: the topology exits when it closes, so it cannot outlive this process.
    jvm = subprocess.Popen(jvm_argv(run_dir, args.zookeeper, args.kafka), stdin=subprocess.PIPE)
    try:
        deadline = started + _READY_TIMEOUT_S
        while not stopping.is_set():
            if jvm.poll() is not None:
                log.error("the LocalCluster JVM exited with code %s", jvm.returncode)
                return 1
            found = committed_topologies(admin)
            if len(found) == PARTITIONS and not set(found.values()) & earlier:
                log.info("%s in %.1f s: group %s, partitions committed by %s", READY_LINE,
                         time.monotonic() - started, GROUP, found)  # fmt: skip
                break
            if time.monotonic() > deadline:
                log.error("no commit naming a topology after %.0f s", _READY_TIMEOUT_S)
                return 1
            stopping.wait(1.0)
        while not stopping.wait(2.0):
            if jvm.poll() is not None:
                log.error("the LocalCluster JVM exited with code %s", jvm.returncode)
                return 1
        return 0
    finally:
        stopping.set()
        _stop_jvm(jvm)
        producer.join(10)


if __name__ == "__main__":
    sys.exit(main())

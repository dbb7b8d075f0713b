"""A ZooKeeper-based Kafka consumer, laid out as Kafka's pre-0.9 high-level consumer was.

Old tools still run this layout, and Lagwatch reads it (SPEC §2.1):
- `/consumers/<group>/ids/<consumerId>`: ephemeral, the member's registration JSON;
- `/consumers/<group>/owners/<topic>/<partition>`: ephemeral, the owning thread id;
- `/consumers/<group>/offsets/<topic>/<partition>`: persistent, decimal text.

The consumer fetches with `assign()` (no Kafka group) and, like Kafka's ZookeeperConsumer-
Connector, writes an offset only when it changed, so the offset znode's mtime is the time of
the last progress. An offset retention has deleted is out of range: the broker answers
OFFSET_OUT_OF_RANGE and the consumer resets to the log start (`auto.offset.reset`, the old
consumer's `smallest`). The retention scenario holds the consumer first (`hold`: registered,
owning its partitions, fetching nothing), so its stored offset stays below the log start, the
ERR case, until the scenario releases it.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaException, TopicPartition
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from lab.workload.clients import FetchWatchdog, base_config, lagging, reassigned
from lab.workload.spec import ZkConsumerSpec

log = logging.getLogger(__name__)

_ZK_ERRORS = (KazooException, KazooTimeoutError)
# kazoo's blocking calls wait for a reconnect without limit: during an outage the consumer
# thread must go on fetching, so every ZooKeeper call here is async with a deadline.
_ZK_OP_TIMEOUT_S = 5.0


def new_consumer_id(group: str) -> str:
    """Kafka's ZK consumer id shape: `<group>_<host>-<start ms>-<8 hex>`."""
    return f"{group}_{socket.gethostname()}-{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"


class ZkGroupConsumer:
    def __init__(
        self, spec: ZkConsumerSpec, bootstrap: str, zk_hosts: str, session_timeout_s: float = 10.0
    ) -> None:
        self.spec = spec
        self.consumer_id = new_consumer_id(spec.group)
        self.thread_id = f"{self.consumer_id}-0"
        self._bootstrap = bootstrap
        self._zk = KazooClient(
            hosts=zk_hosts,
            timeout=session_timeout_s,
            connection_retry=KazooRetry(max_tries=-1, max_delay=2.0),
        )
        self._zk.add_listener(self._on_zk_state)
        self._register_needed = threading.Event()
        self._stop = threading.Event()
        self._held = threading.Event()
        self._paused = False
        self._lock = threading.Lock()
        self._positions: dict[int, int] = {}
        self._written: dict[int, int] = {}
        self._partitions: list[int] = []
        self.consumed = 0
        self.registrations = 0
        self._watchdog = FetchWatchdog(bootstrap)
        self._thread = threading.Thread(
            target=self._run, name=f"zk-consumer-{spec.group}", daemon=True
        )

    # -- paths ---------------------------------------------------------------------------
    @property
    def base(self) -> str:
        return f"/consumers/{self.spec.group}"

    def ids_path(self) -> str:
        return f"{self.base}/ids/{self.consumer_id}"

    def owner_path(self, partition: int) -> str:
        return f"{self.base}/owners/{self.spec.topic}/{partition}"

    def offset_path(self, partition: int) -> str:
        return f"{self.base}/offsets/{self.spec.topic}/{partition}"

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def hold(self, timeout_s: float = 30.0) -> bool:
        """Fetch and commit nothing, staying registered; True once the consumer has paused
        (or was not fetching yet), False at the deadline."""
        self._held.set()
        deadline = time.monotonic() + timeout_s
        while self._thread.is_alive() and self._partitions and not self._paused:
            if time.monotonic() > deadline:
                log.warning("%s: not paused within %.0fs", self.spec.group, timeout_s)
                return False
            time.sleep(0.05)
        return True

    def release(self) -> None:
        """Fetch again from the held position; if retention removed it meanwhile, the broker
        answers OFFSET_OUT_OF_RANGE and the consumer resets to the log start."""
        self._held.clear()

    @property
    def held(self) -> bool:
        return self._held.is_set()

    def status(self) -> dict[str, object]:
        with self._lock:
            positions = dict(self._positions)
        return {
            "topic": self.spec.topic,
            "consumer_id": self.consumer_id,
            "alive": self._thread.is_alive(),
            "held": self._held.is_set(),
            "zk_state": self._zk.state,
            "partitions": list(self._partitions),
            "positions": positions,
            "consumed": self.consumed,
            "registrations": self.registrations,
            "watchdog_restarts": self._watchdog.restarts,
        }

    def _on_zk_state(self, state: str) -> None:
        # Runs on kazoo's event thread: only flag; the consumer thread does the writes.
        if state == KazooState.LOST:
            self._register_needed.set()
        elif state == KazooState.CONNECTED and self._register_needed.is_set():
            log.info("%s: new ZooKeeper session, registering again", self.spec.group)

    def _consumer_config(self) -> dict[str, object]:
        return {
            **base_config(self._bootstrap, self.consumer_id),
            "group.id": self.consumer_id,  # required by librdkafka; never joined
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }

    def _run(self) -> None:
        consumer = Consumer(self._consumer_config())
        try:
            self._connect()
            if self._stop.is_set():
                return
            self._partitions = self._wait_for_partitions(consumer)
            if self._stop.is_set():
                return
            self._register()
            consumer.assign(
                [
                    TopicPartition(self.spec.topic, p, self._start_offset(consumer, p))
                    for p in self._partitions
                ]
            )
            last_write = time.monotonic()
            while not self._stop.is_set():
                self._pause_or_resume(consumer)
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    self._watchdog.progress()
                    if self._held.is_set():
                        self._rewind(consumer, msg.partition(), msg.offset())
                        continue
                    with self._lock:
                        self._positions[msg.partition()] = msg.offset() + 1
                    self.consumed += 1
                if self._register_needed.is_set() and self._zk.connected:
                    self._register()
                if time.monotonic() - last_write >= self.spec.commit_interval_s:
                    self._write_offsets()
                    last_write = time.monotonic()
                if self._held.is_set():
                    self._watchdog.progress()
                elif self._watchdog.due():
                    consumer = self._replace_if_stuck(consumer)
            self._write_offsets()
        finally:
            consumer.close()
            # Closing the session removes the ephemeral ids and owners nodes, as a real
            # consumer's shutdown does.
            self._zk.stop()
            self._zk.close()

    def _replace_if_stuck(self, consumer: Consumer) -> Consumer:
        """Records wait and this consumer has fetched none for the watchdog's span: go on
        with a new one from the same positions (docs/LAB.md)."""
        with self._lock:
            positions = dict(self._positions)
        if not lagging(consumer, self.spec.topic, positions):
            return consumer
        self._watchdog.abandon(consumer, self.spec.group)
        self._paused = False
        return reassigned(self.spec.topic, positions, self._consumer_config())

    def _rewind(self, consumer: Consumer, partition: int, offset: int) -> None:
        """Fetched before the pause took effect: pause and seek back, to read it again once
        released."""
        tp = TopicPartition(self.spec.topic, partition, offset)
        try:
            consumer.pause([tp])
            consumer.seek(tp)
        except KafkaException as exc:
            log.warning("%s: rewind of partition %d failed: %s", self.spec.group, partition, exc)

    def _pause_or_resume(self, consumer: Consumer) -> None:
        held = self._held.is_set()
        if held == self._paused:
            return
        tps = [TopicPartition(self.spec.topic, p) for p in self._partitions]
        try:
            if held:
                consumer.pause(tps)
            else:
                consumer.resume(tps)
        except KafkaException as exc:  # the next turn of the loop tries again
            log.warning("%s: pause/resume failed: %s", self.spec.group, exc)
            return
        self._paused = held

    def _connect(self) -> None:
        while not self._stop.is_set():
            try:
                self._zk.start(timeout=5)
                return
            except KazooTimeoutError:
                log.warning("%s: ZooKeeper not reachable yet, retrying", self.spec.group)

    def _wait_for_partitions(self, consumer: Consumer) -> list[int]:
        while not self._stop.is_set():
            try:
                md = consumer.list_topics(self.spec.topic, timeout=5)
                topic = md.topics.get(self.spec.topic)
                if topic is not None and topic.error is None and topic.partitions:
                    return sorted(topic.partitions)
            except KafkaException as exc:
                log.debug("%s: metadata: %s", self.spec.group, exc)
            self._stop.wait(1)
        return []

    def _start_offset(self, consumer: Consumer, partition: int) -> int:
        """The stored offset, or the log start for a partition never consumed.

        Both reads are retried: right after a topic is created its partitions may have no
        leader yet (NOT_LEADER_FOR_PARTITION), and ZooKeeper may be away.
        """
        while not self._stop.is_set():
            try:
                stored = self._stored_offset(partition)
                if stored is None:
                    marks = consumer.get_watermark_offsets(
                        TopicPartition(self.spec.topic, partition), timeout=5
                    )
                    if marks is None:
                        raise KafkaException(f"watermarks of partition {partition} timed out")
                    offset = marks[0]
                else:
                    offset = stored
                with self._lock:
                    if stored is not None:
                        self._written[partition] = stored
                    self._positions[partition] = offset
                return offset
            except (*_ZK_ERRORS, KafkaException, ValueError) as exc:
                log.warning("%s: reading start offset: %s", self.spec.group, exc)
                self._stop.wait(1)
        return 0

    def _stored_offset(self, partition: int) -> int | None:
        try:
            data, _stat = self._zk.get_async(self.offset_path(partition)).get(
                timeout=_ZK_OP_TIMEOUT_S
            )
        except NoNodeError:
            return None
        return int(data.decode())

    def _register(self) -> None:
        self._register_needed.clear()
        registration = {
            "version": 1,
            "subscription": {self.spec.topic: 1},
            "pattern": "static",
            "timestamp": str(int(time.time() * 1000)),
        }
        try:
            self._create_ephemeral(self.ids_path(), json.dumps(registration).encode())
            for p in self._partitions:
                self._create_ephemeral(self.owner_path(p), self.thread_id.encode())
            self.registrations += 1
            log.info("%s registered as %s", self.spec.group, self.consumer_id)
        except _ZK_ERRORS as exc:
            log.warning("%s: registration failed, will retry: %s", self.spec.group, exc)
            self._register_needed.set()

    def _create_ephemeral(self, path: str, value: bytes) -> None:
        zk, deadline = self._zk, _ZK_OP_TIMEOUT_S
        try:
            zk.create_async(path, value, ephemeral=True, makepath=True).get(timeout=deadline)
        except NodeExistsError:
            _data, stat = zk.get_async(path).get(timeout=deadline)
            if stat.ephemeralOwner != zk.client_id[0]:
                # Left by our own expired session and not yet reaped: take it over.
                zk.delete_async(path).get(timeout=deadline)
                zk.create_async(path, value, ephemeral=True, makepath=True).get(timeout=deadline)

    def _write_offsets(self) -> None:
        if not self._zk.connected:
            return  # kept, and written once ZooKeeper is back
        with self._lock:
            changed = {p: o for p, o in self._positions.items() if self._written.get(p) != o}
        for partition, offset in changed.items():
            path = self.offset_path(partition)
            value = str(offset).encode()
            try:
                try:
                    self._zk.set_async(path, value).get(timeout=_ZK_OP_TIMEOUT_S)
                except NoNodeError:
                    self._zk.create_async(path, value, makepath=True).get(timeout=_ZK_OP_TIMEOUT_S)
            except _ZK_ERRORS as exc:
                log.debug("%s: offset write failed, will retry: %s", self.spec.group, exc)
                return
            with self._lock:
                self._written[partition] = offset

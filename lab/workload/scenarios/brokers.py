"""Faults of the broker and the producers: fetch purgatory, a source outage, producer
expiry."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from lab.workload.params import Param, ScenarioError
from lab.workload.scenarios.base import Scenario, target

if TYPE_CHECKING:
    from lab.workload.world import World


log = logging.getLogger(__name__)


class FetchPurgatory(Scenario):
    """Starts `consumers` (default 3) plain consumers of the quiet topic (default `quiet`)
    with `fetch.min.bytes` 1 MiB and `fetch.wait.max.ms` 30000 (DOMAIN §5). Nothing is
    produced there, so each fetch they send waits in the broker's fetch purgatory until it
    expires 30 s later, and the next one takes its place at once. Lagwatch shows it on the
    cluster page (`/clusters/lab/`, Brokers: the fetch purgatory up by `consumers` over what
    the world's other clients keep parked for up to 500 ms each), in
    `/api/v1/clusters/lab/` (`brokers[].fetch_purgatory`), in `/metrics`
    (`lagwatch_broker_purgatory_size{operation="fetch"}`) and in `lagwatch_status --json`
    (`brokers`), with fetch expirations at about `consumers`/30 per second once two cycles
    have been scraped. No group status changes: the consumers are assigned their partitions
    by hand (no group membership) and never commit. Stop closes them: the fetch purgatory
    goes back where it was once their last fetches expire (within 30 s; Kafka's own
    `PurgatorySize`, shown as "watched" in the API, keeps completed fetches until its next
    purge)."""

    name = "fetch-purgatory"
    params = (
        Param("consumers", int, "how many waiting consumers", default=3, minimum=1),
        Param("topic", str, "the quiet topic (default: the world's)"),
    )
    MIN_BYTES = 1024 * 1024
    MAX_WAIT_MS = 30_000

    def start(self, world: World, consumers: int = 3, topic: str | None = None) -> dict:
        from confluent_kafka import OFFSET_END, Consumer, TopicPartition

        from lab.workload.clients import base_config

        name = target(topic, world.spec.roles.quiet_topic, "quiet topic")
        partitions = world.topic_spec(name).partitions
        self._stop = threading.Event()
        self._clients: list[Consumer] = []
        for i in range(consumers):
            conf = {
                **base_config(world.bootstrap, f"fetch-purgatory-{i}"),
                "group.id": f"lagwatch-lab-fetch-purgatory-{i}",
                "enable.auto.commit": False,
                "fetch.min.bytes": self.MIN_BYTES,
                "fetch.wait.max.ms": self.MAX_WAIT_MS,
                # librdkafka refuses a socket timeout below the fetch wait.
                "socket.timeout.ms": self.MAX_WAIT_MS + 30_000,
            }
            client = Consumer(conf)
            client.assign([TopicPartition(name, p, OFFSET_END) for p in range(partitions)])
            self._clients.append(client)
        self._thread = threading.Thread(target=self._poll, name="fetch-purgatory", daemon=True)
        self._thread.start()
        return {"topic": name, "consumers": consumers, "fetch.min.bytes": self.MIN_BYTES,
                "fetch.wait.max.ms": self.MAX_WAIT_MS}  # fmt: skip

    def _poll(self) -> None:
        # poll() only hands over messages: librdkafka's fetcher thread keeps one fetch
        # outstanding per broker whatever the poll rate; polling keeps the clients serviced.
        while not self._stop.is_set():
            for client in self._clients:
                client.poll(0.1)

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._stop.set()
        self._thread.join(timeout=30)
        for client in self._clients:
            client.close()
        self._clients = []


class SourceOutage(Scenario):
    """Stops ZooKeeper or the broker for `seconds`, then starts it again on the same port
    (through the lab stack). During the outage Lagwatch must show SOURCE_UNREACHABLE for
    what that source feeds, keep the last known figures marked stale, and fire no stuck
    alert. The workload rides through: clients reconnect, ZooKeeper members register again.
    Both keep their data: after a broker outage the topics, their records and the groups'
    committed offsets are all there, Kafka groups of both protocols carry on from their
    committed offsets, spouts and the ZooKeeper consumer from theirs; only records the
    producers gave up on during the outage (after 30 s) are missing."""

    name = "source-outage"
    params = (
        Param(
            "service",
            str,
            "service to stop",
            required=True,
            choices=("zookeeper", "kafka"),
        ),
        Param("seconds", float, "outage length", default=30.0, minimum=0),
    )

    def start(self, world: World, service: str = "kafka", seconds: float = 30.0) -> dict:
        if world.run_dir is None:
            raise ScenarioError("the workload was started without --run-dir: no stack to drive")
        from lab.stack import Stack, StackError  # only this scenario needs the stack

        self._service = service
        self._cancel = threading.Event()
        self._done = threading.Event()
        self.restarted_at: float | None = None
        try:
            self._stack = Stack.load(world.run_dir)
            self._stack.stop_service(service)
        except StackError as exc:
            raise ScenarioError(f"cannot stop {service}: {exc}") from exc
        self.stopped_at = time.time()
        log.info("source-outage: %s stopped for %.0fs", service, seconds)
        self._thread = threading.Thread(
            target=self._restart_after, args=(seconds,), name="source-outage", daemon=True
        )
        self._thread.start()
        return {"service": service, "seconds": seconds, "stopped_at": self.stopped_at}

    def _restart_after(self, seconds: float) -> None:
        self._cancel.wait(seconds)
        try:
            self._stack.start_service(self._service)
            self.restarted_at = time.time()
            log.info("source-outage: %s started again", self._service)
        except Exception:  # noqa: BLE001 - a drill must not kill the workload
            log.exception("source-outage: restarting %s failed", self._service)
        finally:
            self._done.set()

    def running(self) -> bool:
        return not self._done.is_set()

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._cancel.set()
        self._thread.join(timeout=60)


class ProducerExpiry(Scenario):
    """Pauses the broker (SIGSTOP, then SIGCONT: lab only) longer than a small
    `delivery.timeout.ms` while a short-lived producer of its own (`lab-expiry-producer`)
    writes `count` records to `topic`, so every one of them expires before the broker
    acknowledges it. The producer counts its delivery reports with lagwatch_client's
    ``DeliveryCounts`` and pushes them with its statistics: Lagwatch shows "N records expired
    before reaching the broker: no consumer will ever see them" on the producers page and on
    the topic's groups, the diagnosis PRODUCER_EXPIRY on the topic, and the count in the API
    and /metrics; lag alone shows nothing (the records never reached the log). The result
    states the records produced during the pause and the `_MSG_TIMED_OUT` reports the producer
    saw. Pausing the broker stalls every client of the stack for the pause: run it where that
    does no harm."""

    name = "producer-expiry"
    params = (
        Param("topic", str, "topic to write (default: the world's expiry topic)"),
        Param("count", int, "records produced while the broker is paused", default=50, minimum=1),
        Param("timeout_ms", int, "delivery.timeout.ms", default=3000, minimum=1000),
    )
    CLIENT_ID = "lab-expiry-producer"
    WARMUP = 20  # delivered before the pause: the producer knows the topic's leader
    AFTER = 10  # delivered after it: the broker is back

    def start(
        self, world: World, topic: str | None = None, count: int = 50, timeout_ms: int = 3000
    ) -> dict:
        if world.run_dir is None:
            raise ScenarioError("the workload was started without --run-dir: no broker to pause")
        from lab.stack import Stack, StackError  # only the outage scenarios need the stack

        name = target(topic, world.spec.roles.expiry_topic, "expiry topic")
        partitions = world.spec.topic(name).partitions
        run = _ExpiryRun(world, name, partitions, timeout_ms)
        try:
            run.produce(self.WARMUP)
            if run.flush(60) or run.delivered < self.WARMUP:
                raise ScenarioError(f"the warm-up records were not delivered: {run.summary()}")
            stack = Stack.load(world.run_dir)
            paused_at = time.monotonic()
            stack.pause_service("kafka")
            try:
                run.produce(count)
                # Every record produced during the pause gets its delivery report: an expiry.
                run.wait_reports(self.WARMUP + count, timeout_s=timeout_ms / 1000 * 5 + 30)
            finally:
                stack.pause_service("kafka", paused=False)
            paused_s = time.monotonic() - paused_at
            run.produce(self.AFTER)
            run.flush(120)
            run.push_final(timeout_s=30)
        except StackError as exc:
            raise ScenarioError(f"cannot pause the broker: {exc}") from exc
        finally:
            run.close()
        log.info("producer-expiry: %s", run.summary())
        return {
            "topic": name,
            "client_id": self.CLIENT_ID,
            "timeout_ms": timeout_ms,
            "paused_s": round(paused_s, 1),
            "produced_during_pause": count,
            **run.summary(),
        }

    def running(self) -> bool:
        return False  # done when start returns: the expired records stay counted


class _ExpiryRun:
    """The producer-expiry scenario's own producer: its delivery reports counted twice, by the
    client package that pushes them (``DeliveryCounts``) and here, so the test compares the ingest's
    figure with what the producer saw."""

    def __init__(self, world: World, topic: str, partitions: int, timeout_ms: int) -> None:
        from confluent_kafka import KafkaError, Producer
        from lagwatch_client import DeliveryCounts, StatsForwarder

        from lab.workload.clients import base_config

        self._timed_out_code = KafkaError._MSG_TIMED_OUT
        self.topic = topic
        self.partitions = partitions
        self.deliveries = DeliveryCounts()
        self.reports = self.delivered = self.timed_out = self.failed_other = 0
        self.sent = 0
        self._pushed_after: int | None = None
        self._stats_seen = 0
        self._lock = threading.Lock()
        ingest = self._ingest = world.ingest
        conf = base_config(world.bootstrap, ProducerExpiry.CLIENT_ID)
        conf.update(
            {
                "message.timeout.ms": timeout_ms,  # librdkafka's name for delivery.timeout.ms
                "linger.ms": 5,
                "statistics.interval.ms": 1000,
            }
        )
        if ingest is not None:
            forward = StatsForwarder(ingest, deliveries=self.deliveries)
            conf["stats_cb"] = lambda stats: self._stats(forward, stats)
        self.pushing = ingest is not None
        self._producer = Producer(conf)

    def _stats(self, forward: Any, stats: str) -> None:
        forward(stats)
        with self._lock:
            self._stats_seen += 1

    def _report(self, err: Any, msg: Any) -> None:
        self.deliveries.on_delivery(err, msg)
        with self._lock:
            self.reports += 1
            if err is None:
                self.delivered += 1
            elif err.code() == self._timed_out_code:
                self.timed_out += 1
            else:
                self.failed_other += 1

    def produce(self, count: int) -> None:
        for _ in range(count):
            value = f'{{"seq": {self.sent}, "ts_ms": {int(time.time() * 1000)}}}'.encode()
            self._producer.produce(
                self.topic, value=value, partition=self.sent % self.partitions,
                on_delivery=self._report,
            )  # fmt: skip
            self.sent += 1
        self._producer.poll(0)

    def flush(self, timeout_s: float) -> int:
        return self._producer.flush(timeout_s)

    def wait_reports(self, total: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.reports < total:
            if time.monotonic() > deadline:
                raise ScenarioError(f"delivery reports missing after {timeout_s:.0f}s: "
                                    f"{self.summary()}")  # fmt: skip
            self._producer.poll(0.2)

    def push_final(self, timeout_s: float) -> None:
        """Poll until librdkafka has handed over two statistics documents after the last
        delivery report (the first may have been cut before it), then have the sender post
        them with the counts at once."""
        if self._ingest is None:
            return
        with self._lock:
            wanted = self._stats_seen + 2
        deadline = time.monotonic() + timeout_s
        while self._stats_seen < wanted and time.monotonic() < deadline:
            self._producer.poll(0.2)
        self._ingest.flush(max(1.0, deadline - time.monotonic()))

    def summary(self) -> dict[str, int]:
        with self._lock:
            return {
                "sent": self.sent,
                "delivered": self.delivered,
                "timed_out": self.timed_out,
                "failed_other": self.failed_other,
            }

    def close(self) -> None:
        self._producer.flush(5)

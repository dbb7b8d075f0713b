"""Steady producers, one scheduling thread for all topics, with rates adjustable at run time."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaError, Producer
from lagwatch_client import DeliveryCounts, IngestSender, StatsForwarder

from lab.workload.clients import base_config
from lab.workload.spec import TopicSpec

log = logging.getLogger(__name__)


@dataclass
class _TopicState:
    name: str
    partitions: int
    rate: float
    next_due: float = 0.0
    seq: int = 0
    sent: int = 0
    delivered: int = 0
    failed: int = 0
    dropped: int = 0


class Producers:
    """Writes each topic at its rate, spreading records round-robin over the partitions.

    Partitions are chosen explicitly so every partition advances at the same pace and the
    lag a scenario causes is easy to reason about per partition.
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Iterable[TopicSpec],
        ingest: IngestSender | None = None,
        statistics_interval_ms: int = 5000,
    ) -> None:
        conf = base_config(bootstrap, "lab-workload-producer")
        # Delivery-report counts (lagwatch_client, docs/INGEST.md): the expired records
        # librdkafka's statistics do not count (DOMAIN §4).
        self.deliveries = DeliveryCounts()
        if ingest is not None:
            # Producer statistics carry queued and in-flight records; with the counts attached
            # they go to the same ingest endpoint as the consumers'.
            conf.update(
                {
                    "statistics.interval.ms": statistics_interval_ms,
                    "stats_cb": StatsForwarder(ingest, deliveries=self.deliveries),
                }
            )
        conf.update(
            {
                # Bounded queue and timeout so an outage costs dropped records, not memory.
                "queue.buffering.max.messages": 20000,
                "message.timeout.ms": 30000,
                # One ProduceRequest a partition a second, not one a record (librdkafka sends
                # a partition per request): a third of the broker's CPU in a lab stack
                # (docs/LAB.md, "Findings").
                "linger.ms": 1000,
            }
        )
        self._producer = Producer(conf)
        self._topics = {t.name: _TopicState(t.name, t.partitions, t.rate) for t in topics}
        self._lock = threading.Lock()  # guards rates
        self._send_lock = threading.Lock()  # guards sequence numbers and counters
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="producers", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, flush_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._producer.flush(flush_s)

    def set_rate(self, topic: str, rate: float) -> float:
        """Set a topic's rate in messages/s; return the previous one."""
        if rate < 0:
            raise ValueError("rate must be >= 0")
        with self._lock:
            state = self._topics[topic]
            previous, state.rate = state.rate, rate
            state.next_due = 0.0
        return previous

    def rate(self, topic: str) -> float:
        with self._lock:
            return self._topics[topic].rate

    def produce_now(self, topic: str, count: int) -> None:
        """Write `count` records at once (a burst), outside the steady rate."""
        state = self._topics[topic]
        for _ in range(count):
            self._send(state)
        # Delivered when this returns (callers read the high watermarks next): under the test
        # suite's load a 10-s flush returned with records still queued (the producer lingers
        # 1 s per batch).
        left = self._producer.flush(120)
        if left:
            raise RuntimeError(f"{left} of {count} records to {topic} not delivered in 120 s")

    def status(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {
                s.name: {
                    "rate": s.rate,
                    "sent": s.sent,
                    "delivered": s.delivered,
                    "failed": s.failed,
                    "dropped": s.dropped,
                }
                for s in self._topics.values()
            }

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            wait = 0.2
            # Sending under the rate lock means that once set_rate(t, 0) returns, nothing
            # more is sent to t: a scenario can flush and then act on a quiet topic.
            with self._lock:
                for state in self._topics.values():
                    if state.rate <= 0:
                        continue
                    if state.next_due == 0.0:
                        state.next_due = now
                    # Catch up at most a second's worth so a stall does not end in a burst.
                    state.next_due = max(state.next_due, now - 1.0)
                    while state.next_due <= now:
                        self._send(state)
                        state.next_due += 1.0 / state.rate
                    wait = min(wait, state.next_due - now)
            self._producer.poll(0)
            self._stop.wait(max(wait, 0.001))

    def flush(self, timeout_s: float = 10.0) -> int:
        """Wait for queued records to be delivered; return how many are still queued."""
        return self._producer.flush(timeout_s)

    def _send(self, state: _TopicState) -> None:
        with self._send_lock:
            self._send_locked(state)

    def _send_locked(self, state: _TopicState) -> None:
        partition = state.seq % state.partitions
        value = json.dumps({"seq": state.seq, "ts_ms": int(time.time() * 1000)})
        state.seq += 1

        def delivered(err: KafkaError | None, msg: object) -> None:
            self.deliveries.on_delivery(err, msg)
            if err is None:
                state.delivered += 1
            else:
                state.failed += 1
                log.debug("delivery to %s failed: %s", state.name, err)

        try:
            self._producer.produce(
                state.name,
                value=value.encode(),
                key=str(state.seq).encode(),
                partition=partition,
                on_delivery=delivered,
            )
            state.sent += 1
        except BufferError:
            state.dropped += 1
            self._producer.poll(0)

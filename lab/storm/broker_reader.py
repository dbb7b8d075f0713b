"""The simulated spout's reads of the broker: fetch-by-offset over one librdkafka consumer, and
the log limiter that keeps an outage from flooding the logs (see :mod:`lab.storm.spout`)."""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from lab.storm.partition_manager import Message, OffsetOutOfRangeError
from lab.workload.clients import FetchWatchdog, base_config, lagging, reassigned

log = logging.getLogger(__name__)

_OUT_OF_RANGE_CODES = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}
_WAIT_BACKOFF_S = 5.0
_FETCH_WAIT_S = 1.0
_BROKER_TIMEOUT_S = 5.0


class LogLimiter:
    """One line per kind of trouble every few seconds: outages must not flood the logs."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self._interval_s = interval_s
        self._last: dict[str, float] = {}

    def __call__(self, key: str, level: int, msg: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last.get(key, -1e9) >= self._interval_s:
            self._last[key] = now
            log.log(level, msg, *args)


@dataclass
class _Buffer:
    position: int
    messages: deque[Message] = field(default_factory=deque)
    out_of_range: bool = False
    paused: bool = False
    known_end: int = 0  # one past the highest offset seen: below it, data is known to exist
    no_wait_until: float = 0.0  # after a wait came back empty (broker down): don't block again


class BrokerReader:
    """Fetch-by-offset on top of one consumer that has every partition of the spout assigned.

    storm-kafka issues one FetchRequest per fill; with librdkafka we keep the consumer's
    prefetch running and serve fills from per-partition buffers, seeking only when a fill asks
    for an offset that is not next in line (a retry, or a jump after out of range).
    """

    def __init__(self, bootstrap: str, topic: str, client_id: str, say: LogLimiter) -> None:
        conf = base_config(bootstrap, client_id)
        conf.update(
            {
                # The client insists on a group id even for assign(); it never joins the group
                # nor commits to it, so the broker never lists it.
                "group.id": f"lagwatch-storm-sim-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                # The broker answers OFFSET_OUT_OF_RANGE for an offset below the log start
                # (retention) or past the log end (a re-created topic). "error" hands that to
                # us (_AUTO_OFFSET_RESET) instead of resetting silently, so the
                # PartitionManager decides what happens, as storm-kafka's fetch does.
                "auto.offset.reset": "error",
                "enable.partition.eof": False,
                # At the log end a fetch waits this long for records (storm-kafka waits 10 s):
                # 100 ms made the three spouts a sixth of the lab broker's requests.
                "fetch.wait.max.ms": 500,
                "queued.max.messages.kbytes": 4096,
            }
        )
        self.topic = topic
        self._conf = conf
        self._client_id = client_id
        self._consumer = Consumer(conf)
        self._buffers: dict[int, _Buffer] = {}
        self._say = say
        self.buffer_cap = 5000
        self.watchdog = FetchWatchdog(bootstrap)

    def close(self) -> None:
        self._consumer.close()

    def partitions_and_leaders(self) -> dict[int, tuple[str, int]]:
        """Partition -> leader (host, port), the broker storm-kafka names in its JSON."""
        md = self._consumer.list_topics(self.topic, timeout=_BROKER_TIMEOUT_S)
        tmd = md.topics.get(self.topic)
        if tmd is None or tmd.error is not None:
            raise KafkaException(tmd.error if tmd is not None else "no metadata")
        out: dict[int, tuple[str, int]] = {}
        for p, pmd in tmd.partitions.items():
            broker = md.brokers.get(pmd.leader)
            out[p] = (broker.host, broker.port) if broker is not None else ("", -1)
        return out

    def watermarks(self, partition: int, timeout: float = _BROKER_TIMEOUT_S) -> tuple[int, int]:
        result = self._consumer.get_watermark_offsets(
            TopicPartition(self.topic, partition), timeout=timeout
        )
        if result is None:
            raise KafkaException(f"watermarks of {self.topic}[{partition}] timed out")
        low, high = result
        return int(low), int(high)

    def assign(self, positions: dict[int, int]) -> None:
        self._buffers = {p: _Buffer(position=o) for p, o in positions.items()}
        self._consumer.assign([TopicPartition(self.topic, p, o) for p, o in positions.items()])
        # A re-assignment after a simulated worker restart must not inherit a paused partition.
        self._consumer.resume([TopicPartition(self.topic, p) for p in positions])

    def _seek(self, partition: int, offset: int) -> None:
        buf = self._buffers[partition]
        buf.messages.clear()
        buf.position = offset
        buf.out_of_range = False
        tp = TopicPartition(self.topic, partition, offset)
        if buf.paused:
            self._consumer.resume([TopicPartition(self.topic, partition)])
            buf.paused = False
        try:
            self._consumer.seek(tp)
        except KafkaException:
            # A partition in an error state refuses seek(); re-assigning it always works.
            self._consumer.incremental_unassign([TopicPartition(self.topic, partition)])
            self._consumer.incremental_assign([tp])

    def poll(self, timeout: float) -> int:
        """Wait up to ``timeout`` for messages, then take whatever else is already there."""
        first = self._consumer.poll(timeout)
        if first is None:
            return 0
        return self._dispatch([first]) + self._dispatch(self._consumer.consume(1000, 0))

    def _dispatch(self, msgs: Sequence[Any]) -> int:
        taken = 0
        for m in msgs:
            err = m.error()
            p = m.partition()
            buf = self._buffers.get(p) if p is not None else None
            if err is not None:
                if buf is not None and err.code() in _OUT_OF_RANGE_CODES:
                    # About the offset the buffer waits at, unless a seek came after it.
                    failed_at = m.offset()
                    if failed_at is None or failed_at < 0 or failed_at == buf.position:
                        buf.out_of_range = True
                else:
                    self._say(f"consume:{err.code()}", logging.WARNING, "consumer: %s", err)
                continue
            if buf is None or m.offset() < buf.position:
                continue  # stale: fetched before the last seek
            self.watchdog.progress()
            buf.messages.append((m.offset(), m.value()))
            buf.position = m.offset() + 1
            buf.known_end = max(buf.known_end, buf.position)
            taken += 1
            if len(buf.messages) >= self.buffer_cap and not buf.paused:
                self._consumer.pause([TopicPartition(self.topic, p)])
                buf.paused = True
        return taken

    def replace_if_stuck(self) -> bool:
        """Records wait past every empty buffer's position and this consumer has fetched
        none for the watchdog's span: go on with a new consumer from the same positions
        (docs/LAB.md). True if it did."""
        if not self.watchdog.due():
            return False
        waiting = {
            p: buf.position
            for p, buf in self._buffers.items()
            if not buf.messages and not buf.paused
        }
        if not waiting or not lagging(self._consumer, self.topic, waiting):
            return False
        self.watchdog.abandon(self._consumer, self._client_id)
        positions = {p: buf.position for p, buf in self._buffers.items()}
        self._consumer = reassigned(self.topic, positions, self._conf)
        for buf in self._buffers.values():
            buf.paused = False
        return True

    def fetch(self, partition: int, offset: int, max_messages: int) -> list[Message]:
        """storm-kafka's ``fetchMessages``: an empty list means "nothing there yet".

        Like a FetchRequest it waits (briefly) only for data known to exist, e.g. a failed
        offset being retried; at the log end it returns at once.
        """
        buf = self._buffers[partition]
        first = buf.messages[0][0] if buf.messages else buf.position
        if not first <= offset <= buf.position:
            self._seek(partition, offset)
        while buf.messages and buf.messages[0][0] < offset:
            buf.messages.popleft()
        if not buf.messages:
            self._dispatch(self._consumer.consume(1000, 0))
        now = time.monotonic()
        if not buf.messages and offset < buf.known_end and now >= buf.no_wait_until:
            deadline = now + _FETCH_WAIT_S
            while not buf.messages and not buf.out_of_range:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    buf.no_wait_until = time.monotonic() + _WAIT_BACKOFF_S
                    break
                self.poll(remaining)
        if buf.out_of_range:
            buf.out_of_range = False
            raise OffsetOutOfRangeError(offset)
        if not buf.messages:
            return []
        out = [buf.messages.popleft() for _ in range(min(max_messages, len(buf.messages)))]
        if buf.paused and len(buf.messages) < self.buffer_cap // 2:
            self._consumer.resume([TopicPartition(self.topic, partition)])
            buf.paused = False
        return out

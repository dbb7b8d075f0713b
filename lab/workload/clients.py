"""Client settings shared by every librdkafka instance the workload creates.

The workload must ride through broker outages (the source-outage scenario), so reconnects are
backed off and librdkafka's log lines go through Python logging with repeats suppressed;
otherwise a stopped broker produces hundreds of identical "Connection refused" lines a second.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

LIBRDKAFKA_LOG = logging.getLogger("lab.workload.librdkafka")


class RepeatFilter(logging.Filter):
    """Let an identical message through at most once per `interval_s`."""

    def __init__(self, interval_s: float = 30.0) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        # librdkafka lines carry a timestamp-free "FAC [thrd:...]: text"; key on the text
        # without the instance name so N clients failing alike log once.
        text = record.getMessage()
        key = text.split("]: ", 1)[-1]
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(key, -self._interval_s - 1) < self._interval_s:
                return False
            self._last[key] = now
            if len(self._last) > 1000:
                self._last.clear()
        return True


LIBRDKAFKA_LOG.addFilter(RepeatFilter())


def base_config(bootstrap: str, client_id: str) -> dict[str, object]:
    """Settings every producer, consumer and admin client shares."""
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "logger": LIBRDKAFKA_LOG,
        "reconnect.backoff.ms": 500,
        "reconnect.backoff.max.ms": 5000,
        # A topic created while a client already waits for it (a test's, or one the topic
        # keeper put back) must be found in seconds, not after the default five minutes.
        "topic.metadata.refresh.interval.ms": 2000,
        # Topics are created with their declared partition counts by the world (the lab
        # broker's auto-create is off too): a client's first use must never create one.
        "allow.auto.create.topics": False,
    }


def leave_group(consumer: Consumer, limit_s: float = 10.0, settle_s: float = 0.3) -> None:
    """Unsubscribe and serve the revocation in ``poll`` (until librdkafka holds no assignment,
    ``settle_s`` at least, ``limit_s`` at most), so that a following ``close()`` has nothing
    left to revoke.

    A rebalance callback run inside ``close()`` makes confluent-kafka ask librdkafka for the
    rebalance protocol with the GIL held, and once the close has begun that request can wait
    for ever (librdkafka #4041): every thread of the process freezes (a fresh-clone run hung
    at 98 %; docs/LAB.md). Served in ``poll``, the same callback returns. Records a last poll
    returns are dropped: they were not processed, so not committed either. A consumer that
    cannot leave (an error, or already closed) is logged and left to its close: leaving is a
    precaution, and a test's own failure must not be hidden behind it.
    """
    try:
        consumer.unsubscribe()
        deadline = time.monotonic() + limit_s
        settled = time.monotonic() + settle_s
        while time.monotonic() < deadline:
            consumer.poll(0.1)
            if not consumer.assignment() and time.monotonic() >= settled:
                return
    except (KafkaException, RuntimeError) as exc:  # RuntimeError: already closed
        LIBRDKAFKA_LOG.warning("could not leave the group before closing: %s", exc)


def leave_and_close(consumer: Consumer) -> None:
    """``close()`` a subscribed consumer without the hang ``leave_group`` explains."""
    leave_group(consumer)
    consumer.close()


def broker_listening(bootstrap: str, timeout_s: float = 1.0) -> bool:
    """True if some bootstrap address accepts a TCP connection (the broker process is up)."""
    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return True
        except (OSError, ValueError):
            continue
    return False


def lagging(
    consumer: Consumer, topic: str, positions: Mapping[int, int | None], timeout_s: float = 5.0
) -> bool:
    """True if a partition has records past the offset its owner reads next, or the consumer
    cannot even answer for its watermarks (a stuck client answers nothing).

    ``positions``: partition -> the next offset the owner reads; None where it does not know
    (nothing read since the assignment): then the consumer's position, else its committed
    offset, stands in.
    """
    try:
        unknown = [TopicPartition(topic, p) for p, o in positions.items() if o is None]
        if unknown:
            known = {tp.partition: tp.offset for tp in consumer.position(unknown)}
            if any(o < 0 for o in known.values()):
                stored = consumer.committed(unknown, timeout=timeout_s)
                known.update({tp.partition: tp.offset for tp in stored if known[tp.partition] < 0})
            positions = {**positions, **known}
        for partition, position in positions.items():
            marks = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout_s, cached=False
            )
            if marks is None:
                return True
            if marks[1] > max(position or 0, marks[0]):
                return True
    except Exception:  # a KafkaException, or a client in an error state
        return True
    return False


class FetchWatchdog:
    """Notices a librdkafka consumer that stopped fetching for good.

    On these machines a consumer that lived through a broker restart sometimes never fetches
    again (an ``assign()`` reader; a classic group member that lost its partitions on a session
    timeout and never rejoined: docs/LAB.md). A real deployment's supervisor restarts such a
    process; the lab's long-lived consumers do the same to themselves: the owner marks
    progress (a record, or an idle state it knows is right) and asks ``due()`` on each turn;
    once nothing moved for ``limit_s`` while the broker accepts connections, it checks
    whether records wait (``lagging``) and, if so, recreates its consumer.
    """

    def __init__(
        self,
        bootstrap: str,
        limit_s: float = 40.0,
        settle_s: float = 15.0,
        probe_every_s: float = 5.0,
    ) -> None:
        self._bootstrap = bootstrap
        self.limit_s = limit_s
        self._probe_every_s = probe_every_s
        # A client needs a while to reconnect and rejoin after the broker's return: only one
        # that the broker has been up for this long without moving counts as stuck.
        self.settle_s = settle_s
        self._last = time.monotonic()
        self._next_probe = 0.0
        self._up_since: float | None = None
        self.restarts = 0

    def progress(self) -> None:
        self._last = time.monotonic()

    def due(self) -> bool:
        """Nothing moved for ``limit_s`` and the broker has been up for ``settle_s``. Re-armed
        when True, so the caller's (slow) check runs at most once per ``limit_s``; the broker
        is probed at most every ``probe_every_s``."""
        now = time.monotonic()
        if now - self._last < self.limit_s or now < self._next_probe:
            return False
        self._next_probe = now + self._probe_every_s
        if not broker_listening(self._bootstrap):
            self._up_since = None
            return False
        if self._up_since is None:
            self._up_since = now
        if now - self._up_since < self.settle_s:
            return False
        self._last = now
        return True

    def abandon(self, consumer: Consumer, who: str) -> None:
        """Give up on a stuck consumer: say so, and close it without waiting (a stuck client's
        close() may block); the caller goes on with a new one."""
        self.restarts += 1
        LIBRDKAFKA_LOG.warning(
            "%s fetched nothing for %.0fs with records waiting and the broker up: "
            "recreating its consumer (lab watchdog, docs/LAB.md)",
            who,
            self.limit_s,
        )

        def close() -> None:
            try:
                consumer.close()
            except Exception:  # abandoned anyway
                LIBRDKAFKA_LOG.debug("closing the consumer of %s failed", who, exc_info=True)

        threading.Thread(target=close, name=f"close-{who}", daemon=True).start()


def reassigned(topic: str, positions: dict[int, int], conf: dict[str, object]) -> Consumer:
    """A new ``assign()`` consumer reading ``topic`` from ``positions``: the replacement of
    an abandoned one."""
    consumer = Consumer(conf)
    consumer.assign([TopicPartition(topic, p, o) for p, o in positions.items()])
    return consumer

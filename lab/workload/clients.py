"""Client settings shared by every librdkafka instance the workload creates.

The workload must ride through broker outages (the source-outage scenario), so reconnects are
backed off and librdkafka's log lines go through Python logging with repeats suppressed;
otherwise a stopped broker produces hundreds of identical "Connection refused" lines a second.
"""

from __future__ import annotations

import logging
import threading
import time

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

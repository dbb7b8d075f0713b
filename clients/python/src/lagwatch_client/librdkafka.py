"""librdkafka's statistics to Lagwatch (docs/INGEST.md, "librdkafka statistics"), and a
producer's delivery-report counts with them ("Producers: delivery-report counts").

librdkafka calls the ``stats_cb`` from inside ``poll()``: ``StatsForwarder`` only hands the
document to the ``IngestSender`` and returns. A producer's counts are attached in the
sender's thread, just before the document is sent, so the poll thread parses nothing.
"""

from __future__ import annotations

import json
import re
import threading
import uuid

from lagwatch_client.sender import LIBRDKAFKA, IngestSender

# librdkafka writes the instance name first ({ "name": "billing-1#consumer-1", ...}): read
# from the head of the document, without parsing it, to key the client's latest document.
_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_NAME_WITHIN = 512

# The statistics document's extra key Lagwatch reads the counts from (librdkafka never
# writes it; Lagwatch ignores it on a consumer's document).
DELIVERIES_KEY = "lagwatch_deliveries"


class DeliveryCounts:
    """Counts a producer's delivery reports per topic and partition for Lagwatch's ingest.

    librdkafka's statistics count no expired records (a batch not acknowledged within
    ``message.timeout.ms`` gets ``_MSG_TIMED_OUT`` delivery reports and never reaches the
    log): the producer counts its own reports and pushes them inside its statistics.
    """

    def __init__(self, instance: str | None = None) -> None:
        # One id per producer instance: a new one tells Lagwatch the client restarted.
        self.instance = instance or uuid.uuid4().hex
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, int], dict] = {}

    def on_delivery(self, err, msg) -> None:  # noqa: ANN001 - confluent_kafka's callback
        """Pass as the producer's ``on_delivery`` (or call it from your own callback)."""
        key = (msg.topic(), msg.partition())  # partition -1: expired before partitioning
        with self._lock:
            entry = self._counts.setdefault(key, {"delivered": 0, "failed": {}})
            if err is None:
                entry["delivered"] += 1
            else:  # err.name(): "_MSG_TIMED_OUT" for a record expired by its timeout
                entry["failed"][err.name()] = entry["failed"].get(err.name(), 0) + 1

    def block(self) -> dict:
        """The ``lagwatch_deliveries`` block: the counts since this instance started."""
        with self._lock:
            return {
                "instance": self.instance,
                "counts": [
                    {"topic": t, "partition": p, "delivered": e["delivered"],
                     "failed": dict(e["failed"])}
                    for (t, p), e in self._counts.items()
                ],
            }  # fmt: skip

    def attach(self, stats_json: str) -> str:
        """The statistics document with the counts added under ``lagwatch_deliveries``."""
        doc = json.loads(stats_json)
        doc[DELIVERIES_KEY] = self.block()
        return json.dumps(doc)


class StatsForwarder:
    """A librdkafka ``stats_cb`` that forwards each statistics document to Lagwatch.

    For a consumer, name its group (librdkafka's document does not carry ``group.id``)::

        Consumer({..., "statistics.interval.ms": 5000,
                  "stats_cb": StatsForwarder(sender, group="billing")})

    For a producer, count its delivery reports too::

        stats = StatsForwarder(sender, deliveries=DeliveryCounts())
        Producer({..., "statistics.interval.ms": 5000,
                  "on_delivery": stats.deliveries.on_delivery, "stats_cb": stats})

    ``host`` declares the client's host when the push passes a proxy or NAT (Lagwatch
    otherwise takes the address the push came from).
    """

    def __init__(
        self,
        sender: IngestSender,
        *,
        group: str | None = None,
        host: str | None = None,
        deliveries: DeliveryCounts | None = None,
    ) -> None:
        self.sender = sender
        self.group = group
        self.deliveries = deliveries
        self._query = {k: v for k, v in (("group", group), ("host", host)) if v}
        self._fallback_key = f"forwarder-{uuid.uuid4().hex}"
        self.forwarded = 0
        self.dropped = 0

    def __call__(self, stats_json: str) -> None:
        """librdkafka's ``stats_cb``: queue the document and return at once."""
        match = _NAME.search(stats_json, 0, _NAME_WITHIN)
        key = match.group(1) if match else self._fallback_key
        prepare = self.deliveries.attach if self.deliveries is not None else None
        if self.sender.submit(LIBRDKAFKA, stats_json, key=key, query=self._query,
                              prepare=prepare):  # fmt: skip
            self.forwarded += 1
        else:
            self.dropped += 1

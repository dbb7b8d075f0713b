"""The client snippet of docs/INGEST.md ("Delivery-report counts"): a producer counts its own
delivery reports and pushes the counts with its statistics, because librdkafka's statistics
count no expired records (DOMAIN §4). The lab's producers use exactly this class; users copy
it (the part between the markers is the snippet, and a test keeps the doc's copy identical).
"""

# --- snippet: begin ---
import json
import threading
import uuid


class DeliveryCounts:
    """Counts a producer's delivery reports per topic and partition for Lagwatch's ingest."""

    def __init__(self) -> None:
        self.instance = uuid.uuid4().hex  # one id per producer: Lagwatch sees a restart
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

    def attach(self, stats_json: str) -> str:
        """The statistics document with the counts added: push this instead."""
        doc = json.loads(stats_json)
        with self._lock:
            doc["lagwatch_deliveries"] = {
                "instance": self.instance,
                "counts": [
                    {"topic": t, "partition": p, "delivered": e["delivered"],
                     "failed": dict(e["failed"])}
                    for (t, p), e in self._counts.items()
                ],
            }  # fmt: skip
        return json.dumps(doc)


# --- snippet: end ---

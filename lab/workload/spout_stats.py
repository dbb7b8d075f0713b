"""Pushes the simulated spouts' per-partition figures to Lagwatch's ingest endpoint.

Storm UI's REST API gives only whole-spout counts; per-partition pending and failed counts
and the smallest failed offset exist only inside the spout, which is why a real topology
would push them (SPEC §2.3, format in docs/INGEST.md). Here one thread samples every spout's
published snapshot (`KafkaSpoutSim.stats()`, a copy under a lock, so a spout never waits)
and hands the documents to a queue-and-drop `IngestPoster`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from lab.storm.spout import KafkaSpoutSim
from lab.workload.stats import IngestPoster

log = logging.getLogger(__name__)


def spout_report(spout: KafkaSpoutSim, time_ms: int | None = None) -> dict[str, Any] | None:
    """The push document for one spout, or None before it has partitions to report.

    ``pending`` is storm-kafka's per-partition pending set (emitted, not yet acked,
    failed-and-waiting included), the figure ``max_offset_behind`` and commits depend on;
    emitted/acked/failed are what the executor saw, as Storm UI counts them. The top-level
    ``pending`` is the spout task's tuples in flight, what ``max_spout_pending`` caps: the
    figure BACKPRESSURE compares with the cap (a leaked offset stays in a partition's pending
    set, but its tuple is long gone from the task).
    """
    stats = spout.stats()
    if not stats.partitions:
        return None
    return {
        "topology_id": spout.topology_id,
        "spout_id": spout.spout_id,
        "topology_name": spout.topology_name,
        "time_ms": time_ms if time_ms is not None else int(time.time() * 1000),
        "max_spout_pending": stats.max_spout_pending,
        "pending": stats.pending,
        "max_offset_behind": spout.pm_config.max_offset_behind,
        "partitions": [
            {
                "topic": spout.topic,
                "partition": p.partition,
                "pending": p.manager.pending,
                "failed": p.failed,
                "acked": p.acked,
                "emitted": p.emitted,
                "smallest_failed_offset": p.manager.smallest_failed,
            }
            for p in stats.partitions
        ],
    }


class SpoutStatsPoster:
    """Every ``interval_s``, one document per running spout to ``<ingest>/spout``."""

    def __init__(
        self,
        ingest_url: str,
        token: str | None,
        spouts: Callable[[], list[KafkaSpoutSim]],
        interval_s: float = 5.0,
        max_queue: int = 200,
        timeout_s: float = 5.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._poster = IngestPoster(
            ingest_url.rstrip("/") + "/spout", token, max_queue, timeout_s, "spout-stats-poster",
            headers,
        )  # fmt: skip
        self._spouts = spouts
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spout-stats", daemon=True)
        self.sampled = 0

    @property
    def url(self) -> str:
        return self._poster.url

    def start(self) -> None:
        self._poster.start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._interval_s + 1)
        self._poster.stop()

    def status(self) -> dict[str, object]:
        return {**self._poster.status(), "sampled": self.sampled}

    def sample_once(self) -> int:
        """Queue one document per spout that has partitions; returns how many."""
        queued = 0
        for spout in self._spouts():
            doc = spout_report(spout)
            if doc is not None:
                self._poster.enqueue(json.dumps(doc))
                queued += 1
        self.sampled += queued
        return queued

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.sample_once()
            except Exception:  # a sampling bug must not end the pushes for good
                log.exception("sampling spout figures failed")

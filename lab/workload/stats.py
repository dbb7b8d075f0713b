"""Pushes librdkafka statistics to Lagwatch's ingest endpoint.

The broker describes a group's members and assignments, but only the clients know the rest:
per-partition fetch state and lag as the consumer sees it, rebalance counts and reasons, a
producer's queued and in-flight records; and a group caught mid-rebalance may have no
assignment to describe. So the workload's clients push their statistics as extra evidence,
as a production deployment would (docs/INGEST.md). librdkafka calls `stats_cb` inside
`poll()`: the callback must only enqueue, and a slow or absent endpoint must cost dropped
documents, never consumer time.
The same queue-and-drop poster carries the spouts' figures (`lab.workload.spout_stats`).
"""

from __future__ import annotations

import http.client
import logging
import queue
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping

log = logging.getLogger(__name__)


class IngestPoster:
    """POSTs JSON documents to one ingest URL from its own thread; a full queue drops."""

    def __init__(
        self,
        url: str,
        token: str | None,
        max_queue: int = 200,
        timeout_s: float = 5.0,
        name: str = "ingest-poster",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.url = url
        self._token = token
        # Sent with every push: what a proxy on the way would add (``X-Forwarded-Proto``
        # in the lab's production mode, docs/LAB.md).
        self._headers = dict(headers or {})
        self._timeout_s = timeout_s
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue(maxsize=max_queue)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.posted = 0
        self.failed = 0
        self.dropped = 0
        self._last_failure_log = 0.0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._timeout_s + 1)

    def enqueue(self, body: str, query: dict[str, str] | None = None) -> None:
        """Queue one document for ``url?query``; never blocks."""
        url = f"{self.url}?{urllib.parse.urlencode(query)}" if query else self.url
        try:
            self._queue.put_nowait((url, body))
        except queue.Full:
            self.dropped += 1

    def status(self) -> dict[str, object]:
        return {
            "url": self.url,
            "posted": self.posted,
            "failed": self.failed,
            "dropped": self.dropped,
        }

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                url, body = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                self._post(url, body)
                self.posted += 1
            except (OSError, http.client.HTTPException) as exc:  # URLError is an OSError
                self.failed += 1
                now = time.monotonic()
                if now - self._last_failure_log > 30:
                    self._last_failure_log = now
                    log.warning(
                        "posting to %s failed (%s); %d failures so far", url, exc, self.failed
                    )

    def _post(self, url: str, body: str) -> None:
        headers = {**self._headers, "Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=self._timeout_s) as resp:
            resp.read()


class StatsPoster(IngestPoster):
    """librdkafka statistics to ``<ingest>/librdkafka``, a consumer's with its group."""

    def __init__(
        self,
        ingest_url: str,
        token: str | None,
        max_queue: int = 200,
        timeout_s: float = 5.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            ingest_url.rstrip("/") + "/librdkafka", token, max_queue, timeout_s, "stats-poster",
            headers,
        )  # fmt: skip

    def submit(self, stats_json: str, group: str | None = None) -> None:
        """Enqueue one statistics document; never blocks. The document does not carry the
        consumer's ``group.id``, so the group travels as ``?group=``."""
        self.enqueue(stats_json, {"group": group} if group else None)

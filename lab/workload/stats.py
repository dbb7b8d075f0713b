"""Pushes librdkafka statistics to Lagwatch's ingest endpoint.

Tansu does not report group members' assignments (LAB.md), so the product learns them from
the clients' own statistics. librdkafka calls `stats_cb` inside `poll()`: the callback must
only enqueue, and a slow or absent endpoint must cost dropped documents, never consumer time.
"""

from __future__ import annotations

import http.client
import logging
import queue
import threading
import time
import urllib.request

log = logging.getLogger(__name__)


class StatsPoster:
    def __init__(
        self, ingest_url: str, token: str | None, max_queue: int = 200, timeout_s: float = 5.0
    ) -> None:
        self.url = ingest_url.rstrip("/") + "/librdkafka"
        self._token = token
        self._timeout_s = timeout_s
        self._queue: queue.Queue[str] = queue.Queue(maxsize=max_queue)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stats-poster", daemon=True)
        self.posted = 0
        self.failed = 0
        self.dropped = 0
        self._last_failure_log = 0.0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self._timeout_s + 1)

    def submit(self, stats_json: str) -> None:
        """Enqueue one statistics document; never blocks."""
        try:
            self._queue.put_nowait(stats_json)
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
                doc = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                self._post(doc)
                self.posted += 1
            except (OSError, http.client.HTTPException) as exc:  # URLError is an OSError
                self.failed += 1
                now = time.monotonic()
                if now - self._last_failure_log > 30:
                    self._last_failure_log = now
                    log.warning(
                        "posting librdkafka statistics to %s failed (%s); %d failures so far",
                        self.url,
                        exc,
                        self.failed,
                    )

    def _post(self, doc: str) -> None:
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(self.url, data=doc.encode(), headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=self._timeout_s) as resp:
            resp.read()

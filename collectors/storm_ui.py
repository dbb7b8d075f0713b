"""Storm UI REST API poller (SPEC §2.3): emitted / acked / failed per spout.

Written against Storm's documented REST API (``/api/v1/topology/summary`` then
``/api/v1/topology/<id>``), so it works on a real Storm UI. Pending counts per partition are
not in that API: spouts push them to the ingest endpoint.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from collectors.records import CollectionResult, Source, SourceError, SpoutFigures

MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class StormUISource:
    def __init__(self, url: str, timeout_s: float = 10) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=self.timeout_s) as response:
            body = response.read(MAX_RESPONSE_BYTES + 1)
        if len(body) > MAX_RESPONSE_BYTES:
            raise ValueError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
        return json.loads(body)

    def collect(self, now_ms: int) -> CollectionResult:
        result = CollectionResult(source=Source.STORM, started_ms=now_ms)
        try:
            summary = self._get("/api/v1/topology/summary")
            topologies = summary["topologies"]
        except (OSError, urllib.error.URLError, ValueError, KeyError, TypeError) as exc:
            result.reachable = False
            result.errors.append(SourceError(Source.STORM, self.url, f"Storm UI: {exc}"))
            result.finished_ms = int(time.time() * 1000)
            return result
        for topology in topologies:
            topology_id = str(topology.get("id", ""))
            where = f"topology {topology_id}"
            try:
                page = self._get("/api/v1/topology/" + urllib.parse.quote(topology_id, safe=""))
                result.spouts.extend(_spout_figures(topology_id, page))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                result.errors.append(SourceError(Source.STORM, where, str(exc)))
        result.finished_ms = int(time.time() * 1000)
        return result


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _spout_figures(topology_id: str, page: dict) -> list[SpoutFigures]:
    figures = []
    for spout in page.get("spouts", []):
        latency = spout.get("completeLatency")
        try:
            latency_ms = float(latency) if latency is not None else None
        except (TypeError, ValueError):
            latency_ms = None
        figures.append(
            SpoutFigures(
                topology_id=topology_id,
                spout_id=str(spout["spoutId"]),
                emitted=_count(spout.get("emitted")),
                acked=_count(spout.get("acked")),
                failed=_count(spout.get("failed")),
                complete_latency_ms=latency_ms,
            )
        )
    return figures

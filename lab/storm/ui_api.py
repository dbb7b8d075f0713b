"""The lab's Storm UI: the read-only part of Storm's UI REST API, fed by simulated spouts.

The product's Storm collector is written against Storm's real REST API
(``STORM-UI-REST-API.md``), so the lab serves the same shapes for the two calls it uses:

- ``GET /api/v1/topology/summary``: ``{"topologies": [{id, name, status, uptime,
  uptimeSeconds, tasksTotal, workersTotal, executorsTotal, ...}], ...}``
- ``GET /api/v1/topology/<id>``: the topology page with ``topologyStats``, ``spouts``
  (``spoutId, executors, tasks, emitted, transferred, acked, failed, completeLatency,
  lastError, errorTime, errorLapsedSecs, ...``) and ``bolts``. Only the ``:all-time`` window
  exists; a ``window`` parameter is accepted and ignored.
- ``GET /api/v1/cluster/summary`` answers too, so a collector can check it reaches "Storm".

An unknown topology id gets what real Storm 1.2.4's UI answers: HTTP 500, ``{"error": "500 Server
Error", "errorMessage": "NotAliveException(msg:<id>)..."}`` (tests/data/storm_ui_1.2.4/); an
unknown path a 404.

Spouts registered with the same topology id form one topology; spouts that also share a
``component_id`` are that component's tasks (one executor each), as a spout with parallelism N.

**Not in Storm's API**: the topology page carries one extra top-level key, ``"lagwatch"``,
with what the simulator knows and Storm's UI does not show: per spout task the tuples pending
(in flight) against ``maxSpoutPending``, simulated worker restarts, and per partition the
``PartitionManager``'s figures (pending and failed-waiting counts, smallest failed offset,
emitted-to, committed and last completed offsets, ignored failures, dropped pending, skipped
messages). It is there for checking the product against ground truth; a collector of real
Storm must not rely on it.

**Why one module of some 400 lines**: one HTTP handler and the shapes it serves, each shape
checked against the real UI's answers kept in tests/data.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from lab.storm.spout import KafkaSpoutSim, SpoutStats

log = logging.getLogger(__name__)

STORM_VERSION = "1.2.4"
ALL_TIME = ":all-time"


class TopologyRegistry:
    """The spouts the UI shows. Thread-safe: the workload adds and removes while it serves."""

    def __init__(self, spouts: Iterable[KafkaSpoutSim] = ()) -> None:
        self._lock = threading.Lock()
        self._spouts: list[KafkaSpoutSim] = list(spouts)

    def add(self, spout: KafkaSpoutSim) -> None:
        with self._lock:
            if spout not in self._spouts:
                self._spouts.append(spout)

    def remove(self, spout: KafkaSpoutSim) -> None:
        """A removed topology is a killed one: it disappears from the summary."""
        with self._lock:
            if spout in self._spouts:
                self._spouts.remove(spout)

    def spouts(self) -> list[KafkaSpoutSim]:
        with self._lock:
            return list(self._spouts)

    def topologies(self) -> dict[str, list[KafkaSpoutSim]]:
        grouped: dict[str, list[KafkaSpoutSim]] = {}
        for spout in self.spouts():
            grouped.setdefault(spout.topology_id, []).append(spout)
        return grouped


def pretty_uptime(seconds: int) -> str:
    """Storm's ``prettyUptimeSec``: "5s", "1m 5s", "1h 0m 0s", "2d 3h 0m 1s"."""
    days, rest = divmod(max(0, seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    while len(parts) > 1 and parts[0][0] == 0:
        parts.pop(0)
    return " ".join(f"{value}{unit}" for value, unit in parts)


def _latency(value: float) -> str:
    return f"{value:.3f}"


def _weighted(pairs: Iterable[tuple[float, int]]) -> float:
    pairs = list(pairs)
    total = sum(weight for _, weight in pairs)
    return sum(value * weight for value, weight in pairs) / total if total else 0.0


class _Topology:
    """One topology id's spouts, read once per request so every figure comes from one snapshot."""

    def __init__(self, topology_id: str, spouts: list[KafkaSpoutSim], now: float) -> None:
        self.id = topology_id
        self.spouts = spouts
        self.stats = [s.stats() for s in spouts]
        self.name = spouts[0].topology_name
        started = [s.started_at for s in spouts if s.started_at is not None]
        self.uptime_s = int(now - min(started)) if started else 0
        self.now = now

    @property
    def status(self) -> str:
        return "ACTIVE" if any(st.running for st in self.stats) else "INACTIVE"

    @property
    def executors(self) -> int:
        return sum(1 + s.bolt_parallelism for s in self.spouts)

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "uptime": pretty_uptime(self.uptime_s),
            "uptimeSeconds": self.uptime_s,
            "tasksTotal": self.executors,
            "workersTotal": 1,
            "executorsTotal": self.executors,
            "replicationCount": 1,
            "requestedMemOnHeap": 0.0,
            "requestedMemOffHeap": 0.0,
            "requestedTotalMem": 0.0,
            "requestedCpu": 0.0,
            "assignedMemOnHeap": 0.0,
            "assignedMemOffHeap": 0.0,
            "assignedTotalMem": 0.0,
            "assignedCpu": 0.0,
        }

    def _error_fields(self, stats: list[SpoutStats]) -> dict[str, Any]:
        latest = max(
            (st for st in stats if st.error_time is not None),
            key=lambda st: st.error_time or 0.0,
            default=None,
        )
        if latest is None or latest.error_time is None:
            return {
                "lastError": "",
                "errorHost": "",
                "errorPort": None,
                "errorWorkerLogLink": "",
                "errorTime": None,
                "errorLapsedSecs": None,
            }
        return {
            "lastError": latest.last_error,
            "errorHost": "localhost",
            "errorPort": 6700,
            "errorWorkerLogLink": "",
            "errorTime": int(latest.error_time),
            "errorLapsedSecs": int(time.time() - latest.error_time),
        }

    def _components(self) -> dict[str, list[tuple[KafkaSpoutSim, SpoutStats]]]:
        grouped: dict[str, list[tuple[KafkaSpoutSim, SpoutStats]]] = {}
        for spout, st in zip(self.spouts, self.stats, strict=True):
            grouped.setdefault(spout.component_id, []).append((spout, st))
        return grouped

    def spout_entries(self) -> list[dict[str, Any]]:
        entries = []
        for component, tasks in self._components().items():
            stats = [st for _, st in tasks]
            emitted = sum(st.emitted for st in stats)
            entry = {
                "spoutId": component,
                "executors": len(tasks),
                "tasks": len(tasks),
                "emitted": emitted,
                "transferred": emitted,
                "acked": sum(st.acked for st in stats),
                "failed": sum(st.failed for st in stats),
                "completeLatency": _latency(
                    _weighted((st.complete_latency_ms, st.acked) for st in stats)
                ),
                "requestedMemOnHeap": 0.0,
                "requestedMemOffHeap": 0.0,
                "requestedCpu": 0.0,
            }
            entry.update(self._error_fields(stats))
            entries.append(entry)
        return entries

    def bolt_entries(self) -> list[dict[str, Any]]:
        grouped: dict[str, list[tuple[KafkaSpoutSim, SpoutStats]]] = {}
        for spout, st in zip(self.spouts, self.stats, strict=True):
            grouped.setdefault(spout.bolt_id, []).append((spout, st))
        entries = []
        for bolt_id, tasks in grouped.items():
            stats = [st for _, st in tasks]
            executors = sum(spout.bolt_parallelism for spout, _ in tasks)
            latency = _latency(
                _weighted((st.bolt_process_latency_ms, st.bolt_executed) for st in stats)
            )
            entry = {
                "boltId": bolt_id,
                "executors": executors,
                "tasks": executors,
                "emitted": 0,
                "transferred": 0,
                "executed": sum(st.bolt_executed for st in stats),
                "acked": sum(st.bolt_acked for st in stats),
                "failed": sum(st.bolt_failed for st in stats),
                "executeLatency": latency,
                "processLatency": latency,
                "capacity": _latency(max((st.bolt_capacity for st in stats), default=0.0)),
                "requestedMemOnHeap": 0.0,
                "requestedMemOffHeap": 0.0,
                "requestedCpu": 0.0,
            }
            entry.update(self._error_fields([]))
            entries.append(entry)
        return entries

    def lagwatch(self) -> dict[str, Any]:
        tasks = []
        for spout, st in zip(self.spouts, self.stats, strict=True):
            tasks.append(
                {
                    "spoutId": spout.component_id,
                    "spoutConfigId": spout.spout_id,
                    "zkRoot": spout.zk_root,
                    "topic": spout.topic,
                    "running": st.running,
                    "pending": st.pending,
                    "maxSpoutPending": st.max_spout_pending,
                    "restarts": st.restarts,
                    "partitions": [
                        {
                            "partition": ps.partition,
                            "zkPath": ps.zk_path,
                            "emitted": ps.emitted,
                            "acked": ps.acked,
                            "failed": ps.failed,
                            "inFlight": ps.in_flight,
                            "completeLatency": _latency(ps.complete_latency_ms),
                            "pending": ps.manager.pending,
                            "failedWaiting": ps.manager.failed_waiting,
                            "smallestFailedOffset": ps.manager.smallest_failed,
                            "emittedToOffset": ps.manager.emitted_to_offset,
                            "committedTo": ps.manager.committed_to,
                            "lastCompletedOffset": ps.manager.last_completed_offset,
                            "ignoredFailures": ps.manager.ignored_failures,
                            "droppedPending": ps.manager.dropped_pending,
                            "skippedMessages": ps.manager.skipped_messages,
                            "lostFailed": ps.manager.lost_failed,
                            "outOfRangeJumps": ps.manager.out_of_range_jumps,
                        }
                        for ps in st.partitions
                    ],
                }
            )
        return {"note": "simulator ground truth, not part of Storm's UI API", "spouts": tasks}

    def page(self) -> dict[str, Any]:
        spouts = self.spout_entries()
        emitted = sum(s["emitted"] for s in spouts)
        complete = _weighted((st.complete_latency_ms, st.acked) for st in self.stats)
        first = self.spouts[0]
        page = self.summary()
        page.update(
            {
                "window": ALL_TIME,
                "windowHint": "All time",
                "msgTimeout": int(first.message_timeout_s),
                "schedulerDisplayResource": False,
                "debug": False,
                "samplingPct": 10,
                "topologyStats": [
                    {
                        "windowPretty": "All time",
                        "window": ALL_TIME,
                        "emitted": emitted,
                        "transferred": emitted,
                        "completeLatency": _latency(complete),
                        "acked": sum(s["acked"] for s in spouts),
                        "failed": sum(s["failed"] for s in spouts),
                    }
                ],
                "workers": [],
                "spouts": spouts,
                "bolts": self.bolt_entries(),
                "configuration": {
                    "storm.id": self.id,
                    "topology.name": self.name,
                    "topology.message.timeout.secs": int(first.message_timeout_s),
                    "topology.max.spout.pending": first.max_spout_pending,
                },
                "lagwatch": self.lagwatch(),
            }
        )
        return page


def _cluster_summary(topologies: int, executors: int) -> dict[str, Any]:
    return {
        "stormVersion": STORM_VERSION,
        "supervisors": 1,
        "topologies": topologies,
        "slotsTotal": 4,
        "slotsUsed": 1 if topologies else 0,
        "slotsFree": 3 if topologies else 4,
        "executorsTotal": executors,
        "tasksTotal": executors,
        "schedulerDisplayResource": False,
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # the name http.server dispatches to
        path = unquote(urlsplit(self.path).path).rstrip("/")
        registry = self.server.registry
        now = time.time()
        topologies = {
            tid: _Topology(tid, spouts, now) for tid, spouts in registry.topologies().items()
        }
        if path == "/api/v1/topology/summary":
            ordered = sorted(topologies.values(), key=lambda t: (t.name, t.id))
            self._send(
                200,
                {"topologies": [t.summary() for t in ordered], "schedulerDisplayResource": False},
            )
        elif path == "/api/v1/cluster/summary":
            executors = sum(t.executors for t in topologies.values())
            self._send(200, _cluster_summary(len(topologies), executors))
        elif path.startswith("/api/v1/topology/") and path.count("/") == 4:
            topology_id = path.rsplit("/", 1)[1]
            topology = topologies.get(topology_id)
            if topology is None:
                self._send(
                    500,
                    {"error": "500 Server Error",
                     "errorMessage": f"NotAliveException(msg:{topology_id})"},
                )  # fmt: skip
            else:
                self._send(200, topology.page())
        else:
            self._send(404, {"error": "Not Found", "errorMessage": f"no route for {path}"})

    def _send(self, status: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:  # base class signature
        log.debug("storm-ui %s " + format, self.address_string(), *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], registry: TopologyRegistry) -> None:
        self.registry = registry
        super().__init__(address, _Handler)


class StormUIServer:
    """Serves a :class:`TopologyRegistry` as Storm UI on ``host:port`` (0 = any free port)."""

    def __init__(self, host: str, port: int, registry: TopologyRegistry) -> None:
        self._server = _Server((host, port), registry)
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"storm-ui-{self.port}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

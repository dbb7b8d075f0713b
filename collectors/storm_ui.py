"""Storm UI REST API poller (SPEC §2.3): per spout, emitted / acked / failed, the tuples in
flight and their cap.

Checked against Apache Storm 1.2.4's UI (its answers are kept in tests/data/storm_ui_1.2.4/):
``/api/v1/topology/summary``, then each topology's page. What the real API imposes:

- **Which URL.** A topology id may need URL-encoding; each summary entry carries the
  ``encodedId`` the UI expects in its URLs, used as given (an entry without one: the id quoted
  here). The page is asked for ``?window=:all-time``: the counts since the executors started
  (they start again at 0 when a worker restarts), the only window in which emitted − acked −
  failed is what is in flight. It is the UI's default too, but a default can change.
- **Errors.** The UI answers a failure with HTTP 500 (an unknown topology too, not 404) and
  ``{"error": "500 Server Error", "errorMessage": <a Java exception and its stack>}``. The
  error reported is Storm's own message, first line only, package dropped
  (``NimbusLeaderNotFoundException: Could not find leader nimbus ...``): users read it, and a
  stack says nothing to them. The summary failing (Nimbus down, the UI down) means the source
  is down (``reachable`` False, shown as such, never as a stuck consumer); one topology's page
  failing (a topology killed between the summary and its page: ``NotAliveException``) is an
  error line for that topology, and the others are read.
- **The cap** (``max_spout_pending``): ``topology.max.spout.pending`` of the page's
  ``configuration`` caps each spout *task*, so a component of N tasks may have N × cap tuples
  in flight. A cap set on the component (``setMaxSpoutPending``) is not visible through the
  API; the topology's is the one there is to read.
- **In flight** (``spout_pending``): in Storm 1.x every tuple a spout emits is eventually acked
  or failed (a timeout counts as failed), and a retried tuple is emitted, and counted, again;
  so with exact counts, emitted − acked − failed is the spout's tuples in flight, the figure the
  cap limits. The counts are exact only when ``topology.stats.sample.rate`` is 1.0; at Storm's
  default 0.05 they are estimates from a 5 % sample and their difference is noise, so no figure
  is given. (``samplingPct`` is the debug event log's sampling, not the stats': not read.) It
  assumes what storm-kafka's KafkaSpout does: one output stream, each tuple emitted with a
  message id.

Not in the API: a partition's pending count and its smallest failed offset. A spout that
wants those judged pushes them to the ingest endpoint (docs/INGEST.md).

A malformed value is unknown (None), never a crash; a malformed page is one error line.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from collectors.records import CollectionResult, Source, SourceError, SpoutFigures

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
MAX_ERROR_CHARS = 300  # of Storm's message in an error line
ALL_TIME = ":all-time"
MAX_SPOUT_PENDING = "topology.max.spout.pending"
STATS_SAMPLE_RATE = "topology.stats.sample.rate"
_INT64_MAX = 2**63 - 1
# The package of a Java exception's name: "org.apache.storm.utils." of
# "org.apache.storm.utils.NimbusLeaderNotFoundException: Could not find leader nimbus ...".
_JAVA_PACKAGE = re.compile(r"^(?:[a-z_$][\w$]*\.)+(?=[A-Z])")


class StormUIError(Exception):
    """The UI answered with an error status; the message is Storm's own, one line."""


# What reading one URL may raise: the network, the HTTP status, the body (JSON, shapes).
_FAILURES = (OSError, ValueError, KeyError, TypeError, StormUIError)


class StormUISource:
    def __init__(self, url: str, timeout_s: float = 10) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str) -> Any:
        try:
            with urllib.request.urlopen(self.url + path, timeout=self.timeout_s) as response:
                body = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise StormUIError(_http_error(exc)) from None
        if len(body) > MAX_RESPONSE_BYTES:
            raise ValueError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
        return json.loads(body)

    def collect(self, now_ms: int) -> CollectionResult:
        result = CollectionResult(source=Source.STORM, started_ms=now_ms)
        try:
            topologies = _topologies(self._get("/api/v1/topology/summary"))
        except _FAILURES as exc:
            result.reachable = False
            result.errors.append(SourceError(Source.STORM, self.url, f"Storm UI: {exc}"))
            result.finished_ms = int(time.time() * 1000)
            return result
        for entry in topologies:
            topology_id = _topology_id(entry)
            where = f"topology {topology_id or '?'}"
            try:
                if not topology_id:
                    raise ValueError(f"a summary entry without an id: {str(entry)[:80]}")
                name = entry.get("name") if isinstance(entry.get("name"), str) else None
                result.topologies[topology_id] = name or ""
                page = self._get(_page_path(entry, topology_id))
                result.spouts.extend(_spout_figures(topology_id, page, name))
            except _FAILURES as exc:
                result.errors.append(SourceError(Source.STORM, where, str(exc)))
        result.finished_ms = int(time.time() * 1000)
        return result


def _http_error(exc: urllib.error.HTTPError) -> str:
    """Storm's message for an error answer (``errorMessage``, else ``error``), else the
    status; the body is read within the size cap and the connection closed."""
    try:
        body = exc.read(MAX_RESPONSE_BYTES + 1)
    except OSError:
        body = b""
    finally:
        exc.close()
    message = storm_error_message(body) if len(body) <= MAX_RESPONSE_BYTES else None
    return message or f"HTTP {exc.code} {exc.reason}".strip()


def storm_error_message(body: bytes) -> str | None:
    """The first line of Storm's error answer with the exception's package dropped, at most
    ``MAX_ERROR_CHARS``; None when the body is no such answer.

    Storm's ``errorMessage`` is a Java exception followed by its stack, one frame a line: the
    first line names what went wrong, the rest is for Storm's developers.
    """
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    for key in ("errorMessage", "error"):
        value = doc.get(key)
        if isinstance(value, str) and value.strip():
            first = value.strip().splitlines()[0].strip()
            return _JAVA_PACKAGE.sub("", first)[:MAX_ERROR_CHARS]
    return None


def _topologies(summary: Any) -> list[Any]:
    topologies = summary.get("topologies") if isinstance(summary, dict) else None
    if not isinstance(topologies, list):
        raise ValueError("the topology summary has no list of topologies")
    return topologies


def _topology_id(entry: Any) -> str:
    value = entry.get("id") if isinstance(entry, dict) else None
    return value if isinstance(value, str) else ""


def _page_path(entry: dict, topology_id: str) -> str:
    """The topology page's path: by the ``encodedId`` Storm gives (already encoded; quoting
    it again with ``%`` and the characters Java's URLEncoder leaves kept changes nothing in
    it, and keeps anything else from reaching the path), else by the id quoted here."""
    encoded = entry.get("encodedId")
    if isinstance(encoded, str) and encoded:
        segment = urllib.parse.quote(encoded, safe="%+*")
    else:
        segment = urllib.parse.quote(topology_id, safe="")
    return f"/api/v1/topology/{segment}?window={ALL_TIME}"


def _count(value: Any) -> int | None:
    """A counter: a non-negative integer within 64 bits (what the store keeps), else None."""
    if isinstance(value, bool):
        return None
    try:
        count = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return count if 0 <= count <= _INT64_MAX else None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= _INT64_MAX else None


def _times(cap: int | None, tasks: int | None) -> int | None:
    """The component's cap: the per-task cap times its tasks, when both are known."""
    if cap is None or tasks is None:
        return None
    total = cap * tasks
    return total if total <= _INT64_MAX else None


def _latency_ms(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        latency = float(value)
    except (TypeError, ValueError):
        return None
    return latency if math.isfinite(latency) and latency >= 0 else None


def exact_counts(configuration: dict) -> bool:
    """Are the page's counts exact? Only with ``topology.stats.sample.rate`` exactly 1.0
    (Storm's default, 0.05, counts a 5 % sample and scales it up)."""
    rate = configuration.get(STATS_SAMPLE_RATE)
    return isinstance(rate, int | float) and not isinstance(rate, bool) and rate == 1.0


def in_flight(emitted: int | None, acked: int | None, failed: int | None) -> int | None:
    """emitted − acked − failed of exact all-time counts (module docstring); None when one is
    unknown or the difference is negative (counts that do not add up say nothing)."""
    if emitted is None or acked is None or failed is None:
        return None
    pending = emitted - acked - failed
    return pending if pending >= 0 else None


def _spout_figures(topology_id: str, page: Any, name: str | None = None) -> list[SpoutFigures]:
    if not isinstance(page, dict):
        raise ValueError("the topology page is not a JSON object")
    spouts = page.get("spouts", [])
    if not isinstance(spouts, list):
        raise ValueError("the topology page's spouts are not a list")
    configuration = page.get("configuration")
    if not isinstance(configuration, dict):
        configuration = {}
    cap = _positive_int(configuration.get(MAX_SPOUT_PENDING))
    # Counts of another window than all-time (a UI that ignored the parameter) do not add up.
    exact = exact_counts(configuration) and page.get("window", ALL_TIME) == ALL_TIME
    figures = []
    for spout in spouts:
        if not isinstance(spout, dict):
            raise ValueError("a spout of the topology page is not a JSON object")
        spout_id = spout.get("spoutId")
        if not isinstance(spout_id, str) or not spout_id:
            raise ValueError("a spout of the topology page has no spoutId")
        emitted = _count(spout.get("emitted"))
        acked = _count(spout.get("acked"))
        failed = _count(spout.get("failed"))
        tasks = _positive_int(spout.get("tasks"))
        figures.append(
            SpoutFigures(
                topology_id=topology_id,
                spout_id=spout_id,
                emitted=emitted,
                acked=acked,
                failed=failed,
                complete_latency_ms=_latency_ms(spout.get("completeLatency")),
                max_spout_pending=_times(cap, tasks),
                spout_pending=in_flight(emitted, acked, failed) if exact else None,
                topology_name=name,
            )
        )
    return figures

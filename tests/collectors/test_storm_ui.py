"""Storm UI poller: real Storm 1.2.4 answers in (tests/data/storm_ui_1.2.4/, served byte for
byte by a local HTTP server), spout figures out; an error answer is Storm's first line."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from collectors.records import SpoutFigures
from collectors.storm_ui import MAX_ERROR_CHARS, StormUISource, storm_error_message
from lab.ports import pick_free_ports
from tests.testdata import DATA

STORM = DATA / "storm_ui_1.2.4"
TOPOLOGY = "orders-topo-1-1795906054"
SUMMARY_PATH = "/api/v1/topology/summary"
PAGE_PATH = f"/api/v1/topology/{TOPOLOGY}?window=:all-time"
NIMBUS_DOWN = (
    "Storm UI: NimbusLeaderNotFoundException: Could not find leader nimbus from seed hosts "
    '["127.0.0.1"]. Did you specify a valid list of nimbus hosts for config nimbus.seeds?'
)


def real(name: str) -> bytes:
    """A captured answer as Storm served it."""
    return (STORM / name).read_bytes()


def real_json(name: str) -> Any:
    return json.loads(real(name))


# Path (query included) -> (status, body); and the paths asked for, in order.
PAGES: dict[str, tuple[int, bytes]] = {}
ASKED: list[str] = []


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        ASKED.append(self.path)
        status, body = PAGES.get(self.path, (404, b""))
        # Storm's Jetty says "Server Error" for 500; http.server would say "Internal ...".
        self.send_response(status, "Server Error" if status == 500 else None)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def storm_server() -> Iterator[str]:
    """One server for the module: its shutdown waits out a poll of ``serve_forever`` (0.5 s)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def storm_ui(storm_server: str) -> str:
    PAGES.clear()
    ASKED.clear()
    return storm_server


def changed(target: dict[str, Any], changes: dict[str, Any] | None) -> dict[str, Any]:
    """``target`` with ``changes`` made in place; a value of ``...`` removes the key."""
    for key, value in (changes or {}).items():
        if value is ...:
            target.pop(key, None)
        else:
            target[key] = value
    return target


def summary_of(*entries: dict[str, Any]) -> bytes:
    """The real summary with one topology per entry: the real one with the entry's changes."""
    doc = real_json("topology_summary.json")
    doc["topologies"] = [changed(dict(doc["topologies"][0]), e) for e in entries]
    return json.dumps(doc).encode()


def page_with(
    name: str = "topology.json",
    conf: dict[str, Any] | None = None,
    spout: dict[str, Any] | None = None,
    **top: Any,
) -> bytes:
    """A real page with some of its configuration, its one spout's or its own keys changed
    (a value of ``...`` removes the key)."""
    doc = real_json(name)
    changed(doc["configuration"], conf)
    changed(doc["spouts"][0], spout)
    changed(doc, top)
    return json.dumps(doc).encode()


def spout(**figures: Any) -> SpoutFigures:
    """The real page's spout as the poller reads it, with ``figures`` changed."""
    healthy = {
        "topology_id": TOPOLOGY, "spout_id": "orders-spout",
        "emitted": 1000, "acked": 1000, "failed": 0, "complete_latency_ms": 5.914,
        "max_spout_pending": 200, "spout_pending": 0, "topology_name": "orders-topo",
    }  # fmt: skip
    return SpoutFigures(**{**healthy, **figures})


@dataclass(frozen=True)
class Case:
    name: str
    pages: dict[str, tuple[int, bytes]]
    spouts: list[SpoutFigures]
    errors: list[tuple[str, str]] = field(default_factory=list)  # (where, error); "" where: url
    reachable: bool = True
    asked: list[str] | None = None  # the paths asked for, when the case is about them


def ok(body: bytes) -> tuple[int, bytes]:
    return 200, body


REAL_SUMMARY = ok(real("topology_summary.json"))


def one_page(body: bytes, status: int = 200) -> dict[str, tuple[int, bytes]]:
    return {SUMMARY_PATH: REAL_SUMMARY, PAGE_PATH: (status, body)}


# fmt: off
CASES = [
    # The captured answers.
    Case("healthy topology", one_page(real("topology.json")), [spout()],
         asked=[SUMMARY_PATH, PAGE_PATH]),
    Case("a spout retrying a poison message", one_page(real("topology_failing.json")),
         [spout(emitted=1057, acked=1050, failed=7, complete_latency_ms=5.751)]),
    Case("Nimbus down: the source is down, Storm's first line",
         {SUMMARY_PATH: (500, real("nimbus_down.json"))}, [],
         errors=[("", NIMBUS_DOWN)], reachable=False),
    Case("a topology killed after the summary: its error line only",
         one_page(real("unknown_topology_500.json"), status=500), [],
         errors=[(f"topology {TOPOLOGY}", "NotAliveException(msg:nope-1-1)")]),
    Case("an error answer that is not Storm's JSON: the status",
         {SUMMARY_PATH: (500, b"<html><body>Server Error</body></html>")}, [],
         errors=[("", "Storm UI: HTTP 500 Server Error")], reachable=False),
    Case("no Storm UI at that path", {}, [],
         errors=[("", "Storm UI: HTTP 404 Not Found")], reachable=False),
    Case("a summary that is no summary", {SUMMARY_PATH: ok(b'{"topologies": 3}')}, [],
         errors=[("", "Storm UI: the topology summary has no list of topologies")],
         reachable=False),
    Case("no topologies", {SUMMARY_PATH: ok(summary_of())}, []),
    # The page is asked for by encodedId, as Storm gives it; else by the id quoted here.
    Case("an id that needs encoding, by its encodedId",
         {SUMMARY_PATH: ok(summary_of({"id": "orders topo/1-17", "encodedId": "orders+topo%2F1-17"})),
          "/api/v1/topology/orders+topo%2F1-17?window=:all-time": ok(real("topology.json"))},
         [spout(topology_id="orders topo/1-17")],
         asked=[SUMMARY_PATH, "/api/v1/topology/orders+topo%2F1-17?window=:all-time"]),
    Case("an id that needs encoding, without encodedId",
         {SUMMARY_PATH: ok(summary_of({"id": "orders topo/1-17", "encodedId": ...})),
          "/api/v1/topology/orders%20topo%2F1-17?window=:all-time": ok(real("topology.json"))},
         [spout(topology_id="orders topo/1-17")]),
    Case("an encodedId that would leave the path stays in it",
         {SUMMARY_PATH: ok(summary_of({"id": "x", "encodedId": "x/../y?z"})),
          "/api/v1/topology/x%2F..%2Fy%3Fz?window=:all-time": ok(real("topology.json"))},
         [spout(topology_id="x")]),
    Case("a summary entry without an id: an error line, the others read",
         {SUMMARY_PATH: ok(summary_of({"id": ...}, {})), PAGE_PATH: ok(real("topology.json"))},
         [spout()], errors=[("topology ?", "a summary entry without an id: ")]),
    # In flight only from exact counts: topology.stats.sample.rate exactly 1.0.
    Case("sample rate 1.0, in flight derived",
         one_page(page_with(spout={"emitted": 1300, "acked": 1050, "failed": 50})),
         [spout(emitted=1300, acked=1050, failed=50, spout_pending=200)]),
    Case("sample rate 1 written as an integer",
         one_page(page_with(conf={"topology.stats.sample.rate": 1}, spout={"emitted": 1010})),
         [spout(emitted=1010, spout_pending=10)]),
    Case("Storm's default sample rate 0.05: estimates, none",
         one_page(page_with(conf={"topology.stats.sample.rate": 0.05}, spout={"emitted": 1020})),
         [spout(emitted=1020, spout_pending=None)]),
    Case("sample rate absent (Storm's default): none",
         one_page(page_with(conf={"topology.stats.sample.rate": ...})), [spout(spout_pending=None)]),
    Case("sample rate as a string: none",
         one_page(page_with(conf={"topology.stats.sample.rate": "1.0"})), [spout(spout_pending=None)]),
    Case("sample rate true: none",
         one_page(page_with(conf={"topology.stats.sample.rate": True})), [spout(spout_pending=None)]),
    Case("samplingPct is the event log's, not the stats'",
         one_page(page_with(conf={"topology.stats.sample.rate": 0.05}, samplingPct=100)),
         [spout(spout_pending=None)]),
    Case("acked beyond emitted: no negative in flight",
         one_page(page_with(spout={"acked": 1001})), [spout(acked=1001, spout_pending=None)]),
    Case("a count unknown: no in flight",
         one_page(page_with(spout={"failed": None})), [spout(failed=None, spout_pending=None)]),
    Case("a page of another window: no in flight",
         one_page(page_with(window="600")), [spout(spout_pending=None)]),
    # The cap: topology.max.spout.pending per task, times the spout's tasks.
    Case("four tasks: four times the cap",
         one_page(page_with(spout={"tasks": 4})), [spout(max_spout_pending=800)]),
    Case("no cap (null)",
         one_page(page_with(conf={"topology.max.spout.pending": None})), [spout(max_spout_pending=None)]),
    Case("no cap (absent)",
         one_page(page_with(conf={"topology.max.spout.pending": ...})), [spout(max_spout_pending=None)]),
    Case("a cap of 0 is none",
         one_page(page_with(conf={"topology.max.spout.pending": 0})), [spout(max_spout_pending=None)]),
    Case("a cap as a string is none",
         one_page(page_with(conf={"topology.max.spout.pending": "200"})), [spout(max_spout_pending=None)]),
    Case("tasks unknown: no cap",
         one_page(page_with(spout={"tasks": ...})), [spout(max_spout_pending=None)]),
    Case("no configuration: neither figure",
         one_page(page_with(configuration=...)), [spout(max_spout_pending=None, spout_pending=None)]),
    # A malformed value is unknown; a malformed page is one error line.
    Case("counts that are no counts",
         one_page(page_with(spout={"emitted": "x", "acked": True, "failed": -1, "completeLatency": "NaN"})),
         [spout(emitted=None, acked=None, failed=None, complete_latency_ms=None, spout_pending=None)]),
    Case("a count beyond 64 bits",
         one_page(page_with(spout={"emitted": 2**64})), [spout(emitted=None, spout_pending=None)]),
    Case("Infinity in the JSON",
         one_page(page_with(spout={"emitted": float("inf")})), [spout(emitted=None, spout_pending=None)]),
    Case("a page that is not JSON", one_page(b"<html>not json"), [],
         errors=[(f"topology {TOPOLOGY}", "Expecting value: line 1 column 1 (char 0)")]),
    Case("a page that is a list", one_page(b"[]"), [],
         errors=[(f"topology {TOPOLOGY}", "the topology page is not a JSON object")]),
    Case("a spout without spoutId", one_page(page_with(spout={"spoutId": ...})), [],
         errors=[(f"topology {TOPOLOGY}", "a spout of the topology page has no spoutId")]),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_storm_ui_answers(storm_ui: str, case: Case) -> None:
    PAGES.update(case.pages)
    result = StormUISource(storm_ui, timeout_s=5).collect(now_ms=0)
    assert result.reachable is case.reachable
    assert result.spouts == case.spouts
    errors = [(e.where if e.where != storm_ui else "", e.error) for e in result.errors]
    assert [where for where, _ in errors] == [where for where, _ in case.errors]
    for (_, got), (_, expected) in zip(errors, case.errors, strict=True):
        assert got.startswith(expected)
        assert "\n" not in got and "\tat " not in got  # never a Java stack
    if case.asked is not None:
        assert case.asked == ASKED


def test_one_broken_topology_page_does_not_hide_the_others(storm_ui: str) -> None:
    PAGES[SUMMARY_PATH] = ok(
        summary_of({"id": "a", "encodedId": "a"}, {"id": "b", "encodedId": "b"})
    )
    PAGES["/api/v1/topology/a?window=:all-time"] = (500, real("unknown_topology_500.json"))
    PAGES["/api/v1/topology/b?window=:all-time"] = ok(real("topology_failing.json"))
    result = StormUISource(storm_ui).collect(now_ms=0)
    assert result.reachable
    assert [(e.where, e.error) for e in result.errors] == [
        ("topology a", "NotAliveException(msg:nope-1-1)")
    ]
    assert [(s.topology_id, s.failed) for s in result.spouts] == [("b", 7)]
    # Both are listed: a page that failed does not make its topology look killed.
    assert set(result.topologies) == {"a", "b"}


def test_unreachable_storm_ui_is_reported_not_raised() -> None:
    (port,) = pick_free_ports(1)
    result = StormUISource(f"http://127.0.0.1:{port}", timeout_s=2).collect(now_ms=0)
    assert result.reachable is False
    assert "Storm UI" in result.errors[0].error


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (real("nimbus_down.json"), NIMBUS_DOWN.removeprefix("Storm UI: ")),
        (real("unknown_topology_500.json"), "NotAliveException(msg:nope-1-1)"),
        (b'{"error": "500 Server Error"}', "500 Server Error"),
        (b'{"error": "500 Server Error", "errorMessage": ""}', "500 Server Error"),
        (b'{"errorMessage": "java.lang.RuntimeException: org.apache.thrift.TException"}',
         "RuntimeException: org.apache.thrift.TException"),
        (b'{"errorMessage": "  no exception named\\nsecond line"}', "no exception named"),
        (json.dumps({"errorMessage": "E" * 1000}).encode(), "E" * MAX_ERROR_CHARS),
        (b'{"errorMessage": 5}', None),
        (b'"500 Server Error"', None),
        (b"<html>", None),
        (b"", None),
    ],
)  # fmt: skip
def test_storm_error_message(body: bytes, expected: str | None) -> None:
    assert storm_error_message(body) == expected


def test_the_component_page_shows_no_cap_of_its_own() -> None:
    """Why the cap is the topology's: a component's ``setMaxSpoutPending`` is not in the API
    (the spout component page has no configuration, nor any pending figure)."""
    page = real_json("component_spout.json")
    assert page["componentType"] == "spout"
    assert "configuration" not in page
    assert not [key for key in page if "pending" in key.lower()]

"""Storm UI poller: Storm's REST shapes in, spout figures out; bad or absent UI is reported."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from collectors.storm_ui import StormUISource
from lab.ports import pick_free_ports

PAGES: dict[str, object] = {}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        body = PAGES.get(self.path)
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def storm_ui() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    PAGES.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_spout_figures_from_storm_shapes(storm_ui: str) -> None:
    PAGES["/api/v1/topology/summary"] = {"topologies": [{"id": "enricher-1-1700", "name": "enricher"}]}
    PAGES["/api/v1/topology/enricher-1-1700"] = {
        "id": "enricher-1-1700",
        "spouts": [{"spoutId": "orders-spout", "emitted": 1200, "acked": 1100, "failed": 7,
                    "completeLatency": "12.500"}],
    }
    result = StormUISource(storm_ui).collect(now_ms=0)
    assert result.reachable and not result.errors
    (spout,) = result.spouts
    assert (spout.topology_id, spout.spout_id) == ("enricher-1-1700", "orders-spout")
    assert (spout.emitted, spout.acked, spout.failed) == (1200, 1100, 7)
    assert spout.complete_latency_ms == pytest.approx(12.5)


def test_one_broken_topology_page_does_not_hide_the_others(storm_ui: str) -> None:
    PAGES["/api/v1/topology/summary"] = {"topologies": [{"id": "a"}, {"id": "b"}]}
    PAGES["/api/v1/topology/a"] = b"<html>not json"
    PAGES["/api/v1/topology/b"] = {"spouts": [{"spoutId": "s", "acked": "x"}]}
    result = StormUISource(storm_ui).collect(now_ms=0)
    assert result.reachable
    assert [e.where for e in result.errors] == ["topology a"]
    assert result.spouts[0].acked is None  # a non-number is unknown, not zero


def test_unreachable_storm_ui_is_reported_not_raised() -> None:
    (port,) = pick_free_ports(1)
    result = StormUISource(f"http://127.0.0.1:{port}", timeout_s=2).collect(now_ms=0)
    assert result.reachable is False
    assert "Storm UI" in result.errors[0].error

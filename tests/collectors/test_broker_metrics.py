"""Broker purgatory figures: the exporter text parser (pure, table-driven, real scraped text),
rates between scrapes, and the scrape itself against a real broker's agent and bad endpoints."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from collectors.broker_metrics import (
    MAX_RESPONSE_BYTES,
    BrokerMetricsSource,
    ExpositionError,
    PurgatoryReading,
    broker_name,
    parse_exposition,
    rate_per_s,
    scrape_url,
)
from collectors.records import Source
from tests.testdata import DATA

PARKED = (DATA / "jmx_exporter_kafka_parked.prom").read_text()
AFTER = (DATA / "jmx_exporter_kafka_after.prom").read_text()


def test_real_exporter_text_while_fetches_are_parked() -> None:
    assert parse_exposition(PARKED) == PurgatoryReading(
        fetch_delayed=3, produce_delayed=0, fetch_watched=15, produce_watched=0,
        fetch_expired=12.0, produce_expired=None,
    )  # fmt: skip


def test_real_exporter_text_after_the_consumers_left() -> None:
    reading = parse_exposition(AFTER)
    assert (reading.fetch_delayed, reading.fetch_watched, reading.fetch_expired) == (0, 27, 27.0)


D = "kafka_server_purgatory_delayed_operations"
W = "kafka_server_purgatory_size"
FE = "kafka_server_delayed_fetch_expires_total"
PE = "kafka_server_delayed_produce_expires_total"

GOOD = [
    # (body, fetch_delayed, produce_delayed, fetch_watched, fetch_expired, produce_expired)
    (f'{D}{{operation="Fetch"}} 4.0', 4, None, None, None, None),
    (f'{D}{{operation="fetch"}} 4', 4, None, None, None, None),  # label value case
    (f'{D}{{operation="Produce",}} 2.0', None, 2, None, None, None),  # trailing comma
    (f'{D} {{ operation = "Fetch" }} 1', 1, None, None, None, None),  # spaces
    (f'{D}{{operation="Fetch"}} 4 1700000000000', 4, None, None, None, None),  # timestamp
    (f'{W}{{operation="Fetch"}} 9', None, None, 9, None, None),
    (f'{D}{{operation="Rebalance"}} 5\n{W}{{operation="Fetch"}} 1', None, None, 1, None, None),
    (f'{D}{{operation="Fetch",broker="1"}} 3', 3, None, None, None, None),  # extra label
    (f'{D}{{operation="Fetch"}} 0\n{FE}{{fetcher_type="consumer"}} 10\n'
     f'{FE}{{fetcher_type="follower"}} 5', 0, None, None, 15.0, None),
    (f'{D}{{operation="Fetch"}} 0\n{PE} 7.0', 0, None, None, None, 7.0),
    (f'# HELP x y\n# TYPE x gauge\nx 1\nunknown_metric{{a="b\\"c"}} NaN\n'
     f'{D}{{operation="Fetch"}} 2', 2, None, None, None, None),
    (f'\n\n{D}{{operation="Fetch"}} 2\n\n', 2, None, None, None, None),
    (f'jvm_x{{area="heap"}} +Inf\n{D}{{operation="Fetch"}} 2', 2, None, None, None, None),
]


@pytest.mark.parametrize(("body", "fd", "pd", "fw", "fe", "pe"), GOOD)
def test_parser_reads_exactly_the_series_it_needs(body, fd, pd, fw, fe, pe) -> None:
    r = parse_exposition(body)
    assert (r.fetch_delayed, r.produce_delayed, r.fetch_watched, r.fetch_expired,
            r.produce_expired) == (fd, pd, fw, fe, pe)  # fmt: skip


BAD = [
    ("", "none of the purgatory series"),
    ("# only comments\n", "none of the purgatory series"),
    ("jvm_threads 12\n", "none of the purgatory series"),
    ("<html><body>502 Bad Gateway</body></html>", "line 1: not a Prometheus sample"),
    ('{"status": "ok"}', "line 1: not a Prometheus sample"),
    (f'{D}{{operation="Fetch"}} 2\n{D}{{operation="Fetch"', "line 2: not a Prometheus sample"),
    (f'{D}{{operation="Fetch"}} many', "line 1: value 'many' is not a number"),
    (f'{D}{{operation="Fetch"}} -1', "is not a count"),
    (f'{D}{{operation="Fetch"}} 2.5', "is not a count"),
    (f'{D}{{operation="Fetch"}} NaN', "is not a count"),
    (f'{D}{{operation="Fetch"}} 1\n{FE}{{fetcher_type="consumer"}} -3', "is not a count"),
    (f'{D}{{operation=Fetch}} 1', "not a Prometheus sample"),
    ("1abc 2", "not a Prometheus sample"),
]


@pytest.mark.parametrize(("body", "message"), BAD)
def test_garbage_is_a_clear_error_naming_the_line(body: str, message: str) -> None:
    with pytest.raises(ExpositionError, match=message.replace("(", r"\(")):
        parse_exposition(body)


@pytest.mark.parametrize(
    ("previous", "previous_ms", "current", "current_ms", "expected"),
    [
        (10.0, 1_000, 40.0, 11_000, 3.0),
        (10.0, 1_000, 10.0, 11_000, 0.0),
        (None, None, 40.0, 11_000, None),  # first scrape
        (10.0, 1_000, None, 11_000, None),  # meter gone
        (50.0, 1_000, 3.0, 11_000, None),  # counter reset: the broker restarted
        (10.0, 11_000, 40.0, 11_000, None),  # no time between
        (10.0, 12_000, 40.0, 11_000, None),  # clock went back
    ],
)
def test_rate_between_two_scrapes(previous, previous_ms, current, current_ms, expected) -> None:
    assert rate_per_s(previous, previous_ms, current, current_ms) == expected


@pytest.mark.parametrize(
    ("url", "name"),
    [("http://b1:7071/metrics", "b1:7071"), ("https://[::1]:9/m", "[::1]:9"), ("x", "x")],
)
def test_broker_named_by_its_endpoint(url: str, name: str) -> None:
    assert broker_name(url) == name


NAMES = (
    "name%5B%5D=kafka_server_purgatory_delayed_operations&name%5B%5D=kafka_server_purgatory_size"
    "&name%5B%5D=kafka_server_delayed_fetch_expires_total"
    "&name%5B%5D=kafka_server_delayed_produce_expires_total"
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://b:7071/metrics", f"http://b:7071/metrics?{NAMES}"),
        ("http://b:7071/metrics?x=1", f"http://b:7071/metrics?x=1&{NAMES}"),
        ("https://b/m#frag", f"https://b/m?{NAMES}#frag"),
    ],
)
def test_a_scrape_asks_for_the_four_series_only(url: str, expected: str) -> None:
    assert scrape_url(url) == expected


BODIES: dict[str, bytes] = {}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        body = BODIES.get(self.path.split("?", 1)[0])
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    BODIES.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _closed_port_url() -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    server.server_close()
    return f"http://127.0.0.1:{port}/metrics"


def test_one_bad_endpoint_is_its_brokers_error_the_others_still_read(endpoint: str) -> None:
    BODIES["/good"] = PARKED.encode()
    BODIES["/garbage"] = b"<html>oops</html>"
    BODIES["/huge"] = b"# " + b"x" * (MAX_RESPONSE_BYTES + 10)
    urls = [f"{endpoint}/good", f"{endpoint}/garbage", f"{endpoint}/missing",
            f"{endpoint}/huge", _closed_port_url()]  # fmt: skip
    source = BrokerMetricsSource(urls, timeout_s=5)
    try:
        result = source.collect(now_ms=0)
    finally:
        source.close()
    assert result.source is Source.BROKER_METRICS
    assert not result.reachable  # a warning on the sources page
    assert not result.commits and not result.offsets and not result.groups
    by_url = {b.url: b for b in result.brokers}
    assert [b.url for b in result.brokers] == urls
    good = by_url[f"{endpoint}/good"]
    assert (good.fetch_purgatory, good.fetch_watched, good.error) == (3, 15, "")
    assert "not a Prometheus sample" in by_url[f"{endpoint}/garbage"].error
    assert "404" in by_url[f"{endpoint}/missing"].error
    assert "larger than" in by_url[f"{endpoint}/huge"].error
    assert by_url[urls[-1]].error  # connection refused
    assert all(b.fetch_purgatory is None for b in result.brokers if b.error)
    assert {e.where for e in result.errors} == set(urls[1:])


def test_expirations_per_second_from_two_scrapes(endpoint: str) -> None:
    url = f"{endpoint}/m"
    BODIES["/m"] = PARKED.encode()  # 12 expired
    source = BrokerMetricsSource([url], timeout_s=5)
    try:
        first = source.collect(now_ms=0).brokers[0]
        BODIES["/m"] = AFTER.encode()  # 27 expired
        second = source.collect(now_ms=0).brokers[0]
    finally:
        source.close()
    assert first.fetch_expires_per_s is None  # nothing to compare with yet
    elapsed_s = (second.as_of_ms - first.as_of_ms) / 1000
    assert second.fetch_expires_per_s == pytest.approx(15 / elapsed_s)
    assert second.produce_expires_per_s is None  # the broker never made that meter


def test_the_real_broker_agent_is_scraped(lab_services) -> None:
    """The session's broker runs with the real JMX exporter agent and Lagwatch's rules."""
    source = BrokerMetricsSource([lab_services.broker_metrics_url], timeout_s=5)
    try:
        first = source.collect(now_ms=int(time.time() * 1000))
        second = source.collect(now_ms=int(time.time() * 1000))
    finally:
        source.close()
    assert first.reachable and not first.errors, first.errors
    (broker,) = second.brokers
    assert broker.fetch_purgatory is not None and broker.fetch_purgatory >= 0
    assert broker.produce_purgatory is not None and broker.fetch_watched is not None
    # The agent honours name[]: only the requested series come back, no JVM metrics.
    with urllib.request.urlopen(scrape_url(lab_services.broker_metrics_url), timeout=30) as r:
        body = r.read().decode()
    names = {line.split("{")[0].split(" ")[0] for line in body.splitlines() if line and line[0] != "#"}
    assert names and names <= {
        "kafka_server_purgatory_delayed_operations", "kafka_server_purgatory_size",
        "kafka_server_delayed_fetch_expires_total", "kafka_server_delayed_produce_expires_total",
    }, names  # fmt: skip

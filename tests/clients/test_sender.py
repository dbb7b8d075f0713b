"""The client package's sender against a local HTTP server: the latest document per client
within a flush interval, a bounded queue, retries with back-off on 5xx, 429, timeouts and
connection errors, giving up (logged once) on other 4xx and on redirects, never blocking the
caller, ``close()`` flushing; and the forwarder's and the spout pusher's documents."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lagwatch_client import (
    DeliveryCounts,
    IngestSender,
    SpoutPartition,
    SpoutPusher,
    SpoutReport,
    StatsForwarder,
    __version__,
)

from tests.clients.ingest_server import Answer, IngestServer, free_port
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret"


@pytest.fixture
def server() -> Iterator[IngestServer]:
    s = IngestServer()
    try:
        yield s
    finally:
        s.close()


def sender_for(url: str, **options) -> IngestSender:
    defaults = {"flush_interval_s": 0.2, "backoff_s": 0.2, "max_backoff_s": 1.0, "timeout_s": 2.0}
    return IngestSender(url, TOKEN, **{**defaults, **options})


def stats(name: str, n: int, kind: str = "consumer") -> str:
    """A librdkafka statistics document's head as librdkafka writes it: ``name`` first."""
    return json.dumps({"name": name, "client_id": name.split("#")[0], "type": kind, "n": n})


def test_the_latest_document_of_each_client_wins_within_a_flush_interval(
    server: IngestServer,
) -> None:
    sender = sender_for(server.url, flush_interval_s=1.0)
    forward = StatsForwarder(sender, group="billing")
    try:
        for n in range(5):
            forward(stats("billing-1#consumer-1", n))
        forward(stats("billing-2#consumer-2", 0))
        assert sender.flush(10)
    finally:
        sender.close()
    got = sorted((r.body["name"], r.body["n"]) for r in server.received)
    assert got == [("billing-1#consumer-1", 4), ("billing-2#consumer-2", 0)]
    assert {r.path for r in server.received} == {"/api/v1/ingest/lab/librdkafka?group=billing"}
    assert {r.headers["Authorization"] for r in server.received} == {f"Bearer {TOKEN}"}
    assert {r.headers["User-Agent"] for r in server.received} == {f"lagwatch-client/{__version__}"}
    status = sender.status()
    assert (status["posted"], status["superseded"], status["dropped"]) == (2, 4, 0)
    assert forward.forwarded == 6


def test_the_queue_is_bounded_by_clients_and_drops_the_surplus(server: IngestServer) -> None:
    sender = sender_for(server.url, flush_interval_s=30, max_pending=2)
    try:
        forward = StatsForwarder(sender)
        for i in range(3):
            forward(stats(f"c-{i}#consumer-1", 0))
        forward(stats("c-0#consumer-1", 1))  # a client already waiting: replaces, fits
        assert forward.dropped == 1 and sender.status()["pending"] == 2
        assert sender.close(10)
    finally:
        sender.close()
    assert sorted((r.body["name"], r.body["n"]) for r in server.received) == [
        ("c-0#consumer-1", 1), ("c-1#consumer-1", 0)]  # fmt: skip


def test_5xx_is_retried_with_back_off_and_a_newer_document_replaces_the_waiting_one(
    server: IngestServer,
) -> None:
    server.script.extend([Answer(503), Answer(500), Answer(502)])
    sender = sender_for(server.url, backoff_s=0.3, max_backoff_s=5)
    try:
        forward = StatsForwarder(sender)
        forward(stats("a#consumer-1", 1))
        wait_for(lambda: len(server.attempts) >= 2, 10, "a retry")
        forward(stats("a#consumer-1", 2))  # while the first waits for its next try
        wait_for(lambda: server.received, 20, "the document delivered after the outage")
    finally:
        sender.close()
    assert [r.body["n"] for r in server.received] == [2]
    gaps = [b - a for a, b in zip(server.attempts, server.attempts[1:], strict=False)]
    # Back-off 0.3 s doubling (jittered by ±20 %): the waits grow.
    assert gaps[0] >= 0.2 and gaps[1] >= 0.45 and gaps[2] >= 0.9, gaps
    assert sender.status()["retries"] == 3
    assert sender.status()["failing"] is False


def test_429_waits_for_its_retry_after(server: IngestServer) -> None:
    server.script.append(Answer(429, {"Retry-After": "1"}))
    sender = sender_for(server.url, backoff_s=0.05)
    try:
        StatsForwarder(sender)(stats("a#consumer-1", 1))
        wait_for(lambda: server.received, 10, "the retried document")
    finally:
        sender.close()
    assert server.attempts[1] - server.attempts[0] >= 0.95


def test_a_timeout_is_retried(server: IngestServer) -> None:
    server.script.append(Answer(202, delay_s=2.0))  # slower than the client waits
    sender = sender_for(server.url, timeout_s=0.5)
    try:
        StatsForwarder(sender)(stats("a#consumer-1", 1))
        wait_for(lambda: len(server.attempts) >= 2, 10, "a second attempt")
        assert "timed out" in str(sender.status()["last_error"])
        wait_for(lambda: sender.status()["posted"] >= 1, 10, "posted on the retry")
    finally:
        sender.close()


def test_connection_errors_are_retried_until_the_endpoint_comes_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()
    sender = sender_for(f"http://127.0.0.1:{port}/api/v1/ingest/lab")
    server = None
    try:
        with caplog.at_level(logging.INFO, "lagwatch_client"):
            StatsForwarder(sender)(stats("a#consumer-1", 1))
            wait_for(lambda: sender.status()["retries"] >= 2, 10, "connection refused, retried")
            assert sender.status()["failing"] is True
            server = IngestServer(port)
            wait_for(lambda: server.received, 10, "delivered once the endpoint is up")
    finally:
        sender.close()
        if server:
            server.close()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "retrying with back-off" in warnings[0].getMessage()
    assert any("works again" in r.getMessage() for r in caplog.records)


def test_a_4xx_is_given_up_and_logged_once(
    server: IngestServer, caplog: pytest.LogCaptureFixture
) -> None:
    error = '{"error": "topics.orders.partitions.3.committed_offset: must be an integer"}'
    server.script.extend([Answer(400, body=error) for _ in range(3)])
    sender = sender_for(server.url)
    try:
        with caplog.at_level(logging.INFO, "lagwatch_client"):
            forward = StatsForwarder(sender)
            for i in range(3):
                forward(stats(f"c-{i}#consumer-1", 0))
                assert sender.flush(10)
            forward(stats("c-0#consumer-1", 1))  # the next one is sent as usual
            assert sender.flush(10)
    finally:
        sender.close()
    assert len(server.attempts) == 4, "no retry of a refused document"
    assert [r.body["n"] for r in server.received] == [1]
    status = sender.status()
    assert (status["refused"], status["retries"]) == (3, 0)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1, errors
    assert "HTTP 400" in errors[0] and "committed_offset: must be an integer" in errors[0]


def test_a_redirect_is_not_followed(server: IngestServer) -> None:
    """A redirected POST would lose its body: said, not followed."""
    server.script.append(Answer(301, {"Location": "https://lagwatch.example.com/x"}))
    sender = sender_for(server.url)
    try:
        StatsForwarder(sender)(stats("a#consumer-1", 1))
        assert sender.flush(10)
    finally:
        sender.close()
    assert len(server.attempts) == 1 and sender.status()["refused"] == 1
    assert "push to that URL" in str(sender.status()["last_error"])


def test_submitting_never_waits_for_a_slow_endpoint(server: IngestServer) -> None:
    server.script.extend([Answer(202, delay_s=3.0)])
    sender = sender_for(server.url, flush_interval_s=0.0, timeout_s=5)
    try:
        forward = StatsForwarder(sender, deliveries=DeliveryCounts())
        forward(stats("p#producer-1", 0, "producer"))
        wait_for(lambda: server.attempts, 5, "the sender busy with the slow request")
        slowest = 0.0
        for n in range(2000):
            started = time.perf_counter()
            forward(stats(f"p{n % 50}#producer-1", n, "producer"))
            slowest = max(slowest, time.perf_counter() - started)
        assert slowest < 0.05, f"a stats_cb call took {slowest:.3f} s"
    finally:
        sender.close(timeout_s=1)


def test_close_flushes_what_is_pending(server: IngestServer) -> None:
    sender = sender_for(server.url, flush_interval_s=3600)
    forward = StatsForwarder(sender)
    forward(stats("a#consumer-1", 1))
    assert sender.close(10) is True
    assert [r.body["n"] for r in server.received] == [1]
    forward(stats("a#consumer-1", 2))  # after close: dropped, not queued
    assert forward.dropped == 1


def test_close_gives_up_on_a_dead_endpoint_within_its_deadline() -> None:
    sender = sender_for(f"http://127.0.0.1:{free_port()}/api/v1/ingest/lab", backoff_s=0.2)
    StatsForwarder(sender)(stats("a#consumer-1", 1))
    started = time.monotonic()
    assert sender.close(timeout_s=1.0) is False
    assert time.monotonic() - started < 4
    assert sender.status()["dropped"] == 1


def test_a_producer_document_carries_its_delivery_counts_as_of_sending(
    server: IngestServer,
) -> None:
    class Msg:
        def __init__(self, topic: str, partition: int) -> None:
            self._tp = (topic, partition)

        def topic(self) -> str:
            return self._tp[0]

        def partition(self) -> int:
            return self._tp[1]

    class Err:
        def name(self) -> str:
            return "_MSG_TIMED_OUT"

    counts = DeliveryCounts(instance="i-1")
    sender = sender_for(server.url, flush_interval_s=3600)
    forward = StatsForwarder(sender, deliveries=counts, host="app-7")
    try:
        forward(stats("orders#producer-1", 1, "producer"))
        counts.on_delivery(None, Msg("orders", 0))  # reported after the statistics
        counts.on_delivery(Err(), Msg("orders", -1))
        assert sender.flush(10)
    finally:
        sender.close()
    (got,) = server.received
    assert got.path == "/api/v1/ingest/lab/librdkafka?host=app-7"
    assert got.body["lagwatch_deliveries"] == {
        "instance": "i-1",
        "counts": [
            {"topic": "orders", "partition": 0, "delivered": 1, "failed": {}},
            {"topic": "orders", "partition": -1, "delivered": 0, "failed": {"_MSG_TIMED_OUT": 1}},
        ],
    }


def test_spout_reports_are_checked_and_pushed_per_spout(server: IngestServer) -> None:
    with pytest.raises(ValueError, match="pending: a non-negative 64-bit integer"):
        SpoutPartition("orders", 0, pending=-1, failed=0, acked=0)
    with pytest.raises(ValueError, match="appears twice"):
        SpoutReport("t-1", "s", 10, [SpoutPartition("o", 0, 0, 0, 0)] * 2)
    with pytest.raises(ValueError, match="spout_id"):
        SpoutReport("t-1", "", 10)

    def report(acked: int) -> SpoutReport:
        return SpoutReport(
            "orders-topology-3-1700000000", "orders-spout", 1000, topology_name="orders-topology",
            time_ms=1700000123000, pending=12,
            partitions=[SpoutPartition("orders", 0, pending=12, failed=3, acked=acked, emitted=915,
                                       smallest_failed_offset=4021),
                        SpoutPartition("orders", 1, pending=0, failed=0, acked=880,
                                       max_offset_behind=50)],
        )  # fmt: skip

    sender = sender_for(server.url, flush_interval_s=3600)
    sampled = iter([[report(1)], [report(2)]])
    pusher = SpoutPusher(sender, sample=lambda: next(sampled, []), interval_s=0.1)
    try:
        pusher.sample_once()
        pusher.sample_once()  # the same spout: replaces the first
        assert sender.flush(10)
    finally:
        pusher.close()
        sender.close()
    (got,) = server.received
    assert got.path == "/api/v1/ingest/lab/spout"
    assert got.body == {
        "topology_id": "orders-topology-3-1700000000", "spout_id": "orders-spout",
        "topology_name": "orders-topology", "time_ms": 1700000123000,
        "max_spout_pending": 1000, "pending": 12,
        "partitions": [
            {"topic": "orders", "partition": 0, "pending": 12, "failed": 3, "acked": 2,
             "emitted": 915, "smallest_failed_offset": 4021},
            {"topic": "orders", "partition": 1, "pending": 0, "failed": 0, "acked": 880,
             "smallest_failed_offset": None, "max_offset_behind": 50},
        ],
    }  # fmt: skip


def test_the_spout_pusher_samples_on_its_own_thread(server: IngestServer) -> None:
    calls = threading.Event()

    def sample() -> list[SpoutReport]:
        calls.set()
        return [SpoutReport("t-1-1", "s", None, [SpoutPartition("o", 0, 0, 0, 0)])]

    sender = sender_for(server.url)
    pusher = SpoutPusher(sender, sample=sample, interval_s=0.1)
    pusher.start()
    try:
        wait_for(lambda: server.received, 10, "a sampled report pushed")
    finally:
        pusher.close()
        sender.close()
    assert calls.is_set() and server.received[0].body["time_ms"] > 1_600_000_000_000


def test_the_package_version_is_the_one_it_declares() -> None:
    declared = (REPO / "clients/python/pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(__version__)}"', declared, re.M)


def test_a_token_http_cannot_carry_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="Authorization: not sendable"):
        IngestSender("http://127.0.0.1:1/api/v1/ingest/lab", "tok…")
    with pytest.raises(ValueError, match="http"):
        IngestSender("lagwatch.example.com/api/v1/ingest/lab", "tok")

"""The ingest endpoint through Django's test client, its store, and real clients pushing to it.

Checks run in the order a push meets them: method, token, declared size, cluster, body. The
last tests run a live server and push from a real consumer and a real simulated spout through
the client package (``lagwatch_client``), as the lab's workload does.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from django.db import OperationalError
from django.test import Client, RequestFactory
from django.utils import timezone

from collectors.client_assignments import apply_client_reports
from collectors.client_reports import CONSUMER
from collectors.ingest_parsing import parse_librdkafka_stats
from collectors.records import GroupSnapshot, Source
from dashboard.ingest import views as ingest
from dashboard.ingest.store import prune_reports, recent_reports
from dashboard.monitoring.models import ClientReportRow, Cluster, IngestKind
from lab.workload.clients import leave_and_close
from tests.collectors.ingest_documents import consumer_doc, producer_doc, spout_doc

TOKEN = "s3cret-ingest-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIBRDKAFKA = "/api/v1/ingest/lab/librdkafka"
SPOUT = "/api/v1/ingest/lab/spout"


@pytest.fixture
def cluster(db: None, settings: Any) -> Cluster:
    settings.LAGWATCH_INGEST_TOKEN = TOKEN
    settings.LAGWATCH_INGEST_MAX_BYTES = 1024 * 1024
    return Cluster.objects.create(name="lab")


def post(
    client: Client, url: str, doc: Any, headers: dict[str, str] | None = None, **extra: Any
) -> Any:
    body = doc if isinstance(doc, str | bytes) else json.dumps(doc)
    return client.post(
        url, body, content_type="application/json", headers=AUTH if headers is None else headers,
        **extra,
    )  # fmt: skip


# --- refusals ------------------------------------------------------------------------------


def test_without_a_configured_token_ingest_is_off(
    client: Client, cluster: Cluster, settings: Any
) -> None:
    settings.LAGWATCH_INGEST_TOKEN = ""
    response = post(client, LIBRDKAFKA, consumer_doc())
    assert response.status_code == 503
    assert response.json() == {"error": "ingest disabled: LAGWATCH_INGEST_TOKEN not set"}
    assert not ClientReportRow.objects.exists()


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": f"Basic {TOKEN}"}, {"Authorization": "Bearer "}]
)
def test_a_push_without_a_bearer_token_is_unauthorized(
    client: Client, cluster: Cluster, headers: dict[str, str]
) -> None:
    response = post(client, LIBRDKAFKA, consumer_doc(), headers=headers)
    assert response.status_code == 401, "not a redirect to the login page"
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert not ClientReportRow.objects.exists()


@pytest.mark.parametrize("token", ["wrong", TOKEN + "x", TOKEN[:-1], "ünïcode"])
def test_a_wrong_token_is_forbidden(client: Client, cluster: Cluster, token: str) -> None:
    response = post(client, SPOUT, spout_doc(), headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 403
    assert response.json() == {"error": "invalid token"}
    assert not ClientReportRow.objects.exists()


@pytest.mark.parametrize("url", [LIBRDKAFKA, SPOUT])
def test_only_post_is_allowed(client: Client, cluster: Cluster, url: str) -> None:
    assert client.get(url, headers=AUTH).status_code == 405
    assert client.put(url, "{}", headers=AUTH).status_code == 405


def test_an_unknown_cluster_is_not_found(client: Client, cluster: Cluster) -> None:
    response = post(client, "/api/v1/ingest/nope/librdkafka", consumer_doc())
    assert response.status_code == 404
    assert response.json() == {"error": "unknown cluster 'nope'"}


def test_an_oversized_body_is_refused(client: Client, cluster: Cluster, settings: Any) -> None:
    doc = json.dumps(consumer_doc())
    settings.LAGWATCH_INGEST_MAX_BYTES = len(doc) - 1
    response = post(client, LIBRDKAFKA, doc)
    assert response.status_code == 413
    assert "exceeds the limit" in response.json()["error"]
    settings.LAGWATCH_INGEST_MAX_BYTES = len(doc)
    assert post(client, LIBRDKAFKA, doc).status_code == 202, "exactly the limit is fine"


def test_an_oversized_body_is_refused_before_it_is_read(cluster: Cluster, settings: Any) -> None:
    settings.LAGWATCH_INGEST_MAX_BYTES = 1000
    request = RequestFactory().post(
        LIBRDKAFKA, "x" * 5000, content_type="application/json", headers=AUTH
    )
    payload = request.META["wsgi.input"]
    response = ingest.librdkafka(request, cluster="lab")
    assert response.status_code == 413
    assert payload.read_started is False


def test_a_body_over_the_limit_is_refused_even_if_content_length_understates_it(
    cluster: Cluster, settings: Any
) -> None:
    settings.LAGWATCH_INGEST_MAX_BYTES = 1000
    request = RequestFactory().post(
        LIBRDKAFKA, "x" * 5000, content_type="application/json", headers=AUTH
    )
    request.META["CONTENT_LENGTH"] = "10"  # the stream under it still holds 5000 bytes
    payload = request.META["wsgi.input"]
    response = ingest.librdkafka(request, cluster="lab")
    assert response.status_code == 413
    assert len(payload) == 5000 - 1001, "one byte past the limit was read, not the rest"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "empty body: expected a JSON document"),
        ("{not json", "body is not valid JSON"),
        (b"\xff\xfe\x00garbage", "body is not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "body is not valid JSON"),
        ("[]", "document: must be a JSON object, got an array"),
        ('{"type": "consumer"}', "name: must be a string, got null"),
    ],
)
def test_bad_bodies_are_refused_with_the_reason(
    client: Client, cluster: Cluster, body: Any, message: str
) -> None:
    response = post(client, LIBRDKAFKA, body)
    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    assert not ClientReportRow.objects.exists()


def test_an_invalid_field_is_named(client: Client, cluster: Cluster) -> None:
    doc = consumer_doc()
    doc["topics"]["orders"]["partitions"]["2"]["committed_offset"] = "7"
    response = post(client, LIBRDKAFKA, doc)
    assert response.status_code == 400
    assert response.json() == {
        "error": "topics.orders.partitions.2.committed_offset: must be an integer, got a string"
    }
    bad_spout = spout_doc()
    bad_spout["partitions"][1]["pending"] = -3
    response = post(client, SPOUT, bad_spout)
    assert (response.status_code, response.json()) == (
        400, {"error": "partitions.1.pending: must be >= 0, got -3"},
    )  # fmt: skip


def test_a_declared_group_is_checked(client: Client, cluster: Cluster) -> None:
    response = post(client, f"{LIBRDKAFKA}?group={'g' * 300}", consumer_doc())
    assert response.status_code == 400
    assert response.json()["error"] == "group: must be at most 255 characters"


# --- accepted pushes -----------------------------------------------------------------------


def test_a_consumer_push_is_stored_normalized(client: Client, cluster: Cluster) -> None:
    response = post(client, f"{LIBRDKAFKA}?group=billing", consumer_doc())
    assert response.status_code == 202
    assert response.json() == {"accepted": 1}
    row = ClientReportRow.objects.get()
    assert (row.cluster, row.kind, row.group) == (
        cluster,
        IngestKind.LIBRDKAFKA_CONSUMER,
        "billing",
    )
    assert row.key == "billing/billing-1#consumer-3@127.0.0.1"
    assert row.payload["assignment"] == [["orders", 0], ["orders", 2], ["payments", 0]]
    assert row.payload["host"] == "127.0.0.1", "the pushing client's address"
    assert "brokers" not in row.payload and "topics" not in row.payload, "not the raw document"


def test_the_group_may_come_in_a_header_and_the_host_may_be_declared(
    client: Client, cluster: Cluster
) -> None:
    headers = AUTH | {"X-Lagwatch-Group": "billing", "X-Lagwatch-Host": "10.1.2.3"}
    assert post(client, LIBRDKAFKA, consumer_doc(), headers=headers).status_code == 202
    row = ClientReportRow.objects.get()
    assert (row.group, row.payload["host"]) == ("billing", "10.1.2.3")


def test_a_producer_push_is_stored_as_a_producer(client: Client, cluster: Cluster) -> None:
    assert post(client, LIBRDKAFKA, producer_doc()).status_code == 202
    row = ClientReportRow.objects.get()
    assert (row.kind, row.group) == (IngestKind.LIBRDKAFKA_PRODUCER, "")
    assert (row.payload["msg_cnt"], row.payload["in_flight"]) == (120, 47)


def test_a_second_push_of_the_same_client_replaces_the_first(
    client: Client, cluster: Cluster
) -> None:
    assert post(client, f"{LIBRDKAFKA}?group=billing", consumer_doc()).status_code == 202
    first = ClientReportRow.objects.get()
    doc = consumer_doc()
    for p in doc["topics"]["orders"]["partitions"].values():
        p["desired"] = False
    doc["time"] += 5
    assert post(client, f"{LIBRDKAFKA}?group=billing", doc).status_code == 202
    row = ClientReportRow.objects.get()
    assert row.pk == first.pk
    assert row.payload["assignment"] == [["payments", 0]]
    assert row.received_at >= first.received_at
    # The same instance name in another group is another client.
    assert post(client, f"{LIBRDKAFKA}?group=other", doc).status_code == 202
    assert ClientReportRow.objects.count() == 2


def test_a_spout_push_is_stored_and_replaced(client: Client, cluster: Cluster) -> None:
    response = post(client, SPOUT, spout_doc())
    assert (response.status_code, response.json()) == (202, {"accepted": 2})
    row = ClientReportRow.objects.get()
    assert (row.kind, row.key, row.group) == (
        IngestKind.SPOUT, "orders-topology-3-1700000000/orders-spout", "orders-spout",
    )  # fmt: skip
    assert row.payload["topology_name"] == "orders-topology"
    doc = spout_doc()
    doc["partitions"] = doc["partitions"][:1]
    assert post(client, SPOUT, doc).json() == {"accepted": 1}
    assert len(ClientReportRow.objects.get().payload["figures"]) == 1


def test_no_login_and_no_csrf_token_are_needed(cluster: Cluster) -> None:
    anonymous = Client(enforce_csrf_checks=True)
    assert post(anonymous, LIBRDKAFKA, consumer_doc()).status_code == 202
    assert post(anonymous, SPOUT, spout_doc()).status_code == 202


# --- reading back --------------------------------------------------------------------------


def test_recent_reports_gives_the_records_back_and_skips_old_ones(
    client: Client, cluster: Cluster
) -> None:
    assert post(client, f"{LIBRDKAFKA}?group=billing", consumer_doc()).status_code == 202
    assert post(client, LIBRDKAFKA, producer_doc()).status_code == 202
    assert post(client, SPOUT, spout_doc()).status_code == 202
    other = Cluster.objects.create(name="other")
    assert post(client, "/api/v1/ingest/other/spout", spout_doc()).status_code == 202
    now = timezone.now()

    reports, spouts = recent_reports(cluster, now, 60)
    expected = parse_librdkafka_stats(consumer_doc(), "billing", 0, host="127.0.0.1")
    consumers = [r for r in reports if r.kind == CONSUMER]
    assert consumers == [expected]
    assert sorted(r.kind for r in reports) == ["consumer", "producer"]
    assert [(f.topic, f.partition, f.pending) for f in spouts] == [
        ("orders", 0, 12),
        ("orders", 1, 0),
    ]

    producer_row = ClientReportRow.objects.get(cluster=cluster, kind=IngestKind.LIBRDKAFKA_PRODUCER)
    producer_row.received_at = now - timedelta(seconds=120)
    producer_row.save()
    reports, _ = recent_reports(cluster, now, 60)
    assert [r.kind for r in reports] == ["consumer"], "the producer fell silent two minutes ago"
    assert recent_reports(cluster, now + timedelta(seconds=61), 60) == ([], [])
    assert len(recent_reports(other, now, 60)[1]) == 2

    assert prune_reports(now - timedelta(seconds=60)) == 1
    assert not ClientReportRow.objects.filter(kind=IngestKind.LIBRDKAFKA_PRODUCER).exists()


# --- real clients push to a live server ----------------------------------------------------


def _uid(kind: str) -> str:
    return f"ing-{kind}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def live_cluster(live_server: Any, settings: Any) -> Iterator[tuple[str, Cluster]]:
    settings.LAGWATCH_INGEST_TOKEN = TOKEN
    settings.LAGWATCH_INGEST_MAX_BYTES = 1024 * 1024
    cluster = Cluster.objects.create(name=_uid("c"))
    yield f"{live_server.url}/api/v1/ingest/{cluster.name}", cluster


def _wait(predicate: Any, timeout_s: float, what: str) -> Any:
    """Poll ``predicate``. The test database is an in-memory SQLite shared by the live
    server's thread and this one, which refuses (not waits) a read that meets a write:
    "database table is locked". Such a read is tried again, and a push it disturbed fails
    and is followed by the next one, which is why the tests below count pushes that
    succeeded instead of requiring that none failed. A file database in WAL mode, as
    deployed, waits instead."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if value := predicate():
                return value
        except OperationalError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.lab
def test_a_real_consumer_pushes_its_assignment_through_the_lab_poster(
    kafka_bootstrap: str, admin: AdminClient, live_cluster: tuple[str, Cluster]
) -> None:
    from lagwatch_client import IngestSender, StatsForwarder

    url, cluster = live_cluster
    topic, group = _uid("t"), _uid("g")
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(10)
    poster = IngestSender(url, TOKEN, flush_interval_s=0.2, backoff_s=0.2)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap, "group.id": group, "client.id": "ing-client",
            "session.timeout.ms": 6000, "statistics.interval.ms": 300,
            "stats_cb": StatsForwarder(poster, group=group),
        }
    )  # fmt: skip
    try:
        consumer.subscribe([topic])

        def pushed() -> Any:
            consumer.poll(0.1)
            reports, _ = recent_reports(cluster, timezone.now(), 60)
            return next((r for r in reports if len(r.assignment) == 3), None)

        report = _wait(pushed, 60, "a pushed report with the whole assignment")
        assert report.group == group and report.client_id == "ing-client"
        assert report.host == "127.0.0.1"
        assert report.assignment == tuple(
            sorted((tp.topic, tp.partition) for tp in consumer.assignment())
        )
        assert poster.status()["posted"] >= 1
        (filled,) = apply_client_reports(
            [GroupSnapshot(Source.KAFKA, group, "Stable", members_known=False)], [report]
        )
        assert [m.assignment for m in filled.members] == [report.assignment]
    finally:
        leave_and_close(consumer)
        poster.close(timeout_s=2)


@pytest.mark.lab
def test_a_real_spout_pushes_its_partition_figures(
    kafka_bootstrap: str, zk_hosts: str, admin: AdminClient, live_cluster: tuple[str, Cluster]
) -> None:
    from lagwatch_client import IngestSender

    from lab.storm.spout import BoltPolicy, KafkaSpoutSim
    from lab.workload.spout_stats import spout_pusher

    url, cluster = live_cluster
    topic = _uid("t")
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(10)
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "batch.num.messages": 1, "linger.ms": 0}
    )
    per_partition = 200
    for i in range(2 * per_partition):
        producer.produce(topic, f"m{i}".encode(), partition=i % 2)
    assert producer.flush(20) == 0
    # A slow bolt behind a small max_spout_pending: a failed offset waits for its retry until
    # the partition's fetched batch is emitted, long enough for a push to show it.
    spout = KafkaSpoutSim(
        bootstrap=kafka_bootstrap, zk_hosts=zk_hosts, topic=topic, topology_name="ingest-topo",
        spout_id="ingest-spout", zk_root=f"/{_uid('root')}", force_from_start=True,
        state_update_interval_ms=200, max_spout_pending=4, max_offset_behind=1000,
        policy=BoltPolicy(process_ms=5, poison=frozenset({(1, 3)})), seed=3,
    )  # fmt: skip
    sender = IngestSender(url, TOKEN, flush_interval_s=0.2, backoff_s=0.2)
    poster = spout_pusher(sender, lambda: [spout], interval_s=0.2)
    spout.start()
    poster.start()
    try:

        def pushed() -> dict[int, Any]:
            _, figures = recent_reports(cluster, timezone.now(), 60)
            return {f.partition: f for f in figures}

        _wait(
            lambda: (f := pushed().get(1)) is not None and f.smallest_failed_offset == 3,
            60,
            "a push showing the poison message as partition 1's smallest failed offset",
        )
        done = 2 * per_partition - 1  # all but the poison message
        by_partition = _wait(
            lambda: (p := pushed()) and sum(f.acked or 0 for f in p.values()) >= done and p,
            60,
            "pushes with every healthy message acked",
        )
        assert set(by_partition) == {0, 1}
        figures = list(by_partition.values())
        assert {f.topology_id for f in figures} == {spout.topology_id}
        assert {(f.spout_id, f.topic) for f in figures} == {("ingest-spout", topic)}
        assert {(f.max_spout_pending, f.max_offset_behind) for f in figures} == {(4, 1000)}
        assert all(f.time_ms is not None for f in figures)
        assert by_partition[1].failed >= 1 and by_partition[1].acked == per_partition - 1
        assert by_partition[1].pending >= 1, "the poison message never completes"
        first = by_partition[0]
        assert (first.acked, first.emitted, first.failed) == (per_partition, per_partition, 0)
        assert (first.pending, first.smallest_failed_offset) == (0, None)
        assert sender.status()["posted_by_endpoint"]["spout"] >= 1
    finally:
        poster.close()
        sender.close(timeout_s=2)
        spout.stop()

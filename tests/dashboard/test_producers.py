"""Producer delivery counts end to end in Django: pushed through the ingest, merged across a
client restart, refused with a 400 naming the field (nothing stored lost), and shown alike by
``lagwatch_status``, ``/api/v1/producers/``, ``/metrics``, the producers page, a group page
and the alert rules (PRODUCER_EXPIRY). Last, a real librdkafka producer whose records expire
(its broker address answers nothing) pushes the counts of the client package's
``DeliveryCounts`` (docs/INGEST.md)."""

from __future__ import annotations

import io
import json
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from lagwatch_client import DeliveryCounts

from dashboard.alerts.evaluation import producer_topic_codes, read_partitions
from dashboard.api.tokens import create_token
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from tests.collectors.ingest_documents import producer_doc

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-ingest-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIBRDKAFKA = "/api/v1/ingest/lab/librdkafka"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cluster(settings: Any) -> Cluster:
    settings.LAGWATCH_INGEST_TOKEN = TOKEN
    settings.LAGWATCH_INGEST_MAX_BYTES = 1024 * 1024
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return Cluster.objects.create(name="lab")


def doc_with(counts: list[dict], instance: str | None = "i-1", time_s: int | None = None) -> dict:
    doc = producer_doc()
    doc["time"] = time_s or int(timezone.now().timestamp())
    block: dict[str, Any] = {"counts": counts}
    if instance is not None:
        block["instance"] = instance
    doc["lagwatch_deliveries"] = block
    return doc


def push(client: Client, doc: Any) -> Any:
    body = doc if isinstance(doc, str) else json.dumps(doc)
    return client.post(LIBRDKAFKA, body, content_type="application/json", headers=AUTH)


def status() -> dict:
    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    return json.loads(out.getvalue())


def orders_row(doc: dict) -> dict:
    (row,) = [r for r in doc["producers"] if r["topic"] == "orders"]
    return row


def counts(delivered: int, expired: int, other: int = 0) -> list[dict]:
    failed = {"_MSG_TIMED_OUT": expired}
    if other:
        failed["_MSG_SIZE_TOO_LARGE"] = other
    return [{"topic": "orders", "partition": 0, "delivered": delivered, "failed": failed}]


def test_pushed_counts_show_in_status_and_survive_a_restart(client: Client, cluster) -> None:
    assert push(client, doc_with(counts(100, 4, 1))).status_code == 202
    row = orders_row(status())
    assert row["client_id"] == "orders-producer" and row["cluster"] == "lab"
    assert (row["queued"], row["in_flight"]) == (73, 47)  # the statistics' own figures
    assert (row["delivered"], row["failed"], row["expired"]) == (100, 1, 4)
    assert row["failed_by_reason"] == {"_MSG_SIZE_TOO_LARGE": 1, "_MSG_TIMED_OUT": 4}
    assert row["as_of"].endswith("Z") and row["last_expired_at"] is not None
    assert row["partitions"] == [
        {"partition": 0, "queued": 40, "in_flight": 25, "delivered": 100, "failed": 1,
         "expired": 4},
        {"partition": 1, "queued": 33, "in_flight": 22, "delivered": 0, "failed": 0,
         "expired": 0},
    ]  # fmt: skip

    # The client restarts: its counts start again from zero; nothing counted is lost.
    assert push(client, doc_with(counts(5, 1), instance="i-2")).status_code == 202
    row = orders_row(status())
    assert (row["delivered"], row["failed"], row["expired"], row["restarts"]) == (105, 1, 5, 1)
    # Without ids, counts going backwards tell the restart.
    assert push(client, doc_with(counts(2, 0), instance=None)).status_code == 202
    row = orders_row(status())
    assert (row["delivered"], row["expired"], row["restarts"]) == (107, 5, 2)
    # A statistics document without the block keeps the counts.
    plain = producer_doc()
    plain["time"] = int(timezone.now().timestamp())
    assert push(client, plain).status_code == 202
    assert orders_row(status())["expired"] == 5

    doc = status()
    (expiry,) = doc["producer_expiry"]
    assert expiry == {
        "cluster": "lab", "topic": "orders", "diagnosis": "PRODUCER_EXPIRY", "expired": 5,
        "reason": "5 records expired before reaching the broker: no consumer will ever see them",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ("nope", "lagwatch_deliveries: must be a JSON object"),
        ({"counts": [{"topic": "orders", "partition": 0, "delivered": "9"}]},
         "lagwatch_deliveries.counts.0.delivered: must be an integer, got a string"),
        ({"counts": [{"topic": "orders", "partition": 0, "failed": {"_MSG_TIMED_OUT": -1}}]},
         "lagwatch_deliveries.counts.0.failed._MSG_TIMED_OUT: must be >= 0, got -1"),
    ],
)  # fmt: skip
def test_a_bad_block_is_a_400_naming_the_field_and_loses_nothing(
    client: Client, cluster, block: Any, field: str
) -> None:
    assert push(client, doc_with(counts(10, 3))).status_code == 202
    before = orders_row(status())
    bad = doc_with([])
    bad["lagwatch_deliveries"] = block
    response = push(client, bad)
    assert response.status_code == 400
    assert response.json()["error"].startswith(field)
    assert orders_row(status()) == before


def test_a_bad_statistics_field_is_a_400_and_loses_nothing(client: Client, cluster) -> None:
    assert push(client, doc_with(counts(10, 3))).status_code == 202
    before = orders_row(status())
    bad = doc_with(counts(20, 30))
    bad["msg_cnt"] = "many"
    response = push(client, bad)
    assert response.status_code == 400 and response.json()["error"].startswith("msg_cnt:")
    assert orders_row(status()) == before


def test_old_expiry_is_no_diagnosis(client: Client, cluster, settings) -> None:
    settings.LAGWATCH_PRODUCER_EXPIRY_WINDOW_S = 60
    old = int((timezone.now() - timedelta(seconds=600)).timestamp())
    assert push(client, doc_with(counts(10, 3), time_s=old)).status_code == 202
    doc = status()
    assert orders_row(doc)["expired"] == 3
    assert doc["producer_expiry"] == []


def test_api_metrics_pages_and_alert_facts_agree(client: Client, cluster, django_user_model):
    assert push(client, doc_with(counts(100, 4))).status_code == 202
    _, secret = create_token("reader")
    api = client.get("/api/v1/producers/", headers={"Authorization": f"Bearer {secret}"})
    assert api.status_code == 200
    (row,) = api.json()["producers"]
    assert (row["expired"], row["delivered"]) == (4, 100)
    assert api.json()["producer_expiry"][0]["expired"] == 4
    assert client.get("/api/v1/producers/").status_code == 401
    refused = client.get("/api/v1/producers/?nope=1", headers={"Authorization": f"Bearer {secret}"})
    assert refused.status_code == 400

    metrics = client.get("/metrics", headers={"Authorization": f"Bearer {secret}"}).content.decode()
    labels = 'client_id="orders-producer",cluster="lab",topic="orders"'
    assert f"lagwatch_producer_records_expired_total{{{labels}}} 4.0" in metrics
    assert f"lagwatch_producer_records_delivered_total{{{labels}}} 100.0" in metrics
    assert f"lagwatch_producer_records_queued{{{labels}}} 73.0" in metrics
    assert 'lagwatch_topic_producer_expiry{cluster="lab",topic="orders"} 1.0' in metrics

    now = timezone.now()
    g = ConsumerGroup.objects.create(
        cluster=cluster, source="kafka", name="<b>readers</b>", first_seen_at=now, last_seen_at=now
    )
    PartitionState.objects.create(
        group=g, topic="orders", partition=0, lag=0, sampled_at=now, status="OK"
    )
    sentence = "4 records expired before reaching the broker: no consumer will ever see them"
    assert client.get("/producers/").status_code == 302  # login on every page
    user = django_user_model.objects.create_user("sre", password="s3cret-pass-123")
    client.force_login(user)
    page = client.get("/producers/").content.decode()
    assert sentence in page and "orders-producer" in page and 'href="/producers/"' in page
    group_page = client.get(f"/groups/{g.pk}/").content.decode()
    assert sentence in group_page and "&lt;b&gt;readers&lt;/b&gt;" in group_page
    assert client.get("/producers/?topic=other").content.decode().count(sentence) == 0

    # The alert rules see the OK partition of the topic with the topic's diagnosis.
    (facts,) = read_partitions(producer_topic_codes(now))
    assert facts.status == "OK" and facts.codes == ("PRODUCER_EXPIRY",)
    assert read_partitions({}) == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_real_producer_pushes_its_expired_records(client: Client, cluster) -> None:
    """librdkafka's own delivery reports: records to a broker that never answers expire with
    _MSG_TIMED_OUT; the client package counts them and the ingest stores exactly that count."""
    deliveries = DeliveryCounts()
    stats: list[str] = []
    producer = Producer({
        "bootstrap.servers": f"127.0.0.1:{_closed_port()}", "client.id": "expiring",
        "message.timeout.ms": 1000, "statistics.interval.ms": 200,
        "stats_cb": lambda s: stats.append(deliveries.attach(s)),
        "on_delivery": deliveries.on_delivery,
    })  # fmt: skip
    for i in range(7):
        producer.produce("orders", value=str(i).encode(), partition=i % 2)
    assert producer.flush(60) == 0
    stats.clear()
    while not stats:  # the first statistics document after the last report
        producer.poll(0.2)
    assert push(client, stats[-1]).status_code == 202
    row = orders_row(status())
    assert (row["client_id"], row["expired"], row["delivered"], row["failed"]) == (
        "expiring", 7, 0, 0)  # fmt: skip


def test_hostile_names_are_escaped_on_the_producers_page(
    client: Client, cluster, django_user_model
):
    hostile = '<script>alert("x")</script>'
    doc = doc_with([{"topic": hostile, "partition": 0, "failed": {"_MSG_TIMED_OUT": 1}}])
    doc["client_id"] = doc["name"] = hostile
    assert push(client, doc).status_code == 202
    client.force_login(django_user_model.objects.create_user("sre", password="s3cret-pass-123"))
    page = client.get("/producers/").content.decode()
    assert hostile not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page

"""What the collectors' store writes is what the API, /v3 and /metrics serve: cycles written
by ``dashboard.store.rows.store_cycle`` (the real write path), then read over HTTP."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome, SourceOutcome
from collectors.records import GroupMember, GroupSnapshot, PartitionOffsets, Source
from dashboard.monitoring.models import Cluster
from dashboard.monitoring.status_report import status_document
from dashboard.store.rows import store_cycle

pytestmark = pytest.mark.django_db


def figure(partition: int, committed: int, latest: int, owner: str) -> PartitionFigure:
    return PartitionFigure(
        source=Source.KAFKA, group="payments", topic="tx", partition=partition,
        committed=committed, earliest=0, latest=latest, lag=latest - committed,
        time_lag_s=2.0, time_lag_kind="interpolated", out_of_range=None, commit_time_ms=None,
        commit_version=None, owner=owner, topology_id=None, where="",
    )  # fmt: skip


def cycle(cycle_ms: int, step: int) -> CycleOutcome:
    members = (
        GroupMember("m-a", "pay-app", "/10.1.0.1"),
        GroupMember("m-b", "pay-app", "/10.1.0.2"),
    )
    return CycleOutcome(
        cluster="live", cycle_ms=cycle_ms,
        figures=[figure(0, 100 + step, 110 + 2 * step, "m-a"),
                 figure(1, 200, 250 + step, "m-b")],
        groups=[GroupSnapshot(Source.KAFKA, "payments", "Stable", generation=4, members=members)],
        offsets=[PartitionOffsets("tx", 0, 0, 110 + 2 * step, cycle_ms),
                 PartitionOffsets("tx", 1, 0, 250 + step, cycle_ms)],
        sources=[SourceOutcome("kafka", True, cycle_ms, cycle_ms + 120)],
    )  # fmt: skip


@pytest.fixture
def stored(db: None) -> Cluster:
    cluster = Cluster.objects.create(name="live", kafka_bootstrap_servers="k:9092",
                                      poll_interval_s=10)  # fmt: skip
    now_ms = int(time.time() * 1000) // 10_000 * 10_000
    for step in range(6):  # six polls, 10 s apart, the last one now
        store_cycle(cluster, cycle(now_ms - (5 - step) * 10_000, step))
    return cluster


def test_burrow_lag_of_stored_cycles(client: Client, stored: Cluster) -> None:
    status = client.get("/v3/kafka/live/consumer/payments/lag").json()["status"]
    assert status["partition_count"] == 2
    p0, p1 = status["partitions"]
    assert (p0["owner"], p0["client_id"]) == ("/10.1.0.1", "pay-app")
    assert p0["end"]["offset"] == 105 and p0["current_lag"] == 120 - 105
    assert p0["start"]["offset"] == 100 and p0["start"]["lag"] == 10  # the first poll
    assert p1["start"]["offset"] == p1["end"]["offset"] == 200  # frozen commit
    assert p1["end"]["lag"] == 55 and status["totallag"] == 15 + 55
    assert status["maxlag"]["partition"] == 1
    assert status["status"] == "OK" and status["complete"] == 0.0  # no status run yet


def test_api_and_metrics_of_stored_cycles(client: Client, stored: Cluster, api) -> None:
    group = api.get("/api/v1/groups/", cluster="live")["results"][0]
    assert (group["name"], group["total_lag"], group["generation"]) == ("payments", 70, 4)
    history = api.get(f"/api/v1/groups/{group['id']}/history/", since="5m")
    assert [p["lag"] for p in history["points"]] == [10 + 50 + 2 * s for s in range(6)]
    health = api.get("/api/v1/clusters/live/")["source_health"][0]
    assert health["reachable"] is True and health["last_duration_s"] == 0.12
    text = client.get("/metrics").content.decode()
    lags = {
        (s.labels["topic"], s.labels["partition"]): s.value
        for f in text_string_to_metric_families(text) if f.name == "lagwatch_partition_lag"
        for s in f.samples if s.labels["cluster"] == "live"
    }  # fmt: skip
    assert lags == {("tx", "0"): 15, ("tx", "1"): 55}


def kip848_cycle(cycle_ms: int, commit_ms: int) -> CycleOutcome:
    """A KIP-848 group as the Kafka adapter reports it: m-b still reconciling onto tx/1."""
    members = (
        GroupMember("m-a", "pay-app", "/10.1.0.1", (("tx", 0), ("tx", 1)), instance_id="pod-a",
                    member_epoch=9, target_assignment=(("tx", 0),)),
        GroupMember("m-b", "pay-app", "/10.1.0.2", (), member_epoch=8,
                    target_assignment=(("tx", 1),)),
    )  # fmt: skip
    figures = [
        PartitionFigure(
            source=Source.KAFKA, group="kip848", topic="tx", partition=n, committed=100,
            earliest=0, latest=110, lag=10, time_lag_s=1.0, time_lag_kind="interpolated",
            out_of_range=None, commit_time_ms=commit_ms - 1000 * n, commit_version=None,
            owner="m-a", topology_id=None, where="",
        )
        for n in (0, 1)
    ]  # fmt: skip
    return CycleOutcome(
        cluster="live", cycle_ms=cycle_ms, figures=figures,
        groups=[GroupSnapshot(Source.KAFKA, "kip848", "Reconciling", generation=9,
                              assignor="uniform", coordinator="b1:9092", protocol_type="consumer",
                              assignment_epoch=9, members=members)],
        offsets=[PartitionOffsets("tx", n, 0, 110, cycle_ms) for n in (0, 1)],
        sources=[SourceOutcome("kafka", True, cycle_ms, cycle_ms + 120)],
    )  # fmt: skip


def test_kip848_membership_of_stored_cycles_everywhere(
    client: Client, stored: Cluster, api
) -> None:
    now_ms = int(time.time() * 1000) // 10_000 * 10_000
    store_cycle(stored, kip848_cycle(now_ms, commit_ms=now_ms - 3000))
    details = [
        {"member_id": "m-a", "client_id": "pay-app", "host": "/10.1.0.1", "instance_id": "pod-a",
         "member_epoch": 9, "assignment": {"tx": [0, 1]}, "target_assignment": {"tx": [0]},
         "process_id": None, "tasks": None, "target_tasks": None},
        {"member_id": "m-b", "client_id": "pay-app", "host": "/10.1.0.2", "instance_id": None,
         "member_epoch": 8, "assignment": {}, "target_assignment": {"tx": [1]},
         "process_id": None, "tasks": None, "target_tasks": None},
    ]  # fmt: skip
    commit = datetime.fromtimestamp((now_ms - 3000) / 1000, UTC).isoformat().replace("+00:00", "Z")
    doc = next(g for g in status_document("live")["groups"] if g["group"] == "kip848")
    assert (doc["type"], doc["generation"], doc["assignment_epoch"]) == ("consumer", 9, 9)
    assert doc["member_details"] == details and doc["last_commit_at"] == commit
    group = api.get("/api/v1/groups/", name="kip848")["results"][0]
    assert (group["type"], group["assignment_epoch"], group["last_commit_at"]) == (
        "consumer", 9, commit,
    )  # fmt: skip
    assert group["member_details"] == details
    topics = client.get("/v3/kafka/live/consumer/kip848").json()["topics"]
    assert topics["tx"][0]["offsets"][-1]["timestamp"] == now_ms - 3000  # the commit's time
    assert (topics["tx"][0]["owner"], topics["tx"][0]["client_id"]) == ("/10.1.0.1", "pay-app")
    # the group stored before (six cycles of `payments`) has classic-era rows: no type
    payments = api.get("/api/v1/groups/", name="payments")["results"][0]
    assert payments["type"] is None and payments["member_details"][0]["member_epoch"] is None

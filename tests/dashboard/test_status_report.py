"""``lagwatch_status --json``: each group's Kafka type, generation and assignment epoch, its
newest commit and its members in detail, beside the fields scripts already read (kept as they
were); member rows stored before KIP-848 support read as unknowns."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState, SpoutSample

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"
NOW = timezone.now().replace(microsecond=0)


def status(*args: str) -> dict:
    out = io.StringIO()
    call_command("lagwatch_status", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def group(cluster: Cluster, name: str, source: str = "kafka", **kw) -> ConsumerGroup:
    return ConsumerGroup.objects.create(
        cluster=cluster, source=source, name=name, first_seen_at=NOW, last_seen_at=NOW, **kw
    )


def partition(g: ConsumerGroup, n: int, commit_age_s: float | None, topic: str = "orders"):
    return PartitionState.objects.create(
        group=g, topic=topic, partition=n, committed=10, latest=15, lag=5, sampled_at=NOW,
        last_commit_at=None if commit_age_s is None else NOW - timedelta(seconds=commit_age_s),
    )  # fmt: skip


CHECKOUT_MEMBERS = [
    {"member_id": "c-1", "instance_id": "pod-1", "client_id": "app", "host": "/10.0.0.1",
     "assignment": [["orders", 1], ["orders", 0]], "target_assignment": [["orders", 0]],
     "member_epoch": 12},
    {"member_id": XSS, "instance_id": None, "client_id": XSS, "host": XSS, "assignment": [],
     "target_assignment": [], "member_epoch": None},
]  # fmt: skip
# Stored before KIP-848 support: members without instance ids, epochs or targets.
OLD_MEMBERS = [
    {"member_id": "m-1", "client_id": "billing-app", "host": "/10.0.0.9",
     "assignment": [["invoices", 0]]},
]  # fmt: skip


@pytest.fixture
def groups() -> dict[str, ConsumerGroup]:
    prod = Cluster.objects.create(name="prod", kafka_bootstrap_servers="k:9092")
    found = {
        "checkout": group(
            prod, "checkout", state="Assigning", group_type="consumer", generation=13,
            assignment_epoch=12, assignor="uniform", coordinator="b1:9092",
            members=CHECKOUT_MEMBERS,
        ),
        "billing": group(prod, "billing", state="Stable", generation=7, members=OLD_MEMBERS),
        "legacy": group(prod, "legacy", source="zookeeper", generation=4, members=[]),
        "spout": group(prod, "spout", source="storm", members_known=False, owner="topo"),
    }  # fmt: skip
    partition(found["checkout"], 0, 50)
    partition(found["checkout"], 1, 2)
    partition(found["checkout"], 2, None)
    partition(found["billing"], 0, None, topic="invoices")
    partition(found["spout"], 0, 30, topic="clicks")
    return found


def by_name(doc: dict) -> dict[str, dict]:
    return {g["group"]: g for g in doc["groups"]}


def iso(at) -> str:
    return at.isoformat().replace("+00:00", "Z")


# What a member of any group but a streams group has in these keys (KIP-1071's).
NOT_STREAMS = {"process_id": None, "tasks": None, "target_tasks": None}


def test_a_kip848_group_in_full(groups) -> None:
    g = by_name(status())["checkout"]
    assert (g["type"], g["state"], g["generation"], g["assignment_epoch"]) == (
        "consumer", "Assigning", 13, 12,
    )  # fmt: skip
    assert g["members"] == 2  # still the count
    assert g["last_commit_at"] == iso(NOW - timedelta(seconds=2))  # the newest partition's
    assert g["member_details"] == [
        {"member_id": "c-1", "client_id": "app", "host": "/10.0.0.1", "instance_id": "pod-1",
         "member_epoch": 12, "assignment": {"orders": [0, 1]},
         "target_assignment": {"orders": [0]}, **NOT_STREAMS},
        {"member_id": XSS, "client_id": XSS, "host": XSS, "instance_id": None,
         "member_epoch": None, "assignment": {}, "target_assignment": {}, **NOT_STREAMS},
    ]  # fmt: skip


def test_old_member_rows_and_other_sources(groups) -> None:
    doc = by_name(status())
    billing = doc["billing"]
    assert billing["type"] is None and billing["assignment_epoch"] is None
    assert billing["generation"] == 7 and billing["members"] == 1
    assert billing["member_details"] == [
        {"member_id": "m-1", "client_id": "billing-app", "host": "/10.0.0.9",
         "instance_id": None, "member_epoch": None, "assignment": {"invoices": [0]},
         "target_assignment": None, **NOT_STREAMS},
    ]  # fmt: skip
    assert billing["last_commit_at"] is None  # no partition has a commit time
    legacy = doc["legacy"]
    assert (legacy["type"], legacy["generation"], legacy["member_details"]) == (None, 4, [])
    spout = doc["spout"]
    assert spout["type"] is None and spout["members"] is None
    assert spout["member_details"] is None  # members unknown, like the count
    assert spout["last_commit_at"] == iso(NOW - timedelta(seconds=30))


def test_existing_fields_are_unchanged(groups) -> None:
    doc = status()
    keys = {
        "cluster", "source", "group", "state", "generation", "members", "status", "complete",
        "evaluated_at", "total_lag", "max_time_lag_s", "owner", "topology_id", "stale",
        "last_seen_at",
    }  # fmt: skip
    added = {"type", "assignment_epoch", "last_commit_at", "member_details", "topology"}
    assert all(set(g) == keys | added for g in doc["groups"])
    rows = {(p["group"], p["partition"]): p for p in doc["partitions"]}
    assert rows[("checkout", 0)]["last_commit_at"] == iso(NOW - timedelta(seconds=50))
    assert rows[("checkout", 2)]["last_commit_at"] is None
    assert by_name(doc)["checkout"]["total_lag"] == 15


def test_one_cluster_only_and_the_query_count_stays_fixed(
    groups, django_assert_max_num_queries
) -> None:
    other = Cluster.objects.create(name="other")
    for i in range(20):
        g = group(other, f"g{i}", group_type="classic", generation=i,
                  members=[{"member_id": f"m{i}", "assignment": [["t", i]]}])  # fmt: skip
        partition(g, 0, i)
    doc = status("--cluster", "prod")
    assert {g["cluster"] for g in doc["groups"]} == {"prod"}
    # 10 whatever the number of groups: groups, partitions, rebalance events, cluster events,
    # errors, brokers, spouts, the Spark jobs' runs (one per job that ran, two here), producers.
    with django_assert_max_num_queries(10):
        doc = status()
    assert len(doc["groups"]) == 24
    assert by_name(doc)["g3"]["type"] == "classic"
    assert by_name(doc)["g3"]["last_commit_at"] == iso(NOW - timedelta(seconds=3))


def test_brokers_purgatory_with_as_of_and_error(groups) -> None:
    from dashboard.monitoring.models import BrokerPurgatory

    prod, other = Cluster.objects.get(name="prod"), Cluster.objects.create(name="other")
    BrokerPurgatory.objects.create(
        cluster=prod, broker="b1:7071", url="http://b1:7071/metrics", fetch_purgatory=4,
        produce_purgatory=0, fetch_expires_per_s=1.25, as_of=NOW, checked_at=NOW,
    )  # fmt: skip
    BrokerPurgatory.objects.create(
        cluster=other, broker=XSS, url="http://x/", checked_at=NOW, error="Connection refused"
    )
    doc = status()
    first, second = doc["brokers"]
    assert first == {
        "cluster": "other", "broker": XSS, "url": "http://x/", "fetch_purgatory": None,
        "produce_purgatory": None, "fetch_watched": None, "produce_watched": None,
        "fetch_expirations_per_s": None, "produce_expirations_per_s": None, "as_of": None,
        "checked_at": iso(NOW), "error": "Connection refused",
    }  # fmt: skip
    assert (second["cluster"], second["fetch_purgatory"], second["produce_purgatory"]) == (
        "prod", 4, 0,
    )  # fmt: skip
    assert second["fetch_expirations_per_s"] == 1.25 and second["as_of"] == iso(NOW)
    assert second["error"] is None
    assert [b["broker"] for b in status("--cluster", "prod")["brokers"]] == ["b1:7071"]


def test_spouts_latest_figures_by_cluster_and_topology(groups) -> None:
    # Spouts are shown while fresh (10 min) by the wall clock: the time of the test, not of
    # the module's import (parallel workers may import it long before they run it).
    now = timezone.now().replace(microsecond=0)
    prod = Cluster.objects.get(name="prod")
    other = Cluster.objects.create(name="other")
    rows = [
        (prod, "topo-1", "spout", now - timedelta(seconds=5), 90, 20),
        (prod, "topo-1", "spout", now, 100, 20),  # the latest of topo-1/spout
        (prod, "topo-0", "spout", now - timedelta(hours=1), 5, None),  # killed long ago
        (other, "topo-9", XSS, now, 7, None),
    ]
    SpoutSample.objects.bulk_create(
        SpoutSample(cluster=c, topology_id=t, spout_id=s, at=at, emitted=e, acked=e, failed=0,
                    complete_latency_ms=3.5, pending=cap, max_spout_pending=cap)
        for c, t, s, at, e, cap in rows
    )  # fmt: skip
    doc = status()
    assert doc["spouts"] == [
        {"cluster": "other", "topology_id": "topo-9", "spout_id": XSS, "at": iso(now),
         "emitted": 7, "acked": 7, "failed": 0, "complete_latency_ms": 3.5, "pending": None,
         "max_spout_pending": None},
        {"cluster": "prod", "topology_id": "topo-1", "spout_id": "spout", "at": iso(now),
         "emitted": 100, "acked": 100, "failed": 0, "complete_latency_ms": 3.5, "pending": 20,
         "max_spout_pending": 20},
    ]  # fmt: skip
    assert [s["cluster"] for s in status("--cluster", "prod")["spouts"]] == ["prod"]

"""Kafka group membership in /api/v1 and /metrics: group type, generation and assignment
epoch, the newest commit, members with their instance ids, epochs and KIP-848 targets; the
world's ``billing`` group keeps member rows written before those keys existed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dashboard.monitoring import group_totals
from dashboard.monitoring.models import ConsumerGroup, PartitionState, RebalanceEvent
from tests.api.world import World

pytestmark = pytest.mark.django_db

# What a member of any group but a streams group has in these keys (KIP-1071's).
NOT_STREAMS = {"process_id": None, "tasks": None, "target_tasks": None}
CHECKOUT_MEMBERS = [
    {"member_id": "c-1", "instance_id": "pod-1", "client_id": "checkout-app", "host": "/10.2.0.1",
     "assignment": [["orders", 1], ["orders", 0]],
     "target_assignment": [["orders", 0], ["orders", 1]], "member_epoch": 12},
    {"member_id": "c-2", "instance_id": None, "client_id": "checkout-app", "host": "/10.2.0.2",
     "assignment": [], "target_assignment": [["orders", 2]], "member_epoch": 11},
]  # fmt: skip
CHECKOUT_DETAILS = [
    {"member_id": "c-1", "client_id": "checkout-app", "host": "/10.2.0.1", "instance_id": "pod-1",
     "member_epoch": 12, "assignment": {"orders": [0, 1]}, "target_assignment": {"orders": [0, 1]},
     **NOT_STREAMS},
    {"member_id": "c-2", "client_id": "checkout-app", "host": "/10.2.0.2", "instance_id": None,
     "member_epoch": 11, "assignment": {}, "target_assignment": {"orders": [2]}, **NOT_STREAMS},
]  # fmt: skip
# The world's billing members: {member_id, client_id, host, assignment} only (older rows).
BILLING_DETAILS = [
    {"member_id": f"m-{n}", "client_id": "billing-app", "host": f"/10.0.0.{n}",
     "instance_id": None, "member_epoch": None, "assignment": {}, "target_assignment": None,
     **NOT_STREAMS}
    for n in (1, 2)
]  # fmt: skip


@pytest.fixture
def checkout(world: World) -> ConsumerGroup:
    """A KIP-848 group reconciling: c-2 has not taken partition 2 yet."""
    g = ConsumerGroup.objects.create(
        cluster=world.clusters["prod"], source="kafka", name="checkout", status="OK",
        state="Reconciling", group_type="consumer", generation=12, assignment_epoch=12,
        assignor="uniform", coordinator="broker-1:9092", members=CHECKOUT_MEMBERS,
        first_seen_at=world.now - timedelta(hours=2), last_seen_at=world.now,
    )  # fmt: skip
    for n, age_s in ((0, 40), (1, 5), (2, None)):
        PartitionState.objects.create(
            group=g, topic="orders", partition=n, committed=10, latest=12, lag=2,
            last_commit_at=None if age_s is None else world.now - timedelta(seconds=age_s),
            sampled_at=world.now, status="OK",
        )  # fmt: skip
    group_totals.refresh([g.id])  # as the store does
    return g


def iso(at) -> str:
    return at.isoformat().replace("+00:00", "Z")


# --- /api/v1 -------------------------------------------------------------------------------


def test_group_list_has_type_epochs_last_commit_and_members(
    api, world: World, checkout: ConsumerGroup
) -> None:
    body = api.get("/api/v1/groups/", cluster="prod", source="kafka", ordering="name")
    by_name = {g["name"]: g for g in body["results"]}
    g = by_name["checkout"]
    assert (g["type"], g["state"], g["generation"], g["assignment_epoch"]) == (
        "consumer", "Reconciling", 12, 12,
    )  # fmt: skip
    assert g["last_commit_at"] == iso(world.now - timedelta(seconds=5))  # the newest
    assert g["member_details"] == CHECKOUT_DETAILS
    assert g["members"] == 2  # the count, as before
    billing = by_name["billing"]
    assert billing["type"] is None  # written before group types were stored
    assert billing["assignment_epoch"] is None and billing["generation"] == 7
    assert billing["member_details"] == BILLING_DETAILS
    assert billing["last_commit_at"] == iso(world.now - timedelta(minutes=3))
    no_commit = next(g for g in body["results"] if g["name"].startswith("evil"))
    assert no_commit["last_commit_at"] is None and no_commit["member_details"] == []


def test_group_detail_adds_them_beside_the_member_list(
    api, world: World, checkout: ConsumerGroup
) -> None:
    body = api.get(f"/api/v1/groups/{checkout.pk}/")
    assert body["member_details"] == CHECKOUT_DETAILS
    assert (body["assignor"], body["coordinator"]) == ("uniform", "broker-1:9092")
    # member_list keeps its shape: the stored pairs, as before
    assert body["member_list"][0] == {
        "member_id": "c-1", "client_id": "checkout-app", "host": "/10.2.0.1",
        "assignment": [["orders", 1], ["orders", 0]],
    }  # fmt: skip
    assert body["partition_list"][0]["last_commit_at"] == iso(world.now - timedelta(seconds=40))


def test_status_list_carries_the_same_group_fields(
    api, world: World, checkout: ConsumerGroup
) -> None:
    body = api.get("/api/v1/status/", name="checkout")
    (g,) = body["results"]
    assert g["type"] == "consumer" and g["member_details"] == CHECKOUT_DETAILS


def test_types_and_unknown_members_read_as_null(api, world: World) -> None:
    prod = world.clusters["prod"]
    classic = ConsumerGroup.objects.create(
        cluster=prod, source="kafka", name="classic-static", group_type="classic", generation=3,
        members=[{"member_id": "s-1", "instance_id": "host-a", "client_id": "", "host": "",
                  "assignment": [["t", 0], "junk", ["t"], [1, 2]], "target_assignment": None,
                  "member_epoch": None}],
        first_seen_at=world.now, last_seen_at=world.now,
    )  # fmt: skip
    blind = ConsumerGroup.objects.create(
        cluster=prod, source="kafka", name="blind", group_type="connect", members_known=False,
        first_seen_at=world.now, last_seen_at=world.now,
    )  # fmt: skip
    got = api.get(f"/api/v1/groups/{classic.pk}/")
    assert got["type"] == "classic"
    assert got["member_details"] == [
        {"member_id": "s-1", "client_id": None, "host": None, "instance_id": "host-a",
         "member_epoch": None, "assignment": {"t": [0]}, "target_assignment": None,
         **NOT_STREAMS},
    ]  # fmt: skip
    got = api.get(f"/api/v1/groups/{blind.pk}/")
    assert got["type"] is None  # not one of the types Lagwatch reads (GROUP_TYPES)
    assert got["member_details"] is None  # the source did not report members
    zk = api.get("/api/v1/groups/", name="legacy-zk")["results"][0]
    assert zk["type"] is None and zk["member_details"] == []
    queue = ConsumerGroup.objects.create(
        cluster=prod, source="kafka", name="jobs-queue", group_type="share", members=[],
        first_seen_at=world.now, last_seen_at=world.now,
    )  # fmt: skip
    assert api.get(f"/api/v1/groups/{queue.pk}/")["type"] == "share"


# --- /metrics ------------------------------------------------------------------------------


def scrape(client: Client) -> dict[str, dict[tuple, float]]:
    response = client.get("/metrics")
    assert response.status_code == 200
    found: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def labels(**kw) -> tuple:
    return tuple(sorted(kw.items()))


def group_labels(name: str, source: str = "kafka", **extra) -> tuple:
    return labels(cluster="prod", source=source, group=name, **extra)


def test_generation_gauge_labelled_with_the_group_type(
    client: Client, world: World, checkout: ConsumerGroup
) -> None:
    generation = scrape(client)["lagwatch_group_generation"]
    assert generation[group_labels("checkout", type="consumer")] == 12
    assert generation[group_labels("billing", type="")] == 7  # type unknown
    # no generation known: no series rather than a made-up 0
    assert not [k for k in generation if dict(k)["group"] in ("legacy-zk", "orders-spout")]


def test_last_commit_timestamp_is_the_newest_partition_commit(
    client: Client, world: World, checkout: ConsumerGroup
) -> None:
    last = scrape(client)["lagwatch_group_last_commit_timestamp_seconds"]
    assert last[group_labels("checkout")] == (world.now - timedelta(seconds=5)).timestamp()
    assert last[group_labels("billing")] == (world.now - timedelta(minutes=3)).timestamp()
    assert group_labels("orders-spout", "storm") not in last  # never committed with a time


def test_rebalance_counter_counts_stored_events_and_only_grows(
    client: Client, world: World, checkout: ConsumerGroup
) -> None:
    m = scrape(client)
    total = m["lagwatch_group_rebalances_total"]
    assert total[group_labels("billing")] == 2
    assert total[group_labels("checkout")] == 0
    assert total[group_labels("legacy-zk", "zookeeper")] == 0
    assert group_labels("orders-spout", "storm") not in total  # spouts have no members
    created = m["lagwatch_group_rebalances_created"]
    assert created[group_labels("checkout")] == checkout.first_seen_at.timestamp()
    RebalanceEvent.objects.create(group=checkout, at=world.now, generation=13,
                                  cause="member_joined")  # fmt: skip
    # a retried cycle writes the same event again: the unique key keeps one row
    RebalanceEvent.objects.bulk_create(
        [RebalanceEvent(group=checkout, at=world.now, generation=13, cause="member_joined")],
        ignore_conflicts=True,
    )
    # the group's lifecycle on the same timeline is not a rebalance
    RebalanceEvent.objects.create(group=checkout, at=world.now, generation=None,
                                  cause="offsets_deleted")  # fmt: skip
    after = scrape(client)["lagwatch_group_rebalances_total"]
    assert after[group_labels("checkout")] == 1 and after[group_labels("billing")] == 2


def test_new_series_in_openmetrics_too(client: Client, world: World) -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse

    response = client.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    families = {f.name: f for f in om_parse(response.content.decode())}
    assert families["lagwatch_group_rebalances"].type == "counter"
    assert families["lagwatch_group_generation"].type == "gauge"
    assert families["lagwatch_group_last_commit_timestamp_seconds"].type == "gauge"

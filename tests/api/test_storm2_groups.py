"""A Storm 2 spout's Kafka group as stored and shown: its row names the topology (by name and
instance) that its commits' metadata named, and stays a Kafka group's; ``/api/v1`` groups,
``lagwatch_status --json`` and the group page say so; Storm UI's figures of that topology,
where a cluster has any, are the group's spouts."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome, SourceOutcome
from collectors.records import GroupMember, GroupSnapshot, PartitionOffsets, Source
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState, SpoutSample
from dashboard.store.rows import store_cycle

pytestmark = pytest.mark.django_db

SPOUT = "storm2-orders-spout"
TOPOLOGY = "orders-storm2-1-1795907098"
CYCLE_MS = 1_800_000_000_000


def figure(group: str, partition: int, committed: int, topology: str | None,
           owner: str | None = None) -> PartitionFigure:  # fmt: skip
    return PartitionFigure(
        source=Source.KAFKA, group=group, topic="storm2-orders", partition=partition,
        committed=committed, earliest=0, latest=100, lag=100 - committed, time_lag_s=1.0,
        time_lag_kind="interpolated", out_of_range=None, commit_time_ms=None,
        commit_version=None, owner=owner, topology_id=topology, where=f"group {group}",
    )  # fmt: skip


def outcome(cycle_ms: int, reachable: bool = True) -> CycleOutcome:
    """The spout's group (Empty, no members: it assigns its partitions itself) beside an
    ordinary Kafka group reading the same topic; unreachable: the last known figures only."""
    figures = [figure(SPOUT, 0, 90, TOPOLOGY), figure(SPOUT, 1, 95, TOPOLOGY),
               figure("billing", 0, 40, None, owner="m-1")]  # fmt: skip
    groups = [
        GroupSnapshot(Source.KAFKA, SPOUT, "Empty", protocol_type="classic",
                      topics=("storm2-orders",), topology_id=TOPOLOGY),
        GroupSnapshot(Source.KAFKA, "billing", "Stable", protocol_type="classic",
                      members=(GroupMember("m-1", assignment=(("storm2-orders", 0),)),),
                      topics=("storm2-orders",)),
    ]  # fmt: skip
    return CycleOutcome(
        cluster="lab",
        cycle_ms=cycle_ms,
        figures=figures,
        groups=groups if reachable else [],
        offsets=[PartitionOffsets("storm2-orders", p, 0, 100, cycle_ms) for p in (0, 1)]
        if reachable
        else [],
        sources=[
            SourceOutcome(
                "kafka", reachable, cycle_ms, cycle_ms + 100, "" if reachable else "broker down"
            )
        ],  # fmt: skip
    )


@pytest.fixture
def cluster() -> Cluster:
    lab = Cluster.objects.create(name="lab", kafka_bootstrap_servers="k:9092")
    store_cycle(lab, outcome(CYCLE_MS))
    return lab


def test_the_row_names_the_topology_and_stays_a_kafka_groups(cluster: Cluster) -> None:
    spout = ConsumerGroup.objects.get(cluster=cluster, name=SPOUT)
    assert (spout.source, spout.group_type, spout.state) == ("kafka", "classic", "Empty")
    assert (spout.owner, spout.topology_id) == ("orders-storm2", TOPOLOGY)
    assert spout.members == [] and spout.members_known
    lags = dict(PartitionState.objects.filter(group=spout).values_list("partition", "lag"))
    assert lags == {0: 10, 1: 5}
    billing = ConsumerGroup.objects.get(cluster=cluster, name="billing")
    assert (billing.owner, billing.topology_id) == ("", "")
    # A partition's owner is still the Kafka member holding it, never the topology.
    assert PartitionState.objects.get(group=billing).owner == "m-1"


def test_the_topology_outlives_an_unreachable_cycle(cluster: Cluster) -> None:
    """The broker down: no snapshot, the last known figures (which carry the group's topology)
    keep the row's link, and no Kafka member's id becomes its owner."""
    store_cycle(cluster, outcome(CYCLE_MS + 10_000, reachable=False))
    spout = ConsumerGroup.objects.get(cluster=cluster, name=SPOUT)
    assert (spout.owner, spout.topology_id) == ("orders-storm2", TOPOLOGY)
    billing = ConsumerGroup.objects.get(cluster=cluster, name="billing")
    assert (billing.owner, billing.topology_id) == ("", "")


def test_api_groups_list_and_detail(api, cluster: Cluster) -> None:
    listed = {g["name"]: g for g in api.get("/api/v1/groups/", cluster="lab")["results"]}
    assert (listed[SPOUT]["source"], listed[SPOUT]["type"]) == ("kafka", "classic")
    assert (listed[SPOUT]["owner"], listed[SPOUT]["topology_id"]) == ("orders-storm2", TOPOLOGY)
    assert listed["billing"]["topology_id"] == ""
    detail = api.get(f"/api/v1/groups/{ConsumerGroup.objects.get(name=SPOUT).pk}/")
    assert detail["topology_id"] == TOPOLOGY
    assert detail["spouts"] == []  # no Storm UI here: nothing more


def test_storm_ui_figures_of_the_topology_are_the_groups_spouts(api, cluster: Cluster) -> None:
    """Where a cluster's Storm UI lists the topology (a Storm 2 UI, not served in the lab),
    its whole-spout figures join the group by the topology instance, as a spout group's do."""
    now = timezone.now()
    SpoutSample.objects.bulk_create([
        SpoutSample(cluster=cluster, topology_id=TOPOLOGY, spout_id="kafka-spout", at=now,
                    emitted=500, acked=498, failed=0),
        SpoutSample(cluster=cluster, topology_id="orders-storm2-0-1700000000",
                    spout_id="kafka-spout", at=now, emitted=1, acked=1, failed=0),
    ])  # fmt: skip
    spout = ConsumerGroup.objects.get(name=SPOUT)
    spouts = api.get(f"/api/v1/groups/{spout.pk}/")["spouts"]
    assert [(s["topology_id"], s["spout_id"], s["emitted"]) for s in spouts] == [
        (TOPOLOGY, "kafka-spout", 500)
    ]
    billing = ConsumerGroup.objects.get(name="billing")
    assert api.get(f"/api/v1/groups/{billing.pk}/")["spouts"] == []


def test_lagwatch_status_json(cluster: Cluster) -> None:
    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    groups = {g["group"]: g for g in json.loads(out.getvalue())["groups"]}
    assert (groups[SPOUT]["source"], groups[SPOUT]["type"]) == ("kafka", "classic")
    assert (groups[SPOUT]["owner"], groups[SPOUT]["topology_id"]) == ("orders-storm2", TOPOLOGY)
    assert (groups["billing"]["owner"], groups["billing"]["topology_id"]) == (None, None)


def test_the_group_page_names_the_topology(
    client: Client, django_user_model, settings, cluster: Cluster
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    client.force_login(django_user_model.objects.create_user("sre", password="pw-123456789"))
    spout = ConsumerGroup.objects.get(name=SPOUT)
    page = client.get(reverse("ui:group", args=[spout.pk]) + "?range=15m")
    assert page.status_code == 200
    assert f"Storm 2 spout of topology orders-storm2 ({TOPOLOGY})" in page.content.decode()
    billing = ConsumerGroup.objects.get(name="billing")
    body = client.get(reverse("ui:group", args=[billing.pk])).content.decode()
    assert "Storm 2 spout" not in body
    listed = client.get(reverse("ui:groups") + "?cluster=lab").content.decode()
    assert "orders-storm2" in listed

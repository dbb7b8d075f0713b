"""A cluster rebuilt under the same name: the identity marks its sources report are stored
per cluster; a changed one starts the offsets history over and goes on the timeline."""

from __future__ import annotations

import pytest

from collectors.identity import (
    KAFKA_CLUSTER_ID,
    changes,
    describe_changes,
    znode_mark,
    znode_mark_key,
)
from dashboard.monitoring.models import Cluster, ClusterEvent, ClusterIdentity
from dashboard.status.runs import cluster_evaluator_configs
from dashboard.store.rows import store_cycle
from dashboard.times import ms_to_dt
from tests.dashboard.test_store import figure, outcome

T = 1_700_000_000_000
SPOUTS = znode_mark_key("/kafka-spout")


@pytest.mark.parametrize(
    ("before", "now", "changed"),
    [
        ({}, {KAFKA_CLUSTER_ID: "a"}, {}),  # first seen
        ({KAFKA_CLUSTER_ID: "a"}, {KAFKA_CLUSTER_ID: "a"}, {}),
        ({KAFKA_CLUSTER_ID: "a"}, {KAFKA_CLUSTER_ID: "b"}, {KAFKA_CLUSTER_ID: ("a", "b")}),
        ({KAFKA_CLUSTER_ID: "a"}, {}, {}),  # not read this cycle
        ({SPOUTS: "0x2@1"}, {SPOUTS: "0x2@1", "znode /consumers": "0x9@5"}, {}),  # a new root
        ({SPOUTS: "0x2@1"}, {SPOUTS: "0x2@7"}, {SPOUTS: ("0x2@1", "0x2@7")}),  # same zxid
        ({SPOUTS: "0x2@1", KAFKA_CLUSTER_ID: "a"}, {SPOUTS: "0x5@1"}, {SPOUTS: ("0x2@1", "0x5@1")}),
    ],
)
def test_changes(before: dict, now: dict, changed: dict) -> None:
    assert changes(before, now) == changed


def test_marks_read_as_zookeeper_writes_them() -> None:
    assert znode_mark(0x1A3, 1700000000123) == "0x1a3@1700000000123"
    text = describe_changes("kafka", {KAFKA_CLUSTER_ID: ("a", "b")})
    assert text == "kafka: cluster id a → b"


@pytest.fixture
def cluster() -> Cluster:
    return Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")


def cycle(cluster: Cluster, at_ms: int, **identities: dict[str, str]) -> None:
    store_cycle(cluster, outcome(at_ms, figure(10, 20), identities=identities))


@pytest.mark.django_db
def test_a_changed_cluster_id_starts_the_history_over(cluster: Cluster) -> None:
    cycle(cluster, T, kafka={KAFKA_CLUSTER_ID: "old-id"})
    cycle(cluster, T + 10_000, kafka={KAFKA_CLUSTER_ID: "old-id"})
    cluster.refresh_from_db()
    assert cluster.history_from is None and not ClusterEvent.objects.exists()
    assert cluster_evaluator_configs()["c"].history_from_ms == 0

    cycle(cluster, T + 20_000)  # the broker down: nothing read, nothing decided
    cycle(cluster, T + 30_000, kafka={KAFKA_CLUSTER_ID: "new-id"})
    cycle(cluster, T + 30_000, kafka={KAFKA_CLUSTER_ID: "new-id"})  # a retried cycle
    cycle(cluster, T + 40_000, kafka={KAFKA_CLUSTER_ID: "new-id"})
    cluster.refresh_from_db()
    assert cluster.history_from == ms_to_dt(T + 30_000)  # the first cycle with the new id
    (event,) = ClusterEvent.objects.filter(cluster=cluster)
    assert (event.kind, event.at) == (ClusterEvent.REBUILT, ms_to_dt(T + 30_000))
    assert "cluster id old-id → new-id" in event.text
    assert event.detail == {"kafka": {KAFKA_CLUSTER_ID: ["old-id", "new-id"]}}
    assert cluster_evaluator_configs()["c"].history_from_ms == T + 30_000
    assert ClusterIdentity.objects.get(cluster=cluster, source="kafka").marks == {
        KAFKA_CLUSTER_ID: "new-id"
    }


@pytest.mark.django_db
def test_a_recreated_zookeeper_root_starts_it_over_and_a_new_root_does_not(
    cluster: Cluster,
) -> None:
    cycle(cluster, T, zookeeper={SPOUTS: "0x2@100"})
    cycle(cluster, T + 10_000, zookeeper={SPOUTS: "0x2@100", "znode /consumers": "0x8@200"})
    assert not ClusterEvent.objects.exists()
    cycle(cluster, T + 20_000, zookeeper={SPOUTS: "0x2@900", "znode /consumers": "0x8@200"})
    cluster.refresh_from_db()
    assert cluster.history_from == ms_to_dt(T + 20_000)
    (event,) = ClusterEvent.objects.all()
    assert "znode /kafka-spout 0x2@100 → 0x2@900" in event.text


@pytest.mark.django_db
def test_clusters_keep_their_own_identity(cluster: Cluster) -> None:
    other = Cluster.objects.create(name="d", kafka_bootstrap_servers="k2:9092")
    cycle(cluster, T, kafka={KAFKA_CLUSTER_ID: "a"})
    cycle(other, T, kafka={KAFKA_CLUSTER_ID: "b"})
    cycle(cluster, T + 10_000, kafka={KAFKA_CLUSTER_ID: "a"})
    assert not ClusterEvent.objects.exists()

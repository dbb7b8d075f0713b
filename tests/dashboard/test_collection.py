"""Whole collection cycles against the real lab ZooKeeper and broker, through the database.

One small world per test: a topic with known offsets, a Kafka group, a Storm spout znode and
a ZooKeeper consumer group reading it; ``collect --once`` then ``lagwatch_status --json``
must show each exactly as it is.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from collectors.cycle.runner import cycle_slot
from collectors.sample_log import SampleLog
from dashboard.monitoring.models import Cluster, SourceHealth
from dashboard.store.cycle import run_cluster_cycle
from tests.dashboard.collection_world import World, rows, status
from tests.raw_points import stored_points

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True)]


def test_one_cycle_shows_every_source_exactly(cluster: Cluster, world: World) -> None:
    out = io.StringIO()
    call_command("collect", "--once", "--cluster", cluster.name, stdout=out)
    report = json.loads(out.getvalue())
    assert report["unreachable"] == []

    doc = status(cluster)
    kafka = rows(doc, "kafka", world.group)
    assert {k: (v["committed"], v["latest"], v["lag"]) for k, v in kafka.items()} == {
        (world.topic, 0): (2, 5, 3),
        (world.topic, 1): (3, 3, 0),
    }
    assert all(v["status"] == "UNKNOWN" and v["stale"] is False for v in kafka.values())

    storm = rows(doc, "storm", world.spout)
    assert {k: (v["committed"], v["latest"], v["lag"]) for k, v in storm.items()} == {
        (world.topic, 0): (4, 5, 1)
    }
    assert storm[(world.topic, 0)]["last_commit_at"] is not None
    storm_group = next(g for g in doc["groups"] if g["source"] == "storm")
    assert (storm_group["group"], storm_group["owner"]) == (world.spout, "orders-topo")

    zk_rows = rows(doc, "zookeeper", world.zk_group)
    row = zk_rows[(world.topic, 1)]
    assert (row["committed"], row["latest"], row["lag"]) == (1, 3, 2)
    assert (row["owner"], row["alive"]) == (f"{world.zk_group}_host-1-0", True)
    zk_group = next(g for g in doc["groups"] if g["group"] == world.zk_group)
    assert zk_group["members"] == 1 and zk_group["total_lag"] == 2

    kafka_group = next(g for g in doc["groups"] if g["group"] == world.group)
    assert kafka_group["total_lag"] == 3
    healths = {h.source: h.reachable for h in SourceHealth.objects.filter(cluster=cluster)}
    assert healths == {"kafka": True, "zookeeper": True}


def test_a_retried_cycle_writes_nothing_twice(cluster: Cluster, world: World, settings) -> None:
    slot = cycle_slot(1_800_000_000_000, cluster.poll_interval_s)
    first = run_cluster_cycle(cluster, slot)
    samples = stored_points(group__cluster=cluster)
    log = SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL)
    logged = log.read(cluster.name).num_rows
    assert samples == first.partitions == logged > 0

    run_cluster_cycle(cluster, slot)  # the retry of the same slot
    assert stored_points(group__cluster=cluster) == samples
    assert log.read(cluster.name).num_rows == logged

    run_cluster_cycle(cluster, slot + 10_000)  # the next slot adds one sample per partition
    assert stored_points(group__cluster=cluster) == 2 * samples


def test_unknown_cluster_is_a_clear_error(db) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown cluster 'nope'"):
        call_command("collect", "--once", "--cluster", "nope")

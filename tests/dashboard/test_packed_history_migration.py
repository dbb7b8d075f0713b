"""Upgrading a database that holds the row-per-partition history (migration 0015): the
stored hours are packed into the new tables, not lost, and read back the same. And (0016)
partitions no longer in their group's latest cycle are marked as such.

Each test leaves the database migrated to the latest again: the worker's next tests use it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from dashboard.store import raw_history
from dashboard.store.packing import unpack

BEFORE = [("monitoring", "0014_group_totals")]
AFTER = [("monitoring", "0015_packed_history")]
T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


@pytest.fixture
def executor() -> Iterator[MigrationExecutor]:
    yield MigrationExecutor(connection)
    latest = MigrationExecutor(connection)
    latest.migrate(latest.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_stored_history_is_packed_on_upgrade(executor: MigrationExecutor) -> None:
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Cluster = apps.get_model("monitoring", "Cluster")
    Group = apps.get_model("monitoring", "ConsumerGroup")
    State = apps.get_model("monitoring", "PartitionState")
    Sample = apps.get_model("monitoring", "OffsetSample")
    Broker = apps.get_model("monitoring", "BrokerOffsetSample")
    cluster = Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")
    group = Group.objects.create(cluster=cluster, source="kafka", name="g", first_seen_at=T0,
                                 last_seen_at=T0)  # fmt: skip
    parts = [
        State.objects.create(group=group, topic=t, partition=n, sampled_at=T0)
        for t, n in (("orders", 0), ("orders", 1), ("clicks", 0))
    ]
    for k in range(3):
        at = T0 + timedelta(seconds=10 * k)
        for i, p in enumerate(parts):
            Sample.objects.create(partition=p, at=at, committed=100 * k + i, latest=500 + k,
                                  lag=None if i == 2 else 400 - k, time_lag_s=float(k),
                                  stale=False)  # fmt: skip
        Broker.objects.create(cluster=cluster, topic="orders", partition=0, at=at,
                              earliest=0, latest=500 + k)  # fmt: skip

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    GroupSample = apps.get_model("monitoring", "GroupSample")
    BrokerOffsets = apps.get_model("monitoring", "BrokerOffsets")

    rows = list(GroupSample.objects.order_by("at"))
    assert [(r.at, r.partitions, r.lag) for r in rows] == [
        (T0 + timedelta(seconds=10 * k), 3, 2 * (400 - k)) for k in range(3)
    ]
    columns = unpack(bytes(rows[1].figures), raw_history.KINDS)
    assert list(zip(columns["topic"], columns["partition"], columns["committed"], strict=True)) \
        == [("clicks", 0, 102), ("orders", 0, 100), ("orders", 1, 101)]
    points = [
        p for row in BrokerOffsets.objects.order_by("at")
        for p in raw_history.broker_points(bytes(row.figures))
    ]  # fmt: skip
    assert points == [
        ("orders", 0, int((T0 + timedelta(seconds=10 * k)).timestamp() * 1000), 0, 500 + k)
        for k in range(3)
    ]


@pytest.mark.django_db(transaction=True)
def test_partitions_that_left_their_group_are_marked_on_upgrade(executor) -> None:
    """Until 0016 every row of a group's latest cycle was written at that cycle's time, the
    group's ``last_seen_at``: an older row is a partition that had left the group."""
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Cluster = apps.get_model("monitoring", "Cluster")
    Group = apps.get_model("monitoring", "ConsumerGroup")
    State = apps.get_model("monitoring", "PartitionState")
    cluster = Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")
    later = T0 + timedelta(minutes=5)
    group = Group.objects.create(cluster=cluster, source="kafka", name="g", first_seen_at=T0,
                                 last_seen_at=later)  # fmt: skip
    for partition, sampled_at in ((0, later), (1, T0)):
        State.objects.create(group=group, topic="orders", partition=partition,
                             sampled_at=sampled_at)  # fmt: skip

    executor = MigrationExecutor(connection)
    executor.migrate([("monitoring", "0016_partition_present")])
    State = executor.loader.project_state([("monitoring", "0016_partition_present")]).apps \
        .get_model("monitoring", "PartitionState")  # fmt: skip
    assert dict(State.objects.values_list("partition", "present")) == {0: True, 1: False}

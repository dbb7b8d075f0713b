"""A share group's deliveries (KIP-932) under the secured lab broker's StandardAuthorizer: with
the grants docs/SECURITY.md lists (lab/secured_kafka.py, ``MONITOR_ACLS``), Read on
``__share_group_state`` among them, a cycle of the monitor's principal over SASL_SSL gives the
share-partition's delivery figures; without that one grant, the same cycle warns that the
topic is not readable and still gives the group and its lag.

The share group is the lab's own (lab/workload/share_groups.py), run as the broker's super
user over its PLAINTEXT listener: one member that RELEASEs a poison record, as the lab's
``poison-message`` scenario does, so that the share coordinator writes the record's delivery
count to ``__share_group_state``. The member leaves once the record came back twice, so the
state holds still while the product reads it. Marked ``secured``: run by
``scripts/test-secured``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import AdminClient

from dashboard.monitoring.models import Cluster, CollectionError, ConsumerGroup, PartitionState
from dashboard.store.cycle import run_cluster_cycle
from lab.kafka_tools import run_tool
from lab.secured_kafka import (
    ACL_COMMAND,
    MONITOR,
    SHARE_STATE_TOPIC,
    admin_bootstrap,
    client_config,
    monitor_acls,
)
from lab.services import Context
from lab.workload.share_groups import RELEASE, ShareGroup
from lab.workload.spec import ShareGroupSpec
from tests.collectors.test_kafka_source import create_topic, produce
from tests.lab.share_records import state_records
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.lab,
    pytest.mark.secured,
    pytest.mark.kafka_since("4.2", "share groups (KIP-932)"),
    pytest.mark.django_db(transaction=True),
]

PRODUCED = 5
POISON = 2  # the offset the member cannot process: RELEASEd, delivered again
# The monitor's one grant these tests take away and give back: kafka-acls.sh's arguments.
SHARE_STATE_GRANT = monitor_acls(f"User:{MONITOR}")[-1]


@dataclass(frozen=True)
class Poisoned:
    group: str
    topic: str
    deliveries: int  # how often the member got the poison record


@pytest.fixture(scope="module")
def poisoned(secured_ctx: Context, secured_admin: AdminClient) -> Iterator[Poisoned]:
    """A share group whose one member took the poison record two times or more, then left:
    every other record acknowledged, the poison record available with its delivery count."""
    bootstrap = admin_bootstrap(secured_ctx)
    topic = create_topic(secured_admin, 1)
    produce(bootstrap, topic, {0: PRODUCED})
    group = ShareGroup(ShareGroupSpec(f"sec-share-{uuid.uuid4().hex[:8]}", topic, 1), bootstrap)
    group.set_poison(0, POISON, RELEASE, hold_s=1.0)
    group.start()  # from the earliest record: its group config, set before the member joins
    members = group.members()  # counted after they left the group too
    try:
        wait_for(lambda: group.poison_deliveries() >= 2, 60, "the poison record delivered again")
    finally:
        group.stop()
    deliveries = sum(m.poison_deliveries for m in members)
    # What the share coordinator wrote, read apart from the product: the record come back.
    wait_for(
        lambda: any(
            b.first_offset <= POISON <= b.last_offset and b.delivery_count >= 2
            for r in state_records(bootstrap, group.name)
            for b in r.batches
        ),
        60,
        f"the poison record's deliveries in {SHARE_STATE_TOPIC}",
    )
    yield Poisoned(group.name, topic, deliveries)


def monitor_cluster(ctx: Context) -> Cluster:
    """A cluster read as the monitor's principal over SASL_SSL (SCRAM-SHA-512)."""
    config = client_config(ctx, "SASL_SSL")
    return Cluster.objects.create(
        name=f"c-{uuid.uuid4().hex[:6]}", poll_interval_s=10,
        kafka_bootstrap_servers=config.pop("bootstrap.servers"), kafka_config=config,
    )  # fmt: skip


def warnings(cluster: Cluster, poisoned: Poisoned) -> dict[str, str]:
    """The cycle's warnings about the state topic (or one of its partitions) and the share
    group (other modules' denied groups and topics have theirs)."""
    return {
        e.where: e.error
        for e in CollectionError.objects.filter(cluster=cluster)
        if e.where.startswith((SHARE_STATE_TOPIC, f"group {poisoned.group}"))
    }


def partition(cluster: Cluster, poisoned: Poisoned) -> PartitionState | None:
    return PartitionState.objects.filter(
        group__cluster=cluster, group__name=poisoned.group, topic=poisoned.topic, partition=0
    ).first()


def acl(ctx: Context, *args: str) -> None:
    run_tool(ACL_COMMAND, ["--bootstrap-server", admin_bootstrap(ctx), *args])


def test_the_documented_grants_give_a_share_groups_deliveries(
    secured_ctx: Context, poisoned: Poisoned, settings, tmp_path
) -> None:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    cluster = monitor_cluster(secured_ctx)

    def read() -> PartitionState | None:
        run_cluster_cycle(cluster)  # the state topic's reader catches up over a cycle or two
        row = partition(cluster, poisoned)
        return row if row is not None and row.share_max_deliveries is not None else None

    row = wait_for(read, 60, f"the share-partition's figures from {SHARE_STATE_TOPIC}")
    assert row.share_redelivered_offset == POISON
    # Come back two times or more, not given up: still below the group's delivery count limit
    # (the broker's default, read from the group's configs).
    assert row.share_delivery_limit == 5
    assert 2 <= row.share_max_deliveries == row.share_redelivered_count < 5
    assert poisoned.deliveries >= 2 and row.share_archived == 0
    assert row.lag == 1  # only the poison record is not acknowledged
    assert warnings(cluster, poisoned) == {}


def test_without_read_on_the_state_topic_a_warning_and_still_the_lag(
    secured_ctx: Context, poisoned: Poisoned, settings, tmp_path
) -> None:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    remove = ("--remove", "--force", *SHARE_STATE_GRANT[1:])
    acl(secured_ctx, *remove)
    try:
        cluster = monitor_cluster(secured_ctx)

        def warned() -> str | None:
            run_cluster_cycle(cluster)
            return warnings(cluster, poisoned).get(SHARE_STATE_TOPIC)

        said = wait_for(warned, 60, f"a warning that {SHARE_STATE_TOPIC} is not readable")
        assert said.startswith("not readable: share groups' deliveries"), said
        assert not [w for w in warnings(cluster, poisoned) if w.startswith("group ")]
        group = ConsumerGroup.objects.get(cluster=cluster, name=poisoned.group)
        assert (group.group_type, group.state) == ("share", "Empty")
        row = partition(cluster, poisoned)
        assert row is not None and (row.committed, row.lag) == (POISON, 1)
        assert row.share_max_deliveries is None and row.share_redelivered_offset is None
    finally:
        acl(secured_ctx, *SHARE_STATE_GRANT)

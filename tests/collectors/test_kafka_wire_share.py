"""Share groups (KIP-932) through the wire client against the lab's real broker, with a real
share consumer (confluent-kafka's preview ``ShareConsumer``), compared with what Kafka's own
``kafka-share-groups.sh`` (``ShareGroupCommand``, kafka-tools) prints at the same moment.

"The same moment": the consumer stops polling before the comparison, so the group's state no
longer moves, and a comparison counts only when the wire client read the same answer before
and after the tool ran. The codec's own tests are ``test_kafka_wire_share_codec.py``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from collectors.kafka.source import KafkaSource
from collectors.kafka_wire import GroupClient, ShareGroupOffsets, lag_upper_bound
from lab.kafka_tools import share_group_members, share_group_offsets
from tests.waiting import wait_for

pytestmark = [pytest.mark.lab, pytest.mark.kafka_since("4.2", "share groups (KIP-932)")]

PARTITIONS = 3
PER_PARTITION = 100


def _name(kind: str) -> str:
    return f"sg-{kind}-{uuid.uuid4().hex[:10]}"


def earliest(admin: AdminClient, group: str) -> None:
    """A share group starts at the log end unless its group config says otherwise."""
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(
                "share.auto.offset.reset",
                "earliest",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(15)


@pytest.fixture
def client(kafka_bootstrap: str) -> Iterator[GroupClient]:
    with GroupClient(kafka_bootstrap) as group_client:
        yield group_client


@pytest.fixture
def jobs(kafka_bootstrap: str, admin: AdminClient) -> str:
    topic = _name("jobs")
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(15)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    for i in range(PARTITIONS * PER_PARTITION):
        producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(15) == 0
    return topic


def consume(consumer: ShareConsumer, at_least: int) -> int:
    """Poll until ``at_least`` records were delivered, from every partition (a share
    partition has no start offset until it is first fetched from), then send their
    acknowledgements."""
    got = 0
    partitions: set[int] = set()

    def enough() -> bool:
        nonlocal got
        for m in consumer.poll(0.5):
            if m.error() is None:
                got += 1
                partitions.add(m.partition())
        return got >= at_least and len(partitions) == PARTITIONS

    wait_for(enough, timeout=60, what=f"{at_least} records delivered to the share consumer")
    consumer.commit_sync(15)
    return got


def _brokers(admin: AdminClient) -> list[tuple[str, int]]:
    return [(b.host, b.port) for b in admin.list_topics(timeout=10).brokers.values()]


def _as_tool_prints(answer: ShareGroupOffsets) -> dict[tuple[str, int], tuple]:
    return {(p.topic, p.partition): (p.start_offset, p.lag) for p in answer.partitions}


def test_share_group_as_kafka_share_groups_describes_it(
    kafka_bootstrap: str, admin: AdminClient, client: GroupClient, jobs: str
) -> None:
    group = _name("q")
    earliest(admin, group)
    consumer = ShareConsumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": group, "client.id": "lab-share-a"}
    )
    try:
        consumer.subscribe([jobs])
        delivered = consume(consumer, 120)

        # Listed by type, and only by the wire client: librdkafka's listing has no share type.
        listing = client.list_share_groups(_brokers(admin), timeout_s=10)
        assert listing.errors == [] and listing.unsupported == []
        assert listing.groups[group].group_type == "share"
        assert listing.groups[group].protocol_type == "share"
        assert group not in {g.group_id for g in admin.list_consumer_groups().result(15).valid}

        def settled() -> ShareGroupOffsets | None:
            answer = client.fetch_share_offsets([group], timeout_s=10)[group]
            known = [p for p in answer.partitions if p.start_offset is not None]
            return answer if answer.ok and len(known) == PARTITIONS else None

        wait_for(settled, timeout=60, what="every partition's start offset persisted")

        def same_moment() -> tuple | None:
            before = client.fetch_share_offsets([group], timeout_s=10)[group]
            printed = share_group_offsets(kafka_bootstrap, group)
            after = client.fetch_share_offsets([group], timeout_s=10)[group]
            return (after, printed) if before == after else None

        answer, printed = wait_for(same_moment, timeout=90, what="a still moment")
        assert answer.lag_reported  # 4.2+: KIP-1226
        assert _as_tool_prints(answer) == printed
        assert set(printed) == {(jobs, p) for p in range(PARTITIONS)}

        # The broker's lag is what waits: never more than start offset to log end, and all
        # the partitions' lags with what was delivered and acknowledged make the whole log.
        tps = [TopicPartition(jobs, p) for p in range(PARTITIONS)]
        latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps})
        ends = {tp.partition: future.result(15).offset for tp, future in latest.items()}
        for p in answer.partitions:
            assert p.lag is not None and p.lag <= lag_upper_bound(p.start_offset, ends[p.partition])
        assert sum(p.lag or 0 for p in answer.partitions) == PARTITIONS * PER_PARTITION - delivered

        def members_still() -> tuple | None:
            before = client.describe_share([group], timeout_s=10)[group]
            printed = share_group_members(kafka_bootstrap, group)
            after = client.describe_share([group], timeout_s=10)[group]
            return (after, printed) if before == after else None

        described, members = wait_for(members_still, timeout=90, what="a still membership")
        assert described.ok and described.state == "Stable"
        assert described.group_epoch is not None and described.assignment_epoch is not None
        assert described.assignment_epoch <= described.group_epoch
        assert {
            m.member_id: {
                "host": m.client_host,
                "client_id": m.client_id,
                "assignment": m.assignment,
            }
            for m in described.members
        } == members
        (member,) = described.members
        assert member.client_id == "lab-share-a" and member.subscribed_topics == (jobs,)
        assert member.assignment == tuple((jobs, p) for p in range(PARTITIONS))
    finally:
        consumer.close()


def test_a_group_that_is_not_a_share_group(client: GroupClient) -> None:
    unknown = _name("none")
    described = client.describe_share([unknown], timeout_s=10)[unknown]
    offsets = client.fetch_share_offsets([unknown], timeout_s=10)[unknown]
    assert described.error_name == "GROUP_ID_NOT_FOUND" and described.members == ()
    # DescribeShareGroupOffsets of an unknown group: not found, or nothing to report.
    assert offsets.error_name in {"GROUP_ID_NOT_FOUND", "NONE"} and offsets.partitions == ()


def test_the_kafka_source_collects_a_share_group(
    kafka_bootstrap: str, admin: AdminClient, jobs: str
) -> None:
    """The adapter's cycle: the group listed, described and its progress read beside the
    consumer groups, as a group of type "share" whose commits are its start offsets with the
    broker's lag, and the topic's log offsets read for it."""
    group = _name("q")
    earliest(admin, group)
    consumer = ShareConsumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": group, "client.id": "lab-share-b"}
    )
    try:
        consumer.subscribe([jobs])
        got = consume(consumer, 60)
        with KafkaSource(kafka_bootstrap, read_offsets_topic=False) as source:

            def collected() -> tuple | None:
                result = source.collect(int(time.time() * 1000))
                snaps = [g for g in result.groups if g.group == group]
                commits = [c for c in result.commits if c.group == group]
                # Each partition's state is persisted as its acknowledgements are: wait for all.
                waiting = sum(c.reported_lag or 0 for c in commits)
                done = len(commits) == PARTITIONS and waiting == PARTITIONS * PER_PARTITION - got
                return (result, snaps[0], commits) if snaps and done else None

            result, snapshot, commits = wait_for(collected, timeout=60, what="the share group")
        assert [e for e in result.errors if group in e.where or "share" in e.where] == []
        assert (snapshot.protocol_type, snapshot.state, snapshot.members_known) == (
            "share", "Stable", True,
        )  # fmt: skip
        [member] = snapshot.members
        assert member.client_id == "lab-share-b" and member.subscription == (jobs,)
        assert all(c.share and c.reported_lag is not None for c in commits)
        read = {(o.topic, o.partition): o.latest for o in result.offsets}
        assert all(read[(jobs, p)] == PER_PARTITION for p in range(PARTITIONS))
    finally:
        consumer.close()

"""A Storm 2 spout's group through the Kafka adapter: from OffsetFetch's answer (a scripted
broker's bytes, the metadata verbatim from the real storm-kafka-client 2.8.2 spout) to the
group's snapshot, its commits and the cycle's figures, each naming the topology instance; the
same group through the lab's real broker, committed with that metadata; and groups whose
metadata is anything else, which stay plain Kafka groups."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.assemble import CycleMemory, assemble_cycle
from collectors.figures import TimeTables
from collectors.kafka import KafkaSource
from collectors.kafka.cycle import Cycle
from collectors.kafka.to_records import commits_of, group_outcome
from collectors.kafka.wire_groups import committed_offsets
from collectors.kafka_wire import GroupClient
from collectors.rebalance import RebalanceTracker
from collectors.records import CollectionResult, GroupSnapshot, PartitionOffsets, Source
from tests.collectors.kafka_wire_fakes import (
    ALL_APIS,
    NO_TAGS,
    FakeBroker,
    answering,
    carr,
    cs,
    i16,
    i32,
    i64,
)

NOW = 1_800_000_000_000
SPOUT = "storm2-orders-spout"
TOPOLOGY = "orders-storm2-1-1795907098"


def storm_metadata(task: int, topology: str = TOPOLOGY) -> str:
    """What the real spout's task ``task`` commits with (lab/storm2/, storm-kafka-client 2.8.2)."""
    thread = f"Thread-{36 + task}-kafka-spout-executor[{task}, {task}]"
    return f'{{"topologyId":"{topology}","taskId":{task},"threadName":"{thread}"}}'


# --- OffsetFetch v9's answer, from OffsetFetchResponse.json (Kafka 4.1.1) -------------------


def part(index: int, offset: int, metadata: str | None) -> bytes:
    return i32(index) + i64(offset) + i32(-1) + cs(metadata) + i16(0) + NO_TAGS


def topic(name: str, *partitions: bytes) -> bytes:
    return cs(name) + carr(partitions) + NO_TAGS


def group(name: str, *topics: bytes) -> bytes:
    return cs(name) + carr(topics) + i16(0) + NO_TAGS


def offsets_response(*groups: bytes) -> bytes:
    return i32(0) + carr(groups) + NO_TAGS


GROUPS = {
    # the spout: each partition committed by its own task
    SPOUT: group(SPOUT, topic("orders", part(0, 120, storm_metadata(3)),
                              part(1, 80, storm_metadata(4)))),  # fmt: skip
    # a resubmission under way: one partition still names the old instance, two the new one
    "resubmitted": group("resubmitted", topic("orders", part(0, 5, storm_metadata(3)),
                         part(1, 6, storm_metadata(5, "orders-storm2-2-1795907999")),
                         part(2, 7, storm_metadata(6, "orders-storm2-2-1795907999")))),  # fmt: skip
    # other clients: nothing, librdkafka's trailing NUL, free text, JSON of another shape
    "plain": group("plain", topic("orders", part(0, 10, ""), part(1, 11, None))),
    "librdkafka": group("librdkafka", topic("orders", part(0, 12, "m\x00"))),
    "checkpointer": group("checkpointer", topic("orders", part(0, 13, "checkpoint-42"))),
    "lookalike": group("lookalike", topic("orders", part(
        0, 14, '{"topologyId":"orders-storm2-1-1795907098","taskId":"3","threadName":"t"}'))),
}  # fmt: skip


def done(value: object) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


@pytest.fixture
def broker() -> Iterator[FakeBroker]:
    fake = FakeBroker(
        answering(9, offsets_response(*GROUPS.values())), apis={**ALL_APIS, 9: (1, 9)}
    )
    yield fake
    fake.close()


def read(broker: FakeBroker) -> tuple[list[GroupSnapshot], CollectionResult]:
    """One cycle's groups through the adapter's own steps: OffsetFetch by the wire client,
    each group as DescribeGroups describes a manually assigned consumer's (Empty, no
    members), then its snapshot and commits."""
    cycle = Cycle(NOW, 5.0)
    with GroupClient(broker.bootstrap) as client:
        futures = committed_offsets(client, list(GROUPS), cycle)
    result = cycle.result
    committed = {}
    for name in GROUPS:
        described = done(GroupSnapshot(Source.KAFKA, name, "Empty", protocol_type="classic"))
        outcome = group_outcome(name, ("Empty", "classic"), described, futures[name], cycle)
        assert outcome is not None
        result.groups.append(outcome[0])
        committed[name] = outcome[1]
    result.commits.extend(commits_of(result.groups, committed))
    assert result.errors == []
    return result.groups, result


def test_the_spouts_group_names_its_topology_and_each_commit_its_own(broker: FakeBroker) -> None:
    groups, result = read(broker)
    by_name = {g.group: g for g in groups}
    spout = by_name[SPOUT]
    assert spout.topology_id == TOPOLOGY
    # A Kafka group in every other respect.
    assert (spout.source, spout.state, spout.protocol_type, spout.members) == (
        Source.KAFKA, "Empty", "classic", ()
    )  # fmt: skip
    commits = {(c.group, c.partition): c for c in result.commits}
    assert commits[(SPOUT, 0)].offset == 120 and commits[(SPOUT, 0)].topology_id == TOPOLOGY
    assert commits[(SPOUT, 1)].offset == 80 and commits[(SPOUT, 1)].topology_id == TOPOLOGY
    assert commits[(SPOUT, 0)].owner is None  # no member owns a manually assigned partition


def test_a_resubmission_under_way_names_the_instance_most_partitions_name(
    broker: FakeBroker,
) -> None:
    groups, result = read(broker)
    assert {g.group: g for g in groups}["resubmitted"].topology_id == "orders-storm2-2-1795907999"
    per_partition = {c.partition: c.topology_id for c in result.commits if c.group == "resubmitted"}
    assert per_partition == {
        0: TOPOLOGY, 1: "orders-storm2-2-1795907999", 2: "orders-storm2-2-1795907999"
    }  # fmt: skip


@pytest.mark.parametrize("name", ["plain", "librdkafka", "checkpointer", "lookalike"])
def test_other_clients_metadata_leaves_a_plain_kafka_group(broker: FakeBroker, name: str) -> None:
    groups, result = read(broker)
    assert {g.group: g for g in groups}[name].topology_id is None
    commits = [c for c in result.commits if c.group == name]
    assert commits and all(c.topology_id is None for c in commits)


def test_the_cycles_figures_carry_the_topology_and_stay_kafkas(broker: FakeBroker) -> None:
    """The assembly: lag from the broker's offsets, the topology on every figure of the spout's
    group, and liveness unknown without a Storm UI: its group is Empty because the spout
    assigns its partitions itself, which says nothing of the spout (collectors/assemble.py)."""
    _, result = read(broker)
    result.offsets = [PartitionOffsets("orders", p, 0, 200, NOW) for p in range(3)]
    memory = CycleMemory(TimeTables(60), RebalanceTracker())
    outcome = assemble_cycle("lab", NOW, NOW, [result], memory)
    figures = {(f.group, f.partition): f for f in outcome.figures}
    spout = figures[(SPOUT, 0)]
    assert (spout.source, spout.lag, spout.topology_id, spout.alive) == (
        Source.KAFKA, 80, TOPOLOGY, None
    )  # fmt: skip
    assert figures[(SPOUT, 1)].lag == 120
    assert figures[("plain", 0)].topology_id is None
    assert [g.topology_id for g in outcome.groups if g.group == SPOUT] == [TOPOLOGY]


# --- the lab's real broker --------------------------------------------------------------------


@pytest.mark.lab
def test_librdkafkas_commits_of_the_same_text_on_the_real_broker(kafka_bootstrap: str) -> None:
    """librdkafka stores a commit's metadata with a NUL after it (the real broker gives back
    ``...}\\x00``), which TopicPartition refuses: the cycle must not trip on it, and a
    document that is not exactly the spout's links nothing. (The real Java spout's commits, on
    the real broker: tests/lab/test_storm2.py.)"""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    name = f"ks2-{uuid.uuid4().hex[:10]}"
    for future in admin.create_topics([NewTopic(name, 2, 1)]).values():
        future.result(30)
    request = [ConsumerGroupTopicPartitions(
        name, [TopicPartition(name, p, 0, metadata=storm_metadata(3 + p)) for p in (0, 1)]
    )]  # fmt: skip
    for future in admin.alter_consumer_group_offsets(request).values():
        future.result(30)
    source = KafkaSource(kafka_bootstrap, {}, timeout_s=10, read_offsets_topic=False)
    try:
        result = source.collect(int(time.time() * 1000))
    finally:
        source.close()
    assert result.reachable and [e for e in result.errors if name in e.where] == []
    assert {g.group: g for g in result.groups}[name].topology_id is None
    found = {c.partition: (c.offset, c.topology_id) for c in result.commits if c.group == name}
    assert found == {0: (0, None), 1: (0, None)}

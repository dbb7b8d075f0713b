"""KafkaSource against the real lab broker (Apache Kafka 4, KRaft), plus the pure mapping.

The broker is shared by the session, so every test uses its own topic and group names. Groups
of both rebalance protocols are read from the broker: classic groups (JoinGroup/SyncGroup)
and KIP-848 consumer groups. Answers the lab cannot provoke (a Dead group mid-cycle, a
coordinator not available) are injected into the client's futures, and the mapping of the
client's model objects is tested directly in the ``snapshot_from_description`` tests.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from typing import Any

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    Node,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    ConsumerGroupDescription,
    MemberAssignment,
    MemberDescription,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from collectors.identity import KAFKA_CLUSTER_ID
from collectors.kafka import KafkaSource, snapshot_from_description
from collectors.kafka_wire import ClassicGroup
from collectors.rebalance import MEMBER_JOINED, MEMBER_LEFT, derive_rebalance_events
from collectors.records import CollectionResult, Source, SourceError
from lab.workload.clients import leave_and_close
from tests.waiting import wait_for

lab = pytest.mark.lab


def now_ms() -> int:
    return int(time.time() * 1000)


def name(kind: str) -> str:
    return f"ks-{kind}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def source(kafka_bootstrap: str) -> Iterator[KafkaSource]:
    src = KafkaSource(kafka_bootstrap, timeout_s=10)
    yield src
    src.close()


def create_topic(admin: AdminClient, partitions: int) -> str:
    topic = name("t")
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    return topic


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(10) == 0


def alter_offsets(admin: AdminClient, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group``, waiting out a topic created a moment ago: its
    partitions may answer UNKNOWN_TOPIC_OR_PART (inside a successful result) until the
    coordinator's metadata has them."""
    tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]

    def committed() -> bool:
        request = [ConsumerGroupTopicPartitions(group, tps)]
        answer = admin.alter_consumer_group_offsets(request)[group].result(10)
        return all(tp.error is None for tp in answer.topic_partitions or [])

    wait_for(committed, 30, f"offsets committed for {group}")


def commits_of(result: CollectionResult, group: str) -> dict[tuple[str, int], int]:
    return {(c.topic, c.partition): c.offset for c in result.commits if c.group == group}


def offsets_of(result: CollectionResult, topic: str) -> dict[int, tuple[int | None, int | None]]:
    return {o.partition: (o.earliest, o.latest) for o in result.offsets if o.topic == topic}


def group_of(result: CollectionResult, group: str):  # noqa: ANN201 - GroupSnapshot | None
    found = [g for g in result.groups if g.group == group]
    assert len(found) <= 1
    return found[0] if found else None


def errors_about(result: CollectionResult, *names: str) -> list[str]:
    return [f"{e.where}: {e.error}" for e in result.errors if any(n in e.where for n in names)]


def assert_prompt(result: CollectionResult) -> None:
    """Nothing waited for its time-out: an injected answer must not stall the rest."""
    assert [e for e in result.errors if "timed out" in e.error] == []
    assert result.finished_ms - result.started_ms < 5000


def patch_describe(
    monkeypatch: pytest.MonkeyPatch,
    source: KafkaSource,
    replace: Callable[[str, ClassicGroup], ClassicGroup],
) -> None:
    """Let the real DescribeGroups run (the wire client's), then swap one group's answer."""
    original = source._groups.describe_classic

    def describe(groups: list[str], **kwargs: Any) -> dict[str, ClassicGroup]:
        return {g: replace(g, a) for g, a in original(groups, **kwargs).items()}

    monkeypatch.setattr(source._groups, "describe_classic", describe)


def failed_answer(code: int) -> Callable[[str], ClassicGroup]:
    return lambda group: ClassicGroup.failed(group, code, None)


def failed(code: int) -> Future:
    fut: Future = Future()
    fut.set_exception(KafkaException(KafkaError(code)))
    return fut


# --- against the broker -----------------------------------------------------------------------


@lab
def test_offsets_exactly_as_produced_and_committed(
    kafka_bootstrap: str, admin: AdminClient, source: KafkaSource
) -> None:
    topic = create_topic(admin, 3)
    produce(kafka_bootstrap, topic, {0: 7, 1: 4, 2: 0})
    group = name("g")
    consumer = KafkaConsumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 4)], asynchronous=False
        )
    finally:
        consumer.close()

    start = now_ms()
    result = source.collect(start)

    assert result.reachable
    assert result.source is Source.KAFKA
    assert errors_about(result, topic, group) == []
    assert result.started_ms == start <= result.finished_ms
    # Partition 2 has no commit: no CommittedOffset is invented for it.
    assert commits_of(result, group) == {(topic, 0): 5, (topic, 1): 4}
    # Every partition of a consumed topic is read, committed or not.
    assert offsets_of(result, topic) == {0: (0, 7), 1: (0, 4), 2: (0, 0)}
    latest = {p: hi for p, (_, hi) in offsets_of(result, topic).items()}
    lag = {p: latest[p] - off for (_, p), off in commits_of(result, group).items()}
    assert lag == {0: 2, 1: 0}
    assert result.partition_counts[topic] == 3
    for o in result.offsets:
        assert start <= o.time_ms <= result.finished_ms
    commit = next(c for c in result.commits if c.group == group)
    assert commit.source is Source.KAFKA
    assert commit.where == f"group {group}"
    # From __consumer_offsets: the commit record's own time, not the poll's (SPEC §4).
    assert start - 60_000 <= commit.commit_time_ms <= result.finished_ms

    snapshot = group_of(result, group)
    assert snapshot is not None
    assert snapshot.topics == (topic,)
    assert snapshot.coordinator == kafka_bootstrap
    # Offsets committed without joining: the coordinator keeps an Empty classic group.
    assert snapshot.state == "Empty"
    assert snapshot.members == ()
    assert snapshot.members_known
    assert snapshot.protocol_type == "classic"
    # Offsets committed by a client that never joined: the coordinator writes no group
    # metadata, so there is no generation to read.
    assert snapshot.generation is None


@lab
def test_several_groups_in_one_cycle(
    kafka_bootstrap: str, admin: AdminClient, source: KafkaSource
) -> None:
    t1, t2 = create_topic(admin, 2), create_topic(admin, 4)
    produce(kafka_bootstrap, t1, {0: 3, 1: 3})
    produce(kafka_bootstrap, t2, {0: 1, 1: 2, 2: 3, 3: 4})
    wanted = {
        name("g"): {(t1, 0): 1, (t1, 1): 3},
        name("g"): {(t2, 0): 1, (t2, 3): 2},
        name("g"): {(t1, 0): 2, (t2, 1): 2, (t2, 2): 0},
    }
    for group, offsets in wanted.items():
        alter_offsets(admin, group, offsets)

    result = source.collect(now_ms())

    assert result.reachable
    assert errors_about(result, t1, t2, *wanted) == []
    for group, offsets in wanted.items():
        assert commits_of(result, group) == offsets
        assert group_of(result, group) is not None
    assert group_of(result, next(iter(wanted))).topics == (t1,)
    assert offsets_of(result, t1) == {0: (0, 3), 1: (0, 3)}
    assert offsets_of(result, t2) == {0: (0, 1), 1: (0, 2), 2: (0, 3), 3: (0, 4)}
    # One entry per partition although three groups consume these topics.
    assert len([o for o in result.offsets if o.topic in (t1, t2)]) == 6


@lab
def test_offsets_follow_new_records_and_commits(
    kafka_bootstrap: str, admin: AdminClient, source: KafkaSource
) -> None:
    topic = create_topic(admin, 1)
    group = name("g")
    produce(kafka_bootstrap, topic, {0: 2})
    alter_offsets(admin, group, {(topic, 0): 1})
    first = source.collect(now_ms())
    produce(kafka_bootstrap, topic, {0: 5})
    alter_offsets(admin, group, {(topic, 0): 6})
    second = source.collect(now_ms())

    assert (commits_of(first, group), offsets_of(first, topic)) == ({(topic, 0): 1}, {0: (0, 2)})
    assert (commits_of(second, group), offsets_of(second, topic)) == ({(topic, 0): 6}, {0: (0, 7)})


@lab
def test_commits_are_read_before_the_high_watermark(
    kafka_bootstrap: str,
    admin: AdminClient,
    source: KafkaSource,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A consumer at the head keeps going during the cycle: one more record is produced and
    committed right after the first of the two reads (its commit, its partition's latest
    offset) has answered. Read in the adapter's order, the commit is the older figure and
    committed <= latest holds; read the other way round it would show committed > latest,
    a false ERR downstream."""
    topic = create_topic(admin, 1)
    group = name("g")
    produce(kafka_bootstrap, topic, {0: 3})
    alter_offsets(admin, group, {(topic, 0): 3})
    moved: list[str] = []

    def consumer_moves_on(first_read: str, futures: dict) -> None:
        if not moved:
            wait(list(futures.values()), timeout=10)
            produce(kafka_bootstrap, topic, {0: 1})
            alter_offsets(admin, group, {(topic, 0): 4})
            moved.append(first_read)

    fetch_commits = source._groups.fetch_committed
    list_offsets = source.admin.list_offsets

    def commits_then_move(groups: list[str], **kwargs: Any) -> dict:
        answers = fetch_commits(groups, **kwargs)
        if group in groups:
            consumer_moves_on("commits", {})
        return answers

    def offsets_then_move(request: dict, **kwargs: Any) -> dict:
        futures = list_offsets(request, **kwargs)
        if any(tp.topic == topic for tp in request) and OffsetSpec.latest() in request.values():
            consumer_moves_on("latest", futures)
        return futures

    monkeypatch.setattr(source._groups, "fetch_committed", commits_then_move)
    monkeypatch.setattr(source.admin, "list_offsets", offsets_then_move)
    result = source.collect(now_ms())

    assert moved == ["commits"]
    assert commits_of(result, group) == {(topic, 0): 3}
    assert offsets_of(result, topic) == {0: (0, 4)}
    assert_prompt(result)


@lab
def test_live_member_and_rebalances(
    kafka_bootstrap: str, admin: AdminClient, source: KafkaSource
) -> None:
    topic = create_topic(admin, 3)
    group = name("g")
    produce(kafka_bootstrap, topic, {0: 2, 1: 2, 2: 2})
    alter_offsets(admin, group, {(topic, 0): 1})
    before = group_of(source.collect(now_ms()), group)
    assert before is not None and before.state == "Empty"

    consumer = KafkaConsumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": group,
            "client.id": "lagwatch-test",
            "group.protocol": "classic",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    try:
        consumer.subscribe([topic])

        def assigned() -> bool:
            consumer.poll(0.2)
            return len(consumer.assignment()) == 3

        wait_for(assigned, every=0)
        result = wait_for(
            lambda: (
                (r := source.collect(now_ms()))
                and (g := group_of(r, group)) is not None
                and g.state == "Stable"
                and r
            )
        )
        during = group_of(result, group)
        # The broker lists the member: its id, client id, host and the three partitions.
        assert during.members_known
        [member] = during.members
        assert member.client_id == "lagwatch-test"
        assert member.host and "127.0.0.1" in member.host
        assert member.assignment == ((topic, 0), (topic, 1), (topic, 2))
        assert member.target_assignment is None  # classic groups have no target
        # The generation of a classic group, from its group-metadata record.
        assert during.generation is not None and during.generation >= 1
        assert during.protocol_type == "classic"
        assert during.assignor == "range"  # librdkafka's default with the classic protocol
        assert [c.owner for c in result.commits if c.group == group] == [member.member_id]

        events = derive_rebalance_events(before, during, {topic: 3}, {topic: 3}, 1)
        assert [e.cause for e in events] == [MEMBER_JOINED]
    finally:
        leave_and_close(consumer)

    changes = []

    def empty() -> object:
        result = source.collect(now_ms())
        changes.extend(result.generation_changes)
        g = group_of(result, group)
        return g is not None and g.state == "Empty" and g

    after = wait_for(empty)
    assert after.members_known and after.members == ()
    # The leave is recorded in __consumer_offsets: a new generation, the member gone.
    assert after.generation is not None and after.generation > during.generation
    left = [c for c in changes if c.group == group and "member_left" in c.causes]
    assert left and left[-1].generation == after.generation
    assert left[-1].detail["left"] == [member.member_id]
    events = derive_rebalance_events(during, after, {topic: 3}, {topic: 3}, 2)
    assert [e.cause for e in events] == [MEMBER_LEFT]


@lab
@pytest.mark.kafka_since(
    "4.0", "the new group coordinator's tombstones (one batch per deleted group)"
)
def test_group_deleted_mid_cycle(
    kafka_bootstrap: str,
    admin: AdminClient,
    source: KafkaSource,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = create_topic(admin, 2)
    produce(kafka_bootstrap, topic, {0: 3, 1: 3})
    doomed, kept = name("g"), name("g")
    alter_offsets(admin, doomed, {(topic, 0): 1, (topic, 1): 1})
    alter_offsets(admin, kept, {(topic, 0): 2})

    original = source._groups.fetch_committed

    def delete_then_fetch(groups: list[str], **kwargs: Any) -> dict:
        # Listed already; deleted now, before its OffsetFetch and DescribeGroups go out.
        if doomed in groups:
            admin.delete_consumer_groups([doomed])[doomed].result(10)
        return original(groups, **kwargs)

    monkeypatch.setattr(source._groups, "fetch_committed", delete_then_fetch)
    result = source.collect(now_ms())

    assert result.reachable
    assert errors_about(result, doomed, kept, topic) == []
    assert commits_of(result, doomed) == {}
    assert commits_of(result, kept) == {(topic, 0): 2}
    assert offsets_of(result, topic) == {0: (0, 3), 1: (0, 3)}
    assert_prompt(result)
    # Apache Kafka answers a describe of a deleted group with Dead or GROUP_ID_NOT_FOUND, and
    # the adapter skips it.
    assert group_of(result, doomed) is None

    monkeypatch.setattr(source._groups, "fetch_committed", original)
    again = source.collect(now_ms())
    assert group_of(again, doomed) is None

    # The coordinator's log records the deletion (its tombstones): one record for the group,
    # its two commits folded into it; the kept group lost nothing. Each collect drains what
    # the reader read since the one before, so every result so far counts.
    seen = [d for r in (result, again) for d in r.deletions if d.group in (doomed, kept)]

    def recorded() -> bool:
        seen.extend(d for d in source.collect(now_ms()).deletions if d.group in (doomed, kept))
        return any(d.group == doomed for d in seen)

    wait_for(recorded, 60, "the deletion read from __consumer_offsets")
    assert len(seen) == 1, seen
    [deletion] = seen
    assert (deletion.group, deletion.kind) == (doomed, "group_deleted")
    assert deletion.detail["offsets_deleted"] == 2


@lab
def test_group_not_found_is_skipped_silently(
    admin: AdminClient, source: KafkaSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = create_topic(admin, 1)
    doomed, kept = name("g"), name("g")
    alter_offsets(admin, doomed, {(topic, 0): 0})
    alter_offsets(admin, kept, {(topic, 0): 0})
    patch_describe(
        monkeypatch,
        source,
        lambda g, a: failed_answer(KafkaError.GROUP_ID_NOT_FOUND)(g) if g == doomed else a,
    )

    result = source.collect(now_ms())

    assert group_of(result, doomed) is None
    assert commits_of(result, doomed) == {}
    assert errors_about(result, doomed) == []
    assert commits_of(result, kept) == {(topic, 0): 0}
    assert_prompt(result)


@lab
def test_dead_group_is_skipped(
    admin: AdminClient, source: KafkaSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = create_topic(admin, 1)
    doomed = name("g")
    alter_offsets(admin, doomed, {(topic, 0): 0})
    original = source._groups.fetch_committed

    def deleted_first(groups: list[str], **kwargs: Any) -> dict:
        # Deleted after ListGroups: no offsets left, and DescribeGroups (v5, or a broker
        # without v6's error) answers the state "Dead" with no error.
        if doomed in groups:
            admin.delete_consumer_groups([doomed])[doomed].result(10)
        return original(groups, **kwargs)

    monkeypatch.setattr(source._groups, "fetch_committed", deleted_first)
    patch_describe(
        monkeypatch,
        source,
        lambda g, a: ClassicGroup(g, 0, None, "Dead", "", "", ()) if g == doomed else a,
    )
    result = source.collect(now_ms())
    assert group_of(result, doomed) is None
    assert errors_about(result, doomed) == []
    assert_prompt(result)


@lab
def test_error_confined_to_one_group(
    admin: AdminClient, source: KafkaSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = create_topic(admin, 2)
    sick, healthy = name("g"), name("g")
    alter_offsets(admin, sick, {(topic, 0): 0, (topic, 1): 0})
    alter_offsets(admin, healthy, {(topic, 1): 0})
    patch_describe(
        monkeypatch,
        source,
        lambda g, a: failed_answer(KafkaError.COORDINATOR_NOT_AVAILABLE)(g) if g == sick else a,
    )

    result = source.collect(now_ms())

    assert result.reachable
    errors = [e for e in result.errors if sick in e.where]
    assert [e.where for e in errors] == [f"group {sick}"]
    assert "COORDINATOR_NOT_AVAILABLE" in errors[0].error
    # The group's commits are still good evidence; only its membership is unknown.
    assert commits_of(result, sick) == {(topic, 0): 0, (topic, 1): 0}
    snapshot = group_of(result, sick)
    assert snapshot is not None and snapshot.members_known is False
    assert snapshot.topics == (topic,)
    assert commits_of(result, healthy) == {(topic, 1): 0}
    assert errors_about(result, healthy) == []
    assert set(offsets_of(result, topic)) == {0, 1}
    assert_prompt(result)


@lab
def test_offset_fetch_error_is_confined_to_its_group(
    admin: AdminClient, source: KafkaSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One group's OffsetFetch fails (what a group the ACLs hide answers): that group is
    still reported, without commits and with the error named; the others are whole."""
    from collectors.kafka_wire import GroupOffsets

    topic = create_topic(admin, 1)
    odd, fine = name("g"), name("g")
    alter_offsets(admin, odd, {(topic, 0): 0})
    alter_offsets(admin, fine, {(topic, 0): 0})
    original = source._groups.fetch_committed

    def offsets(groups: list[str], **kwargs: Any) -> dict:
        answers = dict(original(groups, **kwargs))
        if odd in answers:
            answers[odd] = GroupOffsets.failed(odd, 30, "GROUP_AUTHORIZATION_FAILED")
        return answers

    monkeypatch.setattr(source._groups, "fetch_committed", offsets)
    result = source.collect(now_ms())

    assert result.reachable
    [(where, error)] = [(e.where, e.error) for e in result.errors if odd in e.where]
    assert where == f"group {odd}"
    assert error.startswith("OffsetFetch: GROUP_AUTHORIZATION_FAILED")
    assert group_of(result, odd) is not None and commits_of(result, odd) == {}
    assert commits_of(result, fine) == {(topic, 0): 0}
    assert_prompt(result)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"security.protocol": "SASL_SSL"}, "GSSAPI (Kerberos)"),  # librdkafka's default
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "GSSAPI (Kerberos)"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"}, "AWS_MSK_IAM"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
         "sasl.oauthbearer.method=oidc"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-1"}, "SCRAM-SHA-1"),
    ],
)  # fmt: skip
def test_a_mechanism_the_wire_client_lacks_is_the_sources_error(
    config: dict[str, str], named: str
) -> None:
    """No fallback to the AdminClient for coordinator requests: the cluster is not collected,
    its partitions are unknown (not a stuck consumer), and the error names the setting."""
    source = KafkaSource(f"127.0.0.1:{_unused_port()}", config, timeout_s=1)
    try:
        assert source._groups is None and source._admin is None
        for result in (source.collect(now_ms()), source.log_offsets(["t"], now_ms())):
            assert result.reachable is False
            assert result.groups == [] and result.commits == [] and result.offsets == []
            [error] = result.errors
            assert error.where == "cluster" and named in error.error
            assert error.error.startswith("not collected: ")
    finally:
        source.close()


@lab
def test_error_confined_to_one_partition(
    kafka_bootstrap: str,
    admin: AdminClient,
    source: KafkaSource,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = create_topic(admin, 3)
    produce(kafka_bootstrap, topic, {0: 4, 1: 2, 2: 1})
    group = name("g")
    alter_offsets(admin, group, {(topic, 0): 3, (topic, 1): 1})
    # Apache Kafka refuses commits on partitions a topic lacks and drops a deleted topic's
    # offsets, so the partition error is injected: the broker's answer for partition 1 (both
    # ListOffsets calls) becomes what a partition without a leader answers.
    list_offsets = source.admin.list_offsets

    def one_partition_fails(request: dict, **kwargs: Any) -> dict:
        futures = dict(list_offsets(request, **kwargs))
        for tp in futures:
            if (tp.topic, tp.partition) == (topic, 1):
                futures[tp] = failed(KafkaError.LEADER_NOT_AVAILABLE)
        return futures

    monkeypatch.setattr(source.admin, "list_offsets", one_partition_fails)
    result = source.collect(now_ms())

    assert result.reachable
    errors = [e for e in result.errors if topic in e.where]
    assert [e.where for e in errors] == [f"{topic}/1"]
    assert "ListOffsets earliest" in errors[0].error and "ListOffsets latest" in errors[0].error
    assert "LEADER_NOT_AVAILABLE" in errors[0].error
    assert offsets_of(result, topic) == {0: (0, 4), 2: (0, 1)}
    # The commit itself is still reported: downstream flags it, the adapter does not hide it.
    assert commits_of(result, group) == {(topic, 0): 3, (topic, 1): 1}
    assert errors_about(result, group) == []


@lab
def test_commit_on_a_partition_the_topic_lacks_is_refused_by_kafka(
    admin: AdminClient, kafka_bootstrap: str
) -> None:
    """Why the test above injects its error: Kafka does not store such a commit."""
    topic = create_topic(admin, 1)
    group = name("g")
    tps = [TopicPartition(topic, 0, 0), TopicPartition(topic, 7, 1)]
    answer = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])
    try:
        stored = answer[group].result(10).topic_partitions
    except KafkaException:
        stored = []
    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    offsets = {tp.partition: tp.offset for tp in fetched[group].result(10).topic_partitions}
    assert 7 not in offsets or offsets[7] < 0, (stored, offsets)


@lab
def test_more_partitions_show_the_new_count(
    kafka_bootstrap: str, admin: AdminClient, source: KafkaSource
) -> None:
    topic = create_topic(admin, 2)
    group = name("g")
    alter_offsets(admin, group, {(topic, 0): 0})
    first = source.collect(now_ms())
    assert first.partition_counts[topic] == 2
    assert set(offsets_of(first, topic)) == {0, 1}

    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(10)
    # New partitions have a leader a moment after the metadata lists them.
    second = wait_for(
        lambda: (
            (r := source.collect(now_ms()))
            and r.partition_counts.get(topic) == 5
            and len(offsets_of(r, topic)) == 5
            and r
        )
    )

    assert second.partition_counts[topic] == 5
    assert set(offsets_of(second, topic)) == {0, 1, 2, 3, 4}


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_broker_is_reported_within_the_timeout() -> None:
    source = KafkaSource(f"127.0.0.1:{_unused_port()}", timeout_s=1.5)
    try:
        t0 = time.monotonic()
        result = source.collect(123)
        elapsed = time.monotonic() - t0
    finally:
        source.close()

    assert result.reachable is False
    assert 1.0 <= elapsed <= 2.5
    assert [e.where for e in result.errors] == ["cluster"]
    assert result.errors[0].source is Source.KAFKA
    assert "unreachable" in result.errors[0].error
    assert (result.groups, result.commits, result.offsets) == ([], [], [])
    assert result.started_ms == 123 and result.finished_ms >= 123 + 1000


@lab
def test_unreachable_then_back(lab_services: Any) -> None:
    """The same source object recovers when the broker comes back (on the same port)."""
    source = KafkaSource(lab_services.bootstrap, timeout_s=2)
    try:
        assert source.collect(now_ms()).reachable
        lab_services.stop("kafka")
        down = source.collect(now_ms())
        assert down.reachable is False
        lab_services.start("kafka")
        # Reachable first; then, once the group coordinator has loaded __consumer_offsets
        # (it answers COORDINATOR_LOAD_IN_PROGRESS meanwhile, named in the errors), clean.
        wait_for(lambda: source.collect(now_ms()).reachable, timeout=60)
        up = wait_for(lambda: not (r := source.collect(now_ms())).errors and r, timeout=60)
        assert up.reachable
    finally:
        source.close()


def test_closed_source_refuses_to_collect() -> None:
    source = KafkaSource(f"127.0.0.1:{_unused_port()}", timeout_s=1)
    source.close()
    source.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        source.collect(0)


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError):
        KafkaSource("127.0.0.1:9", timeout_s=0)


# --- the description mapping, with the client's own model objects -----------------------------


def description(
    group: str,
    state: ConsumerGroupState,
    members: list[MemberDescription],
    *,
    assignor: str = "range",
    group_type: ConsumerGroupType = ConsumerGroupType.CLASSIC,
) -> ConsumerGroupDescription:
    return ConsumerGroupDescription(
        group_id=group,
        is_simple_consumer_group=False,
        members=members,
        partition_assignor=assignor,
        state=state,
        coordinator=Node(3, "kafka-3.example", 9092),
        type=group_type,
    )


def member(
    member_id: str, client_id: str, host: str, tps: list[tuple[str, int]]
) -> MemberDescription:
    return MemberDescription(
        member_id, client_id, host, MemberAssignment([TopicPartition(t, p) for t, p in tps])
    )


def test_description_of_a_stable_kafka_group() -> None:
    desc = description(
        "orders-app",
        ConsumerGroupState.STABLE,
        [
            member("c-2", "app", "/10.0.0.2", [("orders", 2), ("orders", 0)]),
            member("c-1", "app", "/10.0.0.1", [("orders", 1), ("audit", 0)]),
        ],
    )
    snap = snapshot_from_description(desc, listed_type="classic", topics={"legacy"})

    assert snap.source is Source.KAFKA
    assert snap.group == "orders-app"
    assert snap.state == "Stable"
    assert snap.assignor == "range"
    assert snap.coordinator == "kafka-3.example:9092"
    assert snap.protocol_type == "classic"
    assert snap.members_known
    assert [(m.member_id, m.client_id, m.host, m.assignment) for m in snap.members] == [
        ("c-1", "app", "/10.0.0.1", (("audit", 0), ("orders", 1))),
        ("c-2", "app", "/10.0.0.2", (("orders", 0), ("orders", 2))),
    ]
    assert snap.topics == ("audit", "legacy", "orders")


@pytest.mark.parametrize(
    ("state", "expected_state", "members_known"),
    [
        (ConsumerGroupState.STABLE, "Stable", False),
        (ConsumerGroupState.PREPARING_REBALANCING, "PreparingRebalance", False),
        (ConsumerGroupState.COMPLETING_REBALANCING, "CompletingRebalance", False),
        (ConsumerGroupState.EMPTY, "Empty", True),
        (ConsumerGroupState.DEAD, "Dead", True),
        (ConsumerGroupState.UNKNOWN, None, True),
    ],
)
def test_memberless_description(
    state: ConsumerGroupState, expected_state: str | None, members_known: bool
) -> None:
    snap = snapshot_from_description(description("g", state, []))
    assert snap.state == expected_state
    assert snap.members == ()
    assert snap.members_known is members_known


def test_description_blanks_are_unknown() -> None:
    desc = description("g", ConsumerGroupState.STABLE, [member("m", "", "", [])], assignor="")
    snap = snapshot_from_description(desc)
    assert snap.assignor is None
    assert (snap.members[0].client_id, snap.members[0].host, snap.members[0].assignment) == (
        None,
        None,
        (),
    )


def test_listed_type_wins_over_described_type() -> None:
    desc = description("g", ConsumerGroupState.EMPTY, [], group_type=ConsumerGroupType.CONSUMER)
    assert snapshot_from_description(desc).protocol_type == "consumer"
    assert snapshot_from_description(desc, listed_type="classic").protocol_type == "classic"


# --- both rebalance protocols -----------------------------------------------------------------


def _member(bootstrap: str, group: str, protocol: str, client_id: str) -> KafkaConsumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": client_id,
        "group.protocol": protocol,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if protocol == "classic":
        conf["session.timeout.ms"] = 6000
    return KafkaConsumer(conf)


def _settled(source: KafkaSource, group: str, members: int, partitions: int):  # noqa: ANN202
    """The group's snapshot once the broker reports ``members`` members owning all
    ``partitions`` partitions and nobody reconciling (KIP-848: assignment == target)."""

    def check():  # noqa: ANN202
        snap = group_of(source.collect(now_ms()), group)
        if snap is None or snap.state != "Stable" or len(snap.members) != members:
            return None
        owned = [tp for m in snap.members for tp in m.assignment]
        if len(owned) != partitions:
            return None
        if any(m.target_assignment not in (None, m.assignment) for m in snap.members):
            return None
        return snap

    return check


@lab
@pytest.mark.kafka_since("4.0", "KIP-848 consumer groups")
def test_consumer_protocol_group_with_epochs_beside_a_classic_one_of_the_same_pattern(
    kafka_bootstrap: str, admin: AdminClient, source: KafkaSource
) -> None:
    """A KIP-848 group is read with its group epoch as the generation, its assignment epoch
    and member epochs (ConsumerGroupDescribe), members and target assignments from the
    broker; a classic group named like it keeps its own type and no epochs."""
    topic = create_topic(admin, 4)
    produce(kafka_bootstrap, topic, {0: 2, 1: 2, 2: 2, 3: 2})
    stem = name("g")
    kip848, classic = f"{stem}.orders", f"{stem}-orders"
    consumers = [
        _member(kafka_bootstrap, kip848, "consumer", "kip848-a"),
        _member(kafka_bootstrap, classic, "classic", "classic-a"),
    ]
    try:
        for c in consumers:
            c.subscribe([topic])

        def poll_all() -> None:
            for c in consumers:
                c.poll(0.1)

        def settled(group: str, members: int):  # noqa: ANN202
            check = _settled(source, group, members, 4)
            return lambda: (poll_all(), check())[1]

        first = wait_for(settled(kip848, 1), 60, "the KIP-848 group stable")
        assert first.protocol_type == "consumer"
        assert first.assignor == "uniform"  # the broker's default server-side assignor
        assert first.generation is not None and first.generation >= 1
        assert first.assignment_epoch == first.generation
        [member] = first.members
        assert member.client_id == "kip848-a"
        assert member.member_epoch == first.generation
        assert member.assignment == member.target_assignment == tuple((topic, p) for p in range(4))
        assert member.subscription == (topic,)  # the broker says what it subscribes to

        other = wait_for(settled(classic, 1), 60, "the classic group stable")
        assert other.protocol_type == "classic"
        assert other.assignment_epoch is None
        assert all(m.member_epoch is None and m.target_assignment is None for m in other.members)
        # A classic member's subscription is its MemberMetadata, which DescribeGroups returns.
        assert all(m.subscription == (topic,) for m in other.members)

        # A second member: the group epoch rises, both members converge on the new target.
        consumers.append(_member(kafka_bootstrap, kip848, "consumer", "kip848-b"))
        consumers[-1].subscribe([topic])
        second = wait_for(settled(kip848, 2), 90, "the KIP-848 group stable with two members")
        assert second.generation > first.generation
        assert {m.client_id for m in second.members} == {"kip848-a", "kip848-b"}
        assert {m.member_epoch for m in second.members} <= {second.assignment_epoch}
        assert sorted(len(m.assignment) for m in second.members) == [2, 2]
    finally:
        for c in consumers:
            leave_and_close(c)


# --- faults against the real broker -------------------------------------------------------------


@lab
def test_broker_restarted_mid_cycle_then_the_same_source_recovers(
    kafka_bootstrap: str,
    admin: AdminClient,
    lab_services: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The broker goes down in the middle of a cycle, between the groups' committed offsets
    and their descriptions: the cycle ends within its budget with the failure named and
    nothing invented; the same object (no process restart) reads whole cycles again once the
    broker is back, commit times included.

    This is the moment that aborted the whole process inside librdkafka 2.16 (a connection
    dropped under an AdminClient DescribeConsumerGroups, issue #4605): group requests now go
    through the wire client (docs/DESIGN_CHOICES.md, docs/LAB.md).
    """
    topic = create_topic(admin, 2)
    produce(kafka_bootstrap, topic, {0: 3, 1: 3})
    group = name("g")
    alter_offsets(admin, group, {(topic, 0): 2, (topic, 1): 1})
    source = KafkaSource(kafka_bootstrap, timeout_s=3)
    try:
        assert commits_of(source.collect(now_ms()), group) == {(topic, 0): 2, (topic, 1): 1}
        original = source._groups.describe_classic
        stopped: list[bool] = []

        def broker_dies_now(groups: list[str], **kwargs: Any) -> dict:
            if not stopped:
                lab_services.stop("kafka")
                stopped.append(True)
            return original(groups, **kwargs)

        monkeypatch.setattr(source._groups, "describe_classic", broker_dies_now)
        cut = source.collect(now_ms())
        assert stopped
        assert cut.finished_ms - cut.started_ms < 10_000
        assert cut.errors, "a cycle cut short must say where"
        # What was read is reported as read; nothing is invented for the rest: the commits
        # as committed, no log offsets (rather than zeros), membership unknown.
        assert commits_of(cut, group) == {(topic, 0): 2, (topic, 1): 1}
        assert offsets_of(cut, topic) == {}
        cut_group = group_of(cut, group)
        assert cut_group is not None and cut_group.members_known is False
        monkeypatch.setattr(source._groups, "describe_classic", original)

        lab_services.start("kafka")
        back = wait_for(
            lambda: (
                (r := source.collect(now_ms())).reachable
                and not r.errors
                and commits_of(r, group) == {(topic, 0): 2, (topic, 1): 1}
                and offsets_of(r, topic) == {0: (0, 3), 1: (0, 3)}
                and r
            ),
            timeout=90,
            what="whole cycles again after the restart",
        )
        assert all(c.commit_time_ms for c in back.commits if c.group == group)
    finally:
        source.close()


@lab
def test_topic_deleted_while_a_group_reads_it(
    kafka_bootstrap: str, admin: AdminClient, source: KafkaSource
) -> None:
    """A group's topic is deleted under it: the cycle completes, the group is still reported,
    and the cycles after it go on (Kafka drops the deleted topic's offsets of the group)."""
    doomed, kept = create_topic(admin, 2), create_topic(admin, 1)
    produce(kafka_bootstrap, doomed, {0: 2, 1: 2})
    produce(kafka_bootstrap, kept, {0: 4})
    group = name("g")
    alter_offsets(admin, group, {(doomed, 0): 1, (doomed, 1): 2, (kept, 0): 3})
    before = source.collect(now_ms())
    assert commits_of(before, group) == {(doomed, 0): 1, (doomed, 1): 2, (kept, 0): 3}

    admin.delete_topics([doomed])[doomed].result(10)
    during = source.collect(now_ms())  # may still see the topic's last moments
    assert during.reachable
    assert group_of(during, group) is not None

    after = wait_for(
        lambda: (
            (r := source.collect(now_ms()))
            and doomed not in r.partition_counts
            and commits_of(r, group) == {(kept, 0): 3}
            and r
        ),
        timeout=60,
        what="the deleted topic gone from the group's commits",
    )
    assert offsets_of(after, kept) == {0: (0, 4)}
    assert errors_about(after, kept, group) == []


@lab
def test_offsets_topic_unreadable_falls_back_with_a_warning(
    kafka_bootstrap: str,
    admin: AdminClient,
    source: KafkaSource,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cluster whose ACLs deny ``__consumer_offsets`` (the lab has no authorizer: the
    reader's answer is injected, as the reader itself reports TOPIC_AUTHORIZATION_FAILED):
    groups and offsets still come from the AdminClient, commit times are unknown, and the
    source says why."""
    from collectors.consumer_offsets.reader import ReaderOutcome

    topic = create_topic(admin, 1)
    produce(kafka_bootstrap, topic, {0: 2})
    group = name("g")
    alter_offsets(admin, group, {(topic, 0): 1})
    denied = SourceError(
        Source.KAFKA,
        "__consumer_offsets",
        "TOPIC_AUTHORIZATION_FAILED: Broker: Topic authorization failed",
    )

    def deny(now: int) -> ReaderOutcome:
        return ReaderOutcome(
            reachable=True, readable=False, caught_up=False, records_read=0,
            records_decoded=0, records_behind=None, skipped={}, bytes_read=0, partitions=0,
            errors=(denied,), started_ms=now, finished_ms=now,
        )  # fmt: skip

    monkeypatch.setattr(source._offsets_reader, "poll", deny)
    result = source.collect(now_ms())

    assert result.reachable
    assert commits_of(result, group) == {(topic, 0): 1}
    assert [c.commit_time_ms for c in result.commits if c.group == group] == [None]
    warnings = [e.error for e in result.errors if e.where == "__consumer_offsets"]
    assert any("TOPIC_AUTHORIZATION_FAILED" in w for w in warnings)
    assert any("not readable" in w for w in warnings)


@lab
def test_the_cluster_id_is_the_identity(admin: AdminClient, source: KafkaSource) -> None:
    """The id the broker was formatted with (KIP-78), from the metadata every cycle reads."""
    result = source.collect(now_ms())
    expected = admin.describe_cluster(request_timeout=10).result(timeout=15).cluster_id
    assert result.identity == {KAFKA_CLUSTER_ID: expected}
    assert len(expected) == 22  # a 16-byte id in base64

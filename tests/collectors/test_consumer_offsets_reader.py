"""ConsumerOffsetsReader against the real lab broker (Apache Kafka 4.1, KRaft), plus the answers
the lab cannot give (a denied or missing topic, a truncated log) from a stand-in consumer.

The broker is shared by the session, so every test uses its own topic and group names and
looks only at what concerns them; what other tests wrote to ``__consumer_offsets`` is read
too, and must decode. Waits are ``wait_for`` with generous deadlines, never sleeps.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.consumer_offsets import UNSUPPORTED_RECORD_TYPE
from collectors.consumer_offsets.picture import (
    ALL_MEMBERS_LEFT,
    FIRST_SEEN,
    MEMBERS_JOINED,
    MEMBERS_LEFT,
    Event,
    GenerationChange,
    GroupDeleted,
    OffsetDeleted,
)
from collectors.consumer_offsets.reader import (
    OFFSETS_TOPIC,
    READER_GROUP_ID,
    ConsumerOffsetsReader,
    ReaderOutcome,
)
from lab.workload.clients import leave_and_close
from tests.waiting import wait_for

lab = pytest.mark.lab


def now_ms() -> int:
    return int(time.time() * 1000)


def name(kind: str) -> str:
    return f"cor-{kind}-{uuid.uuid4().hex[:10]}"


def create_topic(admin: AdminClient, partitions: int) -> str:
    topic = name("t")
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    return topic


def alter_offsets(admin: AdminClient, group: str, tps: list[TopicPartition]) -> None:
    """Commit through the AdminClient, again until every partition is taken: a topic just
    created can still be unknown to the broker's metadata cache (UNKNOWN_TOPIC_OR_PART for
    each partition, in an answer that succeeds as a whole)."""
    request = [ConsumerGroupTopicPartitions(group, tps)]

    def committed() -> bool:
        future = admin.alter_consumer_group_offsets(request, request_timeout=10)[group]
        if future.exception(30) is not None:
            return False
        return all(tp.error is None for tp in future.result().topic_partitions)

    wait_for(committed, timeout=90, every=0.5, what=f"offsets of {group} committed")


def commit(consumer: Consumer, tps: list[TopicPartition]) -> None:
    done = consumer.commit(offsets=tps, asynchronous=False)
    assert done is not None and [tp.error for tp in done] == [None] * len(tps)


class Watch:
    """A reader polled until something shows, keeping every event of the groups watched."""

    def __init__(self, reader: ConsumerOffsetsReader, *groups: str) -> None:
        self.reader = reader
        self.groups = set(groups)
        self.events: list[Event] = []
        self.outcomes: list[ReaderOutcome] = []

    def poll(self) -> ReaderOutcome:
        outcome = self.reader.poll(now_ms())
        self.outcomes.append(outcome)
        self.events += [e for e in self.reader.state.drain_events() if e.group in self.groups]
        return outcome

    def until(self, predicate: Callable[[], Any], what: str, timeout: float = 60) -> Any:
        return wait_for(lambda: self.poll() and predicate(), timeout=timeout, what=what)

    def caught_up(self) -> ReaderOutcome:
        return wait_for(lambda: (o := self.poll()).caught_up and o, timeout=60, what="caught up")


@pytest.fixture
def reader(kafka_bootstrap: str) -> Iterator[ConsumerOffsetsReader]:
    r = ConsumerOffsetsReader(kafka_bootstrap, timeout_s=10)
    yield r
    r.close()


def classic_consumer(bootstrap: str, group: str, client_id: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": client_id,
            "group.protocol": "classic",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )


def wait_assigned(consumers: list[Consumer], counts: list[int]) -> None:
    def settled() -> bool:
        for c in consumers:
            c.poll(0.1)
        return [len(c.assignment()) for c in consumers] == counts

    wait_for(settled, timeout=60, every=0, what=f"assignment {counts}")


# --- against the broker -------------------------------------------------------------------------


@lab
def test_commits_with_their_time_and_metadata(
    kafka_bootstrap: str, admin: AdminClient, reader: ConsumerOffsetsReader
) -> None:
    topic = create_topic(admin, 3)
    group = name("g")
    consumer = classic_consumer(kafka_bootstrap, group, "commit-test")
    try:
        consumer.subscribe([topic])
        wait_assigned([consumer], [3])
        before = now_ms()
        commit(
            consumer, [TopicPartition(topic, 0, 5, metadata="hello"), TopicPartition(topic, 1, 7)]
        )
        after = now_ms()
        commit(consumer, [TopicPartition(topic, 1, 9)])
    finally:
        leave_and_close(consumer)

    watch = Watch(reader, group)
    commits = reader.state.commits
    watch.until(lambda: commits.get((group, topic, 1), (0,))[0] == 9, "the second commit")
    first = commits[(group, topic, 0)]
    assert first.offset == 5
    assert before <= first.commit_timestamp_ms <= after
    # The record is stamped when the coordinator writes it, a few ms after it took the commit.
    assert (
        first.commit_timestamp_ms <= first.record_timestamp_ms <= first.commit_timestamp_ms + 5000
    )
    # librdkafka sends the metadata with its C string's terminating NUL and Kafka keeps the
    # bytes it was given; the reader reports them as stored (OffsetFetch through
    # librdkafka shows "hello", cut at the NUL).
    assert first.metadata == "hello\x00"
    assert first.leader_epoch is None  # librdkafka commits without the leader epoch
    assert commits[(group, topic, 1)].metadata == ""
    assert (group, topic, 2) not in commits  # never committed


@lab
def test_the_reader_is_not_a_group(
    kafka_bootstrap: str, admin: AdminClient, reader: ConsumerOffsetsReader
) -> None:
    outcome = Watch(reader).caught_up()
    assert outcome.readable and outcome.partitions > 0 and not outcome.errors
    listed = admin.list_consumer_groups(request_timeout=10).result()
    assert READER_GROUP_ID not in {g.group_id for g in listed.valid}
    # Nothing was ever committed under its name either.
    assert not [k for k in reader.state.commits if k[0] == READER_GROUP_ID]


@lab
@pytest.mark.kafka_since("4.0", "the new group coordinator's group metadata records")
def test_generation_changes_with_their_causes(
    kafka_bootstrap: str, admin: AdminClient, reader: ConsumerOffsetsReader
) -> None:
    topic = create_topic(admin, 4)
    group = name("g")
    start = now_ms()
    first = classic_consumer(kafka_bootstrap, group, "first")
    second = classic_consumer(kafka_bootstrap, group, "second")
    try:
        first.subscribe([topic])
        wait_assigned([first], [4])
        second.subscribe([topic])
        wait_assigned([first, second], [2, 2])
        first_id, second_id = first.memberid(), second.memberid()
        leave_and_close(second)
        wait_assigned([first], [4])
    finally:
        leave_and_close(first)
        second.close()
    end = now_ms()

    watch = Watch(reader, group)
    watch.until(
        lambda: any(
            isinstance(e, GenerationChange) and ALL_MEMBERS_LEFT in e.causes for e in watch.events
        ),
        "the group emptied",
    )
    changes = [e for e in watch.events if isinstance(e, GenerationChange)]
    # Generations follow one another, each event pairing two consecutive records.
    for earlier, later in zip(changes, changes[1:], strict=False):
        assert later.generation_before == earlier.generation_after
        assert later.generation_after > later.generation_before
    assert changes[0].causes == (FIRST_SEEN,)
    joined = [(e.members_joined, e.causes) for e in changes if e.members_joined]
    left = [(e.members_left, e.causes) for e in changes if e.members_left]
    assert [ids for ids, _ in joined] == [(first_id,), (second_id,)]
    assert all(MEMBERS_JOINED in causes for _, causes in joined)
    assert left == [((second_id,), left[0][1]), ((first_id,), (ALL_MEMBERS_LEFT,))]
    assert MEMBERS_LEFT in left[0][1]
    assert all(start <= e.time_ms <= end for e in changes)
    info = reader.state.groups[group]
    assert (info.protocol_type, info.protocol, info.members) == ("consumer", None, ())
    assert info.generation == changes[-1].generation_after


@lab
def test_deleting_a_group_deletes_its_offsets_and_then_the_group(
    kafka_bootstrap: str, admin: AdminClient, reader: ConsumerOffsetsReader
) -> None:
    topic = create_topic(admin, 2)
    group = name("g")
    consumer = classic_consumer(kafka_bootstrap, group, "deleted")
    try:
        consumer.subscribe([topic])
        wait_assigned([consumer], [2])
        commit(consumer, [TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)])
    finally:
        consumer.close()
    watch = Watch(reader, group)
    watch.until(lambda: (group, topic, 1) in reader.state.commits, "the commits")

    before = now_ms()
    admin.delete_consumer_groups([group], request_timeout=10)[group].result(10)
    after = now_ms()
    watch.until(lambda: group in reader.state.deleted_groups, "the group tombstone")

    deletions = [e for e in watch.events if isinstance(e, OffsetDeleted | GroupDeleted)]
    assert sorted((e.topic, e.partition, e.offset_before) for e in deletions[:-1]) == [
        (topic, 0, 3),
        (topic, 1, 4),
    ]
    gone = deletions[-1]
    assert isinstance(gone, GroupDeleted) and gone.generation_before is not None
    assert all(before <= e.time_ms <= after for e in deletions)
    assert group not in reader.state.groups
    assert not [k for k in reader.state.commits if k[0] == group]
    assert reader.state.deleted_offsets[(group, topic, 0)] == gone.time_ms


@lab
def test_offsets_altered_by_the_admin_client(
    admin: AdminClient, reader: ConsumerOffsetsReader
) -> None:
    """AdminClient.alter_consumer_group_offsets writes the same commit records. (confluent-kafka
    2.16 has no OffsetDelete call; offsets are deleted above, with their group.)"""
    topic = create_topic(admin, 2)
    group = name("g")
    alter_offsets(
        admin,
        group,
        [TopicPartition(topic, 0, 11, metadata="from-admin"), TopicPartition(topic, 1, 12)],
    )
    watch = Watch(reader, group)
    watch.until(lambda: (group, topic, 1) in reader.state.commits, "the altered offsets")
    commits = reader.state.commits
    assert (commits[(group, topic, 0)].offset, commits[(group, topic, 1)].offset) == (11, 12)
    assert commits[(group, topic, 0)].metadata == "from-admin\x00"  # the NUL again
    assert group not in reader.state.groups  # a simple commit writes no group metadata


@lab
@pytest.mark.kafka_since("4.0", "the new group coordinator's group metadata records")
def test_a_new_reader_rebuilds_the_same_state(
    kafka_bootstrap: str, admin: AdminClient, reader: ConsumerOffsetsReader
) -> None:
    topic = create_topic(admin, 3)
    group = name("g")
    consumer = classic_consumer(kafka_bootstrap, group, "rebuilt")
    try:
        consumer.subscribe([topic])
        wait_assigned([consumer], [3])
        for offset in range(1, 4):
            commit(consumer, [TopicPartition(topic, p, offset * 10 + p) for p in range(3)])
    finally:
        consumer.close()
    watch = Watch(reader, group)
    watch.until(
        lambda: (info := reader.state.groups.get(group)) and not info.members, "the group emptied"
    )
    watch.caught_up()

    def mine(commits: Any) -> dict:
        return {k: v for k, v in commits.items() if k[0] == group}

    # A restarted process: a new reader reads from the log start up to the same ends.
    again = ConsumerOffsetsReader(kafka_bootstrap, timeout_s=10)
    try:
        rebuilt = Watch(again, group)
        rebuilt.caught_up()
        assert mine(again.state.commits) == mine(reader.state.commits) != {}
        assert again.state.groups[group] == reader.state.groups[group]
        # The same events again, with the same record times and log positions.
        assert rebuilt.events == watch.events and len(watch.events) >= 3
    finally:
        again.close()


@lab
def test_a_small_poll_budget_reads_in_steps(kafka_bootstrap: str, admin: AdminClient) -> None:
    topic = create_topic(admin, 30)
    group = name("g")
    alter_offsets(admin, group, [TopicPartition(topic, p, p + 1) for p in range(30)])
    full = ConsumerOffsetsReader(kafka_bootstrap, timeout_s=10)
    stepped = ConsumerOffsetsReader(kafka_bootstrap, timeout_s=10, max_records_per_poll=25)
    try:
        first = stepped.poll(now_ms())
        assert first.records_read == 25
        assert not first.caught_up and first.records_behind and first.records_behind > 0
        outcomes = [first]
        while not outcomes[-1].caught_up:
            outcomes.append(stepped.poll(now_ms()))
            assert len(outcomes) < 10_000
        assert all(o.records_read <= 25 for o in outcomes)
        Watch(full).caught_up()

        def mine(commits: Any) -> dict:
            return {k: v for k, v in commits.items() if k[0] == group}

        assert mine(stepped.state.commits) == mine(full.state.commits)
        assert len(mine(full.state.commits)) == 30
    finally:
        full.close()
        stepped.close()


@lab
def test_broker_restarted_between_polls(lab_services: Any) -> None:
    bootstrap = lab_services.bootstrap
    reader = ConsumerOffsetsReader(bootstrap, timeout_s=3)
    try:
        Watch(reader).caught_up()
        lab_services.stop("kafka")
        t0 = time.monotonic()
        down = reader.poll(now_ms())
        assert time.monotonic() - t0 < 6
        assert (down.reachable, down.readable, down.caught_up) == (False, False, False)
        assert down.errors[0].where == "cluster" and "unreachable" in down.errors[0].error
        lab_services.start("kafka")
        wait_for(lambda: reader.poll(now_ms()).reachable, timeout=90, what="reachable again")

        # A commit after the restart, once the broker takes topics and commits again.
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic, group = name("t"), name("g")
        wait_for(
            lambda: (
                admin.create_topics([NewTopic(topic, 1, 1)])[topic].exception(30) is None
                or topic in admin.list_topics(timeout=10).topics
            ),
            timeout=90,
            what="a topic created after the restart",
        )
        alter_offsets(admin, group, [TopicPartition(topic, 0, 77)])
        Watch(reader, group).until(
            lambda: (group, topic, 0) in reader.state.commits, "the commit after the restart"
        )
        assert reader.state.commits[(group, topic, 0)].offset == 77
        assert Watch(reader).caught_up().errors == ()
    finally:
        reader.close()


@lab
def test_broker_restarted_mid_poll(lab_services: Any, admin: AdminClient) -> None:
    """A poll slowed down on purpose is under way when the broker stops; the same reader
    object then reads what is committed after the restart, and ends with what a fresh reader
    reads. (The deadline is checked between batches of records, so the slowed poll may
    overrun it by one batch: that is the slowing down, not the reader.)"""
    bootstrap = lab_services.bootstrap
    topic = create_topic(admin, 20)
    group = name("g")
    for round_ in range(1, 6):
        alter_offsets(admin, group, [TopicPartition(topic, p, round_ * 100 + p) for p in range(20)])
    reader = ConsumerOffsetsReader(bootstrap, timeout_s=4)
    apply = reader.state.apply

    def slow_apply(*record: Any) -> None:
        time.sleep(0.05)
        apply(*record)

    reader.state.apply = slow_apply  # type: ignore[method-assign]
    outcomes: list[ReaderOutcome] = []
    polling = threading.Thread(target=lambda: outcomes.append(reader.poll(now_ms())))
    try:
        polling.start()
        wait_for(lambda: reader.state.records_decoded > 5, timeout=30, what="the poll under way")
        lab_services.stop("kafka")
        polling.join(60)
        assert not polling.is_alive() and len(outcomes) == 1
        assert outcomes[0].records_read > 5
        del reader.state.apply
        lab_services.start("kafka")
        # A new admin client: one that lived through the restart may never answer (LAB.md).
        after = AdminClient({"bootstrap.servers": bootstrap})
        alter_offsets(after, group, [TopicPartition(topic, p, 600 + p) for p in range(20)])
        Watch(reader, group).until(
            lambda: reader.state.commits.get((group, topic, 19), (0,))[0] == 619,
            "a commit made after the restart",
            timeout=90,
        )
        fresh = ConsumerOffsetsReader(bootstrap, timeout_s=10)
        try:
            Watch(fresh).caught_up()
            mine = {k: v for k, v in fresh.state.commits.items() if k[0] == group}
            assert {k: reader.state.commits[k] for k in mine} == mine
        finally:
            fresh.close()
    finally:
        polling.join(60)
        reader.close()


@lab
@pytest.mark.kafka_since("4.0", "KIP-848 consumer groups")
def test_kip848_group_records_are_skipped_and_its_commits_decoded(
    kafka_bootstrap: str, admin: AdminClient, reader: ConsumerOffsetsReader
) -> None:
    topic = create_topic(admin, 2)
    group = name("g")
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
        }
    )
    try:
        # A regular-expression subscription: Kafka 4.1 keeps it as a record of its own (key 16).
        consumer.subscribe([f"^{topic}$"])
        wait_assigned([consumer], [2])
        commit(consumer, [TopicPartition(topic, 1, 21)])
    finally:
        consumer.close()

    watch = Watch(reader, group)
    watch.until(lambda: (group, topic, 1) in reader.state.commits, "the KIP-848 group's commit")
    watch.caught_up()
    assert reader.state.commits[(group, topic, 1)].offset == 21
    assert group not in reader.state.groups  # no classic group metadata for a consumer group
    assert watch.events == []
    # Everything Kafka wrote in this session decodes, or is one of its newer record types.
    assert set(reader.state.skipped) == {UNSUPPORTED_RECORD_TYPE}
    assert sum(o.skipped.get(UNSUPPORTED_RECORD_TYPE, 0) for o in watch.outcomes) > 0
    assert {3, 5, 6, 7, 8, 16} <= set(reader.state.skipped_key_versions)


# --- what the lab cannot provoke: a stand-in consumer ---------------------------------------------


class FakeConsumer:
    """Answers like confluent_kafka.Consumer for the calls the reader makes."""

    def __init__(self, partitions: int = 2, ends: dict[int, int] | None = None) -> None:
        self.topic_error: KafkaError | None = None
        self.partitions = list(range(partitions))
        self.ends = ends or dict.fromkeys(self.partitions, 0)
        self.list_topics_raises: KafkaException | None = None
        self.offset_errors: dict[int, KafkaError] = {}
        self.queue: list[Message] = []
        self.assigned: list[Any] = []
        self.closed = False

    def list_topics(self, topic: str, timeout: float) -> Any:
        if self.list_topics_raises is not None:
            raise self.list_topics_raises
        meta = SimpleNamespace(error=self.topic_error, partitions=dict.fromkeys(self.partitions))
        return SimpleNamespace(topics={topic: meta})

    def offsets_for_times(self, tps: list[TopicPartition], timeout: float) -> list[Any]:
        return [
            SimpleNamespace(
                partition=tp.partition,
                offset=(0 if tp.offset == -2 else self.ends[tp.partition]),
                error=self.offset_errors.get(tp.partition),
            )
            for tp in tps
        ]

    def assign(self, tps: list[TopicPartition]) -> None:
        self.assigned.append([(tp.partition, tp.offset) for tp in tps])

    def unassign(self) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        batch, self.queue = self.queue[:num_messages], self.queue[num_messages:]
        return batch

    def close(self) -> None:
        self.closed = True


def commit_message(partition: int, offset: int, group: str = "g") -> Message:
    key = b"\x00\x01" + len(group).to_bytes(2, "big") + group.encode() + b"\x00\x01t" + b"\x00" * 4
    value = bytes.fromhex("0004") + offset.to_bytes(8, "big") + b"\xff\xff\xff\xff\x01"
    value += (1_000).to_bytes(8, "big") + b"\x00"
    return Message(
        topic=OFFSETS_TOPIC, partition=partition, offset=offset, key=key, value=value,
        timestamp=(1, 1_000), error=None,
    )  # fmt: skip


def error_message(code: int, partition: int = 0, offset: int = 0) -> Message:
    return Message(topic=OFFSETS_TOPIC, partition=partition, offset=offset, error=KafkaError(code))


class Fakes(list):
    """Every consumer the readers created, in order; ``queue``: the ones to hand out next
    (a default FakeConsumer when it is empty)."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: list[FakeConsumer] = []


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> Fakes:
    made = Fakes()

    def new_consumer(self: ConsumerOffsetsReader) -> FakeConsumer:
        consumer = made.queue.pop(0) if made.queue else FakeConsumer()
        made.append(consumer)
        return consumer

    monkeypatch.setattr(ConsumerOffsetsReader, "_new_consumer", new_consumer)
    return made


@pytest.mark.parametrize(
    "code", [KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED]
)
def test_topic_missing_or_denied_in_the_metadata_is_not_readable(fakes: Fakes, code: int) -> None:
    fake = FakeConsumer()
    fake.topic_error = KafkaError(code)
    fakes.queue.append(fake)
    reader = ConsumerOffsetsReader("fake:9092", timeout_s=1)
    outcome = reader.poll(5)
    assert (outcome.reachable, outcome.readable, outcome.caught_up) == (True, False, False)
    assert [(e.where, KafkaError(code).name() in e.error) for e in outcome.errors] == [
        (OFFSETS_TOPIC, True)
    ]
    assert outcome.records_behind is None and fake.assigned == []


def test_fetch_denied_is_not_readable(fakes: Fakes) -> None:
    fake = FakeConsumer(ends={0: 5, 1: 5})
    fake.queue = [error_message(KafkaError.TOPIC_AUTHORIZATION_FAILED)]
    fakes.queue.append(fake)
    outcome = ConsumerOffsetsReader("fake:9092", timeout_s=1).poll(5)
    assert (outcome.reachable, outcome.readable, outcome.caught_up) == (True, False, False)
    assert outcome.errors[0].where == f"{OFFSETS_TOPIC}/0"
    assert "fetch: TOPIC_AUTHORIZATION_FAILED" in outcome.errors[0].error


def test_list_offsets_denied_is_not_readable(fakes: Fakes) -> None:
    fake = FakeConsumer(ends={0: 5, 1: 5})
    fake.offset_errors = {1: KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)}
    fakes.queue.append(fake)
    outcome = ConsumerOffsetsReader("fake:9092", timeout_s=1).poll(5)
    assert (outcome.reachable, outcome.readable) == (True, False)
    assert outcome.errors[0].where == f"{OFFSETS_TOPIC}/1"


def test_unreachable_poll_renews_the_consumer_and_resumes_at_the_positions(fakes: Fakes) -> None:
    first = FakeConsumer(ends={0: 2, 1: 0})
    first.queue = [commit_message(0, 0), commit_message(0, 1)]
    down = FakeConsumer()
    down.list_topics_raises = KafkaException(KafkaError(KafkaError._TRANSPORT))
    back = FakeConsumer(ends={0: 3, 1: 0})
    back.queue = [commit_message(0, 2)]
    fakes.queue.extend([first, back])

    reader = ConsumerOffsetsReader("fake:9092", timeout_s=1)
    assert reader.poll(1).caught_up
    reader._consumer = down  # the same client, now cut off from the cluster
    out = reader.poll(2)
    assert (out.reachable, out.readable, out.caught_up) == (False, False, False)
    assert out.errors[0].where == "cluster" and "unreachable" in out.errors[0].error
    again = reader.poll(3)
    assert again.caught_up and again.records_read == 1
    assert fakes[-1] is back and down.closed
    assert back.assigned == [[(0, 2)]]  # resumed where the state stood
    assert reader.state.commits[("g", "t", 0)].offset == 2


def test_all_brokers_down_while_reading_is_unreachable(fakes: Fakes) -> None:
    fake = FakeConsumer(ends={0: 3, 1: 0})
    fake.queue = [commit_message(0, 0), error_message(KafkaError._ALL_BROKERS_DOWN, -1)]
    fakes.queue.append(fake)
    reader = ConsumerOffsetsReader("fake:9092", timeout_s=1)
    outcome = reader.poll(1)
    assert (outcome.reachable, outcome.records_read, outcome.records_behind) == (False, 1, 2)
    assert outcome.errors[0].where == OFFSETS_TOPIC
    reader.poll(2)
    assert len(fakes) == 2  # the next poll started on a new consumer


def test_end_of_partition_moves_past_markers_and_gaps(fakes: Fakes) -> None:
    fake = FakeConsumer(ends={0: 10, 1: 0})
    # Records at 0 and 1, then the end at 10: a transaction marker, compacted offsets.
    fake.queue = [
        commit_message(0, 0),
        commit_message(0, 1),
        error_message(KafkaError._PARTITION_EOF, 0, 10),
    ]
    fakes.queue.append(fake)
    outcome = ConsumerOffsetsReader("fake:9092", timeout_s=1).poll(1)
    assert outcome.caught_up and outcome.records_read == 2 and outcome.records_behind == 0


def test_stalled_polls_renew_the_consumer(fakes: Fakes) -> None:
    fakes.queue.append(FakeConsumer(ends={0: 5, 1: 0}))  # behind, and nothing ever arrives
    reader = ConsumerOffsetsReader("fake:9092", timeout_s=0.05)
    for _ in range(3):
        outcome = reader.poll(1)
        assert not outcome.caught_up and outcome.records_behind == 5 and outcome.reachable
    assert len(fakes) == 1
    reader.poll(2)
    assert len(fakes) == 2 and fakes[0].closed


def test_a_log_end_below_the_position_rebuilds_the_state(fakes: Fakes) -> None:
    before = FakeConsumer(ends={0: 3, 1: 0})
    before.queue = [commit_message(0, 0), commit_message(0, 1), commit_message(0, 2)]
    fakes.queue.append(before)
    reader = ConsumerOffsetsReader("fake:9092", timeout_s=1)
    assert reader.poll(1).caught_up
    old_state = reader.state
    before.ends = {0: 1, 1: 0}  # an unclean leader election cut the log to one record
    before.queue = [commit_message(0, 0, group="h")]
    outcome = reader.poll(2)
    assert outcome.caught_up and "rebuilt" in outcome.errors[0].error
    assert reader.state is not old_state and list(reader.state.commits) == [("h", "t", 0)]
    assert before.assigned[-1] == [(0, -2)]  # from the log start (OFFSET_BEGINNING)
    assert outcome.records_decoded == 1


def test_settings_that_keep_the_reader_group_less_win_over_the_config(fakes: Fakes) -> None:
    reader = ConsumerOffsetsReader(
        "b:9092",
        {"enable.auto.commit": True, "isolation.level": "read_uncommitted", "group.id": "acl-ok"},
        timeout_s=1,
    )
    conf = reader._conf
    assert (conf["enable.auto.commit"], conf["enable.auto.offset.store"]) == (False, False)
    assert conf["isolation.level"] == "read_committed" and conf["group.id"] == "acl-ok"
    assert ConsumerOffsetsReader("b:9092", timeout_s=1)._conf["group.id"] == READER_GROUP_ID


def test_closed_reader_refuses_to_poll(fakes: Fakes) -> None:
    reader = ConsumerOffsetsReader("fake:9092", timeout_s=1)
    reader.close()
    with pytest.raises(RuntimeError):
        reader.poll(1)


@pytest.mark.parametrize("kwargs", [{"timeout_s": 0}, {"timeout_s": 1, "max_records_per_poll": 0}])
def test_arguments_must_be_positive(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        ConsumerOffsetsReader("b:9092", **kwargs)

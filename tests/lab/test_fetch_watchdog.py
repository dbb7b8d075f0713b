"""The lab's watchdog for clients that stop answering after a broker restart (docs/LAB.md).

The stuck client itself cannot be made on demand (it shows up under a loaded suite now and
then), so the parts are checked apart: when the watchdog calls a consumer stuck, how it tells
records waiting from an idle consumer, and that a reader it replaces goes on from where it was
without losing or repeating a record.
"""

from __future__ import annotations

import socket
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lab.ports import pick_free_ports
from lab.storm.broker_reader import BrokerReader, LogLimiter
from lab.workload import topics
from lab.workload.clients import FetchWatchdog, broker_listening, lagging, leave_group


def _closed_port() -> int:
    return pick_free_ports(1)[0]


def test_the_watchdog_is_due_only_after_its_span_with_the_broker_up_and_settled() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        up = f"127.0.0.1:{server.getsockname()[1]}"
        dog = FetchWatchdog(up, limit_s=0.3, settle_s=0.3, probe_every_s=0.0)
        assert not dog.due(), "nothing moved for less than the span"
        time.sleep(0.35)
        assert not dog.due(), "the broker is up, but not yet for settle_s"
        time.sleep(0.35)
        assert dog.due()
        assert not dog.due(), "re-armed: the next check waits a whole span again"
        time.sleep(0.35)
        dog.progress()
        assert not dog.due(), "progress re-arms it"
    down = FetchWatchdog(f"127.0.0.1:{_closed_port()}", limit_s=0.0, settle_s=0.0)
    assert not down.due(), "a broker that is down is an outage, not a stuck client"


@pytest.mark.parametrize(
    ("bootstrap_of", "expected"),
    [
        (lambda port: f"127.0.0.1:{port}", True),
        (lambda port: f"127.0.0.1:{_closed_port()},127.0.0.1:{port}", True),
        (lambda port: f"127.0.0.1:{_closed_port()}", False),
        (lambda port: "not-an-address", False),
    ],
)
def test_broker_listening(bootstrap_of, expected: bool) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert broker_listening(bootstrap_of(server.getsockname()[1])) is expected


@pytest.fixture
def topic_with_ten(kafka_bootstrap: str) -> str:
    name = f"watchdog-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=20)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(10):
        producer.produce(name, value=f"m{i}".encode(), partition=0)
    assert producer.flush(20) == 0
    return name


@pytest.mark.lab
def test_lagging_tells_records_waiting_from_a_consumer_at_the_log_end(
    kafka_bootstrap: str, topic_with_ten: str
) -> None:
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": uuid.uuid4().hex})
    try:
        consumer.assign([TopicPartition(topic_with_ten, 0, 0)])
        assert lagging(consumer, topic_with_ten, {0: 0})
        assert lagging(consumer, topic_with_ten, {0: 9})
        assert not lagging(consumer, topic_with_ten, {0: 10})
        # Nothing read yet and no commit: the log start stands in, and records wait.
        assert lagging(consumer, topic_with_ten, {0: None})
    finally:
        consumer.close()


@pytest.mark.lab
def test_a_replaced_reader_goes_on_from_its_positions(
    kafka_bootstrap: str, topic_with_ten: str
) -> None:
    say = LogLimiter()
    reader = BrokerReader(kafka_bootstrap, topic_with_ten, "watchdog-test", say)
    reader.watchdog = FetchWatchdog(kafka_bootstrap, limit_s=0.0, settle_s=0.0, probe_every_s=0)
    try:
        reader.assign({0: 4})
        first = reader._consumer
        assert reader.replace_if_stuck(), "an empty buffer at 4 with records to 10 is stuck"
        assert reader._consumer is not first
        got: list[int] = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            got += [offset for offset, _value in reader.fetch(0, 4 + len(got), 100)]
            reader.poll(0.2)
        assert got == [4, 5, 6, 7, 8, 9], "the new consumer starts where the old one stood"
        assert not reader.replace_if_stuck(), "at the log end nothing waits"
        assert reader.watchdog.restarts == 1
    finally:
        reader.close()


def test_the_lab_admin_is_recreated_once_its_calls_fail_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(topics, "RECREATE_AFTER_S", 0.3)
    admin = topics.TopicAdmin(f"127.0.0.1:{_closed_port()}", timeout_s=0.2)
    first = admin._admin
    with pytest.raises(KafkaException):
        admin.watermarks("t", 1)
    assert admin._admin is first, "one failure is no reason"
    time.sleep(0.35)
    before_second = time.monotonic()
    with pytest.raises(KafkaException):
        admin.watermarks("t", 1)
    assert admin._admin is not first, "failing for RECREATE_AFTER_S: a new client"
    # Read from the state, not from a third call's timing (a loaded machine may stretch it).
    assert admin._failing_since is not None and admin._failing_since >= before_second, (
        "the span starts again after a replacement"
    )


@pytest.mark.lab
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_leaving_holds_no_assignment_before_its_close(
    kafka_bootstrap: str, topic_with_ten: str, protocol: str
) -> None:
    revoked: list[int] = []
    consumer = Consumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": uuid.uuid4().hex,
         "group.protocol": protocol, "auto.offset.reset": "earliest"}
    )  # fmt: skip
    try:
        consumer.subscribe(
            [topic_with_ten], on_revoke=lambda _c, parts: revoked.extend(p.partition for p in parts)
        )
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment(), "joined the group"
        leave_group(consumer)
        assert consumer.assignment() == [], "nothing left for close() to revoke"
        assert 0 in revoked, "the revocation was served by poll, before the close"
    finally:
        consumer.close()

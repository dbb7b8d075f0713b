"""Topic retention settings read by DescribeConfigs (collectors/kafka/topic_configs.py):
against the real lab broker, including a broker restart, plus the pure parsing."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.kafka import KafkaSource
from collectors.kafka.cycle import Cycle
from collectors.kafka.topic_configs import TopicConfigCache, retention_of
from collectors.records import TopicRetention
from tests.collectors.test_kafka_source import alter_offsets, name, now_ms
from tests.waiting import wait_for

lab = pytest.mark.lab


def entries(**values: str) -> dict[str, Any]:
    return {k.replace("_", "."): SimpleNamespace(value=v) for k, v in values.items()}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (entries(retention_ms="120000", retention_bytes="-1", cleanup_policy="delete"),
         TopicRetention("t", 120_000, -1, "delete", 7)),
        (entries(retention_ms="-1", retention_bytes="1048576", cleanup_policy="compact,delete"),
         TopicRetention("t", -1, 1_048_576, "compact,delete", 7)),
        (entries(retention_bytes="-1", cleanup_policy="delete"), None),  # retention.ms missing
        (entries(retention_ms="soon", retention_bytes="-1", cleanup_policy="delete"), None),
        (entries(retention_ms="1", retention_bytes="-1", cleanup_policy=""), None),
        (entries(retention_ms="1", retention_bytes="-1", cleanup_policy=None), None),
        ({}, None),
    ],
)  # fmt: skip
def test_retention_of_an_answer(answer: dict, expected: TopicRetention | None) -> None:
    assert retention_of("t", answer, 7) == expected


def test_due_topics() -> None:
    cache = TopicConfigCache(refresh_s=60)
    assert cache.due(["b", "a", "a"], 0) == ["a", "b"]
    cache._read_ms.update(a=1_000)
    assert cache.due(["a", "b"], 60_999) == ["b"]
    assert cache.due(["a", "b"], 61_000) == ["a", "b"]
    cache.forget()
    assert cache.due(["a"], 1_001) == ["a"]
    with pytest.raises(ValueError, match="refresh_s"):
        TopicConfigCache(refresh_s=0)


def consumed_topic(admin: AdminClient, **config: str) -> tuple[str, str]:
    topic, group = name("t"), name("g")
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(10)
    alter_offsets(admin, group, {(topic, 0): 0})
    return topic, group


def configs_of(result: Any, topic: str) -> list[TopicRetention]:
    return [c for c in result.topic_configs if c.topic == topic]


@lab
def test_consumed_topics_configs_are_read_then_cached(kafka_bootstrap: str, admin) -> None:
    short, _ = consumed_topic(admin, **{"retention.ms": "120000"})
    compact, _ = consumed_topic(admin, **{"cleanup.policy": "compact", "retention.bytes": "4096"})
    source = KafkaSource(kafka_bootstrap, timeout_s=10)
    try:
        first = source.collect(now_ms())
        assert [(c.retention_ms, c.cleanup_policy) for c in configs_of(first, short)] == [
            (120_000, "delete")
        ]
        [read] = configs_of(first, compact)
        assert (read.cleanup_policy, read.retention_bytes) == ("compact", 4096)
        assert [e for e in first.errors if "DescribeConfigs" in e.error] == []
        # Cached: the next cycle asks nothing for them.
        assert configs_of(source.collect(now_ms()), short) == []
        # Due again after the refresh interval (here: at once).
        source._topic_configs = TopicConfigCache(refresh_s=0.001)
        assert len(configs_of(source.collect(now_ms()), short)) == 1
    finally:
        source.close()


@lab
def test_a_refused_describe_is_a_source_warning_and_asked_again(
    kafka_bootstrap: str, admin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Authorization refused (injected: the lab broker has no ACLs): a warning naming the
    topic, no reading, the source still reachable; the next cycle asks again."""
    topic, _ = consumed_topic(admin, **{"retention.ms": "120000"})
    source = KafkaSource(kafka_bootstrap, timeout_s=10)
    real = source.admin.describe_configs

    def refused(resources: list, **kwargs: Any) -> dict:
        fut: Future = Future()
        fut.set_exception(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
        return dict.fromkeys(resources, fut)

    try:
        monkeypatch.setattr(source.admin, "describe_configs", refused)
        result = source.collect(now_ms())
        assert result.reachable
        assert configs_of(result, topic) == []
        assert [e.error for e in result.errors if e.where == f"topic {topic}"] == [
            "DescribeConfigs: TOPIC_AUTHORIZATION_FAILED: Broker: Topic authorization failed"
        ]
        monkeypatch.setattr(source.admin, "describe_configs", real)
        assert len(configs_of(source.collect(now_ms()), topic)) == 1
    finally:
        source.close()


@lab
def test_describe_configs_through_a_broker_restart(lab_services: Any, admin) -> None:
    """librdkafka 2.16 can abort the process in some admin calls on a dropped connection
    (docs/DESIGN_CHOICES.md, docs/LAB.md): DescribeConfigs in flight while the broker goes down
    must fail as a warning, and the same client must read the config again once the broker is
    back."""
    topic, _ = consumed_topic(admin, **{"retention.ms": "180000"})
    client = AdminClient({"bootstrap.servers": lab_services.bootstrap})
    cache = TopicConfigCache()

    def read(timeout_s: float, stop_broker: bool = False) -> tuple[list, Cycle]:
        cycle = Cycle(now_ms(), timeout_s)
        futures = cache.submit(client, cache.due([topic], now_ms()), cycle)
        if stop_broker:
            lab_services.stop("kafka")  # while the request may still be in flight
        cycle.gather(futures.values())
        return cache.collect(futures, cycle), cycle

    try:
        [warm], _ = read(10)  # the client's connections are up
        assert warm.retention_ms == 180_000
        cache.forget()
        down, cycle = read(3, stop_broker=True)
        if down:  # the answer beat the stop: ask again, the broker now down
            cache.forget()
            down, cycle = read(3)
        assert down == []
        assert [e.where for e in cycle.result.errors] == [f"topic {topic}"]
        assert "DescribeConfigs" in cycle.result.errors[0].error
        lab_services.start("kafka")
        [back] = wait_for(lambda: read(5)[0], 90, "DescribeConfigs answered after the restart")
        assert back.retention_ms == 180_000
    finally:
        client.poll(0)

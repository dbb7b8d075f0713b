"""ClusterSources: the broker offsets of topics only ZooKeeper consumers and spouts read.

Fake adapters (no services): what matters here is which ListOffsets calls are made, when,
and which of their answers end up in the cycle's Kafka result.
"""

from __future__ import annotations

import threading

import pytest

from collectors.cluster_sources import ClusterSettings, ClusterSources
from collectors.records import (
    CollectionResult,
    CommittedOffset,
    PartitionOffsets,
    Source,
    SourceError,
)

T0 = 1_700_000_000_000


class FakeKafka:
    """Kafka groups read nothing; ``log_offsets`` answers from ``latest`` and records calls."""

    def __init__(self) -> None:
        self.latest: dict[str, list[int]] = {"a": [10, 20], "b": [5]}
        self.reachable = True
        self.failing: set[str] = set()  # topics whose ListOffsets fails
        self.calls: list[tuple[str, ...]] = []
        self.called = threading.Event()
        self.counts: dict[str, int] = {}  # partition counts this cycle's metadata gives

    def collect(self, now_ms: int) -> CollectionResult:
        return CollectionResult(
            source=Source.KAFKA, started_ms=now_ms, finished_ms=now_ms + 1,
            reachable=self.reachable,
            partition_counts=(
                {t: len(ps) for t, ps in self.latest.items()} | self.counts
                if self.reachable
                else {}
            ),
        )  # fmt: skip

    def log_offsets(self, topics, now_ms: int) -> CollectionResult:
        wanted = tuple(sorted(topics))
        self.calls.append(wanted)
        result = CollectionResult(source=Source.KAFKA, started_ms=now_ms, finished_ms=now_ms + 2)
        for t in wanted:
            for p, latest in enumerate(self.latest.get(t, ())):
                if t in self.failing:
                    result.errors.append(SourceError(Source.KAFKA, f"{t}/{p}", "timed out"))
                else:
                    result.offsets.append(
                        PartitionOffsets(t, p, 0, latest, now_ms + len(self.calls))
                    )
        self.called.set()  # once read: a walk waiting for it sees the log only after
        return result

    def close(self) -> None:
        pass


class FakeZooKeeper:
    """Spout commits; ``wait_for`` makes the walk last until that event (or 5 s)."""

    def __init__(self, commits: dict[tuple[str, int], int]) -> None:
        self.commits = commits
        self.reachable = True
        self.wait_for: threading.Event | None = None
        self.saw_early_call: bool | None = None
        self.meanwhile = lambda: None  # what happens during the walk, after the early read

    def collect(self, now_ms: int) -> CollectionResult:
        if self.wait_for is not None:
            self.saw_early_call = self.wait_for.wait(5)
        self.meanwhile()
        return CollectionResult(
            source=Source.ZOOKEEPER, started_ms=now_ms, finished_ms=now_ms + 1,
            reachable=self.reachable,
            commits=[
                CommittedOffset(Source.STORM, "spout", t, p, offset)
                for (t, p), offset in self.commits.items()
            ] if self.reachable else [],
        )  # fmt: skip

    def close(self) -> None:
        pass


@pytest.fixture
def world():
    kafka = FakeKafka()
    zk = FakeZooKeeper({("a", 0): 8, ("a", 1): 20, ("b", 0): 5})
    sources = ClusterSources(ClusterSettings(name="c"))
    sources.kafka, sources.zookeeper = kafka, zk  # type: ignore[assignment]
    yield sources, kafka, zk
    sources.close()


def offsets_of(results: list[CollectionResult]) -> dict[tuple[str, int], int | None]:
    (kafka,) = [r for r in results if r.source is Source.KAFKA]
    keys = [(o.topic, o.partition) for o in kafka.offsets]
    assert len(keys) == len(set(keys)), "a partition's offsets were given twice"
    return {(o.topic, o.partition): o.latest for o in kafka.offsets}


def kafka_errors(results: list[CollectionResult]) -> list[str]:
    (kafka,) = [r for r in results if r.source is Source.KAFKA]
    return [e.where for e in kafka.errors]


ALL = {("a", 0): 10, ("a", 1): 20, ("b", 0): 5}


def test_the_first_cycle_reads_the_spout_topics_after_the_walk(world) -> None:
    sources, kafka, _ = world
    assert offsets_of(sources.collect(T0)) == ALL
    assert kafka.calls == [("a", "b")]


def test_later_cycles_read_them_during_the_walk_and_not_again(world) -> None:
    sources, kafka, zk = world
    sources.collect(T0)
    kafka.calls.clear()
    kafka.called.clear()
    zk.wait_for = kafka.called  # the walk ends only once the early call was made
    assert offsets_of(sources.collect(T0 + 10_000)) == ALL
    assert zk.saw_early_call is True
    assert kafka.calls == [("a", "b")]  # the early call only


def test_a_topic_new_this_cycle_is_the_only_one_read_after_the_walk(world) -> None:
    sources, kafka, zk = world
    sources.collect(T0)
    kafka.latest["c"] = [7, 7]
    zk.commits[("c", 1)] = 3
    kafka.calls.clear()
    assert offsets_of(sources.collect(T0 + 10_000)) == {**ALL, ("c", 0): 7, ("c", 1): 7}
    assert kafka.calls == [("a", "b"), ("c",)]


def test_a_commit_beyond_the_early_latest_offset_has_its_topic_read_again(world) -> None:
    sources, kafka, zk = world
    sources.collect(T0)
    kafka.calls.clear()

    def producing() -> None:
        # The spout committed after the early read: the log had grown meanwhile.
        kafka.latest["a"] = [30, 20]
        zk.commits[("a", 0)] = 25

    zk.wait_for = kafka.called
    kafka.called.clear()
    zk.meanwhile = producing
    offsets = offsets_of(sources.collect(T0 + 10_000))
    assert offsets == {("a", 0): 30, ("a", 1): 20, ("b", 0): 5}  # committed 25 <= latest 30
    assert kafka.calls == [("a", "b"), ("a",)]


def test_topics_whose_early_read_failed_are_read_again_with_this_cycles_errors(world) -> None:
    sources, kafka, _ = world
    sources.collect(T0)
    kafka.calls.clear()
    kafka.failing = {"b"}
    results = sources.collect(T0 + 10_000)
    assert kafka.calls == [("a", "b"), ("b",)]
    assert offsets_of(results) == {("a", 0): 10, ("a", 1): 20}
    assert kafka_errors(results) == ["b/0"]  # once: the follow-up's, not the early read's


def test_a_topic_whose_partition_count_changed_is_read_again(world) -> None:
    sources, kafka, zk = world
    sources.collect(T0)
    kafka.calls.clear()

    def partitions_added() -> None:
        kafka.latest["b"] = [5, 9]

    kafka.counts = {"b": 2}  # the metadata of this cycle already lists the new partition
    zk.wait_for = kafka.called
    kafka.called.clear()
    zk.meanwhile = partitions_added
    assert offsets_of(sources.collect(T0 + 10_000)) == {**ALL, ("b", 1): 9}
    assert kafka.calls == [("a", "b"), ("b",)]


def test_no_early_read_after_a_cycle_that_could_not_reach_the_broker(world) -> None:
    sources, kafka, _ = world
    sources.collect(T0)
    kafka.reachable = False
    assert offsets_of(sources.collect(T0 + 10_000)) == {}  # as before: no spout offsets
    kafka.reachable = True
    kafka.calls.clear()
    assert offsets_of(sources.collect(T0 + 20_000)) == ALL
    assert kafka.calls == [("a", "b")]  # after the walk: the client may have been renewed


def test_a_zookeeper_outage_keeps_the_topics_for_the_next_early_read(world) -> None:
    sources, kafka, zk = world
    sources.collect(T0)
    zk.reachable = False
    sources.collect(T0 + 10_000)
    zk.reachable = True
    kafka.calls.clear()
    assert offsets_of(sources.collect(T0 + 20_000)) == ALL
    assert kafka.calls == [("a", "b")]

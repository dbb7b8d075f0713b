"""Benchmark of one Kafka collection cycle: the adapter against its floor and a naive version.

The target: 200 groups x 50 partitions each on the lab broker, collected in one cycle
in at most twice the floor and at most 1 s. The floor is the bare AdminClient calls the cycle
cannot do without, each stage fully parallel: list groups; describe every group and fetch every
group's committed offsets, all in flight at once; one batched ListOffsets. The naive version
is what a straightforward port of a per-group/per-partition tool does: one request at a time.

Runs self-contained: it starts its own Apache Kafka broker (the lab's, KRaft) on free local
ports, fills it, measures, prints a table and stops the broker. Usage::

    .venv/bin/python benchmarks/bench_kafka.py [--groups 200] [--reps 7]

Layout: 40 topics x 10 partitions; group i consumes the 5 topics i..i+4 (mod 40), so every
group has 50 partitions with committed offsets and ListOffsets covers all 400 partitions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import wait
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collectors.kafka import KafkaSource  # noqa: E402
from lab.kafka_dist import kafka_version  # noqa: E402

TOPICS = 40
PARTITIONS = 10
TOPICS_PER_GROUP = 5


@contextmanager
def own_kafka(prefix: str = "bench-kafka-") -> Iterator[str]:
    """The lab's Apache Kafka broker (KRaft, lab/kafka/pom.xml's version) in a temporary run
    directory, started and stopped here; yields its bootstrap address. Broker start time is
    printed: it is one of the figures benchmarks/RESULTS.md reports."""
    from lab.stack import Stack

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        stack = Stack(Path(tmp))
        t0 = time.perf_counter()
        endpoints = stack.up(["kafka"])
        print(f"broker: Apache Kafka {kafka_version()} ready in {time.perf_counter() - t0:.1f} s")
        try:
            yield endpoints["kafka"]
        finally:
            stack.down()


def records(topic_index: int, partition: int) -> int:
    """How many records ``populate`` writes to a partition."""
    return 3 + (topic_index + partition) % 5


def populate(
    bootstrap: str, groups: int, prefix: str, at_end: bool = False
) -> tuple[list[str], list[str]]:
    """Topics with a few records per partition; every group commits on its 50 partitions,
    1 to 3 records in (a lag on every partition), or at the log's end with ``at_end``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"{prefix}-t{i:02d}" for i in range(TOPICS)]
    for fut in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics]).values():
        fut.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for ti, topic in enumerate(topics):
        for p in range(PARTITIONS):
            for _ in range(records(ti, p)):
                producer.produce(topic, b"x", partition=p)
        producer.poll(0)
    if producer.flush(120):  # new topics on a loaded machine can take a minute to lead
        raise RuntimeError("produce did not complete")

    group_ids = [f"{prefix}-g{i:03d}" for i in range(groups)]
    futures = []
    for gi, group in enumerate(group_ids):
        tps = [
            TopicPartition(
                topics[(gi + k) % TOPICS], p,
                records((gi + k) % TOPICS, p) if at_end else 1 + (gi + p) % 3,
            )
            for k in range(TOPICS_PER_GROUP)
            for p in range(PARTITIONS)
        ]  # fmt: skip
        futures += admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)]
        ).values()
    for fut in futures:
        fut.result()
    return topics, group_ids


def floor_cycle(admin: AdminClient) -> int:
    """The bare calls, each stage fully parallel; returns the number of partitions read."""
    listed = admin.list_consumer_groups(request_timeout=10).result()
    group_ids = [g.group_id for g in listed.valid]
    futs = list(admin.describe_consumer_groups(group_ids, request_timeout=10).values())
    for g in group_ids:
        futs += admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(g)], request_timeout=10
        ).values()
    wait(futs)
    partitions: set[tuple[str, int]] = set()
    for fut in futs[len(group_ids) :]:
        partitions.update((tp.topic, tp.partition) for tp in fut.result().topic_partitions)
    offsets = admin.list_offsets(
        {TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions}, request_timeout=10
    )
    wait(offsets.values())
    return len(partitions)


def naive_cycle(admin: AdminClient) -> int:
    """One request at a time: per group describe and offsets, per partition both ends."""
    listed = admin.list_consumer_groups(request_timeout=10).result()
    partitions: set[tuple[str, int]] = set()
    for g in (x.group_id for x in listed.valid):
        admin.describe_consumer_groups([g], request_timeout=10)[g].result()
        answer = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(g)], request_timeout=10
        )[g].result()
        partitions.update((tp.topic, tp.partition) for tp in answer.topic_partitions)
    for t, p in sorted(partitions):
        for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
            tp = TopicPartition(t, p)
            next(iter(admin.list_offsets({tp: spec}, request_timeout=10).values())).result()
    return len(partitions)


def measure(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--naive-reps", type=int, default=3)
    args = parser.parse_args()

    with own_kafka() as bootstrap:
        t0 = time.perf_counter()
        populate(bootstrap, args.groups, "bench")
        print(
            f"setup: {args.groups} groups x {TOPICS_PER_GROUP * PARTITIONS} partitions, "
            f"{TOPICS * PARTITIONS} partitions in all, in {time.perf_counter() - t0:.1f} s"
        )

        admin = AdminClient({"bootstrap.servers": bootstrap})
        source = KafkaSource(bootstrap, timeout_s=10)

        # Check once that the adapter reads everything before timing it.
        result = source.collect(int(time.time() * 1000))
        want_commits = args.groups * TOPICS_PER_GROUP * PARTITIONS
        if (
            not result.reachable
            or result.errors
            or len(result.groups) != args.groups
            or len(result.commits) != want_commits
            or len(result.offsets) != TOPICS * PARTITIONS
        ):
            print(
                f"adapter result incomplete: reachable={result.reachable} "
                f"groups={len(result.groups)} commits={len(result.commits)} "
                f"offsets={len(result.offsets)} errors={result.errors[:3]}"
            )
            return 1
        if floor_cycle(admin) != TOPICS * PARTITIONS:
            print("floor cycle did not see every partition")
            return 1
        naive_cycle(admin)  # warm-up: connections, coordinator cache

        times: dict[str, list[float]] = {"floor": [], "adapter": [], "naive": []}
        for rep in range(args.reps):  # interleaved, so load from elsewhere hits all alike
            times["floor"].append(measure(lambda: floor_cycle(admin)))
            times["adapter"].append(measure(lambda: source.collect(int(time.time() * 1000))))
            if rep < args.naive_reps:
                times["naive"].append(measure(lambda: naive_cycle(admin)))
        source.close()

    floor = statistics.median(times["floor"])
    print(f"\n{'variant':<10}{'runs':>6}{'median s':>11}{'min s':>9}{'max s':>9}{'x floor':>9}")
    for name, values in times.items():
        med = statistics.median(values)
        print(
            f"{name:<10}{len(values):>6}{med:>11.3f}{min(values):>9.3f}{max(values):>9.3f}"
            f"{med / floor:>9.2f}"
        )
    adapter = statistics.median(times["adapter"])
    ok = adapter <= 2 * floor and adapter <= 1.0
    print(f"\ntarget (adapter <= 2 x floor and <= 1 s): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of a Kafka collection cycle with share groups (KIP-932) beside consumer groups: the
adapter against the bare calls it cannot do without, on the same broker, in one run.

The floor: for the consumer groups, ``bench_kafka.floor_cycle`` (ListGroups, every group
described and its offsets fetched all at once, one batched ListOffsets, through the
AdminClient); for the share groups, the wire client's bare requests: ListGroups with the type
filter "share" on every broker, one ShareGroupDescribe and one DescribeShareGroupOffsets for
all of them (``collectors/kafka_wire``). The adapter (``KafkaSource.collect``) does both and
turns the answers into records; its ratio to the sum is the figure.

Runs self-contained: it starts its own Apache Kafka broker (the lab's, KRaft, with the share
coordinator settings), fills it, measures, prints a table and stops the broker. Usage::

    .venv/bin/python benchmarks/bench_share_groups.py [--groups 200] [--share-groups 200]

Layout: ``bench_kafka``'s (40 topics x 10 partitions, consumer group i committed on the 5
topics i..i+4); share group j subscribes to topic j mod 40 and is made by a real share
consumer that fetches from it once (``share.auto.offset.reset=earliest``), so its partitions
have start offsets, then leaves: the group stays, Empty.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from confluent_kafka import ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kafka import TOPICS, floor_cycle, measure, own_kafka, populate  # noqa: E402
from collectors.kafka import KafkaSource  # noqa: E402
from collectors.kafka_wire import GroupClient  # noqa: E402


def make_share_groups(bootstrap: str, topics: list[str], count: int, prefix: str) -> list[str]:
    """``count`` share groups, each fetched once by a share consumer that then leaves."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ids = [f"{prefix}-s{j:03d}" for j in range(count)]
    resources = [
        ConfigResource(ResourceType.GROUP, g, incremental_configs=[ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        for g in ids
    ]  # fmt: skip
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)

    def join(j: int) -> None:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": ids[j]})
        try:
            consumer.subscribe([topics[j % TOPICS]])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if any(m.error() is None for m in consumer.poll(0.5)):
                    break
            else:
                raise RuntimeError(f"{ids[j]}: no record within 60 s")
            consumer.commit_sync(30)
        finally:
            consumer.close()

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(join, range(count)))
    return ids


def share_floor(client: GroupClient, brokers: list[tuple[str, int]]) -> int:
    """The bare wire calls: list by type, describe all, their offsets; returns partitions."""
    listed = client.list_share_groups(brokers, timeout_s=30)
    ids = sorted(listed.groups)
    client.describe_share(ids, timeout_s=30)
    offsets = client.fetch_share_offsets(ids, timeout_s=30)
    return sum(len(o.partitions) for o in offsets.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--share-groups", type=int, default=200)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()

    with own_kafka("bench-share-") as bootstrap:
        t0 = time.perf_counter()
        topics, _ = populate(bootstrap, args.groups, "bench")
        make_share_groups(bootstrap, topics, args.share_groups, "bench")
        print(f"setup: {args.groups} consumer groups, {args.share_groups} share groups "
              f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip

        admin = AdminClient({"bootstrap.servers": bootstrap})
        brokers = [(b.host, b.port) for b in admin.list_topics(timeout=10).brokers.values()]
        client = GroupClient(bootstrap)
        source = KafkaSource(bootstrap, timeout_s=30)

        result = source.collect(int(time.time() * 1000))
        shares = [g for g in result.groups if g.protocol_type == "share"]
        if result.errors or len(shares) != args.share_groups:
            print(f"adapter result incomplete: share groups={len(shares)} "
                  f"errors={result.errors[:3]}")  # fmt: skip
            return 1
        print(f"adapter: {len(result.groups)} groups, {len(result.commits)} partitions read")
        share_floor(client, brokers)  # warm-up: connections, coordinators
        floor_cycle(admin)

        times: dict[str, list[float]] = {"share wire": [], "consumer": [], "adapter": []}
        for _ in range(args.reps):  # interleaved, so load from elsewhere hits all alike
            times["share wire"].append(measure(lambda: share_floor(client, brokers)))
            times["consumer"].append(measure(lambda: floor_cycle(admin)))
            times["adapter"].append(measure(lambda: source.collect(int(time.time() * 1000))))
        source.close()
        client.close()

    floor = statistics.median(times["share wire"]) + statistics.median(times["consumer"])
    print(f"\n{'variant':<12}{'runs':>6}{'median s':>11}{'min s':>9}{'max s':>9}")
    for name, values in times.items():
        print(f"{name:<12}{len(values):>6}{statistics.median(values):>11.3f}"
              f"{min(values):>9.3f}{max(values):>9.3f}")  # fmt: skip
    adapter = statistics.median(times["adapter"])
    print(f"\nfloor (share wire + consumer floor): {floor:.3f} s; adapter {adapter:.3f} s = "
          f"{adapter / floor:.2f} x the floor")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

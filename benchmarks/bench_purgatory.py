"""Benchmark: what scraping 3 brokers' purgatory figures adds to a Kafka collection cycle.

The target: the purgatory scrape of 3 brokers adds at most 5 % to a Kafka cycle. Both
variants run the product's ``ClusterSources.collect`` (the adapters kept warm, as a worker
keeps them) on the same cluster: *without* is a cluster with only Kafka configured, *with*
the same cluster naming 3 broker metrics endpoints, scraped in parallel with the Kafka read.
The runs alternate (without, with, without, …) so that the machine's load hits both alike;
the ratio is of the medians.

The 3 endpoints are 3 real brokers, each with the real Prometheus JMX exporter agent and
``lab/kafka/jmx-exporter.yaml``: the lab's broker started 3 times (3 single-broker stacks,
KRaft) on free local ports. The Kafka cycle reads the first one, filled in the layout of
``bench_kafka.py`` (each group commits on 5 topics x 10 partitions) but with 20 topics and
100 groups by default, and patient timeouts: on the shared 2-core machine under load the
broker's controller falls behind, and ``bench_kafka``'s 30 s produce flush failed. Usage::

    .venv/bin/python benchmarks/bench_purgatory.py [--groups 100] [--reps 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from collectors.cluster_sources import ClusterSettings, ClusterSources  # noqa: E402
from lab.kafka_dist import agent_version, kafka_version  # noqa: E402

BROKERS = 3
TOPICS, PARTITIONS, TOPICS_PER_GROUP = 20, 10, 5


def populate(bootstrap: str, groups: int, prefix: str) -> None:
    """A few records per partition; every group commits on its 50 partitions."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"{prefix}-t{i:02d}" for i in range(TOPICS)]
    for fut in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics],
                                   request_timeout=120).values():  # fmt: skip
        fut.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "message.timeout.ms": 300_000})  # fmt: skip
    for topic in topics:
        for p in range(PARTITIONS):
            for _ in range(3):
                producer.produce(topic, b"x", partition=p)
        producer.poll(0)
    if producer.flush(300):
        raise RuntimeError("produce did not complete in 300 s")
    futures = []
    for gi in range(groups):
        tps = [
            TopicPartition(topics[(gi + k) % TOPICS], p, 1 + (gi + p) % 3)
            for k in range(TOPICS_PER_GROUP)
            for p in range(PARTITIONS)
        ]
        group = ConsumerGroupTopicPartitions(f"{prefix}-g{gi:03d}", tps)
        futures += admin.alter_consumer_group_offsets([group], request_timeout=120).values()
    for fut in futures:
        fut.result()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    from lab.stack import Stack

    runs: list[str] = []
    with ExitStack() as cleanup:
        endpoints = []
        t0 = time.perf_counter()
        for i in range(BROKERS):
            # Kept when the run fails (the brokers' logs say why); removed after a good run.
            tmp = tempfile.mkdtemp(prefix=f"bench-purg-{i}-")
            runs.append(tmp)
            stack = Stack(Path(tmp))
            endpoints.append(stack.up(["kafka"]))
            cleanup.callback(stack.down)
        print(f"{BROKERS} brokers: Apache Kafka {kafka_version()} with the JMX exporter agent "
              f"{agent_version()}, ready in {time.perf_counter() - t0:.1f} s")  # fmt: skip
        bootstrap = endpoints[0]["kafka"]
        urls = tuple(e["kafka_metrics"] for e in endpoints)
        populate(bootstrap, args.groups, "bench-purg")
        base = dict(
            name="bench", kafka_bootstrap_servers=bootstrap, read_consumer_offsets_topic=False
        )
        without = ClusterSources(ClusterSettings(**base))
        with_scrape = ClusterSources(ClusterSettings(**base, broker_metrics_urls=urls))
        cleanup.callback(without.close)
        cleanup.callback(with_scrape.close)
        timings: dict[str, list[float]] = {"without": [], "with": []}
        # This process's CPU per cycle (Python and librdkafka threads): where the cost lands
        # on the collector's side, whatever the machine's load does to wall times.
        cpu: dict[str, list[float]] = {"without": [], "with": []}
        for sources in (without, with_scrape):
            sources.collect(int(time.time() * 1000))  # warm: connections, metadata
        for _ in range(args.reps):
            for variant, sources in (("without", without), ("with", with_scrape)):
                t, c = time.perf_counter(), time.process_time()
                results = sources.collect(int(time.time() * 1000))
                timings[variant].append(time.perf_counter() - t)
                cpu[variant].append(time.process_time() - c)
                kafka = next(r for r in results if r.source == "kafka")
                assert kafka.reachable and len(kafka.commits) == args.groups * 50, kafka.errors
                if variant == "with":
                    scraped = next(r for r in results if r.source == "broker_metrics")
                    assert scraped.reachable and len(scraped.brokers) == BROKERS, scraped.errors
        # The scrape alone, for scale.
        scrape_only = []
        for _ in range(args.reps):
            t = time.perf_counter()
            with_scrape.broker_metrics.collect(int(time.time() * 1000))
            scrape_only.append(time.perf_counter() - t)

    for tmp in runs:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in timings.items()}
    print(f"\nKafka cycle, {args.groups} groups x 50 partitions, {args.reps} alternating runs each")
    print(f"{'variant':<34}{'median s':>10}{'min s':>9}{'max s':>9}{'CPU-s (median)':>16}")
    for k, label in (("without", "Kafka only"), ("with", f"Kafka + scrape of {BROKERS} brokers")):
        v = timings[k]
        print(f"{label:<34}{med[k]:>10.3f}{min(v):>9.3f}{max(v):>9.3f}"
              f"{statistics.median(cpu[k]):>16.4f}")  # fmt: skip
    print(f"{'scrape of 3 brokers alone':<34}{statistics.median(scrape_only):>10.3f}"
          f"{min(scrape_only):>9.3f}{max(scrape_only):>9.3f}")  # fmt: skip
    print(f"ratio of the minimums: {min(timings['with']) / min(timings['without']):.3f}; "
          f"load average at the end: {os.getloadavg()[0]:.1f}")  # fmt: skip
    ratio = med["with"] / med["without"]
    verdict = "met" if ratio <= 1.05 else "NOT met"
    print(f"\nratio with / without: {ratio:.3f} (target <= 1.05: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What DescribeConfigs (the retention forecast's topic settings) adds to a Kafka cycle.

The Kafka source re-reads a consumed topic's ``retention.ms``, ``retention.bytes`` and
``cleanup.policy`` once per ``LAGWATCH_TOPIC_CONFIG_REFRESH_S`` (300 s), in one request for
every due topic, in flight beside ListOffsets (``collectors/kafka/topic_configs.py``). Two
sources collect the same broker, interleaved repetition by repetition so that load from
elsewhere hits both alike:

* ``cached``: its configs read once before timing, never due again: the cycle of almost every
  poll (the baseline);
* ``every``: a refresh interval of 1 ms, so that every cycle re-reads every consumed topic's
  config: the cycle of a poll where all topics are due at once (the worst case, once per
  refresh interval; in a steady state the topics fall due spread over the polls).

Also the bare call: one DescribeConfigs for every topic, alone. Same layout as
``bench_kafka.py`` (its own broker: 200 groups x 50 partitions, 40 topics)::

    .venv/bin/python -m benchmarks.bench_topic_configs [--groups 200] [--reps 9]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kafka import own_kafka, populate  # noqa: E402
from collectors.kafka import KafkaSource  # noqa: E402


def cycle_s(source: KafkaSource, expect_configs: int | None) -> float:
    t0 = time.perf_counter()
    result = source.collect(int(time.time() * 1000))
    took = time.perf_counter() - t0
    assert result.reachable and not result.errors, result.errors[:3]
    if expect_configs is not None:
        assert len(result.topic_configs) == expect_configs, len(result.topic_configs)
    return took


def bare_describe_s(admin: AdminClient, topics: list[str]) -> float:
    t0 = time.perf_counter()
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    for future in admin.describe_configs(resources, request_timeout=10).values():
        future.result()
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    with own_kafka("bench-topic-configs-") as bootstrap:
        topics, _ = populate(bootstrap, args.groups, "btc")
        cached = KafkaSource(bootstrap, timeout_s=10, read_offsets_topic=False,
                             topic_config_refresh_s=1e9)  # fmt: skip
        every = KafkaSource(bootstrap, timeout_s=10, read_offsets_topic=False,
                            topic_config_refresh_s=0.001)  # fmt: skip
        admin = AdminClient({"bootstrap.servers": bootstrap})
        try:
            for _ in range(2):  # warm: connections, metadata; cached reads its configs here
                cycle_s(cached, None)
                cycle_s(every, len(topics))
                bare_describe_s(admin, topics)
            times: dict[str, list[float]] = {"cached": [], "every": [], "bare": []}
            for _ in range(args.reps):
                times["cached"].append(cycle_s(cached, 0))
                times["every"].append(cycle_s(every, len(topics)))
                times["bare"].append(bare_describe_s(admin, topics))
        finally:
            cached.close()
            every.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    report = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {platform.processor() or '?'}, "
        f"Python {platform.python_version()}",
        "groups": args.groups,
        "topics": len(topics),
        "reps": args.reps,
        "median_s": {k: round(v, 4) for k, v in med.items()},
        "min_s": {k: round(min(v), 4) for k, v in times.items()},
        "every_over_cached": round(med["every"] / med["cached"], 3),
        "added_ms": round((med["every"] - med["cached"]) * 1000, 1),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

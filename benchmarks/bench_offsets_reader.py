"""Benchmark of the ``__consumer_offsets`` reader: catching up on a million commits.

The figure: the time ``ConsumerOffsetsReader`` takes to read and decode the whole topic from
its log start, against the floor, a bare confluent-kafka consumer with the same settings
reading the same records without decoding them (consume, look at each message's error, stop
at the end of every partition). Target: reader <= 1.5 x floor in time. A second floor,
"touch", also fetches each record's partition, offset, timestamp, key and value: the least
any Python reader of these records must do; it shows how the gap splits between the client
API and the decoding.

The records are real: Kafka does not let a producer write to ``__consumer_offsets``, so
consumers of ``--groups`` simple groups (no subscription) commit ``--partitions-per-commit``
partitions at a time with ``commit(asynchronous=True)`` in a tight loop; every partition of a
commit is one record. Nothing is compacted meanwhile (the topic's active segments never
roll at this size), which the record count of every pass confirms.

Runs self-contained: it starts its own Apache Kafka broker (``lab.stack.Stack``) in a temporary
directory, fills it, measures, prints, and stops the broker. ``--baseline DIR`` adds the
reader of another checkout (a worktree at an older commit), run in a child process on the
same broker and interleaved with the others, so a change is measured against the code it
replaces in one run. Usage::

    .venv/bin/python benchmarks/bench_offsets_reader.py [--records 1000000] [--reps 3]
        [--baseline /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collectors.consumer_offsets.reader import (  # noqa: E402
    _BATCH,
    _DEFAULTS,
    _FORCED,
    OFFSETS_TOPIC,
    READER_GROUP_ID,
    ConsumerOffsetsReader,
)
from lab.kafka_dist import kafka_version  # noqa: E402

TOPICS = 10
PARTITIONS_PER_TOPIC = 100


def _client_version() -> str:
    version = confluent_kafka.version()
    return version[0] if isinstance(version, tuple) else str(version)


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')} | "
        f"{os.cpu_count()} cores, load average {load} | {platform.platform()} | "
        f"Python {platform.python_version()} | confluent-kafka {_client_version()}, "
        f"librdkafka {confluent_kafka.libversion()[0]} | Apache Kafka {kafka_version()}"
    )


@contextmanager
def own_kafka() -> Iterator[str]:
    """The lab's broker in a temporary run directory; one retry, as a start can fail on the
    lab's side (a generated cluster id starting with '-', read as an option by StorageTool)."""
    from lab.stack import ServiceStartError, Stack

    with tempfile.TemporaryDirectory(prefix="bench-offsets-") as tmp:
        stack = Stack(Path(tmp))
        t0 = time.perf_counter()
        try:
            endpoints = stack.up(["kafka"])
        except ServiceStartError as exc:
            print(f"broker start failed, once more: {str(exc).splitlines()[0]}")
            endpoints = stack.up(["kafka"])
        print(f"broker: ready in {time.perf_counter() - t0:.1f} s")
        try:
            yield endpoints["kafka"]
        finally:
            stack.down()


def log_extent(bootstrap: str) -> int:
    """Records in __consumer_offsets: end minus start over every partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": READER_GROUP_ID})
    try:
        meta = consumer.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC]
        total = 0
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=10)
            total += high - low
        return total
    finally:
        consumer.close()


def populate(bootstrap: str, records: int, groups: int, per_commit: int) -> int:
    """Commit until ``records`` commit records are written; returns the records committed."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"bench-t{i:02d}" for i in range(TOPICS)]
    for fut in admin.create_topics([NewTopic(t, PARTITIONS_PER_TOPIC, 1) for t in topics]).values():
        fut.result(30)
    partitions = [(t, p) for t in topics for p in range(PARTITIONS_PER_TOPIC)][:per_commit]

    failures: list[str] = []
    done = [0]

    def on_commit(err: object, tps: list[TopicPartition]) -> None:
        if err is not None:
            failures.append(str(err))
            return
        bad = [tp for tp in tps if tp.error is not None]
        failures.extend(str(tp.error) for tp in bad[:1])
        done[0] += len(tps) - len(bad)

    consumers = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-g{i:03d}",
                "enable.auto.commit": False,
                "on_commit": on_commit,
            }
        )
        for i in range(groups)
    ]
    try:
        # One synchronous commit each first: the broker knows the topics, coordinators found.
        for consumer in consumers:
            deadline = time.monotonic() + 60
            while True:
                result = consumer.commit(
                    offsets=[TopicPartition(partitions[0][0], partitions[0][1], 0)],
                    asynchronous=False,
                )
                if result and result[0].error is None:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"first commit keeps failing: {result}")
                time.sleep(0.5)
        failures.clear()
        done[0] = 0
        rounds = -(-records // (per_commit * groups))
        for r in range(rounds):
            tps = [TopicPartition(t, p, r + 1) for t, p in partitions]
            for consumer in consumers:
                consumer.commit(offsets=tps, asynchronous=True)
                consumer.poll(0)
        deadline = time.monotonic() + 300
        while done[0] + len(failures) < rounds * groups * per_commit and not failures:
            for consumer in consumers:
                consumer.poll(0.05)
            if time.monotonic() > deadline:
                break
        if failures:
            raise RuntimeError(f"commits failed: {failures[:3]}")
    finally:
        for consumer in consumers:
            consumer.close()
    return done[0]


def _floor_consumer(bootstrap: str) -> tuple[Consumer, list[int]]:
    conf = {"bootstrap.servers": bootstrap, "group.id": READER_GROUP_ID, **_DEFAULTS, **_FORCED}
    conf.pop("logger")
    consumer = Consumer(conf)
    meta = consumer.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC]
    return consumer, sorted(meta.partitions)


def floor(bootstrap: str, touch: bool) -> tuple[int, float]:
    """Read everything with the reader's settings and batch size, without decoding;
    (records, seconds).

    Timed like the reader's poll: end offsets first, then consume to every partition's end.
    """
    consumer, partitions = _floor_consumer(bootstrap)
    try:
        t0 = time.perf_counter()
        ends = consumer.offsets_for_times(
            [TopicPartition(OFFSETS_TOPIC, p, -1) for p in partitions], timeout=10
        )
        pending = {tp.partition for tp in ends if tp.offset > 0}
        consumer.assign([TopicPartition(OFFSETS_TOPIC, p, OFFSET_BEGINNING) for p in pending])
        n = 0
        while pending:
            for m in consumer.consume(_BATCH, 0.2):
                if m.error() is None:
                    if touch:
                        _ = (m.partition(), m.offset(), m.timestamp(), m.key(), m.value())
                    n += 1
                else:
                    pending.discard(m.partition())
        return n, time.perf_counter() - t0
    finally:
        consumer.close()


def reader(bootstrap: str) -> tuple[int, float]:
    """A new reader's first poll: from the log start to the end, decoding everything."""
    r = ConsumerOffsetsReader(bootstrap, timeout_s=600, max_records_per_poll=10**9)
    try:
        t0 = time.perf_counter()
        outcome = r.poll(int(time.time() * 1000))
        elapsed = time.perf_counter() - t0
        if not outcome.caught_up or outcome.errors or outcome.skipped:
            raise RuntimeError(f"reader did not read cleanly: {outcome}")
        return outcome.records_read, elapsed
    finally:
        r.close()


_ELSEWHERE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from collectors.consumer_offsets.reader import ConsumerOffsetsReader
r = ConsumerOffsetsReader(sys.argv[2], timeout_s=600, max_records_per_poll=10**9)
t0 = time.perf_counter()
outcome = r.poll(int(time.time() * 1000))
elapsed = time.perf_counter() - t0
r.close()
assert outcome.caught_up and not outcome.errors and not outcome.skipped, outcome
print(outcome.records_read, elapsed)
"""


def reader_elsewhere(checkout: Path, bootstrap: str) -> tuple[int, float]:
    """:func:`reader` with another checkout's code, in a child process (timed inside it)."""
    done = subprocess.run(
        [sys.executable, "-c", _ELSEWHERE, str(checkout), bootstrap],
        capture_output=True, text=True, check=True, timeout=900,
    )  # fmt: skip
    records, seconds = done.stdout.split()[-2:]
    return int(records), float(seconds)


def incremental(bootstrap: str, per_commit: int) -> None:
    """A warm reader's poll after one more round of commits, and an idle poll."""
    r = ConsumerOffsetsReader(bootstrap, timeout_s=600, max_records_per_poll=10**9)
    try:
        r.poll(int(time.time() * 1000))
        written = populate_round(bootstrap, per_commit)
        t0 = time.perf_counter()
        outcome = r.poll(int(time.time() * 1000))
        busy = time.perf_counter() - t0
        t0 = time.perf_counter()
        r.poll(int(time.time() * 1000))
        idle = time.perf_counter() - t0
        print(
            f"warm reader: {outcome.records_read} new records ({written} committed) in "
            f"{busy * 1000:.0f} ms; idle poll {idle * 1000:.1f} ms"
        )
    finally:
        r.close()


def populate_round(bootstrap: str, per_commit: int) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-late", "enable.auto.commit": False}
    )
    try:
        topics = [f"bench-t{i:02d}" for i in range(TOPICS)]
        tps = [TopicPartition(t, p, 7) for t in topics for p in range(PARTITIONS_PER_TOPIC)]
        done = consumer.commit(offsets=tps[:per_commit], asynchronous=False) or []
        return sum(1 for tp in done if tp.error is None)
    finally:
        consumer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--partitions-per-commit", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout whose reader to measure")
    args = parser.parse_args()
    per_commit = min(args.partitions_per_commit, TOPICS * PARTITIONS_PER_TOPIC)

    print(f"machine: {machine()}")
    with own_kafka() as bootstrap:
        t0 = time.perf_counter()
        committed = populate(bootstrap, args.records, args.groups, per_commit)
        elapsed = time.perf_counter() - t0
        in_log = log_extent(bootstrap)
        print(
            f"setup: {committed:,} commit records from {args.groups} groups x {per_commit} "
            f"partitions in {elapsed:.1f} s ({committed / elapsed:,.0f}/s); "
            f"{in_log:,} records in {OFFSETS_TOPIC}"
        )

        passes: dict[str, Callable[[], tuple[int, float]]] = {
            "floor": lambda: floor(bootstrap, touch=False),
            "touch": lambda: floor(bootstrap, touch=True),
            "reader": lambda: reader(bootstrap),
        }
        if args.baseline is not None:
            passes["baseline"] = lambda: reader_elsewhere(args.baseline.resolve(), bootstrap)
        times: dict[str, list[float]] = {name: [] for name in passes}
        counts: set[int] = set()
        for _ in range(args.reps):  # interleaved, so load from elsewhere hits all alike
            for name, run in passes.items():
                n, seconds = run()
                counts.add(n)
                times[name].append(seconds)
        if counts != {in_log}:
            print(f"passes read different record counts: {sorted(counts)} (log: {in_log})")
            return 1

        base = statistics.median(times["floor"])
        best = min(times["floor"])
        print(f"\n{'pass':<8}{'runs':>6}{'median s':>10}{'min s':>8}{'max s':>8}"
              f"{'records/s':>12}{'x floor':>9}{'min x min':>11}")  # fmt: skip
        for name, values in times.items():
            med = statistics.median(values)
            print(
                f"{name:<8}{len(values):>6}{med:>10.3f}{min(values):>8.3f}{max(values):>8.3f}"
                f"{in_log / med:>12,.0f}{med / base:>9.2f}{min(values) / best:>11.2f}"
            )
        incremental(bootstrap, per_commit)
        ratio = statistics.median(times["reader"]) / base
        if "baseline" in times:
            old = statistics.median(times["baseline"])
            print(f"reader / baseline reader (medians): {ratio * base / old:.2f}")
        print(f"\ntarget (reader <= 1.5 x floor, medians): {'met' if ratio <= 1.5 else 'NOT met'}")
        print(f"machine after: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

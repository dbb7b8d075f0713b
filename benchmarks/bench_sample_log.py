"""Sample-log benchmark: is a compacted hour really ≤ 16 bytes per sample, and how fast is it?

The workload is one cluster-hour of a realistic deployment: 10,000 partitions polled every
10 s (360 cycles), so 3.6 M samples. Partitions belong to a few hundred groups (70 % Kafka,
20 % Storm spouts, 10 % ZooKeeper consumers) on topics of 1-64 partitions; produce rates are
log-normal with 10 % quiet groups; 80 % of groups keep up, 15 % are slow, 5 % are stuck and
dead. Offsets grow by what was produced, commit times land anywhere in the cycle, retention
moves ``earliest`` once an hour, Storm spouts carry pending/failed/acked/emitted counts, their
settings (``max_spout_pending``, ``max_offset_behind``), the task's tuples in flight (one figure
per spout and cycle) and, when stuck, the smallest failed offset; the other sources nulls
there. It is generated with pyarrow compute (numpy is not a dependency) and the generation is
not timed.

Run from the repository root::

    .venv/bin/python -m benchmarks.bench_sample_log [--partitions 10000] [--cycles 360]
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from collectors.sample_log import HOUR_MS, SampleLog

TARGET_BYTES_PER_SAMPLE = 16
CLUSTER = "prod-eu-1"
_WORDS = ("orders", "payments", "clicks", "search", "billing", "audit", "profile", "ads")
_ROLES = ("enricher", "etl", "indexer", "sink", "aggregator")


@dataclass(frozen=True, slots=True)
class _Partition:
    source: str
    group: str
    topic: str
    partition: int
    owner: str | None
    topology_id: str | None
    rate: float  # messages per second
    kind: str  # healthy | slow | stuck


def _partitions(count: int, rnd: random.Random) -> list[_Partition]:
    out: list[_Partition] = []
    g = 0
    while len(out) < count:
        source = rnd.choices(["kafka", "storm", "zookeeper"], weights=[70, 20, 10])[0]
        word, role = _WORDS[g % len(_WORDS)], _ROLES[g % len(_ROLES)]
        group = f"{word}-{role}-{g}"
        topology = f"{word}-topology-{g}-1712345678" if source == "storm" else None
        members = rnd.choice([1, 2, 3, 4, 8])
        rate = 0.0 if rnd.random() < 0.1 else rnd.lognormvariate(3, 1.5)
        kind = rnd.choices(["healthy", "slow", "stuck"], weights=[80, 15, 5])[0]
        for k in range(rnd.randint(1, 3)):
            topic = f"{_WORDS[(g + k) % len(_WORDS)]}.{('events', 'cdc', 'logs')[k]}.v{k + 1}"
            for p in range(rnd.choice([1, 3, 6, 12, 24, 32, 64])):
                if kind == "stuck":
                    owner = None
                elif source == "kafka":
                    owner = f"consumer-{group}-{p % members}-{rnd.getrandbits(32):08x}"
                elif source == "zookeeper":
                    owner = f"{group}_host{p % members}-1712345678901-{rnd.getrandbits(32):08x}-0"
                else:
                    owner = f"{word}-topology"
                out.append(
                    _Partition(
                        source, group, topic, p, owner, topology, rate * rnd.uniform(0.5, 1.5), kind
                    )
                )
        g += 1
    return out[:count]


def workload(
    partitions: int = 10_000, cycles: int = 360, step_ms: int = 10_000, seed: int = 7
) -> Iterator[tuple[int, pa.Table]]:
    """Yield (cycle time, samples of that cycle), starting on an hour boundary."""
    rnd = random.Random(seed)
    parts = _partitions(partitions, rnd)
    n = len(parts)

    def column(attr: str, type_: pa.DataType) -> pa.Array:
        return pa.array([getattr(p, attr) for p in parts], type_)

    source, group, topic = (column(a, pa.string()) for a in ("source", "group", "topic"))
    partition = column("partition", pa.int32())
    owner, topology = column("owner", pa.string()), column("topology_id", pa.string())
    rate, kind = column("rate", pa.float64()), column("kind", pa.string())
    is_kafka, is_storm = pc.equal(source, "kafka"), pc.equal(source, "storm")
    # A spout's figures that are the same for all its partitions: its cap (a few spouts have
    # none) and, each cycle, its task's tuples in flight.
    group_ids = sorted({p.group for p in parts})
    group_index = pa.array([group_ids.index(p.group) for p in parts], pa.int32())
    caps = [rnd.choice([None, 500, 1000, 1000, 2000]) for _ in group_ids]
    cap = pc.if_else(is_storm, pc.take(pa.array(caps, pa.int64()), group_index), None)
    behind = pc.if_else(is_storm, pa.scalar(100_000, pa.int64()), None)
    stuck_storm = pc.and_(is_storm, pc.equal(kind, "stuck"))
    healthy, slow = pc.equal(kind, "healthy"), pc.equal(kind, "slow")
    alive = pc.not_equal(kind, "stuck")
    null_int = pa.scalar(None, pa.int64())

    def ints(lo: int, hi: int) -> pa.Array:
        return pa.array([rnd.randrange(lo, hi) for _ in parts], pa.int64())

    def floor(values: pa.Array) -> pa.Array:
        return pc.cast(pc.floor(values), pa.int64())

    start = 1_714_554_000_000  # 2024-05-01T09:00:00Z
    latest = ints(10**6, 10**10)
    earliest = pc.subtract(latest, ints(10**5, 10**7))
    committed = latest
    commit_time = pc.subtract(start, ints(0, 10**6))
    commit_version = ints(1, 10**6)
    acked, failed = ints(0, 10**9), ints(0, 5)
    retention_cycle = ints(0, cycles)
    for c in range(cycles):
        ts = start + c * step_ms
        u = [pc.random(n, initializer=seed * 1_000_003 + c * 8 + i) for i in range(5)]
        produced = floor(pc.multiply(pc.multiply(rate, step_ms / 1000), pc.add(u[0], 0.5)))
        latest = pc.add(latest, produced)
        earliest = pc.if_else(
            pc.equal(retention_cycle, c),
            pc.add(earliest, floor(pc.multiply(rate, 3600 * 0.9))),
            earliest,
        )
        target = pc.if_else(
            healthy,
            pc.subtract(latest, floor(pc.multiply(rate, pc.multiply(u[1], 2)))),
            pc.if_else(slow, pc.add(committed, floor(pc.multiply(produced, 0.8))), committed),
        )
        new = pc.max_element_wise(committed, pc.min_element_wise(target, latest))
        moved = pc.not_equal(new, committed)
        committed = new
        commit_time = pc.if_else(
            moved, pc.subtract(ts, floor(pc.multiply(u[2], step_ms))), commit_time
        )
        commit_version = pc.add(commit_version, pc.cast(moved, pa.int64()))
        acked = pc.add(acked, pc.if_else(moved, produced, 0))
        lag = pc.subtract(latest, committed)
        seconds_behind = pc.divide(pc.cast(lag, pa.float64()), pc.max_element_wise(rate, 0.01))
        time_lag = pc.if_else(pc.equal(lag, 0), 0.0, pc.add(seconds_behind, u[3]))
        pending = pc.if_else(is_storm, floor(pc.multiply(u[4], 500)), null_int)
        in_flight = pa.array([rnd.randrange(0, 2000) for _ in group_ids], pa.int64())
        spout_pending = pc.if_else(
            is_storm, pc.min_element_wise(pc.take(in_flight, group_index), cap), null_int
        )
        yield (
            ts,
            pa.table(
                {
                    "ts_ms": pa.array([ts] * n, pa.int64()),
                    "cluster": pa.array([CLUSTER] * n),
                    "source": source,
                    "group": group,
                    "topic": topic,
                    "partition": partition,
                    "committed": committed,
                    "earliest": earliest,
                    "latest": latest,
                    "lag": lag,
                    "time_lag_s": time_lag,
                    "commit_time_ms": commit_time,
                    "commit_version": pc.if_else(is_kafka, null_int, commit_version),
                    "owner": owner,
                    "topology_id": topology,
                    "alive": alive,
                    "pending": pending,
                    "failed": pc.if_else(is_storm, failed, null_int),
                    "acked": pc.if_else(is_storm, acked, null_int),
                    "stale": pa.array([False] * n),
                    "emitted": pc.if_else(
                        is_storm, pc.add(pc.add(acked, failed), pending), null_int
                    ),
                    "max_spout_pending": cap,
                    "spout_pending": spout_pending,
                    "smallest_failed_offset": pc.if_else(stuck_storm, committed, null_int),
                    "max_offset_behind": behind,
                }
            ),
        )


def _bytes_under(fs: pafs.FileSystem, path: str) -> tuple[int, int]:
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    files = [i for i in infos if i.type == pafs.FileType.File]
    return sum(i.size for i in files), len(files)


def _column_bytes(path: str) -> dict[str, int]:
    meta = pq.read_metadata(path)
    sizes: dict[str, int] = {}
    for rg in range(meta.num_row_groups):
        for ci in range(meta.num_columns):
            chunk = meta.row_group(rg).column(ci)
            sizes[chunk.path_in_schema] = (
                sizes.get(chunk.path_in_schema, 0) + chunk.total_compressed_size
            )
    return sizes


class _Clock:
    """Wall and CPU seconds: the machine is shared, so wall time alone says little."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> _Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu

    def __str__(self) -> str:
        return f"{self.wall:.1f} s wall, {self.cpu:.1f} s CPU"


def run(partitions: int, cycles: int, base: str) -> None:
    log = SampleLog(base)
    write, rows = _Clock(), 0
    for ts, table in workload(partitions, cycles):
        with write:
            log.write_batch(CLUSTER, str(ts), table)
        rows += table.num_rows
    (hour,) = log.hours(CLUSTER)
    batch_bytes, batch_files = _bytes_under(log.fs, hour.path)

    with _Clock() as read_batches:
        assert log.read(CLUSTER).num_rows == rows

    with _Clock() as compact:
        (result,) = log.compact_closed_hours(
            datetime.fromtimestamp((hour.end_ms + HOUR_MS) / 1000, UTC)
        )
    compacted_bytes, compacted_files = _bytes_under(log.fs, hour.path)
    assert compacted_files == 1 and result.rows_out == rows, (compacted_files, result)

    with _Clock() as read_compacted:
        assert log.read(CLUSTER).num_rows == rows

    per_sample = compacted_bytes / rows
    verdict = "met" if per_sample <= TARGET_BYTES_PER_SAMPLE else "NOT MET"
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mib = 2**20
    figures = [
        (
            "micro-batches on disk",
            f"{batch_bytes / rows:.2f} B/sample ({batch_files} files, {batch_bytes / mib:.1f} MiB)",
        ),
        (
            "compacted on disk",
            f"**{per_sample:.2f} B/sample** (1 file, {compacted_bytes / mib:.1f} MiB; "
            f"target ≤ {TARGET_BYTES_PER_SAMPLE}: {verdict})",
        ),
        (
            "write_batch",
            f"{rows / write.wall:,.0f} rows/s wall, {rows / write.cpu:,.0f} rows/s CPU "
            f"({write.wall / cycles * 1000:.0f} ms per {partitions:,}-row cycle)",
        ),
        ("compaction of the hour", f"{compact} ({rows / compact.wall:,.0f} rows/s wall)"),
        (f"read the hour, {batch_files} micro-batches", str(read_batches)),
        ("read the hour, compacted", str(read_compacted)),
        ("peak RSS", f"{peak_mib:,.0f} MiB"),
    ]
    print(
        f"\nSample log, {partitions:,} partitions × {cycles} cycles = {rows:,} samples "
        f"(pyarrow {pa.__version__})\n"
    )
    print("| figure | value |\n|---|---|")
    for figure, value in figures:
        print(f"| {figure} | {value} |")
    print("\nCompacted bytes per sample by column (largest first):\n")
    print("| column | B/sample |\n|---|---|")
    sizes = _column_bytes(result.path)
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {size / rows:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, default=360)
    parser.add_argument("--dir", help="write here instead of a temporary directory")
    args = parser.parse_args()
    if args.dir:
        run(args.partitions, args.cycles, args.dir)
        return
    with tempfile.TemporaryDirectory(prefix="bench-sample-log-") as tmp:
        run(args.partitions, args.cycles, tmp)


if __name__ == "__main__":
    main()

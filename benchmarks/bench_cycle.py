"""A whole stored collection cycle against its floor: sources, assembly, database, sample log.

``bench_kafka.py`` and ``bench_zookeeper.py`` time the source adapters alone. This one times
what a collector worker really does per cycle, ``collectors.cycle.runner.run_cycle`` with
the ORM store (``dashboard.store.cycle.run_cluster_cycle``): the sources read in
parallel, ``assemble_cycle``, ``store_cycle`` into the database (SQLite,
a temporary file) and the Parquet sample-log write; and, in the same process, interleaved
repetition by repetition so that load from elsewhere hits every variant alike, the
floors (the bare client calls, no processing) and naive versions, imported from those two
benchmarks.

Figures (each with its target):

* ``zookeeper``: 10,000 Storm spout znodes (500 spouts x 20), ZooKeeper started here from
  pyspark's jars. Floor: a bare kazoo async walk reading the same znodes. Target: the cycle
  <= 1.5 x floor and <= 2 s. Two clusters: ZooKeeper only (the target's figure: no broker, so
  no lag), and the same spouts with their 500 topics x 20 partitions on a broker of their own
  (lag and time lag computed: the follow-up ListOffsets is in the cycle).
* ``kafka``: 200 groups x 50 partitions on an Apache Kafka broker (the lab's) started here.
  Floor: the bare AdminClient calls. Target: the cycle <= 2 x floor and <= 1 s.

Each timed cycle has its own ``cycle_ms`` (10 s apart, all in one past hour), so every
repetition inserts its rows. The breakdown times the functions ``run_cycle`` calls, wrapped
in place (no product code changes), and the garbage collector's pauses (``gc.callbacks``).
Also reported: peak RSS and RSS growth of the benchmark process, peak RSS and private-RSS
growth of a separate worker process that only runs cycles, the Parquet bytes per sample of
the sample log as written (micro-batches) and after ``SampleLog.compact``, a cProfile of one
extra cycle per cluster, and (synthetic, in a process of its own) the memory and lookup
time of full time tables, which the benchmark's never-moving offsets do not reach.

    .venv/bin/python -m benchmarks.bench_cycle [--which zookeeper|kafka|both] [--reps 5]
        [--json FILE] [--no-profile] [--no-steady-tables] [--no-cycle-gc]
        [--database sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import logging
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kazoo.client import KazooClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bench_kafka, bench_zookeeper  # noqa: E402
from collectors.kafka import KafkaSource  # noqa: E402
from collectors.zookeeper import ZooKeeperSource, new_kazoo_handler  # noqa: E402

HOUR_MS = 3_600_000
CYCLE_STEP_MS = 10_000
SPOUTS, SPOUT_PARTITIONS = 500, 20
TARGETS = {"zookeeper": (1.5, 2.0), "kafka": (2.0, 1.0)}  # (x floor, seconds)
# The parts of run_cycle, in the order it calls them; "other" is the wall time the others
# leave over ("parquet" not counted: it runs on a thread of its own during "store").
PARTS = ["db_reads", "sources", "assemble", "store", "rows", "parquet"]
SEQUENTIAL_PARTS = ["db_reads", "sources", "assemble", "store", "rows"]
STORE_PARTS = ["groups", "partitions", "samples", "broker_offsets", "rebalances", "health"]


# -- environment -----------------------------------------------------------------------------


def setup_django(tmp: Path | None, database: str = "sqlite") -> None:
    """Django on a temporary database (SQLite, or a private PostgreSQL server started here:
    ``lab/postgres.py``) and sample log; ``tmp=None``: inherit them (the worker process)."""
    if tmp is not None:
        os.environ["LAGWATCH_DATA_DIR"] = str(tmp / "data")
        os.environ["LAGWATCH_SAMPLE_LOG_URL"] = str(tmp / "samples")
        os.environ["DJANGO_STATIC_ROOT"] = str(tmp / "static")
        os.environ.pop("DATABASE_URL", None)
        if database == "postgresql":
            os.environ["DATABASE_URL"] = start_postgres(tmp / "postgres")
        # A collector runs with DEBUG off; on, Django keeps every query's SQL in memory.
        os.environ["DJANGO_DEBUG"] = "0"
    os.environ["DJANGO_SETTINGS_MODULE"] = "dashboard.settings.base"
    import django

    django.setup()
    logging.getLogger("collectors.cycle.runner").setLevel(logging.WARNING)  # per cycle
    if tmp is not None:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def start_postgres(run_dir: Path) -> str:
    """A private PostgreSQL server for this run, stopped when the benchmark exits."""
    import atexit

    from lab.postgres import stack_database_url
    from lab.stack import Stack

    stack = Stack(run_dir)
    endpoints = stack.up(["postgres"])
    atexit.register(stack.down)
    return stack_database_url(run_dir, endpoints["postgres"])


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def hwm_bytes() -> int:
    """This address space's peak RSS. Unlike ``ru_maxrss``, which a child started by
    ``subprocess`` inherits from its parent across the exec, it starts again at exec."""
    return _status_bytes("VmHWM")


def anon_bytes() -> int:
    """The private part of the RSS (heap): what a leak grows. The rest is mostly the shared
    libraries' code (pyarrow's alone is ~100 MiB of it)."""
    return _status_bytes("RssAnon")


class Clock:
    """Next distinct cycle time: 10 s steps from the start of the previous full hour."""

    def __init__(self) -> None:
        self.next_ms = (int(time.time() * 1000) // HOUR_MS - 1) * HOUR_MS

    def __call__(self) -> int:
        self.next_ms += CYCLE_STEP_MS
        return self.next_ms


# -- instrumentation -------------------------------------------------------------------------


class Stopwatch:
    """Wraps module functions in place and sums their wall time per part name."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = defaultdict(float)
        self._gc_started = 0.0
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        """Garbage collection pauses (they land inside whichever part is running)."""
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.parts["gc"] += time.perf_counter() - self._gc_started
            if info.get("generation") == 2:
                self.parts["gc.full_collections"] += 1

    def wrap(self, owner: Any, name: str, part: str) -> None:
        fn = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.parts[part] += time.perf_counter() - started

        setattr(owner, name, timed)

    def take(self) -> dict[str, float]:
        parts = dict(self.parts)
        self.parts.clear()
        return parts


def instrument() -> Stopwatch:
    """Time what run_cycle calls: the names it looks up in its modules, the ORM store's
    methods, and the store's steps."""
    from collectors.cluster_sources import ClusterSources
    from collectors.cycle import runner, write
    from dashboard.store import rows as store
    from dashboard.store.cycle import OrmCycleStore

    watch = Stopwatch()
    for owner, name, part in [
        (runner, "_catch_up_offsets", "db_reads"),
        (OrmCycleStore, "recent_reports", "db_reads"),
        (runner, "assemble_cycle", "assemble"),
        (OrmCycleStore, "write_cycle", "store"),
        (write, "sample_columns", "rows"),
        (OrmCycleStore, "last_known", "rows"),
        (write, "_write_sample_log", "parquet"),  # on a thread of its own, during the store
    ]:
        watch.wrap(owner, name, part)
    watch.wrap(ClusterSources, "collect", "sources")
    for name, part in [
        ("_upsert_groups", "groups"),
        ("_upsert_partitions", "partitions"),
        ("_insert_samples", "samples"),  # the history a row per partition (before it was packed)
        ("_insert_group_samples", "samples"),  # packed, a row per group
        ("_insert_broker_offsets", "broker_offsets"),
        ("_insert_rebalances", "rebalances"),
        ("_record_health", "health"),
    ]:
        if hasattr(store, name):
            watch.wrap(store, name, f"store.{part}")
    return watch


class Cycles:
    """Runs timed cycles of one cluster; keeps the breakdown and the RSS after each."""

    def __init__(self, cluster: Any, watch: Stopwatch, clock: Clock) -> None:
        self.cluster = cluster
        self.watch = watch
        self.clock = clock
        self.breakdowns: list[dict[str, float]] = []
        self.rss_after: list[int] = []
        self.reports: list[Any] = []
        self.first_s: float | None = None

    def run(self, profile: cProfile.Profile | None = None) -> int:
        from dashboard.store.cycle import run_cluster_cycle

        self.watch.take()
        started = time.perf_counter()
        with profile if profile is not None else nullcontext():
            report = run_cluster_cycle(self.cluster, self.clock())
        wall = time.perf_counter() - started
        parts = self.watch.take()
        parts["wall"] = wall
        parts["other"] = wall - sum(parts.get(p, 0.0) for p in SEQUENTIAL_PARTS)
        parts["store.commit"] = parts["store"] - sum(
            parts.get(f"store.{p}", 0.0) for p in STORE_PARTS
        )
        self.reports.append(report)
        if profile is not None:
            pass  # profiled: not a timing
        elif self.first_s is None:
            self.first_s = wall  # creates every group and partition row: not steady state
        else:
            self.breakdowns.append(parts)
        self.rss_after.append(rss_bytes())
        return report.partitions


# -- measuring -------------------------------------------------------------------------------


def leave_gc_alone() -> None:
    """``--no-cycle-gc``: cycles without the product's garbage-collection policy (no
    collection during a cycle, one at its end, ``gc.freeze()`` after the first: see
    ``collectors.cycle.gc_policy``), i.e. the collector left to its own thresholds as before."""
    from collectors.cycle import runner

    runner.cycle_gc = nullcontext


def interleaved(
    variants: dict[str, Callable[[], object]], reps: int, slow: set[str], slow_reps: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for rep in range(reps):
        for name, run in variants.items():
            if name in slow and rep >= slow_reps:
                continue
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
            gc.collect()  # the next variant does not pay for this one's garbage
    return times


def summary(times: dict[str, list[float]], floor: str) -> dict[str, dict[str, Any]]:
    base = statistics.median(times[floor])
    return {
        name: {
            "runs": len(values),
            "median_s": round(statistics.median(values), 4),
            "min_s": round(min(values), 4),
            "max_s": round(max(values), 4),
            "x_floor": round(statistics.median(values) / base, 3),
            "samples_s": [round(v, 4) for v in values],
        }
        for name, values in times.items()
        if values
    }


def breakdown(cycles: Cycles) -> dict[str, float]:
    keys = ["wall", *PARTS, "other", "store.commit", *(f"store.{p}" for p in STORE_PARTS)]
    keys += ["gc", "gc.full_collections"]
    return {k: round(statistics.median(b.get(k, 0.0) for b in cycles.breakdowns), 4) for k in keys}


def profile_store(cycles: Cycles, top: int) -> str:
    """One more cycle under cProfile; the functions that cost most, inside store_cycle first."""
    profile = cProfile.Profile()
    cycles.run(profile)
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats("store.py|sqlite|django/db", top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def sample_log_bytes(cluster: str) -> dict[str, Any]:
    """Bytes per sample of a cluster's hours as written, then after compacting each hour."""
    import pyarrow.parquet as pq
    from django.conf import settings

    from collectors.sample_log import SampleLog

    log = SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL)
    hours = log.hours(cluster)
    batch_bytes = batch_rows = batch_files = 0
    for hour in hours:
        batches, _ = log._data_files(hour.path)
        for info in batches:
            batch_bytes += info.size
            batch_rows += pq.read_metadata(info.path).num_rows
            batch_files += 1
    compact_bytes = compact_rows = 0
    started = time.perf_counter()
    for hour in hours:
        result = log.compact(cluster, hour.day, hour.hour)
        compact_bytes += result.bytes_written
        compact_rows += result.rows_out
    return {
        "cycles": batch_files,
        "samples": batch_rows,
        "batch_bytes_per_sample": round(batch_bytes / max(1, batch_rows), 2),
        "compacted_bytes_per_sample": round(compact_bytes / max(1, compact_rows), 2),
        "compacted_samples": compact_rows,
        "compact_s": round(time.perf_counter() - started, 2),
    }


def worker_rss(cluster: str, cycles: int, base_ms: int, cycle_gc: bool) -> dict[str, Any]:
    """Peak RSS of a process that only runs cycles of ``cluster`` (as a collector worker)."""
    args = ["--worker", cluster, "--worker-cycles", str(cycles), "--worker-base-ms", str(base_ms)]
    return _subprocess(*args, "--cycle-gc" if cycle_gc else "--no-cycle-gc")


def tables_rss(partitions: int) -> dict[str, Any]:
    """The time tables at their steady state, measured in a process of their own."""
    return _subprocess("--tables-worker", str(partitions))


def _subprocess(*args: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.bench_cycle", *args]
    done = subprocess.run(
        argv, cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def worker_main(name: str, cycles: int, base_ms: int, cycle_gc: bool) -> int:
    """Cycles back to back, nothing else: the garbage collector does what the product makes
    it do (no ``gc.collect()`` of the benchmark's own between cycles)."""
    setup_django(None)
    if not cycle_gc:
        leave_gc_alone()
    from collectors.cycle.runner import forget_clusters
    from dashboard.monitoring.models import Cluster
    from dashboard.store.cycle import run_cluster_cycle

    cluster = Cluster.objects.get(name=name)
    before, anon_before = rss_bytes(), anon_bytes()
    rss, anon, walls = [], [], []
    for i in range(cycles):
        started = time.perf_counter()
        run_cluster_cycle(cluster, base_ms + i * CYCLE_STEP_MS)
        walls.append(time.perf_counter() - started)
        rss.append(rss_bytes())
        anon.append(anon_bytes())
    forget_clusters()
    mib = 1 << 20
    print(
        json.dumps(
            {
                "cycles": cycles,
                "rss_before_first_cycle_mib": round(before / mib, 1),
                "rss_after_first_mib": round(rss[0] / mib, 1),
                "rss_after_last_mib": round(rss[-1] / mib, 1),
                "rss_after_each_mib": [round(r / mib, 1) for r in rss],
                "anon_before_first_cycle_mib": round(anon_before / mib, 1),
                "anon_after_each_mib": [round(r / mib, 1) for r in anon],
                "peak_rss_mib": round(hwm_bytes() / mib, 1),
                "ru_maxrss_mib": round(peak_rss_bytes() / mib, 1),
                "median_cycle_s": round(statistics.median(walls), 3),
            }
        )
    )
    return 0


def tables_main(partitions: int) -> int:
    """Synthetic: the time tables a worker holds after an hour in which every partition's
    latest offset moved at every cycle (the benchmark's own data never moves, so its tables
    stay at two points each). Their memory, one cycle's ``observe``, and ``partition_figures``
    with every consumer at the same depth in its table."""
    setup_django(None)
    from collectors.cycle.runner import TIME_TABLE_POINTS
    from collectors.figures import TimeTables, partition_figures
    from collectors.records import CommittedOffset, PartitionOffsets, Source

    cycles = TIME_TABLE_POINTS
    base = int(time.time() * 1000) - cycles * CYCLE_STEP_MS
    keys = [(f"topic-{i // SPOUT_PARTITIONS}", i % SPOUT_PARTITIONS) for i in range(partitions)]

    def latest(i: int, cycle: int) -> int:
        return 1_000_000 + cycle * (50 + i % 7)

    def offsets(cycle: int) -> list[PartitionOffsets]:
        at = base + cycle * CYCLE_STEP_MS
        return [PartitionOffsets(t, p, 0, latest(i, cycle), at) for i, (t, p) in enumerate(keys)]

    gc.collect()
    anon_before = anon_bytes()
    tables = TimeTables(TIME_TABLE_POINTS)
    started = time.perf_counter()
    for cycle in range(cycles):
        tables.observe(offsets(cycle))
    fill_s = time.perf_counter() - started
    gc.collect()
    anon_after = anon_bytes()
    last = offsets(cycles)
    started = time.perf_counter()
    tables.observe(last)
    observe_s = time.perf_counter() - started
    now_ms = base + (cycles + 1) * CYCLE_STEP_MS
    figures_s = {}
    for label, depth in [("at_latest", cycles), ("half_hour_behind", cycles // 2),
                         ("hour_behind", 2), ("beyond_table", -100)]:  # fmt: skip
        commits = [
            CommittedOffset(Source.ZOOKEEPER, f"spout-{t}", t, p, latest(i, depth))
            for i, (t, p) in enumerate(keys)
        ]
        started = time.perf_counter()
        partition_figures(commits, last, tables, now_ms)
        figures_s[label] = round(time.perf_counter() - started, 3)
    mib = 1 << 20
    print(
        json.dumps(
            {
                "partitions": partitions,
                "points_per_partition": cycles,
                "tables_mib": round((anon_after - anon_before) / mib, 1),
                "peak_rss_mib": round(hwm_bytes() / mib, 1),
                "fill_s": round(fill_s, 1),
                "observe_one_cycle_s": round(observe_s, 3),
                "partition_figures_s": figures_s,
            }
        )
    )
    return 0


# -- the figures -----------------------------------------------------------------------------


def spout_topics(bootstrap: str, spouts: int, partitions: int) -> None:
    """The spouts' topics ``topic-<s>``, two records (offsets 0-1) in every partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"topic-{s}" for s in range(spouts)]
    # Apache Kafka's controller refuses one request creating over 10,000 records (topics and
    # partitions): POLICY_VIOLATION "excessively large batch operation".
    per_request = max(1, 5_000 // partitions)
    for i in range(0, len(topics), per_request):
        chunk = [NewTopic(t, partitions, 1) for t in topics[i : i + per_request]]
        for fut in admin.create_topics(chunk).values():
            fut.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for topic in topics:
        for p in range(partitions):
            for _ in range(2):
                producer.produce(topic, b"x", partition=p)
        producer.poll(0)
    if producer.flush(60):
        raise RuntimeError("produce did not complete")


def bare_list_offsets(admin: AdminClient, spouts: int, partitions: int) -> int:
    specs = {
        TopicPartition(f"topic-{s}", p): OffsetSpec.latest()
        for s in range(spouts)
        for p in range(partitions)
    }
    futures = admin.list_offsets(specs, request_timeout=30)
    return len([f.result() for f in futures.values()])


def zookeeper_figure(args: argparse.Namespace, watch: Stopwatch, clock: Clock) -> dict[str, Any]:
    from collectors.cycle.runner import forget_clusters
    from dashboard.monitoring.models import Cluster, PartitionState

    spouts, partitions = args.spouts, args.partitions
    expected = spouts * partitions
    with (
        bench_zookeeper.own_zookeeper() as hosts,
        bench_kafka.own_kafka("bench-cycle-") as bootstrap,
    ):
        root = f"/lagwatch-bench/{uuid.uuid4().hex}"
        stock = KazooClient(hosts=hosts, timeout=30)
        stock.start(timeout=30)
        polling = KazooClient(hosts=hosts, timeout=30, handler=new_kazoo_handler())
        polling.start(timeout=30)
        started = time.perf_counter()
        bench_zookeeper.populate(stock, root, spouts, partitions, offset_of=lambda p: p % 3)
        if not args.no_broker:
            spout_topics(bootstrap, spouts, partitions)
        print(f"setup: {expected} spout znodes in {time.perf_counter() - started:.1f} s")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        source = ZooKeeperSource(hosts, [root], zk_consumers=False, timeout_s=60)

        def adapter() -> int:
            result = source.collect(int(time.time() * 1000))
            if not result.reachable or result.errors or len(result.commits) != expected:
                raise SystemExit(f"adapter failed: {result.errors[:3]}")
            return len(result.commits)

        zk_only = Cluster.objects.create(
            name="bench-zk", zk_hosts=hosts, storm_spout_roots=[root], zk_consumers=False
        )
        cycles = {"cycle": Cycles(zk_only, watch, clock)}
        variants: dict[str, Callable[[], object]] = {
            "floor": lambda: bench_zookeeper.floor_walk(stock, root),
            "floor_poll": lambda: bench_zookeeper.floor_walk(polling, root),
            "adapter": adapter,
            "cycle": cycles["cycle"].run,
        }
        if not args.no_broker:
            with_broker = Cluster.objects.create(
                name="bench-zk-broker", zk_hosts=hosts, storm_spout_roots=[root],
                zk_consumers=False, kafka_bootstrap_servers=bootstrap,
            )  # fmt: skip
            cycles["cycle_broker"] = Cycles(with_broker, watch, clock)

            def floor_broker() -> int:
                bench_zookeeper.floor_walk(stock, root)
                return bare_list_offsets(admin, spouts, partitions)

            variants["floor_broker"] = floor_broker
            variants["cycle_broker"] = cycles["cycle_broker"].run
        variants["naive"] = lambda: bench_zookeeper.naive_walk(stock, root)

        for run in variants.values():  # connect, warm the server's JIT, create the rows
            run()
        for name, c in cycles.items():
            report = c.reports[0]
            if report.partitions != expected or report.unreachable:
                raise SystemExit(f"{name}: {report}")
        if "cycle_broker" in cycles:
            with_lag = PartitionState.objects.filter(
                group__cluster=cycles["cycle_broker"].cluster, lag__isnull=False
            ).count()
            if with_lag != expected:
                raise SystemExit(f"cycle_broker: {with_lag} partitions with lag, not {expected}")

        load_before = os.getloadavg()
        times = interleaved(variants, args.reps, {"naive"}, args.naive_reps)
        load_after = os.getloadavg()
        profiles = (
            {n: profile_store(c, args.profile_top) for n, c in cycles.items()}
            if args.profile
            else {}
        )
        logs = {n: sample_log_bytes(c.cluster.name) for n, c in cycles.items()}
        worker_cluster = cycles.get("cycle_broker", cycles["cycle"]).cluster.name
        worker = worker_rss(
            worker_cluster, args.worker_cycles, clock.next_ms + 2 * HOUR_MS, args.cycle_gc
        )
        if args.steady_tables:
            worker["steady_tables"] = tables_rss(expected)
        source.close()
        forget_clusters()
        for client in (stock, polling):
            client.stop()
            client.close()
    return report_of("zookeeper", expected, times, cycles, logs, worker, profiles, load_before,
                     load_after)  # fmt: skip


def kafka_figure(args: argparse.Namespace, watch: Stopwatch, clock: Clock) -> dict[str, Any]:
    from collectors.cycle.runner import forget_clusters
    from dashboard.monitoring.models import Cluster

    groups = args.groups
    per_group = bench_kafka.TOPICS_PER_GROUP * bench_kafka.PARTITIONS
    expected = groups * per_group
    with bench_kafka.own_kafka("bench-cycle-") as bootstrap:
        started = time.perf_counter()
        bench_kafka.populate(bootstrap, groups, "bench", at_end=args.commits == "at-end")
        print(f"setup: {groups} groups x {per_group} partitions in "
              f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        admin = AdminClient({"bootstrap.servers": bootstrap})
        source = KafkaSource(bootstrap, timeout_s=10)

        def adapter() -> int:
            result = source.collect(int(time.time() * 1000))
            if not result.reachable or result.errors or len(result.commits) != expected:
                raise SystemExit(f"adapter failed: {result.errors[:3]}")
            return len(result.commits)

        cluster = Cluster.objects.create(name="bench-kafka", kafka_bootstrap_servers=bootstrap)
        cycles = {"cycle": Cycles(cluster, watch, clock)}
        variants: dict[str, Callable[[], object]] = {
            "floor": lambda: bench_kafka.floor_cycle(admin),
            "adapter": adapter,
            "cycle": cycles["cycle"].run,
            "naive": lambda: bench_kafka.naive_cycle(admin),
        }
        for run in variants.values():  # connections, coordinator cache, the rows
            run()
        report = cycles["cycle"].reports[0]
        if report.partitions != expected or report.groups != groups or report.errors:
            raise SystemExit(f"cycle: {report}")

        load_before = os.getloadavg()
        times = interleaved(variants, args.reps, {"naive"}, args.naive_reps)
        load_after = os.getloadavg()
        profiles = (
            {"cycle": profile_store(cycles["cycle"], args.profile_top)} if args.profile else {}
        )
        logs = {"cycle": sample_log_bytes(cluster.name)}
        worker = worker_rss(
            cluster.name, args.worker_cycles, clock.next_ms + 2 * HOUR_MS, args.cycle_gc
        )
        source.close()
        forget_clusters()
    report = report_of("kafka", expected, times, cycles, logs, worker, profiles, load_before,
                       load_after)  # fmt: skip
    report["commits"] = args.commits
    return report


def report_of(
    figure: str,
    expected: int,
    times: dict[str, list[float]],
    cycles: dict[str, Cycles],
    logs: dict[str, Any],
    worker: dict[str, Any],
    profiles: dict[str, str],
    load_before: tuple[float, ...],
    load_after: tuple[float, ...],
) -> dict[str, Any]:
    results = summary(times, "floor")
    ratio, seconds = TARGETS[figure]
    if figure == "kafka" and expected > 10_000:
        seconds = 5.0  # the 5-s target at 2,000 groups x 50 partitions
    cycle = results["cycle"]["median_s"]
    floor = results["floor"]["median_s"]
    mib = 1 << 20
    return {
        "figure": figure,
        "partitions": expected,
        "results": results,
        "first_cycle_s": {n: round(c.first_s or 0.0, 3) for n, c in cycles.items()},
        "breakdown": {n: breakdown(c) for n, c in cycles.items()},
        "targets": {
            f"cycle <= {ratio} x floor": cycle <= ratio * floor,
            f"cycle <= {seconds} s": cycle <= seconds,
        },
        "sample_log": logs,
        "rss": {
            "process_peak_mib": round(peak_rss_bytes() / mib, 1),
            "process_hwm_mib": round(hwm_bytes() / mib, 1),
            "process_after_cycles_mib": {
                n: [round(r / mib, 1) for r in c.rss_after] for n, c in cycles.items()
            },
            "worker": worker,
        },
        "loadavg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "profiles": profiles,
    }


def markdown(report: dict[str, Any]) -> str:
    r = report["results"]
    lines = [
        f"### {report['figure']}: {report['partitions']} partitions"
        + (f", commits {report['commits']}" if "commits" in report else "")
        + ", load average "
        f"{report['loadavg_1m_before_after'][0]}-{report['loadavg_1m_before_after'][1]}",
        "",
        "| variant | runs | median s | min s | max s | x floor |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, m in r.items():
        lines.append(
            f"| {name} | {m['runs']} | {m['median_s']:.3f} | {m['min_s']:.3f} | "
            f"{m['max_s']:.3f} | {m['x_floor']:.2f} |"
        )
    lines.append("")
    for target, ok in report["targets"].items():
        lines.append(f"- {target}: {'met' if ok else 'NOT met'}")
    for name, first in report["first_cycle_s"].items():
        lines.append(f"- {name}: first cycle (creates every row) {first:.3f} s")
    lines += ["", "Breakdown of the cycle (medians, s):", ""]
    names = list(report["breakdown"])
    lines.append("| part | " + " | ".join(names) + " |")
    lines.append("|---|" + "---:|" * len(names))
    for key in report["breakdown"][names[0]]:
        cells = " | ".join(f"{report['breakdown'][n][key]:.3f}" for n in names)
        lines.append(f"| {key} | {cells} |")
    lines += ["", "Sample log:", ""]
    for name, log in report["sample_log"].items():
        lines.append(
            f"- {name}: {log['samples']} samples in {log['cycles']} micro-batches, "
            f"{log['batch_bytes_per_sample']} B/sample; compacted "
            f"{log['compacted_bytes_per_sample']} B/sample ({log['compacted_samples']} samples, "
            f"{log['compact_s']} s)"
        )
    rss = report["rss"]
    w = rss["worker"]
    lines += [
        "",
        f"- worker process ({w['cycles']} cycles only): peak RSS (VmHWM) {w['peak_rss_mib']} "
        f"MiB; RSS "
        f"{w['rss_before_first_cycle_mib']} before the first cycle, {w['rss_after_first_mib']} "
        f"after it, {w['rss_after_last_mib']} after the last (median cycle "
        f"{w['median_cycle_s']} s); private (RssAnon) {w['anon_before_first_cycle_mib']} "
        f"before, {w['anon_after_each_mib'][0]} after the first, "
        f"{w['anon_after_each_mib'][-1]} after the last",
    ]
    if "steady_tables" in w:
        t = w["steady_tables"]
        lines.append(
            f"- time tables at steady state (synthetic: {t['partitions']} partitions x "
            f"{t['points_per_partition']} moving points): {t['tables_mib']} MiB private, process "
            f"peak {t['peak_rss_mib']} MiB; observe() of one cycle {t['observe_one_cycle_s']} s; "
            f"partition_figures s: {t['partition_figures_s']}"
        )
    lines += [
        f"- benchmark process: peak RSS (ru_maxrss) {rss['process_peak_mib']} MiB, VmHWM "
        f"{rss['process_hwm_mib']} MiB (services' clients, floors and naive versions included)",
    ]
    for name, values in rss["process_after_cycles_mib"].items():
        lines.append(f"- benchmark process RSS after each {name}: {values[0]} .. {values[-1]} MiB")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--which", choices=["zookeeper", "kafka", "both"], default="both")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--naive-reps", type=int, default=3)
    parser.add_argument("--spouts", type=int, default=SPOUTS)
    parser.add_argument("--partitions", type=int, default=SPOUT_PARTITIONS)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--no-broker", action="store_true", help="ZooKeeper figure: no broker")
    parser.add_argument(
        "--commits",
        choices=["behind", "at-end"],
        default="behind",
        help="Kafka figure: every group 1-3 records behind on every partition, stopped (its "
        "time lag grows every cycle: every row aged in place from where it counts from), or "
        "caught up at the log's end (nothing changes between cycles: the store writes no "
        "partition row)",
    )
    parser.add_argument("--worker-cycles", type=int, default=10)
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--profile-top", type=int, default=25)
    parser.add_argument("--json", type=Path, help="also write the JSON report here")
    parser.add_argument(
        "--steady-tables",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ZooKeeper figure: also measure full time tables (synthetic, ~30 s)",
    )
    parser.add_argument(
        "--cycle-gc",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the product's garbage-collection policy around cycles (--no-cycle-gc: the "
        "collector left to its thresholds, as before it)",
    )
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgresql"],
        default="sqlite",
        help="the store's database: SQLite (a temporary file) or a private PostgreSQL server",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--tables-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-base-ms", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        return worker_main(args.worker, args.worker_cycles, args.worker_base_ms, args.cycle_gc)
    if args.tables_worker:
        return tables_main(args.tables_worker)

    reports = []
    with tempfile.TemporaryDirectory(prefix="bench-cycle-") as tmp:
        setup_django(Path(tmp), args.database)
        if not args.cycle_gc:
            leave_gc_alone()
        watch = instrument()
        clock = Clock()
        if args.which in ("zookeeper", "both"):
            reports.append(zookeeper_figure(args, watch, clock))
        if args.which in ("kafka", "both"):
            reports.append(kafka_figure(args, watch, clock))

    import django

    env = {
        "python": platform.python_version(),
        "django": django.get_version(),
        "sqlite": __import__("sqlite3").sqlite_version,
        "cpus": os.cpu_count(),
        "cycle_gc": args.cycle_gc,
        "database": args.database,
    }
    doc = {"environment": env, "figures": reports}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    for report in reports:
        for name, text in report["profiles"].items():
            print(f"\n## cProfile of one {report['figure']} {name}\n\n{text}")
    print(f"\n{json.dumps(env)}\n")
    for report in reports:
        print(markdown(report) + "\n")
    ok = all(all(r["targets"].values()) for r in reports)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Lagwatch's stored cycle beside one kminion scrape: the same broker, the same groups, one run.

kminion (redpanda-data/kminion, the Go module ``github.com/cloudhut/kminion/v2``, pinned to
``KMINION_VERSION``) collects when Prometheus scrapes it: each ``GET /metrics`` lists the
groups, describes them, fetches every group's committed offsets and both ends of every
partition, then renders the text. One scrape is therefore its collection cycle, timed here
as the HTTP GET to its last byte (plain text, no gzip, as ``curl`` asks). Lagwatch's stored
cycle is what a collector worker does per poll (``dashboard.store.cycle.run_cluster_cycle``:
the sources, assembly, the database rows on SQLite and the Parquet micro-batch), timed as
``bench_cycle.py`` times it; its Kafka reads alone are ``KafkaSource.collect``.

Set-up: the lab's Apache Kafka broker (``bench_kafka.own_kafka``) started here, filled by
``bench_kafka.populate`` (40 topics x 10 partitions; every group commits on 50 partitions,
1 to 3 records behind and stopped, so every partition's time lag grows and every state row
changes at each stored cycle, aged in place: as ``bench_cycle.py --commits behind``).
200 groups by default, ``--groups 2000`` for 2,000 x 50.
Two kminion processes read the same broker:

* ``kminion``: its reference configuration's defaults (docs/reference-config.yaml), as a new
  user runs it: consumer groups by the Admin API (``scrapeMode: adminApi``) at
  ``granularity: partition``, topic metrics per partition with the ``cleanup.policy`` info
  metric, log dirs, no end-to-end probe (off by default);
* ``kminion_groups``: the same with topic metrics and log dirs off, i.e. only the consumer
  groups' offsets and lag: the least a scrape of the same groups can do.

Beside them, ``reads_and_bare_rows``: the Kafka reads, then every partition written as one bare
database row (``BareRows``): the least any cycle that keeps a row per partition in the
database pays, whatever else it does. Its ratio to a kminion scrape says how much room a
stored cycle has.

Their YAML is written by ``kminion_config`` below (``CONFIG_FILEPATH`` points the binary at
it; nothing else is set). Each variant is warmed up once, checked (every group's 50 partition
lags in kminion's text, every partition in Lagwatch's cycle), then run ``--reps`` times,
interleaved rep by rep so that load from elsewhere hits all alike. Reported: median and p90
of each, the median CPU seconds of the process doing the work (kminion's, read from /proc;
this one's for Lagwatch's variants: less moved than the wall time by others' load on a
shared machine), and the ratios stored cycle / kminion scrape and Kafka reads / kminion
scrape of each.

kminion is not built by ``scripts/setup``: the first run builds it into
``~/.cache/lagwatch/go-bench/kminion-<version>`` (``go install`` of its module through the Go
proxy; where the proxy does not serve it, ``--kminion-source`` names a clone of its
repository, a bare one too, and it is built from the pinned tag with ``go build``), or
``--kminion`` names a binary.

    .venv/bin/python -m benchmarks.bench_kminion [--groups 200|2000] [--reps 9] [--json FILE]
        [--kminion PATH | --kminion-source REPO] [--profile [--profile-cycles 3]
        [--profile-out FILE]]

A default run (200 groups) takes 1-2 minutes; ``--groups 2000`` about 5-10 on two loaded
cores.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import bench_cycle, bench_kafka  # noqa: E402

KMINION_VERSION = "v2.3.5"
KMINION_MODULE = "github.com/cloudhut/kminion/v2"  # its go.mod's path; repo redpanda-data/kminion
PREFIX = "bench"
PARTITION_LAG = "kminion_kafka_consumer_group_topic_partition_lag{"


# -- kminion: build, configure, run ----------------------------------------------------------


def kminion_binary(source: Path | None) -> Path:
    """The pinned kminion, built once into the cache: its module through the Go proxy, else
    ``source`` (a clone of its repository, or a source tree) at the pinned tag."""
    from lab.go_build import go_built
    from lab.kafka_dist import cache_root

    target = cache_root() / "go-bench" / f"kminion-{KMINION_VERSION.lstrip('v')}"
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory(prefix="kminion-build-") as tmp:
        try:
            return go_built(
                target, ["install", f"{KMINION_MODULE}@{KMINION_VERSION}"], Path(tmp),
                built_name="kminion",
            )  # fmt: skip
        except subprocess.CalledProcessError:
            if source is None:
                raise SystemExit(
                    f"the Go proxy does not serve {KMINION_MODULE}@{KMINION_VERSION}: "
                    "pass --kminion-source (a clone of redpanda-data/kminion) or --kminion"
                ) from None
        tree = source if (source / "go.mod").is_file() else _checkout(source, Path(tmp))
        return go_built(target, ["build", "-mod=mod", "-o", "{out}", "."], tree)


def _checkout(repo: Path, into: Path) -> Path:
    """The pinned tag's files from a git repository (bare or not)."""
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", "--format=tar", KMINION_VERSION],
        capture_output=True, check=True,
    )  # fmt: skip
    tree = into / "src"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def kminion_config(bootstrap: str, port: int, *, groups_only: bool) -> str:
    """kminion's YAML: its reference defaults, pointed at the broker; ``groups_only`` turns
    off what is not the consumer groups (topic metrics, log dirs)."""
    others = "false" if groups_only else "true"
    return f"""\
logger:
  level: warn
kafka:
  brokers: ["{bootstrap}"]
  clientId: kminion
minion:
  consumerGroups:
    enabled: true
    scrapeMode: adminApi
    granularity: partition
    allowedGroups: [".*"]
  topics:
    enabled: {others}
    granularity: partition
    allowedTopics: [".*"]
    infoMetric:
      configKeys: ["cleanup.policy"]
  logDirs:
    enabled: {others}
  endToEnd:
    enabled: false
exporter:
  namespace: kminion
  host: 127.0.0.1
  port: {port}
"""


@contextmanager
def running_kminion(
    binary: Path, bootstrap: str, run_dir: Path, name: str, *, groups_only: bool
) -> Iterator[tuple[str, int]]:
    """A kminion process on a free port, ready; yields its base URL and pid; stopped on
    exit."""
    from lab import ports
    from tests.waiting import wait_for

    port = ports.pick_free_ports(1)[0]
    config = run_dir / f"{name}.yaml"
    config.write_text(kminion_config(bootstrap, port, groups_only=groups_only))
    base = f"http://127.0.0.1:{port}"
    with open(run_dir / f"{name}.log", "wb") as log:
        proc = subprocess.Popen(
            [str(binary)], env={**os.environ, "CONFIG_FILEPATH": str(config)},
            stdout=log, stderr=subprocess.STDOUT, cwd=run_dir,
        )  # fmt: skip
        try:
            wait_for(lambda: _ready(base, proc), 120, f"{name} ready", 0.5)
            yield base, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _ready(base: str, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        raise SystemExit(f"kminion exited with {proc.returncode} (its log: {base})")
    try:
        with urllib.request.urlopen(f"{base}/ready", timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def scrape(base: str) -> bytes:
    """One ``GET /metrics`` read to its end: one kminion collection."""
    with urllib.request.urlopen(f"{base}/metrics", timeout=120) as resp:
        return resp.read()


def partition_lags(text: bytes) -> int:
    """How many of the benchmark's groups' partition-lag series a scrape holds."""
    needle = f'{PARTITION_LAG}group_id="{PREFIX}-g'.encode()
    return sum(1 for line in text.splitlines() if line.startswith(needle))


# -- measuring --------------------------------------------------------------------------------


CpuClock = Callable[[], float]


def process_cpu_s(pid: int) -> CpuClock:
    """The CPU seconds (user and system, every thread) process ``pid`` has used, read from
    /proc: kminion's cost of a scrape, apart from the broker's and this process's."""
    tick = os.sysconf("SC_CLK_TCK")

    def used() -> float:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime

    return used


def interleaved(
    variants: dict[str, tuple[Callable[[], object], CpuClock]], reps: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each variant, rep by rep. CPU: of the process that does the
    work (kminion's for a scrape; this one's, all its threads, for Lagwatch's variants), less
    sensitive than the wall time to the load of others on a shared machine."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(reps):
        for name, (run, clock) in variants.items():
            cpu_before, started = clock(), time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
            cpu[name].append(clock() - cpu_before)
            __import__("gc").collect()  # the next variant does not pay for this one's garbage
    return times, cpu


def now_ms() -> int:
    return int(time.time() * 1000)


class BareRows:
    """The least a cycle that keeps a database row per partition can store: the Kafka reads'
    partitions, each as one row of its group, topic, partition, committed and latest offsets,
    lag and the cycle's time, upserted in one ``executemany`` and committed, through the same
    connection and SQLite file as the stored cycle (``reads_and_bare_rows``). No history, no
    groups, no sample log, no comparison with the rows before: every row is written."""

    TABLE = "bench_bare_partition"

    def __init__(self) -> None:
        from django.db import connection

        self.connection = connection
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.TABLE} (grp TEXT, topic TEXT, part INTEGER, "
                "committed INTEGER, latest INTEGER, lag INTEGER, sampled_at INTEGER, "
                "PRIMARY KEY (grp, topic, part))"
            )

    def write(self, result: Any) -> int:
        from django.db import transaction

        latest = {(o.topic, o.partition): o.latest for o in result.offsets}
        at = result.started_ms
        rows = []
        for c in result.commits:
            end = latest.get((c.topic, c.partition))
            lag = None if end is None else end - c.offset
            rows.append((c.group, c.topic, c.partition, c.offset, end, lag, at))
        with transaction.atomic(), self.connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {self.TABLE} VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (grp, topic, part) DO UPDATE SET committed = excluded.committed, "
                "latest = excluded.latest, lag = excluded.lag, sampled_at = excluded.sampled_at",
                rows,
            )
        return len(rows)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def summary(times: dict[str, list[float]], cpu: dict[str, list[float]]) -> dict[str, Any]:
    return {
        name: {
            "runs": len(v),
            "median_s": round(statistics.median(v), 4),
            "p90_s": round(p90(v), 4),
            "min_s": round(min(v), 4),
            "max_s": round(max(v), 4),
            "cpu_median_s": round(statistics.median(cpu[name]), 4),
            "samples_s": [round(x, 4) for x in v],
            "cpu_samples_s": [round(x, 4) for x in cpu[name]],
        }
        for name, v in times.items()
    }


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    out = {}
    for ours in ("stored_cycle", "kafka_reads", "reads_and_bare_rows"):
        for theirs in ("kminion", "kminion_groups"):
            for stat in ("median_s", "p90_s", "cpu_median_s"):
                key = f"{ours} / {theirs} ({stat[:-2].replace('_', ' ')})"
                out[key] = round(results[ours][stat] / results[theirs][stat], 3)
    return out


def profile_cycle(
    cycles: bench_cycle.Cycles, top: int, runs: int, out_file: Path | None = None
) -> str:
    """``runs`` more stored cycles under cProfile, added up (and saved to ``out_file``, for
    ``pstats``' callers and callees)."""
    profile = cProfile.Profile()
    for _ in range(runs):
        cycles.run(profile)
    if out_file is not None:
        profile.dump_stats(out_file)
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def measure(args: argparse.Namespace, binary: Path, run_dir: Path) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient

    from collectors.cycle.runner import forget_clusters
    from collectors.kafka import KafkaSource
    from dashboard.monitoring.models import Cluster

    per_group = bench_kafka.TOPICS_PER_GROUP * bench_kafka.PARTITIONS
    expected = args.groups * per_group
    with ExitStack() as stack:
        bootstrap = stack.enter_context(bench_kafka.own_kafka("bench-kminion-"))
        started = time.perf_counter()
        bench_kafka.populate(bootstrap, args.groups, PREFIX)
        print(f"setup: {args.groups} groups x {per_group} partitions in "
              f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
        kminions = {
            name: stack.enter_context(
                running_kminion(binary, bootstrap, run_dir, name, groups_only=only)
            )
            for name, only in (("kminion", False), ("kminion_groups", True))
        }
        source = KafkaSource(bootstrap, timeout_s=30)
        stack.callback(source.close)
        stack.callback(forget_clusters)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        watch = bench_cycle.instrument()
        cluster = Cluster.objects.create(name="bench-kminion", kafka_bootstrap_servers=bootstrap)
        cycles = bench_cycle.Cycles(cluster, watch, bench_cycle.Clock())

        def read() -> Any:
            result = source.collect(now_ms())
            if not result.reachable or result.errors or len(result.commits) != expected:
                raise SystemExit(f"Kafka reads incomplete: {result.errors[:3]}")
            return result

        def kafka_reads() -> int:
            return len(read().commits)

        bases = {name: base for name, (base, _) in kminions.items()}
        own = time.process_time
        variants: dict[str, tuple[Callable[[], object], CpuClock]] = {
            name: (lambda base=base: scrape(base), process_cpu_s(pid))
            for name, (base, pid) in kminions.items()
        }
        bare_rows = BareRows()
        variants |= {
            "stored_cycle": (cycles.run, own),
            "kafka_reads": (kafka_reads, own),
            "reads_and_bare_rows": (lambda: bare_rows.write(read()), own),
            "bare_calls": (lambda: bench_kafka.floor_cycle(admin), own),
        }
        for name, base in bases.items():  # warm-up and check: every group's every partition
            found = partition_lags(scrape(base))
            if found != expected:
                raise SystemExit(f"{name}: {found} partition lags, not {expected}")

        def complete(report: Any) -> bool:
            return (
                report.partitions == expected
                and report.groups == args.groups
                and (not report.errors)
            )

        for run, _ in list(variants.values())[len(kminions) :]:
            run()  # the first cycle creates every row: not timed
        for _ in range(2):  # on a loaded machine a first cycle can run out of its source time
            if complete(cycles.reports[-1]):
                break
            cycles.run()
        if not complete(cycles.reports[-1]):
            raise SystemExit(f"stored cycle: {cycles.reports[-1]}")
        warm = len(cycles.reports)
        cycles.breakdowns.clear()  # the breakdown is of the timed cycles
        sizes = {name: len(scrape(base)) for name, base in bases.items()}

        load_before = os.getloadavg()[0]
        times, cpu = interleaved(variants, args.reps)
        load_after = os.getloadavg()[0]
        results = summary(times, cpu)
        results["stored_cycle"]["incomplete"] = sum(not complete(r) for r in cycles.reports[warm:])
        profile = (
            profile_cycle(cycles, args.profile_top, args.profile_cycles, args.profile_out)
            if args.profile
            else ""
        )
    return {
        "groups": args.groups,
        "partitions": expected,
        "results": results,
        "ratios": ratios(results),
        "first_cycle_s": round(cycles.first_s or 0.0, 3),
        "breakdown": bench_cycle.breakdown(cycles),
        "scrape_bytes": sizes,
        "loadavg_1m_before_after": [round(load_before, 2), round(load_after, 2)],
        "profile": profile,
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"### {report['groups']} groups x 50 partitions ({report['partitions']}), load average "
        f"{report['loadavg_1m_before_after'][0]}-{report['loadavg_1m_before_after'][1]}",
        "",
        "| variant | runs | median s | p90 s | min s | max s | CPU s (median) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in report["results"].items():
        lines.append(
            f"| {name} | {m['runs']} | {m['median_s']:.3f} | {m['p90_s']:.3f} | "
            f"{m['min_s']:.3f} | {m['max_s']:.3f} | {m['cpu_median_s']:.3f} |"
        )
    lines += ["", *(f"- {k}: **{v:.2f}**" for k, v in report["ratios"].items())]
    lines.append(f"- first stored cycle (creates every row): {report['first_cycle_s']:.3f} s")
    lines.append(
        f"- timed stored cycles with errors or missing partitions: "
        f"{report['results']['stored_cycle']['incomplete']}"
    )
    lines.append(f"- /metrics bytes: {report['scrape_bytes']}")
    parts = ", ".join(f"{k} {v:.3f}" for k, v in report["breakdown"].items() if v)
    lines.append(f"- stored cycle breakdown (medians, s): {parts}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=200, help="200, or 2000 for 2,000 x 50")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--kminion", type=Path, help="a kminion binary (else built, cached)")
    parser.add_argument("--kminion-source", type=Path, help="a clone of kminion's repository")
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=False,
                        help="cProfile more stored cycles after the timed ones")  # fmt: skip
    parser.add_argument("--profile-top", type=int, default=30)
    parser.add_argument("--profile-cycles", type=int, default=3)
    parser.add_argument("--profile-out", type=Path, help="save the cProfile stats here")
    parser.add_argument("--json", type=Path, help="also write the JSON report here")
    args = parser.parse_args(argv)

    binary = args.kminion or kminion_binary(args.kminion_source)
    assert shutil.which(str(binary)) or binary.is_file(), binary
    with tempfile.TemporaryDirectory(prefix="bench-kminion-") as tmp:
        bench_cycle.setup_django(Path(tmp))
        report = measure(args, binary, Path(tmp))

    import django

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    env = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit,
        "kminion": KMINION_VERSION,
        "python": platform.python_version(),
        "django": django.get_version(),
        "cpus": os.cpu_count(),
    }
    if args.json:
        args.json.write_text(json.dumps({"environment": env, **report}, indent=2) + "\n")
    if report["profile"]:
        print(f"\n## cProfile of stored cycles\n\n{report['profile']}")
    print(f"\n{json.dumps(env)}\n\n{markdown(report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The hot database after hours of collection: its size on disk, and whether a
stored cycle slows down as the history grows.

What a collector writes per cycle, through the product's own ``store_cycle`` (no sources: the
cycles are synthetic, so the run takes minutes instead of hours): ``--groups`` Kafka groups
(200) x ``--partitions`` (50) = 10,000 partitions, two groups per topic; every cycle the log
end of most partitions moves on (a fifth are idle) and each group commits behind it, so the
figures change as on a busy cluster. ``--hours`` (6, ``LAGWATCH_RAW_HISTORY_HOURS``'s default)
of cycles ``--poll`` (10) s apart, with the storage maintenance beat runs every 10 minutes
(``prune_history`` at the simulated time, which keeps the last 6 hours: so the database at
the end holds what a steady installation holds; a run of fewer ``--hours`` projects that size
from its growth per hour, linear until pruning starts). Reported: the database's size on disk
(SQLite: the file with its WAL; PostgreSQL: ``pg_database_size``), rows per table, bytes per
raw sample, and the stored cycle's time at the start and the end of the run.

    .venv/bin/python -m benchmarks.bench_hot_db [--hours 6] [--groups 200] [--partitions 50]
        [--poll 10] [--database sqlite|postgresql] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.bench_cycle import setup_django

MAINTENANCE_S = 600  # LAGWATCH_MAINTENANCE_S's default


class Workload:
    """Offsets that move as on a busy cluster: per partition a produce rate (0 for a fifth of
    them), and each group's commit a random distance behind the log end."""

    def __init__(self, groups: int, partitions: int, seed: int = 13) -> None:
        rng = random.Random(seed)
        self.rng = rng
        self.groups = [f"group-{g:04d}" for g in range(groups)]
        self.topic_of = {g: f"topic-{i // 2:04d}" for i, g in enumerate(self.groups)}
        self.partitions = partitions
        topics = sorted(set(self.topic_of.values()))
        self.rate = {
            (t, p): 0 if rng.random() < 0.2 else rng.randint(1, 500)
            for t in topics
            for p in range(partitions)
        }
        self.latest = {tp: rng.randint(10**5, 10**7) for tp in self.rate}

    def outcome(self, cycle_ms: int):  # noqa: ANN201 - CycleOutcome, imported after Django
        from collectors.figures import PartitionFigure
        from collectors.outcome import CycleOutcome, SourceOutcome
        from collectors.records import GroupMember, GroupSnapshot, PartitionOffsets, Source

        for tp, rate in self.rate.items():
            self.latest[tp] += rate
        figures, snapshots = [], []
        for g in self.groups:
            topic = self.topic_of[g]
            members = tuple(
                GroupMember(f"{g}-m{m}", client_id=g, host=f"/10.0.0.{m}",
                            assignment=tuple((topic, p) for p in range(m, self.partitions, 4)))
                for m in range(4)
            )  # fmt: skip
            snapshots.append(GroupSnapshot(Source.KAFKA, g, "Stable", generation=3,
                                           members=members, topics=(topic,)))  # fmt: skip
            for p in range(self.partitions):
                latest = self.latest[(topic, p)]
                lag = self.rng.randint(0, 3 * self.rate[(topic, p)])
                figures.append(PartitionFigure(
                    source=Source.KAFKA, group=g, topic=topic, partition=p,
                    committed=latest - lag, earliest=0, latest=latest, lag=lag,
                    time_lag_s=lag / max(1, self.rate[(topic, p)]) * 10.0,
                    time_lag_kind="interpolated", out_of_range=None,
                    commit_time_ms=cycle_ms - 5000, commit_version=None,
                    owner=f"{g}-m{p % 4}", topology_id=None, where="",
                ))  # fmt: skip
        offsets = [PartitionOffsets(t, p, 0, v, cycle_ms) for (t, p), v in self.latest.items()]
        sources = [SourceOutcome("kafka", True, cycle_ms, cycle_ms + 400)]
        return CycleOutcome(cluster="hot", cycle_ms=cycle_ms, figures=figures,
                            groups=snapshots, offsets=offsets, sources=sources)  # fmt: skip


def database_bytes(database: str) -> int:
    from django.conf import settings
    from django.db import connection

    if database == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_database_size(current_database())")
            return int(cursor.fetchone()[0])
    path = Path(settings.DATABASES["default"]["NAME"])
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def table_rows() -> dict[str, int]:
    from django.db.models import Sum

    from dashboard.monitoring.models import (
        BrokerOffsets,
        CollectedCycle,
        ConsumerGroup,
        GroupSample,
        PartitionState,
    )

    models = (GroupSample, BrokerOffsets, PartitionState, ConsumerGroup, CollectedCycle)
    rows = {m.__name__: m.objects.count() for m in models}
    # The partition points the packed rows hold (a row each before the history was packed).
    rows["partition points"] = GroupSample.objects.aggregate(n=Sum("partitions"))["n"] or 0
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    from dashboard.monitoring.models import Cluster
    from dashboard.store.rows import prune_history, store_cycle

    cluster = Cluster.objects.create(name="hot", kafka_bootstrap_servers="k:9092",
                                     poll_interval_s=args.poll)  # fmt: skip
    workload = Workload(args.groups, args.partitions)
    cycles = int(args.hours * 3600 / args.poll)
    start_ms = (int(time.time()) - int(args.hours * 3600)) * 1000
    times, sizes, pruned = [], [], 0
    last_maintenance = start_ms
    began = time.monotonic()
    for i in range(cycles):
        cycle_ms = start_ms + i * args.poll * 1000
        outcome = workload.outcome(cycle_ms)
        t0 = time.perf_counter()
        store_cycle(cluster, outcome)
        times.append(time.perf_counter() - t0)
        if cycle_ms - last_maintenance >= MAINTENANCE_S * 1000:
            now = datetime.fromtimestamp(cycle_ms / 1000, UTC)
            pruned += prune_history(timedelta(hours=args.raw_history_hours), now)
            last_maintenance = cycle_ms
        if i % max(1, cycles // 12) == 0 or i == cycles - 1:
            sizes.append({"cycle": i, "hours": round(i * args.poll / 3600, 2),
                          "db_mb": round(database_bytes(args.database) / 2**20, 1)})  # fmt: skip
            print(sizes[-1], f"store {statistics.median(times[-50:]):.3f} s", flush=True)
    rows = table_rows()
    total = database_bytes(args.database)
    head, tail = times[: min(100, len(times))], times[-min(100, len(times)) :]
    # Until pruning starts (after raw_history_hours) the database grows by the same rows every
    # hour: a shorter run projects the steady size from its measured growth per hour.
    simulated_h = cycles * args.poll / 3600  # each poll stands for its interval
    per_hour = (total - sizes[0]["db_mb"] * 2**20) / max(simulated_h, 1e-9)
    projected = sizes[0]["db_mb"] * 2**20 + per_hour * args.raw_history_hours
    return {
        "cycles": cycles,
        "partitions": args.groups * args.partitions,
        "wall_s": round(time.monotonic() - began, 1),
        "db_bytes": total,
        "db_gib": round(total / 2**30, 3),
        "target_gib": 1.0,
        "growth_gib_per_hour": round(per_hour / 2**30, 3),
        "steady_gib_at_raw_history_hours": round(
            (total if simulated_h >= args.raw_history_hours else projected) / 2**30, 3
        ),
        "steady_size_measured": simulated_h >= args.raw_history_hours,
        "met": (total if simulated_h >= args.raw_history_hours else projected) <= 2**30,
        "rows": rows,
        "bytes_per_raw_sample": round(total / max(1, rows["partition points"]), 1),
        "pruned_rows": pruned,
        "store_cycle_s_first_100_median": round(statistics.median(head), 3),
        "store_cycle_s_last_100_median": round(statistics.median(tail), 3),
        "growth": sizes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=6.0)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--poll", type=int, default=10)
    parser.add_argument("--raw-history-hours", type=float, default=6.0)
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-hot-db-"))
    setup_django(tmp, args.database)
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": [round(x, 2) for x in os.getloadavg()]},
        "database": args.database,
        **run(args),
    }  # fmt: skip
    report["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(report, indent=2)
    if args.json:
        args.json.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""Collection of 4 clusters x 10,000 partitions at a 10 s poll, by 1 and by 2 collector
workers: cycles completed per minute and the lag of the slowest cluster.

A lab stack of its own (Apache Kafka broker, Redis, web for the migrated SQLite database,
worker, beat, ``collector`` and ``collector2``). The broker gets 200 groups x 50 partitions
(``bench_kafka.populate``: 10,000 committed offsets); four clusters point at it, each a
10,000-partition cluster of its own to the product. First ``collector2`` is stopped and one
collector runs every cycle; then ``collector2`` is started and both share them. Each phase
is measured after a warm-up, from the database (``CollectedCycle``: one row per stored
cycle) and the collectors' logs (each cycle's duration):

* cycles per minute: stored cycles of the four clusters in the window, per minute (at most
  4 x 6 = 24 at a 10 s poll);
* lag of the slowest cluster: sampled every second, the age of the newest stored slot of the
  cluster that is furthest behind (a cluster on time shows one poll interval plus its cycle's
  duration at most);
* cycle duration: median and 95th percentile of the cycles in the window.

The Spark jobs are held off (status and rollups once a day) so that they do not compete for
the two cores with what is measured.

    .venv/bin/python -m benchmarks.bench_sharded_collectors [--minutes 3] [--groups 200]
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kafka import populate  # noqa: E402
from lab.stack import Stack  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CLUSTERS = [f"bench-{i}" for i in range(1, 5)]
POLL_S = 10
SERVICES = ["kafka", "redis", "web", "worker", "collector", "collector2", "beat"]
DURATION = re.compile(r"'cluster': '([^']+)', 'cycle_ms': (\d+), 'duration_s': ([0-9.]+)")


def clusters_yaml(bootstrap: str) -> str:
    lines = ["clusters:"]
    for name in CLUSTERS:
        lines += [
            f"  - name: {name}",
            f"    poll_interval_s: {POLL_S}",
            f'    kafka: {{bootstrap_servers: "{bootstrap}", read_consumer_offsets_topic: true}}',
        ]
    return "\n".join(lines) + "\n"


def ms(text: str) -> int:
    at = datetime.fromisoformat(text)
    return int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000)


def stored_slots(db: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute(
            "SELECT c.name, cc.at FROM monitoring_collectedcycle cc "
            "JOIN monitoring_cluster c ON c.id = cc.cluster_id"
        ).fetchall()
    finally:
        conn.close()
    return [(name, ms(at)) for name, at in rows]


def durations(logs: Path, start_ms: int, end_ms: int) -> list[float]:
    found = []
    for name in ("collector", "collector2"):
        path = logs / f"{name}.log"
        if path.exists():
            for match in DURATION.finditer(path.read_text(errors="replace")):
                if start_ms <= int(match[2]) < end_ms:
                    found.append(float(match[3]))
    return found


def measure(db: Path, logs: Path, warm_up_s: float, window_s: float) -> dict:
    time.sleep(warm_up_s)
    start_ms = int(time.time() * 1000)
    lags = []
    while (now_ms := int(time.time() * 1000)) < start_ms + window_s * 1000:
        newest: dict[str, int] = {}
        for name, slot in stored_slots(db):
            newest[name] = max(newest.get(name, 0), slot)
        lags.append(max((now_ms - newest.get(c, 0)) / 1000 for c in CLUSTERS))
        time.sleep(1)
    end_ms = int(time.time() * 1000)
    window = [(n, s) for n, s in stored_slots(db) if start_ms <= s < end_ms]
    per_cluster = {c: sum(1 for n, _ in window if n == c) for c in CLUSTERS}
    took = sorted(durations(logs, start_ms, end_ms))
    minutes = (end_ms - start_ms) / 60_000
    return {
        "cycles_per_min": len(window) / minutes,
        "slowest_cluster_cycles_per_min": min(per_cluster.values()) / minutes,
        "slowest_lag_median_s": statistics.median(lags),
        "slowest_lag_max_s": max(lags),
        "cycle_median_s": statistics.median(took) if took else None,
        "cycle_p95_s": took[int(0.95 * (len(took) - 1))] if took else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="measured window per phase")
    parser.add_argument("--groups", type=int, default=200, help="groups of 50 partitions")
    args = parser.parse_args()
    os.environ["LAGWATCH_STATUS_EVERY_S"] = os.environ["LAGWATCH_ROLLUPS_EVERY_S"] = "86400"
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        stack = Stack(Path(tmp))
        try:
            bootstrap = stack.up(SERVICES)["kafka"]
            stack.stop_service("collector2")
            t0 = time.perf_counter()
            populate(bootstrap, args.groups, "shard")
            print(f"broker populated: {args.groups} groups x 50 partitions in "
                  f"{time.perf_counter() - t0:.1f} s")  # fmt: skip
            clusters = Path(tmp) / "bench-clusters.yaml"
            clusters.write_text(clusters_yaml(bootstrap))
            subprocess.run(
                [stack.python, "manage.py", "lagwatch_config", "import", str(clusters)],
                cwd=REPO, env=stack.django_env(), check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            db, logs = Path(tmp) / "data" / "lagwatch.sqlite3", Path(tmp) / "logs"
            window_s = args.minutes * 60
            one = measure(db, logs, 60, window_s)
            print("1 collector:", one, flush=True)
            stack.start_service("collector2")
            two = measure(db, logs, 30, window_s)
            print("2 collectors:", two, flush=True)
        finally:
            stack.down()
    print()
    print("| collectors | cycles/min (of 24) | slowest cluster cycles/min (of 6) | "
          "slowest cluster's lag, median / max s | cycle median / p95 s |")  # fmt: skip
    print("|---|---:|---:|---:|---:|")
    for n, r in ((1, one), (2, two)):
        print(
            f"| {n} | {r['cycles_per_min']:.1f} | {r['slowest_cluster_cycles_per_min']:.1f} | "
            f"{r['slowest_lag_median_s']:.1f} / {r['slowest_lag_max_s']:.1f} | "
            f"{r['cycle_median_s']:.2f} / {r['cycle_p95_s']:.2f} |"
        )
    cycles = two["cycles_per_min"] / one["cycles_per_min"]
    lag = two["slowest_lag_median_s"] / one["slowest_lag_median_s"]
    print(f"ratio 2/1: cycles/min {cycles:.2f}, slowest cluster's lag (median) {lag:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The ``/metrics`` exposition's build after one cluster's cycle (only that cluster read and
encoded again, the others' series taken from the set before: dashboard/api/metrics/pieces.py)
against a build of every cluster (what each cycle paid before, and what a Spark run still
does), on the same database in the same run.

Data (``bench_api.populate``'s shape, not timed): ``--clusters`` clusters (default 5) of
``--groups`` Kafka groups (200) × ``--partitions`` (10) partitions each: 10,000 partitions in
all at the defaults. Each repetition changes one partition's lag in one cluster (as a cycle
would), then builds once for that cluster and once for all, alternating which goes first;
the published bodies are checked to hold the change.

    .venv/bin/python -m benchmarks.bench_metrics_build [--clusters 5] [--groups 200]
        [--partitions 10] [--reps 7] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_api import _env  # noqa: E402


def populate(clusters: int, groups: int, partitions: int) -> int:
    from django.db import transaction

    from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState

    now = datetime.now(UTC).replace(microsecond=0)
    with transaction.atomic():
        for c in range(clusters):
            cluster = Cluster.objects.create(name=f"cluster-{c}", poll_interval_s=10)
            created = ConsumerGroup.objects.bulk_create(
                [
                    ConsumerGroup(cluster=cluster, source="kafka", name=f"group-{i:04d}",
                                  state="Stable", generation=3, status="OK", complete=1.0,
                                  first_seen_at=now - timedelta(days=1), last_seen_at=now)
                    for i in range(groups)
                ],
                batch_size=500,
            )  # fmt: skip
            PartitionState.objects.bulk_create(
                [
                    PartitionState(group=g, topic=f"topic-{p % 3}", partition=p, committed=100,
                                   latest=105, lag=5, time_lag_s=1.0, status="OK",
                                   last_commit_at=now, sampled_at=now, evaluated_at=now)
                    for g in created
                    for p in range(partitions)
                ],
                batch_size=2000,
            )  # fmt: skip
    return PartitionState.objects.count()


def measure(args: argparse.Namespace) -> dict:
    """Runs with Django set up on a fresh SQLite database (the child process)."""
    import django

    django.setup()
    from django.core.management import call_command

    from dashboard.api.metrics.exposition import build
    from dashboard.monitoring.models import PartitionState

    call_command("migrate", verbosity=0)
    total = populate(args.clusters, args.groups, args.partitions)
    build()  # the set a cycle's build starts from
    one, every = [], []
    for rep in range(args.reps):
        cluster = f"cluster-{rep % args.clusters}"
        lag = 1000 + rep
        PartitionState.objects.filter(group__cluster__name=cluster, group__name="group-0000",
                                      partition=0).update(lag=lag)  # fmt: skip
        order = [("one", {cluster}), ("every", None)]
        for which, clusters in order if rep % 2 == 0 else order[::-1]:
            t = time.perf_counter()
            published = build(clusters=clusters)
            took = time.perf_counter() - t
            body = (published / "text.partitions").read_text()
            assert f'cluster="{cluster}",group="group-0000",partition="0"' in body
            assert f"{lag}.0" in body, "the change is published"
            (one if which == "one" else every).append(took)
    med_one, med_every = statistics.median(one), statistics.median(every)
    return {
        "partitions": total,
        "clusters": args.clusters,
        "one_cluster_s": [round(x, 3) for x in one],
        "every_cluster_s": [round(x, 3) for x in every],
        "median_one_s": round(med_one, 3),
        "median_every_s": round(med_every, 3),
        "one_over_every": round(med_one / med_every, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=5)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp:
        env = _env(Path(tmp))
        env["LAGWATCH_METRICS_DIR"] = str(Path(tmp) / "metrics")
        argv = [sys.executable, "-m", "benchmarks.bench_metrics_build", "--child"]
        for name in ("clusters", "groups", "partitions", "reps"):
            argv += [f"--{name}", str(getattr(args, name))]
        done = subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(
        date=datetime.now(UTC).isoformat(timespec="seconds"),
        machine=f"{os.cpu_count()} cores, {platform.python_version()}",
        load=[round(x, 2) for x in os.getloadavg()],
    )
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()

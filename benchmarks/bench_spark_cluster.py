"""The status job over 3.6 M samples on the lab's Spark standalone cluster against local mode,
in one run.

Data: ``benchmarks.bench_spark``'s generator (``bench_sample_log.workload``, seed 7): 10,000
partitions polled every 10 s for an hour, 3.6 M samples, hours compacted as production
closes them. The cluster is the lab's (``lab/spark_cluster.py``: one master, one worker of
two cores, from pyspark's own distribution). Each run is a driver process of its own (one
SparkContext per process), local ``local[2]`` and the cluster interleaved rep by rep so load
from elsewhere hits both alike; each prints the session's start-up and the status job's wall
time (``run_status_job``: read, evaluate, write a result run). Both read the same files: the
cluster's executors run on this machine and see the path.

    .venv/bin/python -m benchmarks.bench_spark_cluster [--partitions 10000] [--hours 1]
        [--reps 2] [--keep DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import bench_spark

LOCAL = "local[2]"


def child_main(args: argparse.Namespace) -> int:
    """One driver: a session on ``--master``, one status run; JSON on stdout."""
    from spark_jobs.evaluator import EvaluatorConfig
    from spark_jobs.jobs import run_status_job
    from spark_jobs.session import spark_session

    started = time.perf_counter()
    spark = spark_session("lagwatch-bench-cluster", args.master)
    spark.range(1).count()
    startup = time.perf_counter() - started
    try:
        began = time.perf_counter()
        result = run_status_job(
            spark, args.samples, args.results, args.now_ms, args.window_ms, EvaluatorConfig()
        )
        status = time.perf_counter() - began
        print(json.dumps({
            "master": spark.sparkContext.master, "startup_s": round(startup, 2),
            "status_s": round(status, 2), "input_rows": result.input_rows,
        }))  # fmt: skip
    finally:
        spark.stop()
    return 0


def generate(data: Path, partitions: int, hours: int) -> dict[str, Any]:
    manifest = data / "manifest.json"
    if manifest.exists():
        found = json.loads(manifest.read_text())
        if found.get("partitions") == partitions and found.get("main_cycles") == hours * 360:
            return found
    data.mkdir(parents=True, exist_ok=True)
    # The main log only (the 1 M log of bench_spark is one cycle here).
    bench_spark.generate_main(data, partitions, hours, (partitions, partitions * hours * 360))
    return json.loads(manifest.read_text())


def drive(master: str, data: Path, manifest: dict, results: Path) -> dict[str, Any]:
    window_ms = manifest["last_ms"] - manifest["start_ms"] + manifest["step_ms"]
    now_ms = manifest["last_ms"] + 1
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_spark_cluster", "--child", "--master", master,
         "--samples", str(data / "samples"), "--results", str(results),
         "--now-ms", str(now_ms), "--window-ms", str(window_ms)],
        capture_output=True, text=True, check=True, timeout=1800,
        # The executors' Python workers: this interpreter, which has the project's packages
        # (as the lab gives the product's processes, lab/services.py django_env).
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    from lab.stack import Stack

    manifest = generate(data, args.partitions, args.hours)
    stack = Stack(data / "lab")
    cluster = stack.up(["spark-worker"])["spark_master"]
    runs: dict[str, list[dict]] = {LOCAL: [], "cluster": []}
    try:
        for rep in range(args.reps):
            for name, master in ((LOCAL, LOCAL), ("cluster", cluster)):
                # "results-local", not "results-local[2]": Hadoop's paths glob brackets.
                results = data / f"results-{'local' if master == LOCAL else 'cluster'}"
                found = drive(master, data, manifest, results)
                found["load"] = os.getloadavg()[0]
                runs[name].append(found)
                print(f"rep {rep + 1} {name}: {found}", flush=True)
    finally:
        stack.down()
    medians = {
        name: {k: statistics.median(r[k] for r in found) for k in ("startup_s", "status_s")}
        for name, found in runs.items()
    }
    return {
        "rows": runs[LOCAL][0]["input_rows"],
        "runs": runs,
        "medians": medians,
        "cluster_over_local": round(
            medians["cluster"]["status_s"] / medians[LOCAL]["status_s"], 2
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--hours", type=int, default=1)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="generate (or reuse) the data here")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("--master", "--samples", "--results"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    for name in ("--now-ms", "--window-ms"):
        parser.add_argument(name, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if args.child:
        return child_main(args)
    if args.keep:
        report = run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-spark-cluster-") as tmp:
            report = run(args, Path(tmp))
    report["date"] = datetime.now(UTC).date().isoformat()
    report["cpus"] = os.cpu_count()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    m = report["medians"]
    print(f"\nstatus job over {report['rows']:,} samples, median of {args.reps}:")
    for name in (LOCAL, "cluster"):
        startup, job = m[name]["startup_s"], m[name]["status_s"]
        print(f"  {name:9} start-up {startup:6.1f} s   job {job:6.1f} s")
    print(f"  cluster / local: {report['cluster_over_local']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The status job's cost per run on a small cluster's window: what every period costs a small
installation, and every lab stack of the test suite (most of the suite's Spark CPU).

The window is the lab's shape: ``--partitions`` (100) polled every 5 s for ``--cycles`` (300:
25 minutes) as the collector writes it, one micro-batch file per cycle, the hour not yet
compacted. One local[2] session runs ``run_status_job`` ``--runs`` times (8), each at a new
``now``, as the worker's process does every period; reported are the median wall time and the
Spark JVM's CPU seconds per run over the second half (the JIT warm), and the JVM's CPU by
thread kind over the whole run (the JIT compilers, the tasks, the driver).

``--layouts batches,chunks`` (the default) measures the same samples laid out two ways in
one session, runs alternating: ``batches``, one file per cycle as the collector writes them;
``chunks``, as beat's ``compact_sample_log`` leaves the open hour (``compact_open_hours``
after every ``--compact-every`` cycles: 12, a minute at 5 s). To compare two versions of the
job, run this script from each checkout back to back (the machine's speed varies through the
day; compare within a pair):

    .venv/bin/python -m benchmarks.bench_status_run [--partitions 100] [--cycles 300]
        [--runs 8] [--layouts batches,chunks] [--compact-every 12] [--json FILE]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

HZ = os.sysconf("SC_CLK_TCK")


def _cpu(stat: str) -> float:
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def spark_jvm() -> int:
    """The pid of this process's Spark JVM (its child ``java``)."""
    out = subprocess.check_output(["ps", "-o", "pid=,comm=", "--ppid", str(os.getpid())])
    return next(int(p) for p, comm in (line.split() for line in out.decode().splitlines())
                if comm == "java")  # fmt: skip


def jvm_cpu(pid: int) -> float:
    return _cpu(Path(f"/proc/{pid}/stat").read_text())


def jvm_threads(pid: int) -> dict[str, float]:
    """CPU seconds by thread name, numbers folded ("C2 CompilerThread0" -> "CN CompilerThreadN")."""
    by_kind: dict[str, float] = collections.Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
        name = re.sub(r"\d+", "N", stat[stat.index("(") + 1 : stat.rindex(")")])
        by_kind[name] += _cpu(stat)
    return dict(sorted(by_kind.items(), key=lambda kv: -kv[1])[:6])


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from benchmarks.bench_sample_log import workload
    from collectors.sample_log import SampleLog
    from spark_jobs.jobs import run_status_job
    from spark_jobs.session import spark_session

    logs: dict[str, SampleLog] = {name: SampleLog(tempfile.mkdtemp()) for name in args.layouts}
    # Each layout with each slice (``run_status_job``'s ``slice_ms``; 0: the whole window).
    cases = {f"{name}, slice {sl} s": (name, sl) for name in args.layouts for sl in args.slice_s}
    results = {case: tempfile.mkdtemp() for case in cases}
    last = 0
    for i, (ts, table) in enumerate(
        workload(partitions=args.partitions, cycles=args.cycles, step_ms=5000), start=1
    ):
        for name, log in logs.items():
            log.write_batch(table["cluster"][0].as_py(), ts, table)
            if name == "chunks" and i % args.compact_every == 0:
                log.compact_open_hours(ts + 1)  # the hour is open: beat's task at this time
        last = ts
    files = {name: sum(1 for _ in Path(log.base).rglob("*.parquet")) for name, log in logs.items()}
    started = time.monotonic()
    spark = spark_session("bench-status-run", master="local[2]")
    start_s = time.monotonic() - started
    jvm = spark_jvm()
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in cases}
    input_rows = {}
    for i in range(args.runs):
        for case, (name, slice_s) in cases.items():
            cpu0, t0 = jvm_cpu(jvm), time.monotonic()
            result = run_status_job(spark, logs[name].base, results[case],
                                    now_ms=last + 1_000 + i, slice_ms=slice_s * 1000,
                                    slice_from_rows=0)  # fmt: skip
            runs[case].append({"wall_s": round(time.monotonic() - t0, 2),
                               "jvm_cpu_s": round(jvm_cpu(jvm) - cpu0, 2)})  # fmt: skip
            input_rows[case] = result.input_rows
            print(case, runs[case][-1], flush=True)
    threads = jvm_threads(jvm)
    spark.stop()
    layouts = {}
    for case, measured in runs.items():
        warm = measured[len(measured) // 2 :]
        layouts[case] = {
            "files": files[cases[case][0]],
            "input_rows": input_rows[case],
            "warm_median_wall_s": round(statistics.median(r["wall_s"] for r in warm), 2),
            "warm_median_jvm_cpu_s": round(statistics.median(r["jvm_cpu_s"] for r in warm), 2),
            "runs": measured,
        }
    return {
        "repo": str(REPO),
        "partitions": args.partitions,
        "cycles": args.cycles,
        "session_start_s": round(start_s, 1),
        "layouts": layouts,
        "jvm_cpu_s_by_thread": {k: round(v, 1) for k, v in threads.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--layouts", type=lambda v: v.split(","), default=["batches", "chunks"])
    parser.add_argument("--compact-every", type=int, default=12)
    parser.add_argument("--slice-s", type=lambda v: [int(x) for x in v.split(",")], default=[600])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus",
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        **run(args),
    }
    summary = {**report, "layouts": {
        name: {k: v for k, v in layout.items() if k != "runs"}
        for name, layout in report["layouts"].items()
    }}  # fmt: skip
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

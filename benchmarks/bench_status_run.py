"""The status job's cost per run on a small cluster's window: what every period costs a small
installation, and every lab stack of the test suite (issue 15: the suite's Spark CPU).

The window is the lab's shape: ``--partitions`` (100) polled every 5 s for ``--cycles`` (300:
25 minutes) as the collector writes it, one micro-batch file per cycle, the hour not yet
compacted. One local[2] session runs ``run_status_job`` ``--runs`` times (8), each at a new
``now``, as the worker's process does every period; reported are the median wall time and the
Spark JVM's CPU seconds per run over the second half (the JIT warm), and the JVM's CPU by
thread kind over the whole run (the JIT compilers, the tasks, the driver).

To compare two versions of the job, run this script from each checkout back to back (the
machine's speed varies through the day; compare within a pair):

    .venv/bin/python -m benchmarks.bench_status_run [--partitions 100] [--cycles 300]
        [--runs 8] [--json FILE]
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
        stat = (task / "stat").read_text()
        name = re.sub(r"\d+", "N", stat[stat.index("(") + 1 : stat.rindex(")")])
        by_kind[name] += _cpu(stat)
    return dict(sorted(by_kind.items(), key=lambda kv: -kv[1])[:6])


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from benchmarks.bench_sample_log import workload
    from collectors.sample_log import SampleLog
    from spark_jobs.jobs import run_status_job
    from spark_jobs.session import spark_session

    base, results = tempfile.mkdtemp(), tempfile.mkdtemp()
    log, last = SampleLog(base), 0
    for ts, table in workload(partitions=args.partitions, cycles=args.cycles, step_ms=5000):
        log.write_batch(table["cluster"][0].as_py(), ts, table)
        last = ts
    started = time.monotonic()
    spark = spark_session("bench-status-run", master="local[2]")
    start_s = time.monotonic() - started
    jvm = spark_jvm()
    runs = []
    for i in range(args.runs):
        cpu0, t0 = jvm_cpu(jvm), time.monotonic()
        result = run_status_job(spark, base, results, now_ms=last + 1_000 + i)
        runs.append({"wall_s": round(time.monotonic() - t0, 2),
                     "jvm_cpu_s": round(jvm_cpu(jvm) - cpu0, 2)})  # fmt: skip
        print(runs[-1], flush=True)
    threads = jvm_threads(jvm)
    spark.stop()
    warm = runs[len(runs) // 2 :]
    return {
        "repo": str(REPO),
        "partitions": args.partitions,
        "cycles": args.cycles,
        "input_rows": result.input_rows,
        "session_start_s": round(start_s, 1),
        "runs": runs,
        "warm_median_wall_s": round(statistics.median(r["wall_s"] for r in warm), 2),
        "warm_median_jvm_cpu_s": round(statistics.median(r["jvm_cpu_s"] for r in warm), 2),
        "jvm_cpu_s_by_thread": {k: round(v, 1) for k, v in threads.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus",
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        **run(args),
    }
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

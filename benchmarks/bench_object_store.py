"""The sample log on the lab's object store (SeaweedFS) against a local folder, in one run: the
collector's write cost per cycle, and the status job on the lab's Spark standalone cluster
reading the same samples from each.

Data: ``bench_sample_log.workload`` (seed 7): ``--partitions`` partitions polled every 10 s
for ``--cycles`` cycles, each cycle one ``write_batch`` into the store and one into the folder,
alternating which goes first; the open hour compacted every six cycles on both, as beat's
upkeep does. Then, ``--reps`` times, one driver process (``tests/lab/object_store_driver.py``:
one application, the hadoop-aws jars shipped once) runs the status job over each log, which
goes first alternating, each a full look-back read (the first run of an incremental chain), after a
warm-up run over the local log that is not counted.

    .venv/bin/python -m benchmarks.bench_object_store [--partitions 2000] [--cycles 90]
        [--reps 3] [--json FILE]
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

from benchmarks.bench_sample_log import CLUSTER, workload
from collectors.sample_log import SampleLog
from collectors.sample_log.object_store import S3Options

STORE_VARS = ("LAGWATCH_SAMPLE_LOG_URL", "LAGWATCH_S3_ENDPOINT", "LAGWATCH_S3_REGION",
              "LAGWATCH_S3_PATH_STYLE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
              "LAGWATCH_SPARK_JARS")  # fmt: skip
STEP_MS = 10_000


def write_both(store: SampleLog, local: SampleLog, partitions: int, cycles: int) -> dict:
    """Write every cycle to both logs, timing each write; returns ms per cycle on each."""
    took: dict[str, list[float]] = {"store": [], "local": []}
    last = 0
    for i, (ts, table) in enumerate(workload(partitions, cycles, STEP_MS)):
        order = (("store", store), ("local", local))
        for name, log in order if i % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            log.write_batch(CLUSTER, str(ts), table)
            took[name].append((time.perf_counter() - started) * 1000)
        if i % 6 == 5:
            store.compact_open_hours(ts)
            local.compact_open_hours(ts)
        last = ts
    return {
        "last_ms": last,
        "write_ms": {name: {"median": round(statistics.median(t), 1),
                            "mean": round(statistics.fmean(t), 1),
                            "p90": round(sorted(t)[int(0.9 * len(t))], 1)}
                     for name, t in took.items()},
    }  # fmt: skip


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from lab.stack import Stack

    stack = Stack(tmp / "lab")
    stack.up(["object-store", "spark-worker"])
    try:
        env = stack.django_env()
        os.environ.update({name: env[name] for name in STORE_VARS})
        url = env["LAGWATCH_SAMPLE_LOG_URL"].rstrip("/") + "-bench"
        store = SampleLog.from_url(url, S3Options.from_environ())
        local = SampleLog(tmp / "samples")
        written = write_both(store, local, args.partitions, args.cycles)
        now_ms = written["last_ms"] + 1
        window_ms = args.cycles * STEP_MS + 60_000
        runs: dict[str, list[float]] = {"store": [], "local": []}
        for rep in range(args.reps):  # one application a rep, both logs, the order alternating
            logs = [("store", url), ("local", local.base)]
            # A first run of its own in each application: the first status run of a session
            # costs 10-15 s more (JIT, the first connections), whichever log it reads.
            logs = [("warm-up", local.base), *(logs if rep % 2 == 0 else logs[::-1])]
            out = subprocess.run(
                [sys.executable, "-m", "tests.lab.object_store_driver",
                 "--master", env["SPARK_MASTER"], "--app", f"bench-{rep}",
                 *[a for name, samples in logs
                   for a in ("--log", samples, str(tmp / f"results-{name}-{rep}"))],
                 "--now-ms", str(now_ms), "--status-window-ms", str(window_ms),
                 "--rollups-window-ms", "60000"],
                capture_output=True, text=True, check=True, timeout=1800,
                env={**os.environ, "PYSPARK_PYTHON": sys.executable},
            )  # fmt: skip
            found = json.loads(out.stdout.strip().splitlines()[-1])
            for (name, _), log in zip(logs, found["logs"], strict=True):
                runs.setdefault(name, []).append(log["status_s"][0])
                print(f"rep {rep + 1} {name}: status {runs[name][-1]:.1f} s", flush=True)
    finally:
        stack.down()
    medians = {name: round(statistics.median(t), 2) for name, t in runs.items()
               if name != "warm-up"}  # fmt: skip
    return {
        "partitions": args.partitions, "cycles": args.cycles,
        "rows": args.partitions * args.cycles, **written, "status_s": runs,
        "status_median_s": medians,
        "status_store_over_local": round(medians["store"] / medians["local"], 2),
        "write_store_over_local": round(
            written["write_ms"]["store"]["median"] / written["write_ms"]["local"]["median"], 2
        ),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--cycles", type=int, default=90)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="bench-object-store-") as tmp:
        report = run(args, Path(tmp))
    report["date"] = datetime.now(UTC).date().isoformat()
    report["load"] = os.getloadavg()[0]
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    w = report["write_ms"]
    print(f"\n{report['rows']:,} samples ({args.partitions:,} partitions × {args.cycles} cycles)")
    print(f"  write per cycle, median: store {w['store']['median']} ms, "
          f"local {w['local']['median']} ms  ({report['write_store_over_local']} ×)")  # fmt: skip
    m = report["status_median_s"]
    print(f"  status job on the cluster, median of {args.reps}: store {m['store']} s, "
          f"local {m['local']} s  ({report['status_store_over_local']} ×)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

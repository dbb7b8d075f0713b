"""Lag-report export benchmark (SPEC §9): 1 M rows from the sample log in each format.

Targets: CSV ≥ 200,000 rows/s, Parquet ≥ 1,000,000 rows/s, peak memory ≤ 300 MB (the report
streams); JSON and XLSX are measured and reported without a target.

The workload: a sample log of 1,000 partitions (40 groups, 7 topics, Kafka and Storm) polled
every 30 s, so 1,000 cycles = 1 M samples over 8 h 20 min, with log-normal produce rates and
consumers that keep up, lag or stop (so the log costs what a real one does on disk), each
closed hour compacted as the product does, plus a status history of 1,600 changes for the
status column (every partition judged once, 200 flapping); a fifth of the groups have
formula-like names (``=evil-…``) so escaping does work. Generation is not timed.

Each format runs in a fresh child process that builds the full report (raw resolution, whole
range, the same code path as the Celery task and ``lag_report``: rows from the log, status
from the history, the writer) into a file. Reported: wall time, rows/s, the child's peak RSS
(VmHWM) and its growth over the RSS after imports, and the size of the output.

Run from the repository root::

    .venv/bin/python -m benchmarks.bench_reports [--rows 1000000] [--formats csv,parquet,json,xlsx]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime

TARGETS = {"csv": 200_000, "parquet": 1_000_000}
TARGET_PEAK_MB = 300
CLUSTER = "prod-eu-1"
PARTITIONS = 1000
EVERY_MS = 30_000
START_MS = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1000)
HOUR_MS = 3_600_000


def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def generate(base: str, rows: int) -> dict:
    """Write the log: one micro-batch per hour (the collector writes many; compaction merges
    them into the same single file), then compact every closed hour."""
    import numpy as np
    import pyarrow as pa

    from collectors.sample_log import SampleLog

    log = SampleLog(base)
    rng = np.random.default_rng(42)
    cycles = -(-rows // PARTITIONS)
    part = np.arange(PARTITIONS, dtype=np.int32)
    groups = np.array([f"orders-{i % 40:02d}" if i % 5 else f"=evil-{i % 40}" for i in part])
    topics = np.array([f"topic-{i % 7}" for i in part])
    sources = np.array(["storm" if i % 10 == 0 else "kafka" for i in part])
    # Realistic entropy (the log then costs ~10 bytes a sample, as measured in production-like
    # data): log-normal produce rates, consumers that keep up, fall behind or stop, jittered
    # collection times.
    rate = rng.lognormal(3.0, 1.5, PARTITIONS)
    produced = rng.poisson(rate * EVERY_MS / 1000, (cycles, PARTITIONS)).cumsum(axis=0)
    keep_up = rng.choice([1.0, 0.7, 0.0], PARTITIONS, p=[0.8, 0.15, 0.05])
    consumed = np.minimum(
        (produced * keep_up).astype(np.int64) - rng.integers(0, 20, (cycles, PARTITIONS)),
        produced,
    ).clip(0)
    jitter = rng.integers(0, 2_000, (cycles, PARTITIONS))
    time_lag = (produced - consumed) / np.maximum(rate, 0.01)
    per_hour = HOUR_MS // EVERY_MS
    written = 0
    for first in range(0, cycles, per_hour):
        last = min(first + per_hour, cycles)
        n = min((last - first) * PARTITIONS, rows - written)
        if n <= 0:
            break
        cycle = first + np.arange(n, dtype=np.int64) // PARTITIONS
        p = np.arange(n, dtype=np.int64) % PARTITIONS
        latest = 10_000 + produced[cycle, p]
        committed = 10_000 + consumed[cycle, p]
        table = pa.table(
            {
                "ts_ms": pa.array(START_MS + cycle * EVERY_MS + jitter[cycle, p]),
                "cluster": pa.array([CLUSTER] * n),
                "source": pa.array(sources[p]).dictionary_encode(),
                "group": pa.array(groups[p]).dictionary_encode(),
                "topic": pa.array(topics[p]).dictionary_encode(),
                "partition": pa.array(p.astype(np.int32)),
                "committed": pa.array(committed),
                "latest": pa.array(latest),
                "lag": pa.array(latest - committed),
                "time_lag_s": pa.array(time_lag[cycle, p]),
                "stale": pa.array(np.zeros(n, dtype=bool)),
            }
        )
        log.write_batch(CLUSTER, f"hour-{first}", table)
        written += n
    end_ms = START_MS + cycles * EVERY_MS
    log.compact_closed_hours(end_ms + HOUR_MS)
    # Every partition was judged at least once (UNKNOWN -> OK an hour in, as after a deploy);
    # 200 of them changed three more times.
    changes = [
        [str(sources[pi]), str(groups[pi]), str(topics[pi]), int(pi), START_MS + HOUR_MS, "OK"]
        for pi in range(PARTITIONS)
    ]
    statuses = ("WARN", "STALL", "OK")
    for i in range(200):
        pi = i * 5 % PARTITIONS
        for k in range(3):
            at = START_MS + (k + 1) * (end_ms - START_MS) // 4 + i * 1000
            changes.append(
                [str(sources[pi]), str(groups[pi]), str(topics[pi]), int(pi), at, statuses[k]]
            )
    return {"rows": written, "end_ms": end_ms + 1, "changes": changes}


def child(base: str, fmt: str, end_ms: int, changes: list, out_path: str) -> dict:
    """One format, measured in this (fresh) process."""
    import pyarrow as pa

    from collectors.sample_log import SampleLog
    from dashboard.reports.export import export
    from dashboard.reports.spec import parse_spec
    from dashboard.reports.status import StatusHistory

    baseline_kb = _rss_kb("VmRSS")
    log = SampleLog(base)
    spec = parse_spec(
        {
            "cluster": CLUSTER,
            "start": datetime.fromtimestamp(START_MS / 1000, UTC).isoformat(),
            "end": datetime.fromtimestamp(end_ms / 1000, UTC).isoformat(),
        }
    )
    history = StatusHistory([tuple(c) for c in changes])
    counted = [0]

    def on_rows(n: int) -> None:
        counted[0] += n

    started = time.perf_counter()
    with open(out_path, "wb") as out:
        for chunk in export(log, spec, history, fmt, on_rows=on_rows):
            out.write(chunk)
    rows = counted[0]
    elapsed = time.perf_counter() - started
    peak_kb = _rss_kb("VmHWM")
    return {
        "fmt": fmt,
        "rows": rows,
        "seconds": round(elapsed, 3),
        "rows_per_s": round(rows / elapsed),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "growth_mb": round((peak_kb - baseline_kb) / 1024, 1),
        "baseline_mb": round(baseline_kb / 1024, 1),
        "output_mb": round(os.path.getsize(out_path) / 1e6, 1),
        "arrow_peak_mb": round(pa.system_memory_pool().max_memory() / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--formats", default="csv,parquet,json,xlsx")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # the path of a JSON file describing the job
        with open(args.child) as handle:
            job = json.load(handle)
        print(json.dumps(child(**job)))
        return

    with tempfile.TemporaryDirectory(prefix="bench-reports-") as tmp:
        started = time.perf_counter()
        world = generate(os.path.join(tmp, "samples"), args.rows)
        log_mb = (
            sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp) for f in fs) / 1e6
        )
        print(
            f"log: {world['rows']:,} samples, {log_mb:.1f} MB on disk, generated in "
            f"{time.perf_counter() - started:.1f} s; load average {os.getloadavg()[0]:.2f}"
        )
        results = []
        for fmt in args.formats.split(","):
            job = {
                "base": os.path.join(tmp, "samples"),
                "fmt": fmt,
                "end_ms": world["end_ms"],
                "changes": world["changes"],
                "out_path": os.path.join(tmp, f"report.{fmt}"),
            }
            job_path = os.path.join(tmp, "job.json")
            with open(job_path, "w") as handle:
                json.dump(job, handle)
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_reports", "--child", job_path],
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            results.append(result)
            os.unlink(job["out_path"])
            target = TARGETS.get(fmt)
            verdict = ""
            if target:
                ok = result["rows_per_s"] >= target and result["peak_rss_mb"] <= TARGET_PEAK_MB
                verdict = (
                    f"  target ≥ {target:,} rows/s: x{result['rows_per_s'] / target:.2f}"
                    f" {'MET' if ok else 'NOT MET'}"
                )
            print(
                f"{fmt:8s} {result['rows']:>9,} rows in {result['seconds']:6.2f} s = "
                f"{result['rows_per_s']:>10,} rows/s; peak RSS {result['peak_rss_mb']:6.1f} MB "
                f"(+{result['growth_mb']:.1f} over {result['baseline_mb']:.1f} after imports); "
                f"output {result['output_mb']:.1f} MB; "
                f"Arrow pool peak {result['arrow_peak_mb']:.1f} MB"
                f"{verdict}"
            )
        print(f"load average after: {os.getloadavg()[0]:.2f}; cores: {os.cpu_count()}")
        print(json.dumps(results))


if __name__ == "__main__":
    main()

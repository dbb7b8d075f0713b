"""The status job run every poll from the previous run's state, against the whole window's run
and against its floor: Spark reading only the samples written since the previous run.

Data: ``benchmarks.bench_sample_log.workload`` (10,000 partitions polled every 10 s; 80 % of
the groups healthy, 15 % slow, 5 % stuck, a tenth on quiet topics, a fifth Storm spouts), laid
out as a deployment's log is: the hour before closed and compacted into one file, the open hour
in the chunks beat's ``compact_sample_log`` leaves (``compact_open_hours`` every minute) and
micro-batches since; the look-back (1 h) spans both. The newest cycles are held back and
written one per repetition, each followed by the runs, as the collector and the worker do
(compaction once a minute); generation and writes are not timed.

Per repetition, in one Spark session on ``local[2]``, the ratios of one run:

* the floor: Spark reading the samples written since the previous run (``ts_ms`` after its
  ``now``) and counting them per partition;
* the plumbing: what the incremental run does on Spark with its judging left out (the log
  read from the previous run's cut, the previous state read and broadcast, the samples
  grouped per group and handed to a Python function that returns nothing, the empty result
  collected): the least an incremental run on Spark with a Python function per group costs,
  whatever that function does (``plumbing_job``);
* the incremental run (``run_status_job(incremental=True)``), from the previous repetition's
  state: it reads the log from the previous run's cut (``--settle-s`` before its ``now``);
* the whole window's run (``slice_ms=None``) and the slice-first run (the job before this
  change), into results of their own; their tables are compared with the incremental run's.

    .venv/bin/python -m benchmarks.bench_status_incremental [--partitions 10000]
        [--open-minutes 30] [--reps 5] [--settle-s 60] [--[no-]slice] [--closed-chunks]
        [--keep DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402

from benchmarks import bench_sample_log  # noqa: E402
from benchmarks.bench_spark import (  # noqa: E402
    MASTER,
    Monitor,
    Phases,
    floor_job,
    jvm_pid,
    same_tables,
    start_spark,
)
from collectors.sample_log import HOUR_MS, SampleLog  # noqa: E402

STEP_MS = 10_000
CYCLES_PER_MINUTE = 60_000 // STEP_MS
LOOK_BACK_MS = HOUR_MS
TARGET_X_FLOOR = 3.0
DATA_VERSION = 1


def generate(
    data: Path, partitions: int, open_minutes: int, reps: int, closed_chunks: bool = False
) -> dict[str, Any]:
    """The log up to the first run, and the held-back cycles (Arrow IPC files).

    ``closed_chunks``: the closed hour stays in minute chunks rather than one file (merging
    36 M samples at once took more memory than this machine had beside other work: the
    kernel killed it at 23 GB); the incremental run reads only the open hour either way."""
    shutil.rmtree(data, ignore_errors=True)
    (data / "pending").mkdir(parents=True)
    log = SampleLog(data / "samples")
    closed = HOUR_MS // STEP_MS
    written = closed + open_minutes * CYCLES_PER_MINUTE
    total = written + reps + 1
    first = None
    for cycle, (ts, table) in enumerate(bench_sample_log.workload(partitions, total, STEP_MS)):
        first = ts if first is None else first
        if cycle >= written:
            with ipc.new_file(data / "pending" / f"{ts}.arrow", table.schema) as out:
                out.write_table(table)
            continue
        log.write_batch(bench_sample_log.CLUSTER, str(ts), table)
        minute_ends = (cycle + 1) % CYCLES_PER_MINUTE == 0
        if cycle == closed and not closed_chunks:  # the new hour's first cycle: the last closes
            log.compact_closed_hours(ts + 5 * 60_000)
        elif minute_ends and (cycle > closed or closed_chunks):
            log.compact_open_hours(ts, max_chunks=10_000 if closed_chunks else 20)
    assert first is not None
    manifest = {"partitions": partitions, "open_minutes": open_minutes, "reps": reps,
                "closed_chunks": closed_chunks,
                "version": DATA_VERSION, "start_ms": first, "written_cycles": written,
                "first_run_ms": first + (written - 1) * STEP_MS}  # fmt: skip
    (data / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest


def ensure(
    data: Path, partitions: int, open_minutes: int, reps: int, closed_chunks: bool
) -> dict[str, Any]:
    path = data / "manifest.json"
    wanted = {"partitions": partitions, "open_minutes": open_minutes, "reps": reps,
              "closed_chunks": closed_chunks, "version": DATA_VERSION}  # fmt: skip
    if path.exists():
        manifest = json.loads(path.read_text())
        if all(manifest.get(k) == v for k, v in wanted.items()) and (data / "pending").exists():
            return manifest
    print(f"generating the sample log into {data} …", file=sys.stderr, flush=True)
    return generate(data, partitions, open_minutes, reps, closed_chunks)


def write_pending(data: Path, url: str, ts: int, cycle: int) -> None:
    """Cycle ``ts`` into the log as the collector writes it, then compaction when beat's
    minute comes."""
    log = SampleLog(url)
    table = ipc.open_file(pa.memory_map(str(data / "pending" / f"{ts}.arrow"))).read_all()
    log.write_batch(bench_sample_log.CLUSTER, str(ts), table)
    if (cycle + 1) % CYCLES_PER_MINUTE == 0:
        log.compact_open_hours(ts)


def run(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    manifest = ensure(data, args.partitions, args.open_minutes, args.reps, args.closed_chunks)
    from spark_jobs.jobs import run_status_job

    work = data / "work"  # the generated log stays as it is, for the next run
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(data / "samples", work / "samples")
    url = str(work / "samples")
    results = work / "results"
    settle = args.settle_s * 1000
    monitor = Monitor()
    phases = Phases(monitor)
    spark, _, started = start_spark({})
    monitor.jvm = jvm_pid(spark)
    report: dict[str, Any] = {"manifest": manifest, "startup_s": started, "phases": phases.rows,
                              "args": {"slice": args.slice, "settle_s": args.settle_s}}  # fmt: skip

    def incremental(now: int) -> Any:
        return run_status_job(spark, url, str(results / "incremental"), now, LOOK_BACK_MS,
                              incremental=True, settle_ms=settle)  # fmt: skip

    # The first run has no state: it reads the whole window and writes the state.
    now = manifest["first_run_ms"] + 2_000
    with phases.phase("first run, whole window (no state yet)") as row:
        result = incremental(now)
        row["notes"] = dict(result.notes)
        row["input_rows"] = result.input_rows
    pending = sorted(int(p.stem) for p in (data / "pending").iterdir())
    comparisons = []
    for rep, ts in enumerate(pending[: args.reps]):
        print(f"rep {rep + 1}/{args.reps}", file=sys.stderr, flush=True)
        write_pending(data, url, ts, manifest["written_cycles"] + rep)
        before, now = now, ts + 2_000  # the run starts as the cycle lands
        with phases.phase("floor: the samples since the previous run") as row:
            row["partitions"] = floor_job(spark, url, before + 1, now + 1, dedup=False)
        with phases.phase("plumbing: the incremental run without its judging") as row:
            row["groups"] = plumbing_job(spark, url, str(results / "incremental"), now, settle)
        with phases.phase("incremental run") as row:
            result = incremental(now)
            row["input_rows"] = result.input_rows
            row["notes"] = dict(result.notes)
            row["whole_groups"] = result.whole_groups
            row["tables"] = dict(result.tables)
        with phases.phase("whole window run") as row:
            whole = run_status_job(spark, url, str(results / "whole"), now, LOOK_BACK_MS,
                                   slice_ms=None)  # fmt: skip
            row["input_rows"] = whole.input_rows
        compared = {
            "now_ms": now,
            "incremental_equals_whole": same_tables(result.output_path, whole.output_path),
        }
        if args.slice:
            with phases.phase("slice-first run (the job before)") as row:
                sliced = run_status_job(spark, url, str(results / "slice"), now, LOOK_BACK_MS,
                                        slice_from_rows=0)  # fmt: skip
                row["whole_groups"] = sliced.whole_groups
            compared["slice_equals_whole"] = same_tables(sliced.output_path, whole.output_path)
        comparisons.append(compared)
    report["comparisons"] = comparisons
    monitor.stop()
    spark.stop()
    return report


def plumbing_job(spark: Any, url: str, results_url: str, now_ms: int, settle_ms: int) -> int:
    """The incremental run's Spark part alone: as ``spark_jobs.state.Judge.incremental`` reads,
    groups and collects, from the state the previous run left (taken as the run takes it:
    ``jobs._previous_state``), with a per-group function that returns no rows. Returns the
    number of groups the function was called for."""
    from spark_jobs import state
    from spark_jobs.jobs import SUCCESS_MARKER, _Files, _previous_state, latest_run
    from spark_jobs.sample_reader import read_samples
    from spark_jobs.status import _INPUT_COLUMNS, GROUP_KEY

    files = _Files(spark, results_url)
    previous = latest_run(spark, results_url, "status")
    assert previous is not None, "the plumbing goes on from a previous incremental run"
    summary = json.loads(files.read_text(f"{previous}/{SUCCESS_MARKER}"))
    cut_ms = summary["state"]["cut_ms"]
    by_group = state._by_group(_previous_state(files, results_url, f"{previous}/state", summary))
    shipped = spark.sparkContext.broadcast(by_group)
    empty = state._SHIPPED_ARROW_SCHEMA.empty_table()
    calls = spark.sparkContext.accumulator(0)

    def nothing(table: pa.Table) -> pa.Table:
        _ = shipped.value  # fetched, as the run's function fetches it
        calls.add(1)
        return empty

    try:
        samples = read_samples(spark, url, cut_ms, now_ms + 1, dedup=False)
        (
            samples.select(*_INPUT_COLUMNS)
            .groupBy(*GROUP_KEY)
            .applyInArrow(nothing, state.JUDGED_SCHEMA)
            .toArrow()
        )
    finally:
        shipped.destroy()
    return int(calls.value)


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    rows = report["phases"]

    def median(name: str, key: str = "wall_s") -> float:
        return statistics.median(r[key] for r in rows if r["phase"] == name)

    def cpu(name: str) -> float:
        return statistics.median(
            r["spark_cpu_s"] + r["driver_cpu_s"] for r in rows if r["phase"] == name
        )

    out = {
        "floor_s": median("floor: the samples since the previous run"),
        "plumbing_s": median("plumbing: the incremental run without its judging"),
        "incremental_s": median("incremental run"),
        "incremental_cpu_s": cpu("incremental run"),
        "whole_s": median("whole window run"),
        "whole_cpu_s": cpu("whole window run"),
        "slice_s": median("slice-first run (the job before)") if report["args"]["slice"] else None,
        "first_whole_s": median("first run, whole window (no state yet)"),
    }
    per_rep = []
    floors = [r for r in rows if r["phase"].startswith("floor")]
    plumbing = [r for r in rows if r["phase"].startswith("plumbing")]
    runs = [r for r in rows if r["phase"] == "incremental run"]
    wholes = [r for r in rows if r["phase"] == "whole window run"]
    for f, p, i, w in zip(floors, plumbing, runs, wholes, strict=True):
        per_rep.append({"x_floor": i["wall_s"] / f["wall_s"], "x_whole": i["wall_s"] / w["wall_s"],
                        "plumbing_x_floor": p["wall_s"] / f["wall_s"]})  # fmt: skip
    out["x_floor_median"] = statistics.median(r["x_floor"] for r in per_rep)
    out["plumbing_x_floor_median"] = statistics.median(r["plumbing_x_floor"] for r in per_rep)
    out["x_whole_median"] = statistics.median(r["x_whole"] for r in per_rep)
    out["per_rep"] = per_rep
    out["all_equal"] = all(c["incremental_equals_whole"] for c in report["comparisons"])
    out["whole_groups"] = [r.get("whole_groups") for r in runs]
    out["carried"] = [r["notes"].get("carried") for r in runs]
    out["input_rows"] = [r["input_rows"] for r in runs]
    loads = [r[k] for r in rows for k in ("load_before", "load_after")]
    out["load_range"] = (min(loads), max(loads))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--open-minutes", type=int, default=30)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--settle-s", type=int, default=60)
    parser.add_argument("--keep", type=Path, help="generate (or reuse) the data here")
    parser.add_argument(
        "--closed-chunks",
        action="store_true",
        help="leave the closed hour in minute chunks (less memory to generate)",
    )
    parser.add_argument("--slice", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the slice-first run (the job before)")  # fmt: skip
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env = {"date": datetime.now(UTC).isoformat(timespec="minutes"), "master": MASTER,
           "python": platform.python_version(), "cpus": os.cpu_count()}  # fmt: skip
    started = time.perf_counter()
    if args.keep:
        report = run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-incr-") as tmp:
            report = run(args, Path(tmp))
    report["environment"] = env
    report["summary"] = summary = summarize(report)
    report["total_s"] = time.perf_counter() - started
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps({"environment": env, "summary": summary}, indent=2, default=str))
    return 0 if summary["x_floor_median"] <= TARGET_X_FLOOR and summary["all_equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

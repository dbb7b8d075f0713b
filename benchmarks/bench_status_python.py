"""Where an incremental status run's Python time goes: judging against moving Arrow around.

An incremental run (docs/SPARK_JOBS.md, "Incremental runs") calls one Arrow function per
consumer group on the executors' Python workers. This benchmark runs that same function
(``spark_jobs.state._incremental_function``) in this process, without Spark, on the groups of
``benchmarks.bench_sample_log.workload`` (the workload of ``bench_status_incremental``:
80 % healthy, 15 % slow, 5 % stuck, a tenth on quiet topics, a fifth Storm spouts): a whole
look-back's run first (not timed) makes each group's state; then, per repetition, every group
is judged from that state and the samples since the cut, as the next run would be.

Each step of the function is timed where it is called (the names ``spark_jobs.state`` calls,
wrapped by ``bench_cycle.Stopwatch``), so the report splits the time into the judging itself
(``evaluate_group_samples``: the windows and the rule table; ``carry``: what each partition
carries on) and moving the samples between Arrow and Python (the rest: the state's unpacking
and packing, filtering, sorting, the column lists), which costs mostly per group and per
column, whatever the group's size.

    .venv/bin/python -m benchmarks.bench_status_python [--partitions 2000] [--reps 5]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

from benchmarks import bench_sample_log  # noqa: E402
from benchmarks.bench_cycle import Stopwatch  # noqa: E402
from spark_jobs import state  # noqa: E402
from spark_jobs.evaluator.types import EvaluatorConfig  # noqa: E402
from spark_jobs.state import _ARROW_SAMPLE_TYPES  # noqa: E402
from spark_jobs.status import _INPUT_COLUMNS  # noqa: E402

STEP_MS = 10_000
LOOK_BACK_MS = 3_600_000
SETTLE_MS = 60_000
GROUP_KEY = ("cluster", "source", "group")
# The steps timed, where the incremental function calls them; the judging is the first.
JUDGING = "evaluate_group_samples"
# All are looked up in ``spark_jobs.state``'s namespace, where the function calls them.
STEPS = (JUDGING, "carry", "unpack", "explode_state", "_sorted_unique", "_columns",
         "_state_arrays", "_packed")  # fmt: skip


def _input(table: pa.Table) -> pa.Table:
    """The columns a run reads, as the sample reader gives them (newer columns null)."""
    for name in _INPUT_COLUMNS:
        if name not in table.schema.names:
            table = table.append_column(name, pa.nulls(table.num_rows, _ARROW_SAMPLE_TYPES[name]))
    return table.select(list(_INPUT_COLUMNS))


def _groups(table: pa.Table) -> Iterator[tuple[tuple[str, ...], pa.Table]]:
    """A table's groups, each in one chunk, as Spark hands one to an Arrow function."""
    table = table.sort_by([(k, "ascending") for k in GROUP_KEY]).combine_chunks()
    keys = list(zip(*(table.column(k).to_pylist() for k in GROUP_KEY), strict=True))
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            yield keys[start], table.slice(start, i - start)
            start = i


class _Shipped:
    """What the function reads of Spark's broadcast: ``value``."""

    def __init__(self, value: dict[tuple[str, ...], bytes]) -> None:
        self.value = value


def measure(partitions: int, reps: int) -> dict[str, Any]:
    cycles = list(bench_sample_log.workload(partitions, LOOK_BACK_MS // STEP_MS + reps, STEP_MS))
    first_now = cycles[LOOK_BACK_MS // STEP_MS - 1][0] + 1
    config = EvaluatorConfig()
    history = _input(pa.concat_tables([t for ts, t in cycles if ts < first_now]))
    judge = state.Judge(first_now - LOOK_BACK_MS, first_now - SETTLE_MS, first_now, config, {}, {})
    whole = state._whole_function(judge)
    shipped = {}
    for key, table in _groups(history):
        packed = whole(table)
        shipped[key] = packed.column("state")[0].as_py()
    watch = Stopwatch()  # the steps timed from here on: the runs below, not the whole one
    for name in STEPS:
        watch.wrap(state, name, name)
    runs = []
    for rep in range(reps):
        now = first_now + (rep + 1) * STEP_MS
        since = now - STEP_MS - SETTLE_MS  # the previous run's cut
        new = _input(pa.concat_tables([t for ts, t in cycles if since <= ts < now]))
        judge = state.Judge(now - LOOK_BACK_MS, now - SETTLE_MS, now, config, {}, {})
        function = state._incremental_function(judge, _Shipped(shipped))
        groups = list(_groups(new))
        watch.take()
        started, cpu = time.perf_counter(), time.process_time()
        out = [function(table) for _, table in groups]
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        judged = pa.concat_tables(out)
        if pc.any(judged.column("whole")).as_py():
            raise SystemExit("a group was sent back to its whole window: not the steady state")
        runs.append({"wall_s": wall, "cpu_s": cpu, "read": new.num_rows,
                     "judged": judged.num_rows, **watch.take()})  # fmt: skip
    carried = sum(
        len(state.unpack(blob).column("s_ts_ms").combine_chunks().values)
        for blob in shipped.values()
        if blob
    )
    return {"groups": len(shipped), "carried_samples": carried, "runs": runs}


def report(result: dict[str, Any], partitions: int) -> dict[str, Any]:
    runs = result["runs"]

    def median(name: str) -> float:
        return statistics.median(run.get(name, 0.0) for run in runs)

    wall = median("wall_s")
    steps = {name: median(name) for name in STEPS}
    arrow = wall - steps[JUDGING] - steps["carry"]
    return {
        "partitions": partitions,
        "groups": result["groups"],
        "carried_samples": result["carried_samples"],
        "wall_s": round(wall, 3),
        "cpu_s": round(median("cpu_s"), 3),
        "per_partition_us": round(wall / partitions * 1e6, 1),
        "judging_s": round(steps[JUDGING], 3),
        "judging_share": round(steps[JUDGING] / wall, 2),
        "moving_s": round(arrow, 3),
        "moving_share": round(arrow / wall, 2),
        "moving_per_group_ms": round(arrow / result["groups"] * 1000, 2),
        "steps_s": {name: round(value, 4) for name, value in steps.items()},
    }


def _machine() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        commit = "?"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return (f"{now} | {commit} | {os.cpu_count()} cores, load {load} | "
            f"Python {platform.python_version()} | pyarrow {pa.__version__}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(_machine(), flush=True)
    result = report(measure(args.partitions, args.reps), args.partitions)
    print(json.dumps(result, indent=2))
    print(f"judging {result['judging_share']:.0%} of the Python time, moving samples between "
          f"Arrow and Python {result['moving_share']:.0%} "
          f"({result['moving_per_group_ms']} ms a group)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

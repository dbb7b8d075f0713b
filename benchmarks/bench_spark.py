"""Spark jobs benchmark: the status and rollups jobs on a realistic sample log, against a floor
and a single-process baseline.

Data: ``benchmarks.bench_sample_log.workload`` (imported, not copied): 10,000 partitions polled
every 10 s, most healthy with moving offsets, 15 % slow, 5 % stuck and dead, 10 % of groups
quiet, Storm spouts (20 %) with pending/failed/acked. It is written once through
``SampleLog.write_batch`` and every hour compacted, as production has its closed hours, into
two logs: the *main* log (``max(hours × 360, 10 M / partitions)`` cycles: the status job reads
its first ``--hours`` hours, the 10 M-row rollup all of it) and the *1 M* log (the first
100 cycles, the 1 M-row rollup). Generation runs in a child process and is not timed.

Measured in one run, in one Spark session on ``local[2]`` (``spark_jobs.session``):

* start-up: session creation and a first trivial action;
* the status job, ``spark_jobs.jobs.run_status_job`` (read, evaluate, write a result run), its
  first run in the fresh session (cold: the target "≤ 30 s including start-up") and then
  ``--reps`` warm runs interleaved with the floor and the baseline;
* the floor: a Spark job that reads the same window and counts rows per partition (Parquet
  scan of the key columns only), and the same with the project's reader (its dedup);
* the single-process baseline, in a child process: the same window read with pyarrow
  (``SampleLog.read``), grouped per partition with numpy, windows built by
  ``spark_jobs.windows.window_from_samples``, verdicts by ``evaluate_partition`` and
  ``evaluate_group``, results written with pyarrow; its verdicts are compared with the Spark
  run's, partition by partition;
* the rollups job (``run_rollups_job``) on the 1 M log and on 10 M rows of the main log, and
  the same rollups in numpy/pyarrow in a child process (results compared on 1 M);
* a breakdown of the status job's stages (``--profile``): a scan of all columns, the read
  and cache, the per-group ``applyInArrow`` evaluation on the cached samples, the Parquet
  writes.

Wall times, CPU seconds (driver; JVM and Python workers, each process's own CPU time sampled
every 0.25 s) and peak RSS (driver VmHWM, JVM and Python workers sampled) are reported; the
machine is shared, so the load average is recorded around every phase.

    .venv/bin/python -m benchmarks.bench_spark [--partitions 10000] [--hours 1] [--reps 3]
        [--keep DIR] [--large-reps 1] [--rollup-rows 1000000 10000000]
        [--only status|rollups] [--no-profile] [--no-baseline] [--spark-conf KEY=VALUE ...]
        [--json FILE]

``--keep DIR`` generates the data into DIR (and reuses it when it is already there);
``--spark-conf`` overrides ``spark_jobs.session``'s local configuration for an experiment.
``--no-baseline`` leaves the single-process baselines out: they hold the whole window in one
process's memory, which at 36 M samples (``--partitions 100000``) is more than this machine has.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from benchmarks import bench_sample_log  # noqa: E402
from collectors.sample_log import HOUR_MS, SampleLog  # noqa: E402

CLUSTER = bench_sample_log.CLUSTER
STEP_MS = 10_000  # the workload's poll interval
CYCLES_PER_HOUR = HOUR_MS // STEP_MS
SMALL_ROWS, LARGE_ROWS = 1_000_000, 10_000_000
MASTER = "local[2]"
TARGET_STATUS_S = 30.0  # cold status run including start-up
TARGET_STATUS_X_FLOOR = 3.0
TARGET_ROLLUP_RATIO = 12.0  # time(10 M) / time(1 M)
DATA_VERSION = 1  # bump when the generated layout changes
PARTITION_KEY = ("cluster", "source", "group", "topic", "partition")
GROUP_KEY = ("cluster", "source", "group")
_STRINGS = ("cluster", "source", "group", "topic", "owner", "topology_id")
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 2**20


# -- data ------------------------------------------------------------------------------------


def plan(partitions: int, hours: int, rows: tuple[int, int]) -> dict[str, int]:
    """Cycles of the two logs and the windows the jobs read."""
    large_cycles = math.ceil(rows[1] / partitions)
    return {
        "partitions": partitions,
        "hours": hours,
        "main_cycles": max(hours * CYCLES_PER_HOUR, large_cycles),
        "small_cycles": math.ceil(rows[0] / partitions),
        "large_cycles": large_cycles,
        "version": DATA_VERSION,
    }


def generate_main(data: Path, partitions: int, hours: int, rows: tuple[int, int]) -> int:
    """Child process: write both logs and compact every hour; print the manifest."""
    layout = plan(partitions, hours, rows)
    for name in ("samples", "samples-1m"):
        shutil.rmtree(data / name, ignore_errors=True)
    main_log, small_log = SampleLog(data / "samples"), SampleLog(data / "samples-1m")
    started = time.perf_counter()
    first = last = None
    for cycle, (ts, table) in enumerate(
        bench_sample_log.workload(partitions, layout["main_cycles"], STEP_MS)
    ):
        first = ts if first is None else first
        last = ts
        main_log.write_batch(CLUSTER, str(ts), table)
        if cycle < layout["small_cycles"]:
            small_log.write_batch(CLUSTER, str(ts), table)
    written = time.perf_counter() - started
    assert first is not None and last is not None
    far = last + 2 * HOUR_MS  # every hour closed, as production compacts them
    compacted = [r.rows_out for log in (main_log, small_log) for r in log.compact_closed_hours(far)]
    manifest = {
        **layout,
        "start_ms": first,
        "last_ms": last,
        "step_ms": STEP_MS,
        "generator": "benchmarks.bench_sample_log.workload (seed 7)",
        "write_s": round(written, 1),
        "generate_s": round(time.perf_counter() - started, 1),
        "compacted_rows": compacted,
        "bytes": {name: _bytes(data / name) for name in ("samples", "samples-1m")},
        "peak_rss_mib": round(_hwm(os.getpid()) / MIB),
    }
    (data / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest))
    return 0


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*.parquet"))


def ensure_data(data: Path, partitions: int, hours: int, rows: tuple[int, int]) -> dict[str, Any]:
    manifest_path = data / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if all(manifest.get(k) == v for k, v in plan(partitions, hours, rows).items()):
            manifest["reused"] = True
            return manifest
    data.mkdir(parents=True, exist_ok=True)
    print(f"generating the sample logs into {data} …", file=sys.stderr, flush=True)
    out = _child("generate", "--data", str(data), "--partitions", str(partitions),
                 "--hours", str(hours), "--rollup-rows", *map(str, rows))  # fmt: skip
    out["reused"] = False
    return out


# -- processes: CPU and memory ---------------------------------------------------------------


def _stat(pid: int) -> tuple[int, float, int] | None:
    """(parent pid, CPU seconds of the process itself, RSS bytes) of a live process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime, all threads
    return int(fields[1]), cpu, int(fields[21]) * _PAGE


def _tree(root: int) -> dict[int, tuple[int, float, int]]:
    """``root`` and its descendants."""
    stats: dict[int, tuple[int, float, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := _stat(int(entry))) is not None:
            stats[int(entry)] = found
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _, _) in stats.items():
        children[ppid].append(pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            out[pid] = stats[pid]
            todo.extend(children[pid])
    return out


def _hwm(pid: int) -> int:
    """Peak RSS (VmHWM) of a process, bytes; 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Monitor:
    """Samples the Spark process tree (the JVM; pyspark's daemon and Python workers below it)
    every 0.25 s: RSS peaks, and each process's own CPU seconds as last seen, so that a Python
    worker that exits keeps its CPU time (up to the last sample) in the totals."""

    def __init__(self) -> None:
        self.jvm: int | None = None
        self._lock = threading.Lock()
        self._peaks: dict[str, int] = {}
        self._cpu: dict[int, float] = {}  # pid -> own CPU seconds, last seen
        self._workers_hwm: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.sample()

    def sample(self) -> None:
        if self.jvm is None:
            return
        tree = _tree(self.jvm)
        if self.jvm not in tree:
            return
        python = {pid: rss for pid, (_, _, rss) in tree.items() if pid != self.jvm}
        now = {
            "jvm": tree[self.jvm][2],
            "python_workers_sum": sum(python.values()),
            "python_worker_max": max(python.values(), default=0),
        }
        now["spark_tree"] = now["jvm"] + now["python_workers_sum"]
        with self._lock:
            for pid in python:
                self._workers_hwm[pid] = max(self._workers_hwm.get(pid, 0), _hwm(pid))
            for pid, (_, cpu, _) in tree.items():
                self._cpu[pid] = cpu
            for key, value in now.items():
                self._peaks[key] = max(self._peaks.get(key, 0), value)

    def cpu(self) -> dict[int, float]:
        self.sample()
        with self._lock:
            return dict(self._cpu)

    def cpu_since(self, before: dict[int, float]) -> tuple[float, float]:
        """CPU seconds (JVM, Python processes) used since ``before`` (a ``cpu()``)."""
        after = self.cpu()
        used = {pid: cpu - before.get(pid, 0.0) for pid, cpu in after.items()}
        jvm = used.pop(self.jvm, 0.0) if self.jvm is not None else 0.0
        return jvm, sum(used.values())

    def take_peaks(self) -> dict[str, int]:
        self.sample()
        with self._lock:
            peaks, self._peaks = self._peaks, {}
        return peaks

    def worker_hwm_max(self) -> int:
        with self._lock:
            return max(self._workers_hwm.values(), default=0)

    def stop(self) -> None:
        self._stop.set()


class Phases:
    """Wall, CPU and peak memory of named phases, in order."""

    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor
        self.rows: list[dict[str, Any]] = []

    @contextmanager
    def phase(self, name: str, **extra: Any) -> Iterator[dict[str, Any]]:
        row: dict[str, Any] = {"phase": name, **extra, "load_before": os.getloadavg()[0]}
        self.monitor.take_peaks()
        before, cpu, wall = self.monitor.cpu(), time.process_time(), time.perf_counter()
        try:
            yield row
        finally:
            row["wall_s"] = time.perf_counter() - wall
            row["driver_cpu_s"] = time.process_time() - cpu
            row["jvm_cpu_s"], row["python_cpu_s"] = self.monitor.cpu_since(before)
            row["spark_cpu_s"] = row["jvm_cpu_s"] + row["python_cpu_s"]
            row["load_after"] = os.getloadavg()[0]
            row["peaks_mib"] = {k: round(v / MIB) for k, v in self.monitor.take_peaks().items()}
            self.rows.append(row)
            print(
                f"  {name}: {row['wall_s']:.1f} s wall, CPU JVM {row['jvm_cpu_s']:.1f} s + "
                f"Python workers {row['python_cpu_s']:.1f} s + driver {row['driver_cpu_s']:.1f} s,"
                f" load {row['load_before']:.1f}→{row['load_after']:.1f}",
                file=sys.stderr,
                flush=True,
            )


def _child(*args: str) -> dict[str, Any]:
    """Run this module in a child process; its last stdout line is a JSON report."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_spark", "--child", *args],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args[0]} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the single-process baseline (child processes) -------------------------------------------


class Stopwatch:
    def __init__(self) -> None:
        self.parts: dict[str, float] = defaultdict(float)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.parts[name] += time.perf_counter() - started


class Columns:
    """A window of samples as numpy columns sorted by partition then time.

    Read hour by hour with ``SampleLog.read`` (pyarrow; it deduplicates an hour that is not
    one compacted file); strings become codes into one dictionary per column as each hour is
    read, so the strings of the whole window are never all in memory.
    """

    def __init__(self, url: str, start_ms: int, end_ms: int, names: tuple[str, ...]) -> None:
        log = SampleLog.from_url(url)
        self.dictionary: dict[str, list[str]] = {}
        codes: dict[str, dict[str, int]] = {n: {} for n in names if n in _STRINGS}
        parts: dict[str, list[np.ndarray]] = defaultdict(list)
        nulls: dict[str, list[np.ndarray]] = defaultdict(list)
        for hour in log.hours(start=start_ms, end=end_ms):
            table = log.read(hour.cluster, max(start_ms, hour.start_ms), min(end_ms, hour.end_ms))
            for name in names:
                column = table[name].combine_chunks()
                if name in codes:
                    encoded = column.dictionary_encode()
                    known = codes[name]
                    remap = np.array(
                        [known.setdefault(v, len(known)) for v in encoded.dictionary.to_pylist()]
                        or [0],
                        np.int32,
                    )
                    index = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
                    parts[name].append(np.where(encoded.indices.is_null().to_numpy(
                        zero_copy_only=False), -1, remap[index]))  # fmt: skip
                    continue
                nulls[name].append(column.is_null().to_numpy(zero_copy_only=False))
                if column.null_count:
                    column = column.fill_null(False if pa.types.is_boolean(column.type) else 0)
                parts[name].append(column.to_numpy(zero_copy_only=False))
            del table
        self.rows = sum(len(p) for p in parts["ts_ms"])
        arrays = {n: np.concatenate(parts.pop(n)) for n in names}
        masks = {n: np.concatenate(chunks) for n, chunks in nulls.items()}
        self.dictionary = {n: list(c) for n, c in codes.items()}
        if _grouped(arrays, self.rows):  # one compacted hour: sorted by partition and time
            self.values = arrays
            self.nulls = {n: m for n, m in masks.items() if m.any()}
        else:
            order = np.lexsort(tuple(arrays[n] for n in ("ts_ms", *reversed(PARTITION_KEY))))
            self.values = {n: a[order] for n, a in arrays.items()}
            self.nulls = {n: m[order] for n, m in masks.items() if m.any()}
            del order
        del arrays, masks
        keys = [self.values[n] for n in PARTITION_KEY]
        self.partition_starts = _starts(keys, self.rows)
        self.group_starts = _starts(keys[:3], self.rows)

    def text(self, name: str, codes: np.ndarray) -> list[str | None]:
        words = self.dictionary[name]
        return [words[c] if c >= 0 else None for c in codes.tolist()]

    def lists(self, name: str, start: int, end: int) -> list[Any]:
        """One partition's column as plain Python values, None where null."""
        if name in self.dictionary:
            return self.text(name, self.values[name][start:end])
        values = self.values[name][start:end].tolist()
        mask = self.nulls.get(name)
        if mask is not None:
            part = mask[start:end]
            if part.all():
                return [None] * (end - start)
            for i in np.flatnonzero(part).tolist():
                values[i] = None
        return values


def _starts(keys: list[np.ndarray], rows: int) -> np.ndarray:
    """Indices where the key changes, with 0 first and ``rows`` last."""
    if rows == 0:
        return np.array([0], np.int64)
    differs = np.zeros(rows - 1, bool)
    for key in keys:
        differs |= key[1:] != key[:-1]
    return np.concatenate(([0], np.flatnonzero(differs) + 1, [rows])).astype(np.int64)


def _grouped(arrays: dict[str, np.ndarray], rows: int) -> bool:
    """Whether every partition's rows are contiguous and in time order already."""
    keys = [arrays[n] for n in PARTITION_KEY]
    starts = _starts(keys, rows)
    distinct = set(zip(*(k[starts[:-1]].tolist() for k in keys), strict=True))
    if len(distinct) != len(starts) - 1:
        return False
    later = arrays["ts_ms"][1:] > arrays["ts_ms"][:-1]
    later[starts[1:-1] - 1] = True  # a new partition may start at any time
    return bool(later.all())


def _group_of_rows(starts: np.ndarray, rows: int) -> np.ndarray:
    ids = np.zeros(rows, np.int64)
    ids[starts[1:-1]] = 1
    return np.cumsum(ids)


def baseline_status(url: str, now_ms: int, window_ms: int, out: Path) -> dict[str, Any]:
    """The status job's computation in this process: pyarrow, numpy and the job's own
    window builder and evaluator."""
    from spark_jobs import windows
    from spark_jobs.evaluator import EvaluatorConfig, evaluate_group, evaluate_partition
    from spark_jobs.status import diagnosis_json

    config = EvaluatorConfig()
    columns = windows.WINDOW_COLUMNS
    watch = Stopwatch()
    cpu, wall = time.process_time(), time.perf_counter()
    with watch("read (SampleLog.read) + sort by partition"):
        names = tuple(dict.fromkeys((*PARTITION_KEY, *columns, "owner")))
        data = Columns(url, now_ms - window_ms, now_ms + 1, names)
    starts, gstarts = data.partition_starts, data.group_starts
    count = len(starts) - 1
    with watch("group inputs (spout topics, rebalances)"):
        firsts = starts[:-1]
        keys = {n: data.values[n][firsts] for n in PARTITION_KEY}
        text = {n: data.text(n, keys[n]) for n in PARTITION_KEY[:4]}
        numbers = keys["partition"].tolist()
        group_of = _group_of_rows(gstarts, data.rows)[firsts]
        topics: dict[int, list[str]] = defaultdict(list)
        for i in range(count):
            if text["source"][i] == "storm":
                topics[int(group_of[i])].append(text["topic"][i])
        spout_topics = {g: sorted(set(t)) for g, t in topics.items() if len(set(t)) > 1}
        accepts = inspect.signature(windows.window_from_samples).parameters
        rebalances, rebalancing = _rebalances(data) if "rebalances_ms" in accepts else ({}, {})
    verdicts = []
    for i in range(count):
        start, end = int(starts[i]), int(starts[i + 1])
        group = int(group_of[i])
        with watch("columns as Python lists"):
            samples = {name: data.lists(name, start, end) for name in columns}
        with watch("window_from_samples"):
            extra: dict[str, Any] = {}
            if "rebalances_ms" in accepts:
                extra = {"rebalances_ms": rebalances.get(group, ()),
                         "rebalancing": rebalancing.get(group)}  # fmt: skip
            pid = windows.partition_id(*(text[n][i] for n in PARTITION_KEY[:4]), numbers[i])
            window = windows.window_from_samples(
                pid, samples, config, spout_topics.get(group, ()), **extra
            )
        with watch("evaluate_partition"):
            verdicts.append(evaluate_partition(window, config, now_ms))
    with watch("evaluate_group"):
        groups = []
        bounds = np.searchsorted(firsts, gstarts)  # partition index where each group starts
        for g in range(len(gstarts) - 1):
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            groups.append((lo, evaluate_group(text["group"][lo], verdicts[lo:hi]), hi - lo))
    with watch("write (pyarrow)"):
        out.mkdir(parents=True, exist_ok=True)
        partitions = pa.table(
            {
                **{n: text[n] for n in PARTITION_KEY[:4]},
                "partition": pa.array(numbers, pa.int32()),
                "status": [v.status for v in verdicts],
                "complete": [float(v.complete) for v in verdicts],
                "diagnosis": [diagnosis_json(v) for v in verdicts],
                "reason": [v.reason for v in verdicts],
                "lag": pa.array([v.lag for v in verdicts], pa.int64()),
                "evaluated_at_ms": pa.array([now_ms] * count, pa.int64()),
            }
        )
        pq.write_table(partitions, out / "partitions.parquet")
        group_table = pa.table(
            {
                **{n: [text[n][lo] for lo, _, _ in groups] for n in GROUP_KEY},
                "status": [g.status for _, g, _ in groups],
                "complete": [float(g.complete) for _, g, _ in groups],
                "total_lag": pa.array([g.total_lag for _, g, _ in groups], pa.int64()),
                "partitions": pa.array([n for _, _, n in groups], pa.int32()),
                "evaluated_at_ms": pa.array([now_ms] * len(groups), pa.int64()),
            }
        )
        pq.write_table(group_table, out / "groups.parquet")
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "rows": data.rows,
        "partitions": count,
        "groups": len(groups),
        "parts_s": dict(watch.parts),
        "statuses": dict(Counter(v.status for v in verdicts)),
    }


def _rebalances(data: Columns) -> tuple[dict[int, tuple[int, ...]], dict[int, bool | None]]:
    """Per group (Kafka and ZooKeeper sources): the polls at which ownership of a partition
    changed, and whether the group's partitions were only partly owned at its last poll;
    non-stale samples only (``spark_jobs.windows``'s rebalance inputs)."""
    sources = data.dictionary["source"]
    consumer_codes = [i for i, s in enumerate(sources) if s in ("kafka", "zookeeper")]
    stale = data.values["stale"].astype(bool)
    rows = np.flatnonzero(np.isin(data.values["source"], consumer_codes) & ~stale)
    if len(rows) == 0:
        return {}, {}
    partition = _group_of_rows(data.partition_starts, data.rows)[rows]
    group = _group_of_rows(data.group_starts, data.rows)[rows]
    owner = data.values["owner"][rows]
    ts = data.values["ts_ms"][rows]
    changed = np.flatnonzero((partition[1:] == partition[:-1]) & (owner[1:] != owner[:-1])) + 1
    moves: dict[int, set[int]] = defaultdict(set)
    for g, t in zip(group[changed].tolist(), ts[changed].tolist(), strict=True):
        moves[g].add(t)
    starts = np.concatenate(([0], np.flatnonzero(group[1:] != group[:-1]) + 1))
    last = np.maximum.reduceat(ts, starts)
    at_last = ts == np.repeat(last, np.diff(np.append(starts, len(rows))))
    owned = np.add.reduceat((at_last & (owner >= 0)).astype(np.int64), starts)
    total = np.add.reduceat(at_last.astype(np.int64), starts)
    partly = {
        int(g): (None if o == 0 else bool(o < n))
        for g, o, n in zip(group[starts].tolist(), owned.tolist(), total.tolist(), strict=True)
    }
    return {g: tuple(sorted(t)) for g, t in moves.items()}, partly


def baseline_rollups(url: str, now_ms: int, window_ms: int, out: Path) -> dict[str, Any]:
    """The rollups job's computation in this process (numpy over pyarrow columns), with the
    job's window arithmetic and ``spark_jobs.rollups``' definitions."""
    from spark_jobs.jobs import ROLLUP_LOOKBEHIND_MS, ROLLUP_TABLES

    watch = Stopwatch()
    cpu, wall = time.process_time(), time.perf_counter()
    starts_ms = {"1m": (now_ms - window_ms) // 60_000 * 60_000,
                 "1h": (now_ms - window_ms) // HOUR_MS * HOUR_MS}  # fmt: skip
    read_from = max(0, min(starts_ms.values()) - ROLLUP_LOOKBEHIND_MS)
    with watch("read (SampleLog.read) + sort by partition"):
        names = (*PARTITION_KEY, "ts_ms", "committed", "latest", "lag", "time_lag_s")
        data = Columns(url, read_from, now_ms + 1, names)
    tables: dict[str, list[pa.Table]] = defaultdict(list)
    for resolution, start_ms in starts_ms.items():
        with watch(f"partitions {resolution}"):
            partitions, rows = _partition_rollup(data, resolution, start_ms)
        tables["partition"].append(partitions)
        for level in ("topic", "group", "cluster"):
            with watch(f"levels {resolution}"):
                tables[level].append(_level_rollup(data, rows, level, resolution, start_ms))
    with watch("write (pyarrow)"):
        out.mkdir(parents=True, exist_ok=True)
        counts = {}
        for table_name, level in ROLLUP_TABLES.items():
            merged = pa.concat_tables(tables[level])
            pq.write_table(merged, out / f"{table_name}.parquet")
            counts[table_name] = merged.num_rows
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "rows": data.rows,
        "tables": counts,
        "parts_s": dict(watch.parts),
    }


_BUCKET_MS = {"1m": 60_000, "1h": HOUR_MS}
_I64_MIN = np.iinfo(np.int64).min


def _masked(data: Columns, name: str) -> tuple[np.ndarray, np.ndarray]:
    values = data.values[name]
    mask = data.nulls.get(name)
    return values, (~mask if mask is not None else np.ones(len(values), bool))


def _last_valid(valid: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per run [start, end): index of its last row where ``valid``, -1 if none."""
    index = np.where(valid, np.arange(len(valid)), -1)
    last = np.maximum.accumulate(index)[ends - 1] if len(valid) else np.zeros(0, np.int64)
    return np.where(last >= starts, last, -1)


def _eta(lag: np.ndarray, lag_ok: np.ndarray, consume: np.ndarray, produce: np.ndarray):
    """``spark_jobs.rollups.eta_seconds`` with NaN for null."""
    drain = consume - produce
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.where(drain > 0, lag / drain, np.nan)
    eta = np.where(lag_ok & (lag <= 0), 0.0, eta)
    return np.where(lag_ok, eta, np.nan)


def _int_or_null(values: np.ndarray, ok: np.ndarray) -> pa.Array:
    return pa.array(values.astype(np.int64), pa.int64(), mask=~ok)


def _float_or_null(values: np.ndarray) -> pa.Array:
    return pa.array(values, pa.float64(), mask=np.isnan(values))


def _partition_rollup(
    data: Columns, resolution: str, start_ms: int
) -> tuple[pa.Table, dict[str, np.ndarray]]:
    size = _BUCKET_MS[resolution]
    ts = data.values["ts_ms"]
    n = data.rows
    partition_id = _group_of_rows(data.partition_starts, n)
    has_prev = np.zeros(n, bool)
    has_prev[1:] = partition_id[1:] == partition_id[:-1]
    dt = np.zeros(n, np.int64)
    dt[1:] = ts[1:] - ts[:-1]
    deltas = {}
    for name in ("latest", "committed", "lag"):
        values, ok = _masked(data, name)
        both = has_prev.copy()
        both[1:] &= ok[1:] & ok[:-1]
        delta = np.zeros(n, np.int64)
        delta[1:] = values[1:] - values[:-1]
        deltas[name] = (np.where(both, delta, 0), both)
    bucket = ts - ts % size
    keep = bucket >= start_ms
    rows = np.flatnonzero(keep)
    pid, bk = partition_id[rows], bucket[rows]
    run = np.concatenate(([0], np.flatnonzero((pid[1:] != pid[:-1]) | (bk[1:] != bk[:-1])) + 1))
    ends = np.append(run[1:], len(rows))

    def total(values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, run) if len(rows) else np.zeros(0, values.dtype)

    out: dict[str, Any] = {}
    firsts = rows[run]
    for name in PARTITION_KEY[:4]:
        out[name] = data.text(name, data.values[name][firsts])
    out["partition"] = pa.array(data.values["partition"][firsts], pa.int32())
    out["resolution"] = [resolution] * len(run)
    out["bucket_start_ms"] = pa.array(bk[run], pa.int64())
    out["samples"] = pa.array(ends - run, pa.int64())
    lasts = {}
    for name in ("committed", "latest", "lag"):
        values, ok = _masked(data, name)
        last = _last_valid(ok[rows], run, ends)
        lasts[name] = (np.where(last >= 0, values[rows][np.maximum(last, 0)], 0), last >= 0)
        out[name] = _int_or_null(*lasts[name])
    lag, lag_ok = _masked(data, "lag")
    lag, lag_ok = lag[rows], lag_ok[rows]
    lag_count = total(lag_ok.astype(np.int64))
    has_lag = lag_count > 0
    out["max_lag"] = _int_or_null(
        np.maximum.reduceat(np.where(lag_ok, lag, _I64_MIN), run), has_lag
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        out["avg_lag"] = _float_or_null(
            np.where(has_lag, total(np.where(lag_ok, lag, 0)) / lag_count, np.nan)
        )
    time_lag, time_ok = _masked(data, "time_lag_s")
    out["max_time_lag_s"] = _float_or_null(
        np.fmax.reduceat(np.where(time_ok, time_lag, np.nan)[rows], run)
    )
    rates = {}
    for name, rate in (("latest", "produce_per_s"), ("committed", "consume_per_s"),
                       ("lag", "lag_slope_per_s")):  # fmt: skip
        delta, ok = deltas[name]
        elapsed = total(np.where(ok, dt, 0)[rows])
        summed = total(delta[rows])
        with np.errstate(invalid="ignore", divide="ignore"):
            rates[rate] = np.where(elapsed > 0, summed * 1000.0 / elapsed, np.nan)
        out[rate] = _float_or_null(rates[rate])
    last_lag, last_lag_ok = lasts["lag"]
    out["eta_s"] = _float_or_null(
        _eta(
            last_lag.astype(np.float64), last_lag_ok, rates["consume_per_s"], rates["produce_per_s"]
        )
    )
    keep_rows = {
        "firsts": firsts,
        "bucket": bk[run],
        "lag": last_lag,
        "lag_ok": last_lag_ok,
        "max_time_lag_s": np.fmax.reduceat(np.where(time_ok, time_lag, np.nan)[rows], run)
        if len(rows)
        else np.zeros(0),
        **rates,
        "sample_rows": rows,
        "sample_bucket": bk,
    }
    return pa.table(out), keep_rows


def _level_ids(data: Columns, level: str) -> np.ndarray:
    width = {"topic": 4, "group": 3, "cluster": 1}[level]
    keys = [data.values[n] for n in PARTITION_KEY[:width]]
    return _group_of_rows(_starts(keys, data.rows), data.rows)


def _level_rollup(
    data: Columns, parts: dict[str, np.ndarray], level: str, resolution: str, start_ms: int
) -> pa.Table:
    width = {"topic": 4, "group": 3, "cluster": 1}[level]
    level_of = _level_ids(data, level)
    # Total lag of the level at each poll of the bucket: max and mean over the polls.
    rows, bucket = parts["sample_rows"], parts["sample_bucket"]
    lag, lag_ok = _masked(data, "lag")
    ids, ts = level_of[rows], data.values["ts_ms"][rows]
    order = np.lexsort((ts, ids))
    ids, ts, bucket = ids[order], ts[order], bucket[order]
    lag, lag_ok = lag[rows][order], lag_ok[rows][order]
    poll = np.concatenate(([0], np.flatnonzero((ids[1:] != ids[:-1]) | (ts[1:] != ts[:-1])) + 1))
    poll_total = np.add.reduceat(np.where(lag_ok, lag, 0), poll) if len(ids) else np.zeros(0)
    poll_ok = (np.add.reduceat(lag_ok.astype(np.int64), poll) > 0) if len(ids) else poll
    poll_ids, poll_bucket = ids[poll], bucket[poll]
    run = (
        np.concatenate(
            (
                [0],
                np.flatnonzero(
                    (poll_ids[1:] != poll_ids[:-1]) | (poll_bucket[1:] != poll_bucket[:-1])
                )
                + 1,
            )
        )
        if len(poll)
        else np.zeros(0, np.int64)
    )
    count = np.add.reduceat(poll_ok.astype(np.int64), run) if len(run) else run
    over_max = (
        np.maximum.reduceat(np.where(poll_ok, poll_total, _I64_MIN), run) if len(run) else run
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        over_avg = (
            np.add.reduceat(np.where(poll_ok, poll_total, 0), run) / count if len(run) else run
        )
    over = {(int(i), int(b)): (int(m), float(a), int(c))
            for i, b, m, a, c in zip(poll_ids[run], poll_bucket[run], over_max, over_avg, count,
                                     strict=True)}  # fmt: skip
    # Sums over the partitions' rows.
    pid, pb = level_of[parts["firsts"]], parts["bucket"]
    order = np.lexsort((pb, pid))
    pid, pb = pid[order], pb[order]
    run = np.concatenate(([0], np.flatnonzero((pid[1:] != pid[:-1]) | (pb[1:] != pb[:-1])) + 1))
    if len(pid) == 0:
        run = np.zeros(0, np.int64)
    ends = np.append(run[1:], len(pid))

    def nullable_sum(values: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v, k = values[order], ok[order]
        return np.add.reduceat(np.where(k, v, 0), run), np.add.reduceat(k.astype(np.int64), run) > 0

    out: dict[str, Any] = {}
    firsts = parts["firsts"][order][run]
    for name in PARTITION_KEY[:width]:
        out[name] = data.text(name, data.values[name][firsts])
    out["resolution"] = [resolution] * len(run)
    out["bucket_start_ms"] = pa.array(pb[run], pa.int64())
    out["partitions"] = pa.array(ends - run, pa.int64())
    lag_sum, lag_sum_ok = nullable_sum(parts["lag"], parts["lag_ok"])
    out["lag"] = _int_or_null(lag_sum, lag_sum_ok)
    stats = [over.get((int(i), int(b))) for i, b in zip(pid[run], pb[run], strict=True)]
    max_ok = np.array([s is not None and s[2] > 0 for s in stats], bool)
    out["max_lag"] = _int_or_null(np.array([s[0] if s else 0 for s in stats], np.int64), max_ok)
    out["avg_lag"] = _float_or_null(np.array([s[1] if s and s[2] else np.nan for s in stats]))
    out["max_time_lag_s"] = _float_or_null(np.fmax.reduceat(parts["max_time_lag_s"][order], run)
                                           if len(run) else np.zeros(0))  # fmt: skip
    rates = {}
    for rate in ("produce_per_s", "consume_per_s", "lag_slope_per_s"):
        values = parts[rate]
        summed, ok = nullable_sum(np.nan_to_num(values), ~np.isnan(values))
        rates[rate] = np.where(ok, summed, np.nan)
        out[rate] = _float_or_null(rates[rate])
    out["eta_s"] = _float_or_null(
        _eta(lag_sum.astype(np.float64), lag_sum_ok, rates["consume_per_s"], rates["produce_per_s"])
    )
    return pa.table(out)


def child_main(args: argparse.Namespace) -> int:
    what = args.child
    if what == "generate":
        return generate_main(Path(args.data), args.partitions, args.hours, tuple(args.rollup_rows))
    imports = time.perf_counter()
    if what == "status":
        import spark_jobs.status  # noqa: F401  (pyspark, pandas: not timed)

        report = baseline_status(args.url, args.now, args.window, Path(args.out))
    elif what == "rollups":
        import spark_jobs.jobs  # noqa: F401

        report = baseline_rollups(args.url, args.now, args.window, Path(args.out))
    else:
        raise SystemExit(f"unknown child {what}")
    report["process_s"] = time.perf_counter() - imports
    report["peak_rss_mib"] = round(_hwm(os.getpid()) / MIB)
    print(json.dumps(report))
    return 0


# -- comparisons of results ------------------------------------------------------------------


def compare_status(spark_run: str, baseline: Path) -> dict[str, Any]:
    spark = pq.read_table(f"{spark_run}/partitions").to_pandas()
    mine = pq.read_table(baseline / "partitions.parquet").to_pandas()
    merged = spark.merge(mine, on=list(PARTITION_KEY), how="outer", suffixes=("_spark", "_base"),
                         indicator=True)  # fmt: skip
    differ = merged["_merge"] != "both"
    for name in ("status", "reason", "diagnosis", "lag", "complete"):
        a, b = merged[f"{name}_spark"], merged[f"{name}_base"]
        differ |= ~((a == b) | (a.isna() & b.isna()))
    examples = merged[differ].head(3)
    return {
        "partitions": len(merged),
        "differ": int(differ.sum()),
        "examples": [
            {k: str(v) for k, v in row.items() if k.endswith(("_spark", "_base")) or k == "topic"}
            for _, row in examples.iterrows()
        ],
        "statuses": dict(Counter(spark["status"])),
    }


def compare_rollups(spark_run: str, baseline: Path) -> dict[str, Any]:
    from spark_jobs.jobs import ROLLUP_TABLES
    from spark_jobs.rollups import LEVEL_KEYS

    report = {}
    for table, level in ROLLUP_TABLES.items():
        keys = [*(PARTITION_KEY if level == "partition" else LEVEL_KEYS[level]),
                "resolution", "bucket_start_ms"]  # fmt: skip
        spark = pq.read_table(f"{spark_run}/{table}").to_pandas()
        mine = pq.read_table(baseline / f"{table}.parquet").to_pandas()
        merged = spark.merge(mine, on=keys, how="outer", suffixes=("_s", "_b"), indicator=True)
        differ = merged["_merge"] != "both"
        bad_columns = []
        for column in spark.columns:
            if column in keys:
                continue
            a = merged[f"{column}_s"].astype(float)
            b = merged[f"{column}_b"].astype(float)
            close = np.isclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True)
            if not close.all():
                bad_columns.append(column)
            differ |= ~close
        report[table] = {"rows": len(merged), "differ": int(differ.sum()), "columns": bad_columns}
    return report


# -- the Spark side --------------------------------------------------------------------------


def start_spark(overrides: dict[str, str]) -> tuple[Any, float, float]:
    from spark_jobs import session

    if overrides:  # an experiment: the session module's own settings, some replaced
        session._LOCAL_CONFIG = {**session._LOCAL_CONFIG, **overrides}
    started = time.perf_counter()
    spark = session.spark_session("lagwatch-bench", master=MASTER)
    created = time.perf_counter() - started
    spark.range(1).count()
    return spark, created, time.perf_counter() - started


def jvm_pid(spark: Any) -> int | None:
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is not None:
        return proc.pid
    for pid, (ppid, _, _) in _tree(os.getpid()).items():
        if ppid == os.getpid() and "java" in Path(f"/proc/{pid}/comm").read_text():
            return pid
    return None


def floor_job(spark: Any, url: str, start_ms: int, end_ms: int, dedup: bool) -> int:
    """Read the window and count rows per partition: the Parquet scan of the key columns with
    the reader's pruning, without (the floor) or with (the reader) its dedup."""
    from pyspark.sql import functions as F

    from spark_jobs import sample_reader

    if dedup:
        frame = sample_reader.read_samples(spark, url, start_ms, end_ms)
    else:
        frame = (
            spark.read.schema(sample_reader._READ_SCHEMA)
            .option("basePath", url)
            .parquet(sample_reader.window_paths(url, start_ms, end_ms))
            .where(sample_reader._in_hours(start_ms, end_ms))
            .where((F.col("ts_ms") >= F.lit(start_ms)) & (F.col("ts_ms") < F.lit(end_ms)))
        )
    return len(frame.groupBy(*PARTITION_KEY).count().collect())


def same_tables(run: str, other: str) -> bool:
    """Whether two status runs published the same rows (the slice-first read against the
    whole window's, ``spark_jobs.status.evaluate_recent``)."""
    def rows(path: str, table: str) -> list[str]:
        got = pq.read_table(f"{path}/{table}").to_pylist()
        return sorted(json.dumps(r, sort_keys=True) for r in got)

    return all(rows(run, t) == rows(other, t) for t in ("partitions", "groups"))


def status_breakdown(spark: Any, phases: Phases, url: str, now_ms: int, window_ms: int,
                     out: str) -> None:  # fmt: skip
    """The status job's stages one by one, in the job's order, each forced by an action."""
    from pyspark import StorageLevel

    from spark_jobs.evaluator import EvaluatorConfig
    from spark_jobs.sample_reader import read_samples
    from spark_jobs.status import evaluate_status

    start, end = now_ms - window_ms, now_ms + 1
    with phases.phase("stage: scan all 20 columns (no dedup)"):
        from collectors.sample_log import COLUMNS

        raw = spark.read.parquet(f"{url}/cluster=*/date=*/hour=*")
        raw = raw.where((raw.ts_ms >= start) & (raw.ts_ms < end)).select(*COLUMNS)
        raw.write.format("noop").mode("overwrite").save()
    samples = read_samples(spark, url, start, end, dedup=False)
    samples = samples.persist(StorageLevel.MEMORY_AND_DISK)
    with phases.phase("stage: read + cache, as the job reads (no dedup)"):
        samples.count()
    config = EvaluatorConfig()
    with phases.phase("stage: evaluate (applyInArrow per group) on the cache, noop sink"):
        partitions, _ = evaluate_status(samples, now_ms, config)
        partitions.write.format("noop").mode("overwrite").save()
    partitions, groups = evaluate_status(samples, now_ms, config)
    partitions = partitions.persist(StorageLevel.MEMORY_AND_DISK)
    partitions.count()
    with phases.phase("stage: write partitions + groups (Parquet) from a cache"):
        partitions.coalesce(1).write.mode("overwrite").parquet(f"{out}/partitions")
        groups.coalesce(1).write.mode("overwrite").parquet(f"{out}/groups")
    partitions.unpersist()
    samples.unpersist()


# -- the run ---------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    manifest = ensure_data(data, args.partitions, args.hours, tuple(args.rollup_rows))
    start_ms = manifest["start_ms"]
    main_url, small_url = str(data / "samples"), str(data / "samples-1m")
    results = data / "results"
    shutil.rmtree(results, ignore_errors=True)
    status_window = args.hours * HOUR_MS
    status_now = start_ms + args.hours * HOUR_MS - STEP_MS  # the window's last poll
    rollup_now = {
        "1M": start_ms + (manifest["small_cycles"] - 1) * STEP_MS,
        "10M": start_ms + (manifest["large_cycles"] - 1) * STEP_MS,
    }
    rollup_url = {"1M": small_url, "10M": main_url}

    monitor = Monitor()
    phases = Phases(monitor)
    report: dict[str, Any] = {"manifest": manifest, "phases": phases.rows}
    spark_conf = dict(kv.split("=", 1) for kv in args.spark_conf)
    print("starting Spark …", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    spark, created, started = start_spark(spark_conf)
    monitor.jvm = jvm_pid(spark)
    report["startup"] = {"session_s": created, "first_action_s": started, "load": load}
    report["spark"] = {
        "version": spark.version,
        "conf": {k: v for k, v in sorted(spark.sparkContext.getConf().getAll())
                 if k.startswith("spark.") and "dir" not in k and "id" not in k.split(".")[-1]},
    }  # fmt: skip

    from spark_jobs.jobs import run_rollups_job, run_status_job

    status_results = str(results / "spark")
    if args.only in (None, "status"):
        with phases.phase("status job (cold)") as row:
            result = run_status_job(spark, main_url, status_results, status_now, status_window)
            row["input_rows"] = result.input_rows
            row["tables"] = dict(result.tables)
        for rep in range(args.reps):
            print(f"status rep {rep + 1}/{args.reps}", file=sys.stderr, flush=True)
            with phases.phase("floor"):
                floor_job(spark, main_url, status_now - status_window, status_now + 1, False)
            with phases.phase("floor with the reader's dedup"):
                floor_job(spark, main_url, status_now - status_window, status_now + 1, True)
            with phases.phase("status job") as row:
                result = run_status_job(spark, main_url, status_results, status_now,
                                        status_window)  # fmt: skip
                row["input_rows"] = result.input_rows
                row["whole_groups"] = result.whole_groups
            with phases.phase("status job, whole window for every group") as row:
                whole = run_status_job(spark, main_url, str(results / "spark-whole"),
                                       status_now, status_window, slice_ms=None)  # fmt: skip
                row["input_rows"] = whole.input_rows
            report["slice_equals_whole"] = same_tables(result.output_path, whole.output_path)
            if not args.baseline:
                continue
            with phases.phase("baseline status (child process)") as row:
                base_dir = str(results / "baseline-status")
                window_args = ("--now", str(status_now), "--window", str(status_window))
                row["child"] = _child("status", "--url", main_url, *window_args, "--out", base_dir)
        if args.baseline:
            baseline = results / "baseline-status"
            report["status_compare"] = compare_status(result.output_path, baseline)
        if args.profile:
            print("status breakdown", file=sys.stderr, flush=True)
            status_breakdown(spark, phases, main_url, status_now, status_window,
                             str(results / "breakdown"))  # fmt: skip

    if args.only in (None, "rollups"):
        for size, reps in (("1M", args.reps), ("10M", args.large_reps)):
            now = rollup_now[size]
            window = now - start_ms  # from the first sample: every row of the log is read
            for rep in range(reps):
                print(f"rollups {size} rep {rep + 1}/{reps}", file=sys.stderr, flush=True)
                with phases.phase(f"rollups job {size}") as row:
                    out = str(results / f"rollups-{size}")
                    result = run_rollups_job(spark, rollup_url[size], out, now, window)
                    row["input_rows"] = result.input_rows
                    row["tables"] = dict(result.tables)
                if not args.baseline:
                    continue
                with phases.phase(f"baseline rollups {size} (child process)") as row:
                    out = str(results / f"baseline-rollups-{size}")
                    window_args = ("--now", str(now), "--window", str(window))
                    row["child"] = _child("rollups", "--url", rollup_url[size], *window_args,
                                          "--out", out)  # fmt: skip
            if size == "1M" and args.baseline:
                report["rollups_compare_1M"] = compare_rollups(
                    result.output_path, results / "baseline-rollups-1M"
                )
    report["peak_rss_mib"] = {
        "driver_python": round(_hwm(os.getpid()) / MIB),
        "jvm_hwm": round(_hwm(monitor.jvm) / MIB) if monitor.jvm else None,
        "python_worker_hwm_max": round(monitor.worker_hwm_max() / MIB),
    }
    monitor.stop()
    spark.stop()
    return report


def summarize(report: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    phases = report["phases"]

    def walls(name: str) -> list[float]:
        return [r["wall_s"] for r in phases if r["phase"] == name]

    def cpus(name: str) -> list[float]:
        return [r["spark_cpu_s"] + r["driver_cpu_s"] for r in phases if r["phase"] == name]

    def child(name: str, key: str = "wall_s") -> list[float]:
        return [r["child"][key] for r in phases if r["phase"] == name]

    s: dict[str, Any] = {}
    startup = report["startup"]["first_action_s"]
    if walls("status job"):
        cold = walls("status job (cold)")[0]
        s["startup_s"] = startup
        s["status_cold_s"] = cold
        s["status_total_s"] = startup + cold
        s["status_s"] = median(walls("status job"))
        s["status_cpu_s"] = median(cpus("status job"))
        s["floor_s"] = median(walls("floor"))
        s["floor_cpu_s"] = median(cpus("floor"))
        s["reader_floor_s"] = median(walls("floor with the reader's dedup"))
        s["status_x_floor"] = s["status_s"] / s["floor_s"]
        s["status_x_reader_floor"] = s["status_s"] / s["reader_floor_s"]
        whole = "status job, whole window for every group"
        s["status_whole_s"] = median(walls(whole))
        s["status_whole_cpu_s"] = median(cpus(whole))
        s["status_whole_x_floor"] = s["status_whole_s"] / s["floor_s"]
        s["whole_groups"] = [r.get("whole_groups") for r in phases if r["phase"] == "status job"]
        s["slice_equals_whole"] = report.get("slice_equals_whole")
        if child("baseline status (child process)"):
            s["baseline_status_s"] = median(child("baseline status (child process)"))
            s["baseline_status_cpu_s"] = median(child("baseline status (child process)", "cpu_s"))
            s["status_x_baseline"] = s["status_s"] / s["baseline_status_s"]
        s["status_rows"] = phases[[r["phase"] for r in phases].index("status job")]["input_rows"]
    for size in ("1M", "10M"):
        if walls(f"rollups job {size}"):
            s[f"rollups_{size}_s"] = median(walls(f"rollups job {size}"))
            s[f"rollups_{size}_cpu_s"] = median(cpus(f"rollups job {size}"))
            if child(f"baseline rollups {size} (child process)"):
                s[f"baseline_rollups_{size}_s"] = median(
                    child(f"baseline rollups {size} (child process)")
                )
            rows = [r["input_rows"] for r in phases if r["phase"] == f"rollups job {size}"][0]
            s[f"rollups_{size}_rows"] = rows
    if "rollups_10M_s" in s and "rollups_1M_s" in s:
        s["rollups_ratio"] = s["rollups_10M_s"] / s["rollups_1M_s"]
        s["rollups_cpu_ratio"] = s["rollups_10M_cpu_s"] / s["rollups_1M_cpu_s"]
        s["rows_ratio"] = s["rollups_10M_rows"] / s["rollups_1M_rows"]
    loads = [r[k] for r in phases for k in ("load_before", "load_after")]
    s["load_range"] = (min(loads), max(loads)) if loads else None
    return s


def markdown(report: dict[str, Any], s: dict[str, Any]) -> str:
    m = report["manifest"]
    lines = []

    def verdict(good: bool) -> str:
        return "met" if good else "**NOT met**"

    lines.append(
        f"{m['partitions']:,} partitions, main log {m['main_cycles']} cycles × 10 s "
        f"({m['main_cycles'] * m['partitions']:,} samples, {m['bytes']['samples'] / MIB:.0f} MiB "
        f"compacted), 1 M log {m['small_cycles']} cycles; Spark {report['spark']['version']}, "
        f"{MASTER}; load average {s['load_range'][0]:.1f}-{s['load_range'][1]:.1f} on 2 cores."
    )
    lines += ["", "| figure | value | target |", "|---|---|---|"]
    if "status_s" in s:
        lines += [
            f"| start-up (session + first action) | {s['startup_s']:.1f} s | |",
            f"| status job, first run in the fresh session | {s['status_cold_s']:.1f} s | |",
            f"| **status: start-up + first run** | **{s['status_total_s']:.1f} s** | ≤ 30 s: "
            f"{verdict(s['status_total_s'] <= TARGET_STATUS_S)} |",
            f"| status job, warm (median) | {s['status_s']:.1f} s ({s['status_cpu_s']:.1f} s "
            f"CPU), {s['status_rows'] / s['status_s']:,.0f} rows/s | |",
            f"| floor: read window, count per partition | {s['floor_s']:.1f} s "
            f"({s['floor_cpu_s']:.1f} s CPU) | |",
            f"| **status ÷ floor** | **{s['status_x_floor']:.1f}** | ≤ 3: "
            f"{verdict(s['status_x_floor'] <= TARGET_STATUS_X_FLOOR)} |",
            f"| status job, whole window for every group (no slice) | {s['status_whole_s']:.1f}"
            f" s ({s['status_whole_cpu_s']:.1f} s CPU); ÷ floor {s['status_whole_x_floor']:.1f}"
            f" | |",
            f"| groups judged from the whole window, slice-first runs | {s['whole_groups']}; "
            f"same tables as the whole window's: {s['slice_equals_whole']} | |",
            f"| floor with the reader's dedup; status ÷ it | {s['reader_floor_s']:.1f} s; "
            f"{s['status_x_reader_floor']:.1f} | |",
        ]
        if "baseline_status_s" in s:
            lines += [
                f"| baseline status, one Python process | {s['baseline_status_s']:.1f} s "
                f"({s['baseline_status_cpu_s']:.1f} s CPU) | |",
                f"| status job ÷ baseline | {s['status_x_baseline']:.1f} | |",
            ]
    for size in ("1M", "10M"):
        if f"rollups_{size}_s" in s:
            rows, wall = s[f"rollups_{size}_rows"], s[f"rollups_{size}_s"]
            lines.append(
                f"| rollups job {size} ({rows:,} rows) | {wall:.1f} s, {rows / wall:,.0f} rows/s "
                f"({s[f'rollups_{size}_cpu_s']:.1f} s CPU); baseline "
                f"{s.get(f'baseline_rollups_{size}_s', float('nan')):.1f} s | |"
            )
    if "rollups_ratio" in s:
        lines.append(
            f"| **rollups time 10 M ÷ 1 M** | **{s['rollups_ratio']:.1f}** (CPU "
            f"{s['rollups_cpu_ratio']:.1f}; rows ×{s['rows_ratio']:.1f}) | ≤ 12: "
            f"{verdict(s['rollups_ratio'] <= TARGET_ROLLUP_RATIO)} |"
        )
    rss = report["peak_rss_mib"]
    lines.append(
        f"| peak RSS | driver (Python) {rss['driver_python']} MiB, JVM {rss['jvm_hwm']} MiB, "
        f"largest Python worker {rss['python_worker_hwm_max']} MiB | driver ≤ 4 GiB |"
    )
    lines += [
        "",
        "Phases in run order (CPU s: JVM / Python workers / driver; load average before→after;"
        " peak RSS MiB of the JVM / all Python workers):",
        "",
    ]
    lines += ["| phase | wall s | CPU s | load | peak RSS MiB | notes |",
              "|---|---:|---|---|---|---|"]  # fmt: skip
    for r in report["phases"]:
        note = ""
        if "child" in r:
            c = r["child"]
            parts = ", ".join(f"{k} {v:.1f}" for k, v in c.get("parts_s", {}).items())
            note = (f"child: {c.get('wall_s', 0):.1f} s wall, {c.get('cpu_s', 0):.1f} s CPU, "
                    f"peak {c.get('peak_rss_mib')} MiB; {parts}")  # fmt: skip
            if "function_cpu_s" in c:
                note = (f"job's pandas function {c['function_cpu_s']:.1f} s CPU for "
                        f"{c['partitions']:,} partitions, of which _columns "
                        f"{c['columns_cpu_s']:.1f} s")  # fmt: skip
        peaks = r["peaks_mib"]
        lines.append(
            f"| {r['phase']} | {r['wall_s']:.1f} | {r['jvm_cpu_s']:.1f} / "
            f"{r['python_cpu_s']:.1f} / {r['driver_cpu_s']:.1f} | "
            f"{r['load_before']:.1f}→{r['load_after']:.1f} | {peaks.get('jvm', 0)} / "
            f"{peaks.get('python_workers_sum', 0)} | {note} |"
        )
    if "status_compare" in report:
        c = report["status_compare"]
        lines += ["", f"Status verdicts, Spark vs baseline: {c['partitions']:,} partitions, "
                      f"{c['differ']} differ; statuses {c['statuses']}"]  # fmt: skip
        for example in c["examples"]:
            lines.append(f"  - {example}")
    if "rollups_compare_1M" in report:
        c = report["rollups_compare_1M"]
        lines.append(
            "Rollups 1 M, Spark vs baseline: "
            + "; ".join(
                f"{t} {v['rows']:,} rows, {v['differ']} differ {v['columns'] or ''}"
                for t, v in c.items()
            )  # fmt: skip
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--hours", type=int, default=1, help="the status job's window")
    parser.add_argument("--rollup-rows", type=int, nargs=2, default=[SMALL_ROWS, LARGE_ROWS],
                        metavar=("SMALL", "LARGE"), help="rows of the two rollup runs")  # fmt: skip
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--large-reps", type=int, default=1, help="runs of the 10 M rollup")
    parser.add_argument("--keep", type=Path, help="generate (or reuse) the data here")
    parser.add_argument("--only", choices=["status", "rollups"])
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True,
                        help="break the status job down into its stages")  # fmt: skip
    parser.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                        help="also run the single-process baselines (they hold the whole "
                             "window in memory: 36 M samples need over 22 GB)")  # fmt: skip
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", type=Path, help="also write the JSON report here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    for name in ("--data", "--url", "--out"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    for name in ("--now", "--window"):
        parser.add_argument(name, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    env = {
        "date": datetime.now(UTC).date().isoformat(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "pyarrow": pa.__version__,
        "numpy": np.__version__,
    }
    if args.keep:
        report = run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
            report = run(args, Path(tmp))
    report["environment"] = env
    summary = summarize(report, args)
    report["summary"] = summary
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\n{json.dumps(env)}\n")
    print(markdown(report, summary))
    met = [
        summary.get("status_total_s", 0) <= TARGET_STATUS_S,
        summary.get("status_x_floor", 0) <= TARGET_STATUS_X_FLOOR,
        summary.get("rollups_ratio", 0) <= TARGET_ROLLUP_RATIO,
    ]
    return 0 if all(met) else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""A million-row report streams: its memory stays bounded, far below the data's size.

The log (1 M samples, eight compacted hours) is written in this process; the export runs in a
fresh child process so that its peak RSS (VmHWM) belongs to the export alone. The child warms
up with a one-minute report first (code pages of pyarrow's libraries count in RSS when first
touched), then exports everything as CSV into a file and reports: the RSS growth over the
warmed-up state, the Arrow allocator's peak, and the Python heap's peak (tracemalloc).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from collectors.sample_log import SampleLog
from tests.reports.factory import HOUR, T0, big_table

ROWS = 1_000_000
PARTITIONS = 1_000
EVERY_MS = 30_000

CHILD = textwrap.dedent(
    """
    import json, sys, tracemalloc
    import pyarrow as pa
    from collectors.sample_log import SampleLog
    from dashboard.reports.export import export
    from dashboard.reports.spec import parse_spec
    from dashboard.reports.status import StatusHistory

    def kb(field):
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])

    base, out_path, start, warm_end, part_end, end = sys.argv[1:7]
    log = SampleLog(base)
    history = StatusHistory([("kafka", "group-00", "topic-0", 0, 0, "OK")])

    def run(until, path):
        spec = parse_spec({"cluster": "big", "start": start, "end": until})
        rows, size = [0], 0
        with open(path, "wb") as out:
            for chunk in export(log, spec, history, "csv", on_rows=lambda n: rows.__setitem__(0, rows[0] + n)):
                size += len(chunk)
                out.write(chunk)
        return rows[0], size

    run(warm_end, out_path)  # warm-up: code pages, thread pools, caches
    warm = kb("VmRSS")
    part_rows, _ = run(part_end, out_path)
    part_peak = kb("VmHWM")
    tracemalloc.start()
    rows, size = run(end, out_path)
    _, py_peak = tracemalloc.get_traced_memory()
    print(json.dumps({
        "rows": rows, "bytes": size, "part_rows": part_rows,
        "part_growth": (part_peak - warm) * 1024, "growth": (kb("VmHWM") - warm) * 1024,
        "arrow_peak": pa.system_memory_pool().max_memory(), "python_peak": py_peak,
    }))
    """
)


@pytest.fixture(scope="module")
def million(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("million") / "samples"
    log = SampleLog(base)
    per_hour = HOUR // EVERY_MS * PARTITIONS
    for hour, first in enumerate(range(0, ROWS, per_hour)):
        n = min(per_hour, ROWS - first)
        table = big_table("big", T0 + hour * HOUR, n, PARTITIONS, EVERY_MS)
        log.write_batch("big", f"hour-{hour}", table)
    log.compact_closed_hours(T0 + 48 * HOUR)
    return base


def test_a_million_row_csv_streams_in_bounded_memory(million, tmp_path):
    out_path = tmp_path / "report.csv"

    def iso(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat()

    times = [iso(T0), iso(T0 + HOUR // 2), iso(T0 + 2 * HOUR), iso(T0 + 24 * HOUR)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(million), str(out_path), *times],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["rows"] == ROWS
    assert result["part_rows"] == 2 * HOUR // EVERY_MS * PARTITIONS
    assert result["bytes"] == out_path.stat().st_size > 80_000_000
    with out_path.open() as handle:
        assert sum(1 for _ in handle) == ROWS + 1  # every row written, and the header
    data_size = result["bytes"]
    # Bounded, not proportional: four times the rows (+70 MB of CSV, ~45 MB as Arrow columns)
    # barely move the peak (measured: +16 MB, allocator slack), which stays below the report's
    # size; the Arrow allocator and the Python heap hold a few batches at most.
    assert result["growth"] - result["part_growth"] < 32 * 2**20, result
    assert result["growth"] < data_size, result
    assert result["arrow_peak"] < 48 * 2**20, result
    assert result["python_peak"] < 32 * 2**20, result  # a CSV chunk is ~5 MB

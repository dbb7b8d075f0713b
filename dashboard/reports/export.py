"""The whole export, rows to bytes: the one path the task, the command, the views, the API
and the benchmark share. Pure (pyarrow): the caller supplies the log and the status history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from collectors.sample_log import SampleLog
from dashboard.reports.rows import iter_report_batches
from dashboard.reports.samples import HourPlan
from dashboard.reports.spec import ReportSpec
from dashboard.reports.status import StatusHistory
from dashboard.reports.writers import write_report

__all__ = ["export"]


def export(
    log: SampleLog,
    spec: ReportSpec,
    history: StatusHistory,
    fmt: str,
    plans: list[HourPlan] | None = None,
    on_hour: Callable[[HourPlan], None] | None = None,
    on_rows: Callable[[int], None] | None = None,
) -> Iterator[bytes]:
    """The report in ``fmt``, chunk by chunk. ``on_rows(n)`` after each batch of ``n`` rows.

    Arrow allocates from the system allocator while the export runs: pyarrow's default,
    mimalloc, keeps the pages it freed in per-thread heaps, and over a million-row export that
    doubled the peak RSS (``benchmarks/bench_reports.py``: +150 MB against +65 MB) for no gain
    in speed. Buffers remember their pool, so switching while other code runs is safe.
    """
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        batches = iter_report_batches(log, spec, history, plans, on_hour)
        if on_rows is not None:
            batches = _counted(batches, on_rows)
        yield from write_report(batches, fmt)
    finally:
        pa.set_memory_pool(previous)


def _counted(batches: Iterator[pa.RecordBatch], on_rows: Callable[[int], None]):
    for batch in batches:
        on_rows(batch.num_rows)
        yield batch

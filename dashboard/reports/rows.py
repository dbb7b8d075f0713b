"""A report's rows: samples from the log, bucketed to the resolution, with their status.

Pure module (pyarrow and numpy; the caller supplies the log and the status history). Rows come
out as Arrow record batches of :data:`REPORT_SCHEMA`, a bounded number at a time.

**Resolution.** ``raw``: every sample, ``time`` being the sample's own time. A bucket length:
one row per partition per bucket (buckets aligned to the Unix epoch, so to UTC midnight), the
*last* sample in the bucket; ``time`` is the bucket's start, the values are that sample's, and
the status is the one in force at that sample's time. Buckets with no sample produce no row.
The range's first and last bucket hold only the samples inside the range.

**Order.** Hour by hour (buckets longer than an hour: bucket by bucket); within that, by source,
group, topic, partition, then time: the order a compacted hour of the log is stored in, so
nothing needs sorting beyond one hour.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from collectors.sample_log import SampleLog
from dashboard.reports.samples import KEY, HourPlan, iter_samples, plan_hours
from dashboard.reports.spec import ReportSpec
from dashboard.reports.status import StatusHistory

__all__ = ["REPORT_COLUMNS", "REPORT_SCHEMA", "TEXT_COLUMNS", "iter_report_batches"]

REPORT_SCHEMA: Final = pa.schema(
    [
        pa.field("time", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("committed", pa.int64()),
        pa.field("latest", pa.int64()),
        pa.field("lag", pa.int64()),
        pa.field("time_lag_s", pa.float64()),
        pa.field("status", pa.string(), nullable=False),
    ]
)
REPORT_COLUMNS: Final = tuple(REPORT_SCHEMA.names)
TEXT_COLUMNS: Final = ("cluster", "source", "group", "topic", "status")
HOUR_MS: Final = 3_600_000


def iter_report_batches(
    log: SampleLog,
    spec: ReportSpec,
    history: StatusHistory,
    plans: list[HourPlan] | None = None,
    on_hour: Callable[[HourPlan], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The report's rows as record batches of ``REPORT_COLUMNS`` (text columns may be
    dictionary-encoded; :data:`REPORT_SCHEMA` gives the logical types)."""
    plans = plan_hours(log, spec) if plans is None else plans
    cluster = pa.array([spec.cluster], pa.string())
    if spec.resolution_s == 0:
        for batch in iter_samples(log, spec, plans, on_hour):
            ts = batch.column("ts_ms").to_numpy()
            yield _report_batch(batch, ts, ts, cluster, history)
        return
    res_ms = spec.resolution_s * 1000
    bucketer = _Bucketer(res_ms)
    pending: list[pa.Table] = []

    def hour_done(plan: HourPlan) -> None:
        pending.append(bucketer.close_hour(plan.start_ms + HOUR_MS))
        if on_hour is not None:
            on_hour(plan)

    for batch in iter_samples(log, spec, plans, hour_done):
        bucketer.feed(batch)
        while pending:
            yield from _emit(pending.pop(0), cluster, history)
    while pending:
        yield from _emit(pending.pop(0), cluster, history)
    yield from _emit(bucketer.close_hour(None), cluster, history)


def _emit(table: pa.Table, cluster: pa.Array, history: StatusHistory) -> Iterator[pa.RecordBatch]:
    for batch in table.to_batches(max_chunksize=64 * 1024):
        if batch.num_rows:
            ts = batch.column("ts_ms").to_numpy()
            bucket = batch.column("bucket").to_numpy()
            yield _report_batch(batch, bucket, ts, cluster, history)


def _report_batch(
    batch: pa.RecordBatch,
    time_ms: np.ndarray,
    sample_ms: np.ndarray,
    cluster: pa.Array,
    history: StatusHistory,
) -> pa.RecordBatch:
    n = batch.num_rows
    time = pa.array(time_ms, pa.int64()).view(pa.timestamp("ms", tz="UTC"))
    clusters = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), cluster)
    status = history.lookup(batch, sample_ms)
    return pa.RecordBatch.from_arrays(
        [
            time,
            clusters,
            batch.column("source"),
            batch.column("group"),
            batch.column("topic"),
            batch.column("partition"),
            batch.column("committed"),
            batch.column("latest"),
            batch.column("lag"),
            batch.column("time_lag_s"),
            status,
        ],
        names=list(REPORT_COLUMNS),
    )


class _Bucketer:
    """Keeps the last sample per partition per bucket across the hours of the log.

    Each batch (sorted by key then time) is reduced at once to its last row per (key, bucket);
    at the end of an hour those candidates, with the ones carried from earlier hours, are
    merged, and the buckets that ended by the hour's end are handed out. Buckets longer than
    an hour stay carried until they end, so memory is one row per partition per open bucket
    plus the current hour's candidates.
    """

    def __init__(self, res_ms: int) -> None:
        self.res_ms = res_ms
        self.carried: pa.Table | None = None
        self.candidates: list[pa.Table] = []

    def feed(self, batch: pa.RecordBatch) -> None:
        ts = batch.column("ts_ms").to_numpy()
        bucket = ts - ts % self.res_ms
        table = pa.Table.from_batches([batch]).append_column("bucket", pa.array(bucket, pa.int64()))
        self.candidates.append(_plain(_last_per_bucket(table)))

    def close_hour(self, hour_end_ms: int | None) -> pa.Table:
        """Buckets complete at ``hour_end_ms`` (None: the end of the data, all of them)."""
        parts = ([self.carried] if self.carried is not None else []) + self.candidates
        self.candidates = []
        if not parts:
            return _empty()
        merged = pa.concat_tables(parts)
        merged = merged.sort_by([(c, "ascending") for c in (*KEY, "bucket", "ts_ms")])
        merged = _last_per_bucket(merged)
        if hour_end_ms is None:
            self.carried = None
            return merged
        closed = pc.less_equal(pc.add(merged["bucket"], self.res_ms), hour_end_ms)
        self.carried = merged.filter(pc.invert(closed))
        if self.carried.num_rows == 0:
            self.carried = None
        return merged.filter(closed)


def _last_per_bucket(table: pa.Table) -> pa.Table:
    """Rows that are the last of their (key, bucket) run in a table sorted by key, time."""
    n = table.num_rows
    if n <= 1:
        return table
    differs = None
    for column in (*KEY, "bucket"):
        values = table[column]
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if pa.types.is_dictionary(values.type):
            values = values.indices  # one batch: one dictionary, indices compare like values
        term = pc.not_equal(values.slice(0, n - 1), values.slice(1))
        differs = term if differs is None else pc.or_(differs, term)
    last = pa.concat_arrays([differs, pa.array([True])])
    return table.filter(last)


def _plain(table: pa.Table) -> pa.Table:
    columns = []
    for name in table.column_names:
        column = table[name]
        if pa.types.is_dictionary(column.type):
            column = column.cast(pa.string())
        columns.append(column)
    return pa.table(columns, names=table.column_names)


def _empty() -> pa.Table:
    return pa.table(
        {
            "ts_ms": pa.array([], pa.int64()),
            "source": pa.array([], pa.string()),
            "group": pa.array([], pa.string()),
            "topic": pa.array([], pa.string()),
            "partition": pa.array([], pa.int32()),
            "committed": pa.array([], pa.int64()),
            "latest": pa.array([], pa.int64()),
            "lag": pa.array([], pa.int64()),
            "time_lag_s": pa.array([], pa.float64()),
            "bucket": pa.array([], pa.int64()),
        }
    )

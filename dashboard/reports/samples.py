"""Read a report's samples from the Parquet sample log, hour by hour, without loading it all.

Pure module (pyarrow and the log's layout; no Django). Only the hour directories overlapping
the range are listed, only the columns a report needs are read, and the time range (and exact
names) are pushed into the Parquet scan, so row groups outside them are skipped.

How an hour is read depends on its files (see ``collectors/sample_log/``):

* one compacted file, the usual state of a closed hour: already deduplicated and sorted by
  source, group, topic, partition, time; it is streamed record batch by record batch, so
  memory stays at one batch whatever the hour holds;
* micro-batches (the current hour, or an hour the compactor has not reached yet), possibly
  beside a compacted file: the hour's rows *in scope* are loaded, deduplicated on the sample
  key (the later write wins, as in the log itself) and sorted the same way. Memory is then
  bounded by one hour of the report's scope.

Every hour thus yields batches of ``SAMPLE_COLUMNS`` sorted by key then time, hour after hour.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from collectors.sample_log import SampleLog
from dashboard.reports.spec import ReportSpec, is_pattern, pattern_regex

__all__ = ["SAMPLE_COLUMNS", "HourPlan", "Scope", "iter_samples", "plan_hours"]

SAMPLE_COLUMNS: Final = (
    "ts_ms", "source", "group", "topic", "partition", "committed", "latest", "lag", "time_lag_s",
)  # fmt: skip
KEY: Final = ("source", "group", "topic", "partition")
_TEXT: Final = ("source", "group", "topic")
_VERSION_KEY: Final = b"lagwatch.version_ns"
_BATCH_ROWS: Final = 64 * 1024
# The scanner's default read-ahead (16 batches) would hold a million rows in flight; two
# batches keep the decoder busy while the writer works, at a bounded cost.
_READAHEAD: Final = 2
_FORMAT: Final = ds.ParquetFileFormat(
    read_options=ds.ParquetReadOptions(dictionary_columns=list(_TEXT))
)


class Scope:
    """Which groups, topics and sources a report covers: exact names or shell patterns."""

    def __init__(self, spec: ReportSpec) -> None:
        self._rules: dict[str, tuple[frozenset[str], re.Pattern[str] | None]] = {}
        for column, entries in (
            ("group", spec.groups),
            ("topic", spec.topics),
            ("source", spec.sources),
        ):
            if not entries:
                continue
            exact = frozenset(e for e in entries if not is_pattern(e))
            patterns = [pattern_regex(e) for e in entries if is_pattern(e)]
            regex = re.compile("|".join(patterns)) if patterns else None
            self._rules[column] = (exact, regex)

    def matches(self, column: str, value: str) -> bool:
        if column not in self._rules:
            return True
        exact, regex = self._rules[column]
        return value in exact or (regex is not None and regex.match(value) is not None)

    def scan_filter(self) -> pc.Expression | None:
        """Exact-name scopes as a Parquet predicate (patterns are applied on the batches)."""
        expr = None
        for column, (exact, regex) in self._rules.items():
            if regex is None:
                term = pc.field(column).isin(sorted(exact))
                expr = term if expr is None else expr & term
        return expr

    def mask(self, batch: pa.RecordBatch | pa.Table) -> pa.Array | None:
        """Rows in scope, or None when the batch needs no filtering. Names are matched once
        per distinct value (the dictionary), not once per row."""
        mask = None
        for column, (_, regex) in self._rules.items():
            if regex is None:
                continue  # pushed into the scan already
            values = batch.column(column)
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            if pa.types.is_dictionary(values.type):
                names = values.dictionary.to_pylist()
                keep = [i for i, name in enumerate(names) if self.matches(column, name)]
                term = pc.is_in(values.indices, value_set=pa.array(keep, values.indices.type))
            else:
                names = pc.unique(values).to_pylist()
                keep = [name for name in names if name is not None and self.matches(column, name)]
                term = pc.is_in(values, value_set=pa.array(keep, pa.string()))
            mask = term if mask is None else pc.and_(mask, term)
        return mask


@dataclass(frozen=True, slots=True)
class HourPlan:
    """One hour of the log to read: its files and their size (for progress)."""

    start_ms: int
    compacted: tuple[str, ...]
    batches: tuple[str, ...]
    size: int

    @property
    def streamable(self) -> bool:
        return len(self.compacted) == 1 and not self.batches


def plan_hours(log: SampleLog, spec: ReportSpec) -> list[HourPlan]:
    """The hours of ``spec.cluster`` overlapping the range, with their data files."""
    plans = []
    for hour in log.hours(spec.cluster, spec.start_ms, spec.end_ms):
        infos = log.fs.get_file_info(pafs.FileSelector(hour.path, allow_not_found=True))
        compacted, batches, size = [], [], 0
        for info in infos:
            if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
                continue
            if info.base_name.startswith("compacted-"):
                compacted.append(info.path)
            elif info.base_name.startswith("batch-"):
                batches.append(info.path)
            else:
                continue
            size += info.size or 0
        if compacted or batches:
            plans.append(HourPlan(hour.start_ms, tuple(compacted), tuple(batches), size))
    return plans


def iter_samples(
    log: SampleLog,
    spec: ReportSpec,
    plans: list[HourPlan] | None = None,
    on_hour: Callable[[HourPlan], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Batches of ``SAMPLE_COLUMNS`` in scope and range, hour by hour, each hour sorted by
    source, group, topic, partition, time. ``on_hour`` is called after each hour (progress).
    """
    scope = Scope(spec)
    expr = (pc.field("ts_ms") >= spec.start_ms) & (pc.field("ts_ms") < spec.end_ms)
    names = scope.scan_filter()
    if names is not None:
        expr = expr & names
    for plan in plan_hours(log, spec) if plans is None else plans:
        if plan.streamable:
            yield from _stream_file(log, plan.compacted[0], expr, scope)
        else:
            table = _load_hour(log, plan, expr, scope)
            yield from table.to_batches(max_chunksize=_BATCH_ROWS)
        if on_hour is not None:
            on_hour(plan)


def _stream_file(
    log: SampleLog, path: str, expr: pc.Expression, scope: Scope
) -> Iterator[pa.RecordBatch]:
    dataset = ds.dataset(path, format=_FORMAT, filesystem=log.fs)
    for batch in dataset.to_batches(
        columns=list(SAMPLE_COLUMNS),
        filter=expr,
        batch_size=_BATCH_ROWS,
        batch_readahead=_READAHEAD,
        fragment_readahead=1,
        use_threads=True,
    ):
        if batch.num_rows == 0:
            continue
        mask = scope.mask(batch)
        if mask is not None:
            batch = batch.filter(mask)
            if batch.num_rows == 0:
                continue
        yield batch


def _load_hour(log: SampleLog, plan: HourPlan, expr: pc.Expression, scope: Scope) -> pa.Table:
    """An unsorted hour: its in-scope rows, last write per key, sorted like a compacted one.

    All files are read in one threaded scan (an hour holds hundreds of micro-batches); the
    write versions in the footers are read only if two files hold the same key, which happens
    only around a compaction or a retried cycle.
    """
    paths = [*plan.compacted, *plan.batches]
    dataset = ds.dataset(paths, format=_FORMAT, filesystem=log.fs)
    index = {path: i for i, path in enumerate(paths)}
    tables = []
    for tagged in dataset.scanner(columns=list(SAMPLE_COLUMNS), filter=expr).scan_batches():
        batch = tagged.record_batch
        if batch.num_rows == 0:
            continue
        mask = scope.mask(batch)
        if mask is not None:
            batch = batch.filter(mask)
        if batch.num_rows:
            table = _plain(pa.Table.from_batches([batch]))
            file_index = np.full(batch.num_rows, index[tagged.fragment.path], dtype=np.int32)
            tables.append(table.append_column("_file", pa.array(file_index)))
    if not tables:
        return _plain(pa.table({c: [] for c in SAMPLE_COLUMNS})).slice(0, 0)
    table = pa.concat_tables(tables)
    table = table.sort_by([(c, "ascending") for c in (*KEY, "ts_ms")])
    duplicate = _same_as_next(table)
    if duplicate is not None and pc.any(duplicate).as_py():
        # Order each key's copies by their file's write version, oldest first; keep the last.
        versions = _versions(log, paths)
        rank_of = np.empty(len(paths), dtype=np.int32)
        for rank, i in enumerate(sorted(range(len(paths)), key=versions.__getitem__)):
            rank_of[i] = rank
        rank = pa.array(rank_of)
        table = table.append_column("_version", pc.take(rank, table["_file"]))
        table = table.sort_by([(c, "ascending") for c in (*KEY, "ts_ms", "_version")])
        last = pc.invert(_same_as_next(table))
        table = table.filter(pa.concat_arrays([last, pa.array([True])])).drop_columns(["_version"])
    return table.drop_columns(["_file"])


def _same_as_next(table: pa.Table) -> pa.Array | None:
    """Per row but the last: whether the next row has the same sample key."""
    n = table.num_rows
    if n < 2:
        return None
    same = None
    for column in (*KEY, "ts_ms"):
        values = table[column].combine_chunks()
        equal = pc.equal(values.slice(0, n - 1), values.slice(1))
        same = equal if same is None else pc.and_(same, equal)
    return same


def _versions(log: SampleLog, paths: list[str]) -> list[tuple[int, str]]:
    """Each file's write version (``lagwatch.version_ns``), with its name as a tie-break."""
    out = []
    for path in paths:
        with log.fs.open_input_file(path) as handle:
            meta = pq.read_metadata(handle).metadata or {}
        out.append((int(meta.get(_VERSION_KEY, b"0")), path.rsplit("/", 1)[-1]))
    return out


def _plain(table: pa.Table) -> pa.Table:
    """Strings decoded from dictionaries, so tables of different files concatenate and sort."""
    fields = {
        "ts_ms": pa.int64(),
        "source": pa.string(),
        "group": pa.string(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "committed": pa.int64(),
        "latest": pa.int64(),
        "lag": pa.int64(),
        "time_lag_s": pa.float64(),
    }
    return table.select(list(SAMPLE_COLUMNS)).cast(pa.schema(fields))

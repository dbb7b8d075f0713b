"""The sample log's one object: ``SampleLog`` writes, compacts and reads it (SPEC §5, §6).

Idempotency (SPEC §5): a cycle's file name is a hash of its cycle id, and the file is written
to a hidden temp name and renamed, so a retried task replaces its own earlier file instead of
adding samples; which copy of a sample wins is ``dedup``'s rule.

Compaction of a closed hour writes one sorted, deduplicated file, then deletes its inputs.
The open hour is compacted in chunks as it fills (:meth:`SampleLog.compact_open_hours`): its
micro-batches merged into one file a minute or so, and the chunks into one file when they
grow many, so a job reading the last hour opens a few tens of files, not one per cycle (a
small window's status run spent ~40 % of its CPU on 300 tiny files: benchmarks/RESULTS.md).
Readers tolerate the moment between the two (or a compactor that died there: the next
compaction finishes the job) because the overlap holds the same samples twice: :meth:`read`
deduplicates on the key, and Spark jobs drop duplicates on ``KEY_COLUMNS``. A Spark run that
listed the parts just before they were deleted fails with FileNotFound; leave
``spark.sql.files.ignoreMissingFiles`` off so it fails rather than silently missing the hour:
the jobs read the window again, whose new listing holds the compacted file instead
(``spark_jobs.jobs``), and a run that still fails keeps the previous results (SPEC §6).

**Why one module of some 420 lines**: writing, compaction and reading share the hour's file
listing and the write-version rule they all depend on; split, each half would restate it.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path, PurePath
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from collectors.sample_log.dedup import VERSION_KEY, Loaded, merge
from collectors.sample_log.layout import (
    DAY_MS,
    HOUR_MS,
    HourPartition,
    ms_to_datetime,
    parse_day,
    parse_hour,
    quote_cluster,
    renames_atomically,
    to_ms,
)
from collectors.sample_log.object_store import S3Options, s3_filesystem, translated
from collectors.sample_log.schema import (
    BATCH_ZSTD_LEVEL,
    COMPACT_ZSTD_LEVEL,
    DICT_FORMAT,
    DICT_SCHEMA,
    ROW_GROUP_ROWS,
    SAMPLE_SCHEMA,
    SORT_KEYS,
    conform,
    parquet_options,
)

__all__ = ["CompactResult", "SampleLog"]

_CYCLE_KEY: Final = "lagwatch.cycle_id"
# The open hour's chunks merged into one file beyond this many: each row of an hour is then
# rewritten about twice more before the hour closes (at a minute a chunk), and a reader of the
# hour opens at most this many chunks plus the batches written since the last chunk.
OPEN_HOUR_MAX_CHUNKS: Final = 20


@dataclass(frozen=True, slots=True)
class CompactResult:
    """What one compaction did; ``inputs == 0`` means the hour was already compact."""

    partition: HourPartition
    path: str | None  # the compacted file (None: the hour holds no data)
    inputs: int
    rows_in: int
    rows_out: int
    bytes_written: int
    kept: tuple[str, ...] = ()  # inputs rewritten during compaction: merged by the next run


class SampleLog:
    """Writer, compactor and reader of the sample log under one base path.

    ``base`` is a local directory when ``filesystem`` is None, else a path inside
    ``filesystem`` (e.g. ``"bucket/samples"`` with an ``S3FileSystem``). ``store``: the
    options of an S3 store, whose failures are then raised naming the settings at fault
    (``object_store``).
    """

    def __init__(
        self,
        base: str | PurePath,
        filesystem: pafs.FileSystem | None = None,
        store: S3Options | None = None,
    ) -> None:
        fs = filesystem if filesystem is not None else pafs.LocalFileSystem()
        if isinstance(fs, pafs.LocalFileSystem):
            base = Path(base).expanduser().resolve().as_posix()
        else:
            base = base.as_posix() if isinstance(base, PurePath) else str(base)
            base = base.rstrip("/")
        if not base:
            raise ValueError("the sample log needs a base path")
        self.base: str = base
        self.fs: pafs.FileSystem = fs
        self.store = store

    @classmethod
    def from_url(cls, url: str, s3: S3Options | None = None) -> SampleLog:
        """Open the log at the URL Spark uses too (a local path, ``file://``, ``s3a://``).

        An ``s3a://``/``s3://`` URL is reached with ``s3`` (default: the ``LAGWATCH_S3_*``
        settings of the environment) and the environment's AWS credentials.
        """
        scheme = urlsplit(url).scheme.lower()
        if scheme == "" or len(scheme) == 1:  # a plain path (or a Windows drive letter)
            return cls(url)
        if scheme in ("s3a", "s3n", "s3"):
            fs, path = s3_filesystem(url, s3)
            return cls(path, fs, s3 if s3 is not None else S3Options.from_environ())
        fs, path = pafs.FileSystem.from_uri(url)
        return cls(path, fs)

    # -- writing ---------------------------------------------------------------------------

    @translated
    def write_batch(
        self, cluster: str, cycle_id: str | int, rows: pa.Table | Sequence[Mapping[str, Any]]
    ) -> list[str]:
        """Write one collection cycle's samples; returns the files written (one per hour).

        Writing the same ``cycle_id`` again replaces the earlier files, so a retried task
        cannot duplicate samples. The cycle's ``ts_ms`` must be fixed before the first attempt
        (it is part of the key): a retry that moved its rows to another hour would leave the
        first attempt's file in that hour.
        """
        table = conform(cluster, rows)
        if table.num_rows == 0:
            return []
        cycle = str(cycle_id)
        if not cycle:
            raise ValueError("cycle_id must not be empty")
        name = "batch-" + hashlib.sha256(cycle.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        name += ".parquet"
        meta = {
            VERSION_KEY: str(time.time_ns()),
            _CYCLE_KEY: cycle.encode("utf-8", "backslashreplace").decode(),
        }
        hours = pc.divide(table["ts_ms"], HOUR_MS)  # integer division; ts_ms >= 0 was checked
        written = []
        for hour in pc.unique(hours).to_pylist():
            part = table.filter(pc.equal(hours, hour)).sort_by(SORT_KEYS)
            directory = self._hour_dir(cluster, hour * HOUR_MS)
            written.append(self._write_file(directory, name, part, meta, BATCH_ZSTD_LEVEL))
        return written

    # -- compaction and retention ----------------------------------------------------------

    @translated
    def compact(self, cluster: str, day: date, hour: int) -> CompactResult:
        """Merge an hour's micro-batches (and any earlier compacted file) into one file.

        Sorted by ``SORT_COLUMNS`` so offsets and times become small deltas and the strings
        long runs; that, not the codec, is what brings a sample down to ~10 bytes. Running it
        again on a compact hour does nothing.
        """
        if not 0 <= hour <= 23:
            raise ValueError(f"hour must be 0-23, got {hour}")
        start = datetime(day.year, day.month, day.day, hour, tzinfo=UTC)
        partition = HourPartition(cluster, to_ms(start), self._hour_dir(cluster, to_ms(start)))
        return self._compact(partition)

    @translated
    def compact_closed_hours(
        self, now: datetime | int, grace: timedelta = timedelta(minutes=5)
    ) -> list[CompactResult]:
        """Compact every hour of every cluster that ended at least ``grace`` before ``now``.

        The grace lets a cycle that started just before the hour turned finish its write;
        a retry later than that lands as a new micro-batch and the next run merges it.
        """
        cutoff = to_ms(now) - grace // timedelta(milliseconds=1)
        results = []
        for partition in self.hours(end=cutoff):
            if partition.end_ms > cutoff:
                continue
            batches, compacted = self._data_files(partition.path)
            if batches or len(compacted) > 1:
                results.append(self._compact(partition))
        return results

    @translated
    def compact_open_hours(
        self,
        now: datetime | int,
        grace: timedelta = timedelta(minutes=5),
        max_chunks: int = OPEN_HOUR_MAX_CHUNKS,
    ) -> list[CompactResult]:
        """Compact the hours :meth:`compact_closed_hours` leaves (still open, or in their
        grace) in chunks: the micro-batches written since the last chunk become one file; once
        the hour holds more than ``max_chunks`` compacted files, all of it becomes one.

        Only batches are merged into a chunk, so each run costs what was written since the
        last one, not the hour so far. Batches are always newer than every chunk (a chunk
        takes every batch it lists), so the chunk's version (its newest input's) keeps "the
        later write wins" between the files as it was between the batches.
        """
        cutoff = to_ms(now) - grace // timedelta(milliseconds=1)
        results = []
        for partition in self.hours(start=cutoff):
            if partition.end_ms <= cutoff:
                continue
            batches, compacted = self._data_files(partition.path)
            if len(compacted) + (len(batches) > 1) > max_chunks:
                results.append(self._compact(partition))
            elif len(batches) > 1:
                results.append(self._merge_files(partition, batches))
        return results

    @translated
    def apply_retention(self, older_than: datetime | int) -> list[HourPartition]:
        """Delete every hour partition that ended at or before ``older_than``; returns them.

        Whole directories go, so nothing half-deleted is left for Spark to read; a date
        directory left empty goes too.
        """
        cutoff = to_ms(older_than)
        removed = [p for p in self.hours(end=cutoff) if p.end_ms <= cutoff]
        for partition in removed:
            self.fs.delete_dir(partition.path)
        for day_dir in sorted({p.path.rsplit("/", 1)[0] for p in removed}):
            if not self._ls(day_dir):
                self.fs.delete_dir(day_dir)
        return removed

    # -- reading ---------------------------------------------------------------------------

    @translated
    def hours(
        self,
        cluster: str | None = None,
        start: datetime | int | None = None,
        end: datetime | int | None = None,
    ) -> list[HourPartition]:
        """Hour partitions overlapping ``[start, end)``, found by listing directories only."""
        lo = to_ms(start) if start is not None else None
        hi = to_ms(end) if end is not None else None

        def overlaps(start_ms: int, length: int) -> bool:
            return (hi is None or start_ms < hi) and (lo is None or start_ms + length > lo)

        if cluster is not None:
            cluster_dirs = [(cluster, self._cluster_dir(cluster))]
        else:
            cluster_dirs = [
                (unquote(info.base_name[len("cluster=") :]), info.path)
                for info in self._ls(self.base)
                if info.type == pafs.FileType.Directory and info.base_name.startswith("cluster=")
            ]
        found = []
        for name, cluster_dir in sorted(cluster_dirs):
            for day_info in self._ls(cluster_dir):
                day = parse_day(day_info)
                if day is None or not overlaps(day, DAY_MS):
                    continue
                for hour_info in self._ls(day_info.path):
                    hour = parse_hour(hour_info)
                    if hour is not None and overlaps(day + hour * HOUR_MS, HOUR_MS):
                        found.append(HourPartition(name, day + hour * HOUR_MS, hour_info.path))
        return sorted(found, key=lambda p: (p.cluster, p.start_ms))

    @translated
    def read(
        self,
        cluster: str | None = None,
        start: datetime | int | None = None,
        end: datetime | int | None = None,
    ) -> pa.Table:
        """Samples with ``start <= ts_ms < end`` (aware datetimes or epoch ms), one per key.

        Hours outside the window are never listed or opened; the ``ts_ms`` bounds are pushed
        into the Parquet scan. Each hour is deduplicated unless it is a single compacted file,
        which is deduplicated already. Rows come hour by hour, each in ``SORT_COLUMNS`` order.
        """
        lo = to_ms(start) if start is not None else None
        hi = to_ms(end) if end is not None else None
        expr = None
        if lo is not None:
            expr = pc.field("ts_ms") >= lo
        if hi is not None:
            upper = pc.field("ts_ms") < hi
            expr = upper if expr is None else expr & upper
        tables = []
        for partition in self.hours(cluster, lo, hi):
            batches, compacted = self._data_files(partition.path)
            loaded = self._load([*compacted, *batches], expr)
            if not loaded:
                continue
            deduplicated = not batches and len(compacted) == 1  # one compacted file
            table = loaded[0].table if deduplicated else merge(loaded)
            tables.append(table.cast(SAMPLE_SCHEMA))
        if not tables:
            return SAMPLE_SCHEMA.empty_table()
        return pa.concat_tables(tables)

    # -- internals -------------------------------------------------------------------------

    def _cluster_dir(self, cluster: str) -> str:
        return f"{self.base}/cluster={quote_cluster(cluster)}"

    def _hour_dir(self, cluster: str, hour_start_ms: int) -> str:
        at = ms_to_datetime(hour_start_ms)
        return f"{self._cluster_dir(cluster)}/date={at.date().isoformat()}/hour={at.hour:02d}"

    def _ls(self, path: str) -> list[pafs.FileInfo]:
        return self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))

    def _data_files(self, hour_dir: str) -> tuple[list[pafs.FileInfo], list[pafs.FileInfo]]:
        batches, compacted = [], []
        for info in self._ls(hour_dir):
            if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
                continue
            if info.base_name.startswith("batch-"):
                batches.append(info)
            elif info.base_name.startswith("compacted-"):
                compacted.append(info)
        return batches, compacted

    def _load(self, files: Iterable[pafs.FileInfo], expr: pc.Expression | None) -> list[Loaded]:
        """Read files with their write versions, oldest first (the order dedup relies on)."""
        paths = [f.path for f in files]
        if not paths:
            return []
        dataset = ds.dataset(paths, schema=DICT_SCHEMA, format=DICT_FORMAT, filesystem=self.fs)
        loaded = []
        for fragment in dataset.get_fragments():
            meta = fragment.metadata.metadata or {}
            version = int(meta.get(VERSION_KEY.encode(), b"0"))
            table = fragment.to_table(schema=DICT_SCHEMA, filter=expr)
            name = fragment.path.rsplit("/", 1)[-1]
            loaded.append(Loaded(name, version, table.replace_schema_metadata(None)))
        return sorted(loaded, key=lambda item: (item.version, item.name))

    def _compact(self, partition: HourPartition) -> CompactResult:
        batches, compacted = self._data_files(partition.path)
        if not batches and len(compacted) <= 1:
            path = compacted[0].path if compacted else None
            return CompactResult(partition, path, 0, 0, 0, 0)
        return self._merge_files(partition, [*compacted, *batches])

    def _merge_files(self, partition: HourPartition, inputs: list[pafs.FileInfo]) -> CompactResult:
        """One sorted, deduplicated file of ``inputs`` (files of one hour), then the inputs
        deleted, each only if it is still what was read."""
        loaded = self._load(inputs, None)
        merged = merge(loaded)
        version = max(item.version for item in loaded)
        name = f"compacted-{version:020d}-{uuid.uuid4().hex[:8]}.parquet"
        meta = {VERSION_KEY: str(version)}
        path = self._write_file(partition.path, name, merged, meta, COMPACT_ZSTD_LEVEL)
        # Delete only inputs that are still what we read: a batch a late retry rewrote
        # meanwhile stays, and the next compaction merges its newer version.
        kept = []
        current = self.fs.get_file_info([f.path for f in inputs])
        for before, now in zip(inputs, current, strict=True):
            if now.type == pafs.FileType.NotFound:
                continue
            if (now.size, now.mtime_ns) != (before.size, before.mtime_ns):
                kept.append(now.path)
                continue
            self.fs.delete_file(now.path)
        size = self.fs.get_file_info(path).size or 0
        return CompactResult(
            partition, path, len(inputs), sum(item.table.num_rows for item in loaded),
            merged.num_rows, size, tuple(kept),
        )  # fmt: skip

    def _write_file(
        self, directory: str, name: str, table: pa.Table, meta: dict[str, str], level: int
    ) -> str:
        """Write so that readers see either no file or the whole file, never a prefix."""
        self.fs.create_dir(directory, recursive=True)
        final = f"{directory}/{name}"

        def write(path: str) -> None:
            with (
                self.fs.open_output_stream(path, compression=None) as out,
                pq.ParquetWriter(out, table.schema, **parquet_options(level)) as writer,
            ):
                writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
                writer.add_key_value_metadata(meta)

        if not renames_atomically(self.fs):
            write(final)  # object stores publish an object only when its upload completes
            return final
        temp = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"  # hidden from Spark and pyarrow
        try:
            write(temp)
            try:
                self.fs.move(temp, final)
            except OSError:
                # HDFS's rename refuses to replace: a brief gap instead of a duplicate.
                if self.fs.get_file_info(final).type != pafs.FileType.File:
                    raise
                self.fs.delete_file(final)
                self.fs.move(temp, final)
        except BaseException:
            if self.fs.get_file_info(temp).type == pafs.FileType.File:
                self.fs.delete_file(temp)
            raise
        return final

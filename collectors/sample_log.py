"""The Parquet sample log: every sample ever collected, the Spark jobs' input (SPEC §5, §6).

Layout, under a base path (``LAGWATCH_DATA_DIR/samples`` by default)::

    cluster=<name>/date=YYYY-MM-DD/hour=HH/batch-<sha256(cycle id)>.parquet    micro-batches
    cluster=<name>/date=YYYY-MM-DD/hour=HH/compacted-<version>-<rand>.parquet  after compaction

Hive-style directories, so ``spark.read.parquet(url)`` discovers ``cluster`` (string: it is also
a data column, and Spark keeps the data column's type even for a name like ``42``), ``date``
(DateType) and ``hour`` (IntegerType) and prunes on them. Dates and hours are UTC. The writer
goes through ``pyarrow.fs``: a local directory by default, or any ``FileSystem`` object (S3,
HDFS, a ``SubTreeFileSystem``); :meth:`SampleLog.from_url` maps ``s3a://``/``hdfs://`` URLs to
one. Spark on a cluster reads the very same layout through its own ``s3a://``/``hdfs://``
connectors: nothing here is local-only. Files whose names start with ``.`` or ``_`` (our temp
files) are skipped by Spark and by pyarrow alike.

Cluster names become one path segment: ASCII other than ``[A-Za-z0-9._~-]`` is percent-encoded
(``/`` is ``%2F``), non-ASCII is kept verbatim. That is the exact inverse of Spark's partition
unescaping (which decodes ``%XX`` one byte per char, so encoded UTF-8 would come back garbled),
and a segment that always starts with ``cluster=`` and never holds ``/`` cannot leave the base.

Idempotency (SPEC §5): a cycle's file name is a hash of its cycle id, and the file is written to a
hidden temp name and renamed, so a retried task replaces its own earlier file instead of adding
samples. The sample key is ``KEY_COLUMNS``; when two files hold the same key, the later write wins.
"Later" is the ``lagwatch.version_ns`` footer entry: the write time of a micro-batch, and for a
compacted file the newest version among its inputs (not the compaction time), so a batch
rewritten while compaction ran still wins over the compacted copy of its previous version.
Versions come from the writers' clocks, so two writes of one key closer together than the
hosts' clock skew may be ordered either way; collection cycles are seconds apart.

Compaction of a closed hour writes one sorted, deduplicated file, then deletes its inputs.
Readers tolerate the moment between the two (or a compactor that died there: the next
compaction finishes the job) because the overlap holds the same samples twice: :meth:`read`
deduplicates on the key, and Spark jobs drop duplicates on ``KEY_COLUMNS``. A Spark run that
listed the parts just before they were deleted fails with FileNotFound; leave
``spark.sql.files.ignoreMissingFiles`` off so it fails rather than silently missing the hour, and
the next scheduled run succeeds (SPEC §6: a failed run keeps the previous results).

Storage: after compaction a realistic hour costs ~10 bytes per sample, against ~29 in the
micro-batches (see ``benchmarks/bench_sample_log.py``): rows sorted by partition then time,
strings dictionary-encoded, counters and times DELTA_BINARY_PACKED, zstd. ``time_lag_s`` is
rounded to the millisecond on write: every clock it derives from has millisecond resolution,
and the interpolation's noise below that would cost ~4 bytes per sample.

Pure module: pyarrow only, no Django, so Spark jobs, Celery tasks and the benchmark share it.
"""

from __future__ import annotations

import hashlib
import re
import string
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

__all__ = [
    "COLUMNS",
    "KEY_COLUMNS",
    "PARTITION_COLUMNS",
    "SAMPLE_SCHEMA",
    "SORT_COLUMNS",
    "SOURCES",
    "CompactResult",
    "HourPartition",
    "SampleLog",
]

SAMPLE_SCHEMA: Final = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("committed", pa.int64(), nullable=False),
        pa.field("earliest", pa.int64()),
        pa.field("latest", pa.int64()),
        pa.field("lag", pa.int64()),
        pa.field("time_lag_s", pa.float64()),
        pa.field("commit_time_ms", pa.int64()),
        pa.field("commit_version", pa.int64()),
        pa.field("owner", pa.string()),
        pa.field("topology_id", pa.string()),
        pa.field("alive", pa.bool_()),
        pa.field("pending", pa.int64()),
        pa.field("failed", pa.int64()),
        pa.field("acked", pa.int64()),
        pa.field("stale", pa.bool_(), nullable=False),
    ]
)
COLUMNS: Final = tuple(SAMPLE_SCHEMA.names)
KEY_COLUMNS: Final = ("ts_ms", "cluster", "source", "group", "topic", "partition")
SORT_COLUMNS: Final = ("cluster", "source", "group", "topic", "partition", "ts_ms")
PARTITION_COLUMNS: Final = ("cluster", "date", "hour")  # what Spark's discovery adds
SOURCES: Final = frozenset({"kafka", "zookeeper", "storm"})
_SORT_KEYS: Final = [(c, "ascending") for c in SORT_COLUMNS]

HOUR_MS: Final = 3_600_000
# In memory the log's strings stay dictionary-encoded, as Parquet stores them: a compaction then
# moves 4-byte indices instead of strings (the benchmark's peak RSS fell from 3.5 to 2.0 GB).
_STRING_COLUMNS: Final = tuple(f.name for f in SAMPLE_SCHEMA if pa.types.is_string(f.type))
_DICT_SCHEMA: Final = pa.schema(
    [
        pa.field(f.name, pa.dictionary(pa.int32(), pa.string()), f.nullable)
        if f.name in _STRING_COLUMNS
        else f
        for f in SAMPLE_SCHEMA
    ]
)
_DICT_FORMAT: Final = ds.ParquetFileFormat(
    read_options=ds.ParquetReadOptions(dictionary_columns=_STRING_COLUMNS)
)
_DAY_MS: Final = 24 * HOUR_MS
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_VERSION_KEY: Final = "lagwatch.version_ns"
_CYCLE_KEY: Final = "lagwatch.cycle_id"
_SAFE_ASCII: Final = frozenset(string.ascii_letters + string.digits + "-_.~")
_OBJECT_STORE: Final = re.compile(r"\b(s3[an]?|gcs|gs|abfss?|az|adl)\b")
_MAX_SEGMENT_BYTES: Final = 255  # one directory name on every filesystem we care about

# Encodings, measured on the benchmark's workload (bytes per sample after compaction):
# monotone counters and times DELTA_BINARY_PACKED (dictionary cannot help: few repeats);
# time_lag_s PLAIN (after rounding, zstd beats both dictionary and BYTE_STREAM_SPLIT);
# repeated strings, the partition number and flags through dictionary/RLE.
_DELTA_COLUMNS: Final = (
    "ts_ms", "committed", "earliest", "latest", "lag", "commit_time_ms", "commit_version",
    "pending", "failed", "acked",
)  # fmt: skip
_PLAIN_COLUMNS: Final = ("time_lag_s",)
_ROW_GROUP_ROWS: Final = 1 << 20
_BATCH_ZSTD_LEVEL: Final = 3  # micro-batches: written every cycle, kept one hour
_COMPACT_ZSTD_LEVEL: Final = 9  # once per hour; ~2% smaller than level 3 for ~0.5 s more


def _parquet_options(zstd_level: int) -> dict[str, Any]:
    encoded = set(_DELTA_COLUMNS) | set(_PLAIN_COLUMNS)
    return {
        "compression": "zstd",
        "compression_level": zstd_level,
        "use_dictionary": [c for c in COLUMNS if c not in encoded],
        "column_encoding": {
            **{c: "DELTA_BINARY_PACKED" for c in _DELTA_COLUMNS},
            **{c: "PLAIN" for c in _PLAIN_COLUMNS},
        },
        "write_statistics": True,
        "write_page_index": True,  # lets Spark skip pages of other groups/topics
        # Parquet's own types say it all, and without the Arrow schema a dictionary-typed
        # column we wrote comes back to any reader as a plain string.
        "store_schema": False,
    }


@dataclass(frozen=True, slots=True)
class HourPartition:
    """One ``cluster=/date=/hour=`` directory of the log."""

    cluster: str
    start_ms: int
    path: str

    @property
    def end_ms(self) -> int:
        return self.start_ms + HOUR_MS

    @property
    def day(self) -> date:
        return _ms_to_datetime(self.start_ms).date()

    @property
    def hour(self) -> int:
        return _ms_to_datetime(self.start_ms).hour


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


@dataclass(frozen=True, slots=True)
class _Loaded:
    name: str
    version: int
    table: pa.Table


class SampleLog:
    """Writer, compactor and reader of the sample log under one base path.

    ``base`` is a local directory when ``filesystem`` is None, else a path inside
    ``filesystem`` (e.g. ``"bucket/samples"`` with an ``S3FileSystem``).
    """

    def __init__(self, base: str | PurePath, filesystem: pafs.FileSystem | None = None) -> None:
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

    @classmethod
    def from_url(cls, url: str) -> SampleLog:
        """Open the log at the URL Spark uses too (a local path, ``file://``, ``s3a://``…).

        pyarrow knows ``s3://`` where Hadoop says ``s3a://``/``s3n://``; the objects are the same.
        """
        scheme = urlsplit(url).scheme.lower()
        if scheme == "" or len(scheme) == 1:  # a plain path (or a Windows drive letter)
            return cls(url)
        if scheme in ("s3a", "s3n"):
            url = "s3" + url[len(scheme) :]
        fs, path = pafs.FileSystem.from_uri(url)
        return cls(path, fs)

    # -- writing ---------------------------------------------------------------------------

    def write_batch(
        self, cluster: str, cycle_id: str | int, rows: pa.Table | Sequence[Mapping[str, Any]]
    ) -> list[str]:
        """Write one collection cycle's samples; returns the files written (one per hour).

        Writing the same ``cycle_id`` again replaces the earlier files, so a retried task
        cannot duplicate samples. The cycle's ``ts_ms`` must be fixed before the first attempt
        (it is part of the key): a retry that moved its rows to another hour would leave the
        first attempt's file in that hour.
        """
        table = _conform(cluster, rows)
        if table.num_rows == 0:
            return []
        cycle = str(cycle_id)
        if not cycle:
            raise ValueError("cycle_id must not be empty")
        name = "batch-" + hashlib.sha256(cycle.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        name += ".parquet"
        meta = {
            _VERSION_KEY: str(time.time_ns()),
            _CYCLE_KEY: cycle.encode("utf-8", "backslashreplace").decode(),
        }
        hours = pc.divide(table["ts_ms"], HOUR_MS)  # integer division; ts_ms >= 0 was checked
        written = []
        for hour in pc.unique(hours).to_pylist():
            part = table.filter(pc.equal(hours, hour)).sort_by(_SORT_KEYS)
            directory = self._hour_dir(cluster, hour * HOUR_MS)
            written.append(self._write_file(directory, name, part, meta, _BATCH_ZSTD_LEVEL))
        return written

    # -- compaction and retention ----------------------------------------------------------

    def compact(self, cluster: str, day: date, hour: int) -> CompactResult:
        """Merge an hour's micro-batches (and any earlier compacted file) into one file.

        Sorted by ``SORT_COLUMNS`` so offsets and times become small deltas and the strings
        long runs; that, not the codec, is what brings a sample down to ~10 bytes. Running it
        again on a compact hour does nothing.
        """
        if not 0 <= hour <= 23:
            raise ValueError(f"hour must be 0-23, got {hour}")
        start = datetime(day.year, day.month, day.day, hour, tzinfo=UTC)
        partition = HourPartition(cluster, _to_ms(start), self._hour_dir(cluster, _to_ms(start)))
        return self._compact(partition)

    def compact_closed_hours(
        self, now: datetime | int, grace: timedelta = timedelta(minutes=5)
    ) -> list[CompactResult]:
        """Compact every hour of every cluster that ended at least ``grace`` before ``now``.

        The grace lets a cycle that started just before the hour turned finish its write;
        a retry later than that lands as a new micro-batch and the next run merges it.
        """
        cutoff = _to_ms(now) - grace // timedelta(milliseconds=1)
        results = []
        for partition in self.hours(end=cutoff):
            if partition.end_ms > cutoff:
                continue
            batches, compacted = self._data_files(partition.path)
            if batches or len(compacted) > 1:
                results.append(self._compact(partition))
        return results

    def apply_retention(self, older_than: datetime | int) -> list[HourPartition]:
        """Delete every hour partition that ended at or before ``older_than``; returns them.

        Whole directories go, so nothing half-deleted is left for Spark to read; a date
        directory left empty goes too.
        """
        cutoff = _to_ms(older_than)
        removed = [p for p in self.hours(end=cutoff) if p.end_ms <= cutoff]
        for partition in removed:
            self.fs.delete_dir(partition.path)
        for day_dir in sorted({p.path.rsplit("/", 1)[0] for p in removed}):
            if not self._ls(day_dir):
                self.fs.delete_dir(day_dir)
        return removed

    # -- reading ---------------------------------------------------------------------------

    def hours(
        self,
        cluster: str | None = None,
        start: datetime | int | None = None,
        end: datetime | int | None = None,
    ) -> list[HourPartition]:
        """Hour partitions overlapping ``[start, end)``, found by listing directories only."""
        lo = _to_ms(start) if start is not None else None
        hi = _to_ms(end) if end is not None else None

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
                day = _parse_day(day_info)
                if day is None or not overlaps(day, _DAY_MS):
                    continue
                for hour_info in self._ls(day_info.path):
                    hour = _parse_hour(hour_info)
                    if hour is not None and overlaps(day + hour * HOUR_MS, HOUR_MS):
                        found.append(HourPartition(name, day + hour * HOUR_MS, hour_info.path))
        return sorted(found, key=lambda p: (p.cluster, p.start_ms))

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
        lo = _to_ms(start) if start is not None else None
        hi = _to_ms(end) if end is not None else None
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
            table = loaded[0].table if deduplicated else _merge(loaded)
            tables.append(table.cast(SAMPLE_SCHEMA))
        if not tables:
            return SAMPLE_SCHEMA.empty_table()
        return pa.concat_tables(tables)

    # -- internals -------------------------------------------------------------------------

    def _cluster_dir(self, cluster: str) -> str:
        return f"{self.base}/cluster={_quote_cluster(cluster)}"

    def _hour_dir(self, cluster: str, hour_start_ms: int) -> str:
        at = _ms_to_datetime(hour_start_ms)
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

    def _load(self, files: Iterable[pafs.FileInfo], expr: pc.Expression | None) -> list[_Loaded]:
        """Read files with their write versions, oldest first (the order dedup relies on)."""
        paths = [f.path for f in files]
        if not paths:
            return []
        dataset = ds.dataset(paths, schema=_DICT_SCHEMA, format=_DICT_FORMAT, filesystem=self.fs)
        loaded = []
        for fragment in dataset.get_fragments():
            meta = fragment.metadata.metadata or {}
            version = int(meta.get(_VERSION_KEY.encode(), b"0"))
            table = fragment.to_table(schema=_DICT_SCHEMA, filter=expr)
            name = fragment.path.rsplit("/", 1)[-1]
            loaded.append(_Loaded(name, version, table.replace_schema_metadata(None)))
        return sorted(loaded, key=lambda item: (item.version, item.name))

    def _compact(self, partition: HourPartition) -> CompactResult:
        batches, compacted = self._data_files(partition.path)
        inputs = [*compacted, *batches]
        if not batches and len(compacted) <= 1:
            path = compacted[0].path if compacted else None
            return CompactResult(partition, path, 0, 0, 0, 0)
        loaded = self._load(inputs, None)
        merged = _merge(loaded)
        version = max(item.version for item in loaded)
        name = f"compacted-{version:020d}-{uuid.uuid4().hex[:8]}.parquet"
        meta = {_VERSION_KEY: str(version)}
        path = self._write_file(partition.path, name, merged, meta, _COMPACT_ZSTD_LEVEL)
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
                pq.ParquetWriter(out, table.schema, **_parquet_options(level)) as writer,
            ):
                writer.write_table(table, row_group_size=_ROW_GROUP_ROWS)
                writer.add_key_value_metadata(meta)

        if not _renames_atomically(self.fs):
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


# -- helpers -------------------------------------------------------------------------------


def _quote_cluster(cluster: str) -> str:
    if not isinstance(cluster, str) or not cluster:
        raise ValueError("a cluster name must be a non-empty string")
    try:
        cluster.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"cluster name {cluster!r} is not valid Unicode text") from exc
    quoted = "".join(c if c in _SAFE_ASCII or ord(c) > 127 else f"%{ord(c):02X}" for c in cluster)
    if len(f"cluster={quoted}".encode()) > _MAX_SEGMENT_BYTES:
        raise ValueError(f"cluster name {cluster[:40]!r}… is too long for a directory name")
    return quoted


def _renames_atomically(fs: pafs.FileSystem) -> bool:
    """False for object stores, where a "rename" is a copy and an upload is atomic anyway.

    Type names look like ``s3``, ``gcs``, or ``py::fsspec+s3`` for an fsspec wrapper.
    """
    if isinstance(fs, pafs.SubTreeFileSystem):
        return _renames_atomically(fs.base_fs)
    return _OBJECT_STORE.search(fs.type_name) is None


def _parse_day(info: pafs.FileInfo) -> int | None:
    if info.type != pafs.FileType.Directory or not info.base_name.startswith("date="):
        return None
    try:
        day = date.fromisoformat(info.base_name[len("date=") :])
    except ValueError:
        return None
    return _to_ms(datetime(day.year, day.month, day.day, tzinfo=UTC))


def _parse_hour(info: pafs.FileInfo) -> int | None:
    text = info.base_name[len("hour=") :]
    if info.type != pafs.FileType.Directory or not info.base_name.startswith("hour="):
        return None
    if not (text.isascii() and text.isdigit() and 0 <= int(text) <= 23):
        return None
    return int(text)


def _to_ms(at: datetime | int) -> int:
    if isinstance(at, datetime):
        if at.tzinfo is None:
            raise ValueError("naive datetime: pass an aware one (the log is partitioned in UTC)")
        return (at - _EPOCH) // timedelta(milliseconds=1)
    if isinstance(at, bool) or not isinstance(at, int):
        raise TypeError(f"expected an aware datetime or epoch milliseconds, got {at!r}")
    return at


def _ms_to_datetime(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def _kind_ok(target: pa.DataType, actual: pa.DataType) -> bool:
    """Whether a value of ``actual`` may be stored as ``target`` without changing its meaning.

    Stricter than pyarrow, which would truncate 1.5 into an int64 column or turn 1 into True.
    """
    if pa.types.is_null(actual):
        return True
    if pa.types.is_dictionary(actual):
        actual = actual.value_type
    if pa.types.is_integer(target):
        return pa.types.is_integer(actual)
    if pa.types.is_floating(target):
        return pa.types.is_floating(actual) or pa.types.is_integer(actual)
    if pa.types.is_string(target):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual)
    return actual == target


def _conform(cluster: str, rows: pa.Table | Sequence[Mapping[str, Any]]) -> pa.Table:
    """Turn a batch into a table of exactly ``SAMPLE_SCHEMA``, or say what is wrong with it."""
    _quote_cluster(cluster)
    if isinstance(rows, pa.Table):
        present = set(rows.column_names)
        n = rows.num_rows
    else:
        present = set().union(*(row.keys() for row in rows)) if rows else set()
        n = len(rows)
    unknown = present - set(COLUMNS)
    if unknown:
        raise ValueError(f"unknown sample columns: {sorted(unknown)}")
    if n == 0:
        return SAMPLE_SCHEMA.empty_table()
    arrays = []
    for field in SAMPLE_SCHEMA:
        if field.name not in present:
            value = cluster if field.name == "cluster" else None
            arrays.append(pa.array([value] * n, field.type))
            continue
        if isinstance(rows, pa.Table):
            column = rows[field.name]
        else:
            try:
                column = pa.array([row.get(field.name) for row in rows])
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
                raise ValueError(f"column {field.name!r}: {exc}") from exc
        if not _kind_ok(field.type, column.type):
            raise ValueError(f"column {field.name!r} must be {field.type}, got {column.type}")
        try:
            arrays.append(column.cast(field.type, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueError(f"column {field.name!r}: {exc}") from exc
    for field, array in zip(SAMPLE_SCHEMA, arrays, strict=True):
        if not field.nullable and array.null_count:
            raise ValueError(f"column {field.name!r} must not be null ({array.null_count} rows)")
    table = pa.Table.from_arrays(arrays, schema=SAMPLE_SCHEMA)
    if not pc.all(pc.equal(table["cluster"], cluster)).as_py():
        raise ValueError(f"rows of another cluster in a batch of {cluster!r}")
    known = pc.is_in(table["source"], value_set=pa.array(sorted(SOURCES)))
    bad = pc.unique(pc.filter(table["source"], pc.invert(known)))
    if len(bad):
        raise ValueError(f"unknown sources {bad.to_pylist()}; expected one of {sorted(SOURCES)}")
    if pc.min(table["ts_ms"]).as_py() < 0:
        raise ValueError("ts_ms before 1970: not a collection time")
    rounded = pc.round(table["time_lag_s"], 3)
    return table.set_column(COLUMNS.index("time_lag_s"), SAMPLE_SCHEMA.field("time_lag_s"), rounded)


def _merge(loaded: Sequence[_Loaded]) -> pa.Table:
    """Concatenate oldest first, sort by ``SORT_COLUMNS``, keep the last row of every key.

    The sort runs on integers: each string key is replaced by the rank of its dictionary
    entry, which is cheap because a dictionary holds only the distinct values; one gather
    (``take``) then moves the surviving rows.
    """
    table = pa.concat_tables([item.table for item in loaded]).unify_dictionaries().combine_chunks()
    n = table.num_rows
    if n == 0:
        return table
    keys = []
    for name in SORT_COLUMNS:
        column = table[name].chunk(0)
        if pa.types.is_dictionary(column.type):
            rank = pc.rank(column.dictionary, sort_keys="ascending", tiebreaker="dense")
            column = pc.take(rank, column.indices)
        keys.append(column)
    keys.append(pa.array(range(n), pa.int64()))  # write order breaks ties: last write wins
    ranks = pa.table(keys, names=[f"k{i}" for i in range(len(keys))])
    order = pc.sort_indices(ranks, sort_keys=[(name, "ascending") for name in ranks.column_names])
    ranks = ranks.take(order)
    differs = pa.chunked_array([pa.array([False] * (n - 1), pa.bool_())])
    for column in ranks.columns[:-1]:
        differs = pc.or_(differs, pc.not_equal(column.slice(0, n - 1), column.slice(1)))
    last_of_key = pa.chunked_array([*differs.chunks, pa.array([True])])
    return table.take(pc.filter(order, last_of_key))

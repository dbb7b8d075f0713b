"""Where samples live: the log's directory layout, and the clock arithmetic it rests on.

Layout, under a base path (``LAGWATCH_DATA_DIR/samples`` by default)::

    cluster=<name>/date=YYYY-MM-DD/hour=HH/batch-<sha256(cycle id)>.parquet    micro-batches
    cluster=<name>/date=YYYY-MM-DD/hour=HH/compacted-<version>-<rand>.parquet  after compaction

Hive-style directories, so ``spark.read.parquet(url)`` discovers ``cluster`` (string: it is also
a data column, and Spark keeps the data column's type even for a name like ``42``), ``date``
(DateType) and ``hour`` (IntegerType) and prunes on them. Dates and hours are UTC. The writer
goes through ``pyarrow.fs``: a local directory by default, or any ``FileSystem`` object (S3, a
``SubTreeFileSystem``); :meth:`SampleLog.from_url` maps ``s3a://`` URLs to pyarrow's S3 file
system (``object_store``). Spark on a cluster reads the very same layout through Hadoop's
``s3a`` connector: nothing here is local-only. (``hdfs://`` is not served: pyarrow's HDFS
needs a Hadoop installation's libhdfs, which no deployment of Lagwatch has.) Files whose
names start with ``.`` or ``_`` (our temp files) are skipped by Spark and by pyarrow alike.

Cluster names become one path segment: ASCII other than ``[A-Za-z0-9._~-]`` is percent-encoded
(``/`` is ``%2F``), non-ASCII is kept verbatim. That is the exact inverse of Spark's partition
unescaping (which decodes ``%XX`` one byte per char, so encoded UTF-8 would come back garbled),
and a segment that always starts with ``cluster=`` and never holds ``/`` cannot leave the base.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final

import pyarrow.fs as pafs

__all__ = [
    "DAY_MS",
    "HOUR_MS",
    "HourPartition",
    "ms_to_datetime",
    "parse_day",
    "parse_hour",
    "quote_cluster",
    "renames_atomically",
    "to_ms",
]

HOUR_MS: Final = 3_600_000
DAY_MS: Final = 24 * HOUR_MS
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_SAFE_ASCII: Final = frozenset(string.ascii_letters + string.digits + "-_.~")
_OBJECT_STORE: Final = re.compile(r"\b(s3[an]?|gcs|gs|abfss?|az|adl)\b")
_MAX_SEGMENT_BYTES: Final = 255  # one directory name on every filesystem we care about


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
        return ms_to_datetime(self.start_ms).date()

    @property
    def hour(self) -> int:
        return ms_to_datetime(self.start_ms).hour


def quote_cluster(cluster: str) -> str:
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


def renames_atomically(fs: pafs.FileSystem) -> bool:
    """False for object stores, where a "rename" is a copy and an upload is atomic anyway.

    Type names look like ``s3``, ``gcs``, or ``py::fsspec+s3`` for an fsspec wrapper.
    """
    if isinstance(fs, pafs.SubTreeFileSystem):
        return renames_atomically(fs.base_fs)
    return _OBJECT_STORE.search(fs.type_name) is None


def parse_day(info: pafs.FileInfo) -> int | None:
    if info.type != pafs.FileType.Directory or not info.base_name.startswith("date="):
        return None
    try:
        day = date.fromisoformat(info.base_name[len("date=") :])
    except ValueError:
        return None
    return to_ms(datetime(day.year, day.month, day.day, tzinfo=UTC))


def parse_hour(info: pafs.FileInfo) -> int | None:
    text = info.base_name[len("hour=") :]
    if info.type != pafs.FileType.Directory or not info.base_name.startswith("hour="):
        return None
    if not (text.isascii() and text.isdigit() and 0 <= int(text) <= 23):
        return None
    return int(text)


def to_ms(at: datetime | int) -> int:
    if isinstance(at, datetime):
        if at.tzinfo is None:
            raise ValueError("naive datetime: pass an aware one (the log is partitioned in UTC)")
        return (at - _EPOCH) // timedelta(milliseconds=1)
    if isinstance(at, bool) or not isinstance(at, int):
        raise TypeError(f"expected an aware datetime or epoch milliseconds, got {at!r}")
    return at


def ms_to_datetime(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)

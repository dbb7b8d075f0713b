"""What a sample is, and how samples are stored in Parquet.

One schema for every source, because the Spark jobs read the log as one table; a batch is
conformed to it exactly (:func:`conform`) before anything is written, with stricter type
rules than pyarrow's casts, so a sample can never be stored with a changed meaning.

Storage: after compaction a realistic hour costs ~10 bytes per sample, against ~29 in the
micro-batches (see ``benchmarks/bench_sample_log.py``): rows sorted by partition then time,
strings dictionary-encoded, counters and times DELTA_BINARY_PACKED, zstd. ``time_lag_s`` is
rounded to the millisecond on write: every clock it derives from has millisecond resolution,
and the interpolation's noise below that would cost ~4 bytes per sample.

The spout columns (``emitted`` .. ``max_offset_behind``) are null on every Kafka and ZooKeeper
row, which costs a bit per row; on a spout's rows the settings repeat (dictionary/RLE) and
the counters move by small steps (delta). Files written before they existed read with them
null (:func:`evolve`), so the log never needs rewriting for a new nullable column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from collectors.records import SHARE_STATE_COLUMNS
from collectors.sample_log.layout import quote_cluster

__all__ = [
    "BATCH_ZSTD_LEVEL",
    "COLUMNS",
    "COMPACT_ZSTD_LEVEL",
    "DICT_FORMAT",
    "DICT_SCHEMA",
    "KEY_COLUMNS",
    "PARTITION_COLUMNS",
    "ROW_GROUP_ROWS",
    "SAMPLE_SCHEMA",
    "SORT_COLUMNS",
    "SORT_KEYS",
    "SOURCES",
    "conform",
    "parquet_options",
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
        # The spout's pushed figures beyond the counts (null for every other source, and in
        # files written before they were added: a reader fills a missing column with nulls).
        pa.field("emitted", pa.int64()),
        pa.field("max_spout_pending", pa.int64()),
        pa.field("spout_pending", pa.int64()),
        pa.field("smallest_failed_offset", pa.int64()),
        pa.field("max_offset_behind", pa.int64()),
        # A share group's partition (KIP-932): ``committed`` is its start offset; and its lag
        # an upper bound (start offset to log end: a broker before KIP-1226 reports none).
        # Null in files written before they were added: not a share group's, an exact lag.
        pa.field("share", pa.bool_()),
        pa.field("lag_upper_bound", pa.bool_()),
        # What ``__share_group_state`` says of a share-partition (``ShareStateFigures``:
        # the highest delivery count, the record delivered most often and come back, records
        # archived and the newest of them, the group's delivery count limit). Null for every
        # other partition, where the topic was not read, and in files written before.
        *(pa.field(name, pa.int64()) for name in SHARE_STATE_COLUMNS),
    ]
)
COLUMNS: Final = tuple(SAMPLE_SCHEMA.names)
KEY_COLUMNS: Final = ("ts_ms", "cluster", "source", "group", "topic", "partition")
SORT_COLUMNS: Final = ("cluster", "source", "group", "topic", "partition", "ts_ms")
PARTITION_COLUMNS: Final = ("cluster", "date", "hour")  # what Spark's discovery adds
SOURCES: Final = frozenset({"kafka", "zookeeper", "storm"})
SORT_KEYS: Final = [(c, "ascending") for c in SORT_COLUMNS]

# In memory the log's strings stay dictionary-encoded, as Parquet stores them: a compaction then
# moves 4-byte indices instead of strings (the benchmark's peak RSS fell from 3.5 to 2.0 GB).
_STRING_COLUMNS: Final = tuple(f.name for f in SAMPLE_SCHEMA if pa.types.is_string(f.type))
DICT_SCHEMA: Final = pa.schema(
    [
        pa.field(f.name, pa.dictionary(pa.int32(), pa.string()), f.nullable)
        if f.name in _STRING_COLUMNS
        else f
        for f in SAMPLE_SCHEMA
    ]
)
DICT_FORMAT: Final = ds.ParquetFileFormat(
    read_options=ds.ParquetReadOptions(dictionary_columns=_STRING_COLUMNS)
)

# Encodings, measured on the benchmark's workload (bytes per sample after compaction):
# monotone counters and times DELTA_BINARY_PACKED (dictionary cannot help: few repeats);
# time_lag_s PLAIN (after rounding, zstd beats both dictionary and BYTE_STREAM_SPLIT);
# repeated strings, the partition number and flags through dictionary/RLE.
_DELTA_COLUMNS: Final = (
    "ts_ms", "committed", "earliest", "latest", "lag", "commit_time_ms", "commit_version",
    "pending", "failed", "acked", "emitted", "spout_pending",
)  # fmt: skip
_PLAIN_COLUMNS: Final = ("time_lag_s",)
ROW_GROUP_ROWS: Final = 1 << 20
BATCH_ZSTD_LEVEL: Final = 3  # micro-batches: written every cycle, kept one hour
COMPACT_ZSTD_LEVEL: Final = 9  # once per hour; ~2% smaller than level 3 for ~0.5 s more


def parquet_options(zstd_level: int) -> dict[str, Any]:
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


def kind_ok(target: pa.DataType, actual: pa.DataType) -> bool:
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


def conform(cluster: str, rows: pa.Table | Sequence[Mapping[str, Any]]) -> pa.Table:
    """Turn a batch into a table of exactly ``SAMPLE_SCHEMA``, or say what is wrong with it."""
    quote_cluster(cluster)
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
        if not kind_ok(field.type, column.type):
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

"""Report writers: Arrow record batches of the report's columns in, bytes out, chunk by chunk.

Pure module (pyarrow, openpyxl). Each writer consumes the batches one at a time and yields
bytes as it goes, so a report of any size needs the memory of one batch (Parquet: one row
group; XLSX: openpyxl's write-only mode spools rows to a temporary file).

* CSV: UTF-8, a header row, every text cell quoted, ``time`` ISO-8601 UTC with milliseconds,
  empty cells for missing numbers.
* JSON: one array of objects, keys in column order; missing or non-finite numbers are null.
* Parquet: ``time`` a UTC timestamp (ms); names as strings; zstd.
* XLSX: one sheet "lag" (continued on "lag 2"… past Excel's 1,048,576 rows); ``time`` a
  date-time cell in UTC (Excel has no time zones); see :mod:`dashboard.reports.xlsx`.

Spreadsheet formula injection: in CSV and XLSX a *text* cell starting with ``=``, ``+``, ``-``,
``@``, tab or carriage return gets a leading ``'``. Numbers are never touched: a negative lag
stays the number -5.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from dashboard.reports.cells import escape_text_array, iso_ms_strings, string_array_bytes
from dashboard.reports.rows import REPORT_COLUMNS, REPORT_SCHEMA, TEXT_COLUMNS
from dashboard.reports.sink import ByteSink
from dashboard.reports.xlsx import write_xlsx

__all__ = ["WRITERS", "write_report"]

PARQUET_ROW_GROUP: Final = 128 * 1024
_CHUNK: Final = 1 << 20
_JSON_ROWS: Final = 16 * 1024  # a JSON row is ~200 bytes, built in several intermediate copies


def write_report(batches: Iterable[pa.RecordBatch], fmt: str) -> Iterator[bytes]:
    """The report in ``fmt`` (csv, json, parquet, xlsx) as a stream of byte chunks."""
    try:
        writer = WRITERS[fmt]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}") from None
    return writer(batches)


def _escaped_text(batch: pa.RecordBatch) -> dict[str, pa.Array]:
    return {name: escape_text_array(batch.column(name)) for name in TEXT_COLUMNS}


# -- CSV -----------------------------------------------------------------------------------


def write_csv(batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    header = True
    for batch in batches:
        text = _escaped_text(batch)
        columns = [
            iso_ms_strings(batch.column("time")) if name == "time"
            else text[name] if name in text
            else batch.column(name)
            for name in REPORT_COLUMNS
        ]  # fmt: skip
        out = pa.BufferOutputStream()
        pcsv.write_csv(
            pa.RecordBatch.from_arrays(columns, names=list(REPORT_COLUMNS)),
            out,
            pcsv.WriteOptions(include_header=header, quoting_style="needed"),
        )
        header = False
        yield out.getvalue().to_pybytes()
    if header:  # no rows: still a header
        yield (",".join(f'"{c}"' for c in REPORT_COLUMNS) + "\n").encode()


# -- JSON ----------------------------------------------------------------------------------


def _json_strings(array: pa.Array) -> pa.Array:
    """Each value as a JSON string literal (dictionary values are encoded once each)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not pa.types.is_dictionary(array.type):
        array = pc.dictionary_encode(array)
    names = array.dictionary.to_pylist()
    encoded = pa.array([json.dumps(v, ensure_ascii=False) for v in names] + ["null"], pa.string())
    return pc.take(encoded, array.indices.fill_null(len(names)))


def _json_numbers(array: pa.Array) -> pa.Array:
    if pa.types.is_floating(array.type):
        finite = pc.fill_null(pc.is_finite(array), False)
        array = pc.if_else(finite, array, pa.scalar(None, array.type))
    return pc.fill_null(array.cast(pa.string()), "null")


def write_json(batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    first = True
    for batch in _slices(batches, _JSON_ROWS):
        pieces: list[Any] = []
        for i, name in enumerate(REPORT_COLUMNS):
            pieces.append((",\n{" if i == 0 else ",") + json.dumps(name) + ":")
            column = batch.column(name)
            if name == "time":
                pieces.append(pc.binary_join_element_wise('"', iso_ms_strings(column), '"', ""))
            elif name in TEXT_COLUMNS:
                pieces.append(_json_strings(column))
            else:
                pieces.append(_json_numbers(column))
        pieces.append("}")
        rows = pc.binary_join_element_wise(*pieces, "")
        data = string_array_bytes(rows)
        if first:
            data = b"[" + data[1:]
            first = False
        yield data
    yield b"[]\n" if first else b"\n]\n"


def _slices(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """Non-empty slices of at most ``rows`` rows (zero-copy)."""
    for batch in batches:
        for offset in range(0, batch.num_rows, rows):
            yield batch.slice(offset, rows)


# -- Parquet -------------------------------------------------------------------------------


_PARQUET_SCHEMA: Final = pa.schema(
    [
        pa.field(f.name, pa.dictionary(pa.int32(), pa.string()), f.nullable)
        if f.name in TEXT_COLUMNS
        else f
        for f in REPORT_SCHEMA
    ]
)


def _parquet_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    columns = []
    for field in _PARQUET_SCHEMA:
        column = batch.column(field.name)
        if field.name in TEXT_COLUMNS and not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        if column.type != field.type:
            column = column.cast(field.type)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=_PARQUET_SCHEMA)


def write_parquet(batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    sink = ByteSink()
    writer = pq.ParquetWriter(
        pa.PythonFile(sink, mode="w"),
        _PARQUET_SCHEMA,
        compression="zstd",
        compression_level=1,
        # Dictionaries for the names only: hashing every number cost more than the whole
        # rest of the write, and times/offsets pack far better as deltas (8x smaller).
        use_dictionary=list(TEXT_COLUMNS),
        column_encoding={c: "DELTA_BINARY_PACKED" for c in ("time", "committed", "latest")},
        store_schema=False,  # readers see plain strings, not our in-memory dictionaries
        coerce_timestamps="ms",
    )
    pending: list[pa.RecordBatch] = []
    rows = 0
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(_parquet_batch(batch))
            rows += batch.num_rows
            if rows >= PARQUET_ROW_GROUP:
                writer.write_table(pa.Table.from_batches(pending), row_group_size=rows)
                pending, rows = [], 0
                yield sink.take()
        if pending:
            writer.write_table(pa.Table.from_batches(pending), row_group_size=rows)
    finally:
        writer.close()
    yield sink.take()


WRITERS: Final = {
    "csv": write_csv,
    "json": write_json,
    "parquet": write_parquet,
    "xlsx": write_xlsx,
}

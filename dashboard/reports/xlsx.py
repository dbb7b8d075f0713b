"""A streaming XLSX writer for report batches: sheet XML built with Arrow string kernels, zipped
as it goes.

Why not openpyxl: its write-only mode serialises cell by cell in Python (without lxml, which
is not a dependency): about 2,000 rows a second here, nine minutes for a sheet Excel can hold.
A report sheet is one simple grid, so it is written directly: a minimal SpreadsheetML package
(workbook, one style for dates, worksheets with inline strings), each row assembled for a
whole batch at once like the JSON writer's, deflated at level 1 into a zip written with data
descriptors, so bytes leave as they are made. openpyxl reads these files in the tests.

Cells: ``time`` an Excel date-time serial (UTC) styled ``yyyy-mm-dd hh:mm:ss.000``; numbers as
numbers (a missing or non-finite one is an empty cell); text inline, XML-escaped, characters
XML cannot hold replaced by U+FFFD, and formula-like text escaped with a leading ``'``.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Iterator
from typing import Any, Final
from xml.sax.saxutils import escape

import pyarrow as pa
import pyarrow.compute as pc

from dashboard.reports.cells import escape_formula, string_array_bytes
from dashboard.reports.rows import REPORT_COLUMNS, TEXT_COLUMNS
from dashboard.reports.sink import ByteSink

__all__ = ["MAX_ROWS", "write_xlsx"]

MAX_ROWS: Final = 1_048_576  # per sheet, the header included (Excel's limit)
_SLICE: Final = 16 * 1024
_LETTERS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_EXCEL_EPOCH_DAYS: Final = 25_569.0  # 1970-01-01 as an Excel serial (1900 date system)
_ILLEGAL_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_NS: Final = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL_NS: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL_NS: Final = "http://schemas.openxmlformats.org/package/2006/relationships"


def _text_cell(value: str) -> str:
    text = escape(_ILLEGAL_XML.sub("\ufffd", escape_formula(value)))
    space = ' xml:space="preserve"' if text != text.strip() else ""
    return f"<is><t{space}>{text}</t></is>"


def _text_column(array: pa.Array, letter: str, rownum: pa.Array) -> pa.Array:
    """``<c r="B2" t="inlineStr"><is><t>…</t></is></c>`` per row; distinct names once each."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not pa.types.is_dictionary(array.type):
        array = pc.dictionary_encode(array)
    names = array.dictionary.to_pylist()
    bodies = pa.array([_text_cell(v) for v in names] + [""], pa.string())
    body = pc.take(bodies, array.indices.fill_null(len(names)))
    return pc.binary_join_element_wise(
        f'<c r="{letter}', rownum, '" t="inlineStr">', body, "</c>", ""
    )


def _number_column(array: pa.Array, letter: str, rownum: pa.Array, style: str = "") -> pa.Array:
    if pa.types.is_floating(array.type):
        finite = pc.fill_null(pc.is_finite(array), False)
        array = pc.if_else(finite, array, pa.scalar(None, array.type))
    value = pc.binary_join_element_wise("<v>", array.cast(pa.string()), "</v>", "")
    return pc.binary_join_element_wise(
        f'<c r="{letter}', rownum, f'"{style}>', pc.fill_null(value, ""), "</c>", ""
    )


def _rows_xml(batch: pa.RecordBatch, first_row: int) -> bytes:
    rownum = pa.array(range(first_row, first_row + batch.num_rows), pa.int64()).cast(pa.string())
    cells: list[Any] = ['<row r="', rownum, '">']
    for i, name in enumerate(REPORT_COLUMNS):
        letter = _LETTERS[i]
        column = batch.column(name)
        if name == "time":
            ms = column.cast(pa.int64()).cast(pa.float64())
            serial = pc.add(pc.divide(ms, 86_400_000.0), _EXCEL_EPOCH_DAYS)
            cells.append(_number_column(serial, letter, rownum, ' s="1"'))
        elif name in TEXT_COLUMNS:
            cells.append(_text_column(column, letter, rownum))
        else:
            cells.append(_number_column(column, letter, rownum))
    cells.append("</row>")
    return string_array_bytes(pc.binary_join_element_wise(*cells, ""))


def _header_xml() -> bytes:
    cells = "".join(
        f'<c r="{_LETTERS[i]}1" t="inlineStr"><is><t>{name}</t></is></c>'
        for i, name in enumerate(REPORT_COLUMNS)
    )
    return f'<row r="1">{cells}</row>'.encode()


_SHEET_HEAD: Final = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="{_NS}">'
    '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" '
    'activePane="bottomLeft" state="frozen"/></sheetView></sheetViews>'
    '<cols><col min="1" max="1" width="24" customWidth="1"/></cols><sheetData>'
).encode()
_SHEET_TAIL: Final = b"</sheetData></worksheet>"


def _package_files(sheets: int) -> dict[str, str]:
    names = ["lag" if i == 1 else f"lag {i}" for i in range(1, sheets + 1)]
    sheet_entries = "".join(
        f'<sheet name="{name}" sheetId="{i}" r:id="rId{i}"/>' for i, name in enumerate(names, 1)
    )
    sheet_rels = "".join(
        f'<Relationship Id="rId{i}" Type="{_REL_NS}/worksheet" Target="worksheets/sheet{i}.xml"/>'
        for i in range(1, sheets + 1)
    )
    overrides = "".join(
        f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        for i in range(1, sheets + 1)
    )
    head = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    return {
        "[Content_Types].xml": head
        + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
        'officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-'
        f'officedocument.spreadsheetml.styles+xml"/>{overrides}</Types>',
        "_rels/.rels": head + f'<Relationships xmlns="{_PKG_REL_NS}"><Relationship Id="rId1" '
        f'Type="{_REL_NS}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": head
        + f'<workbook xmlns="{_NS}" xmlns:r="{_REL_NS}"><sheets>{sheet_entries}</sheets>'
        "</workbook>",
        "xl/_rels/workbook.xml.rels": head + f'<Relationships xmlns="{_PKG_REL_NS}">{sheet_rels}'
        f'<Relationship Id="rId{sheets + 1}" Type="{_REL_NS}/styles" Target="styles.xml"/>'
        "</Relationships>",
        "xl/styles.xml": head + f'<styleSheet xmlns="{_NS}">'
        '<numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd hh:mm:ss.000"/>'
        '</numFmts><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
        '<fills count="2"><fill><patternFill patternType="none"/></fill>'
        '<fill><patternFill patternType="gray125"/></fill></fills>'
        '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border>'
        '</borders><cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" '
        'borderId="0"/></cellStyleXfs><cellXfs count="2"><xf numFmtId="0" fontId="0" '
        'fillId="0" borderId="0" xfId="0"/><xf numFmtId="164" fontId="0" fillId="0" '
        'borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs><cellStyles count="1">'
        '<cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>',
    }


def _slices(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for offset in range(0, batch.num_rows, _SLICE):
            yield batch.slice(offset, _SLICE)


def write_xlsx(batches: Iterable[pa.RecordBatch], max_rows: int | None = None) -> Iterator[bytes]:
    """The report as an XLSX workbook, chunk by chunk; sheets "lag", "lag 2"… of at most
    ``max_rows`` rows each (the header included)."""
    limit = max_rows or MAX_ROWS
    sink = ByteSink()
    archive = zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1)
    sheets, used, entry = 0, limit, None

    def next_sheet():
        nonlocal sheets, used, entry
        if entry is not None:
            entry.write(_SHEET_TAIL)
            entry.close()
        sheets += 1
        entry = archive.open(f"xl/worksheets/sheet{sheets}.xml", "w", force_zip64=True)
        entry.write(_SHEET_HEAD)
        entry.write(_header_xml())
        used = 1

    for batch in _slices(batches):
        while batch.num_rows:
            if used >= limit:
                next_sheet()
            part = batch.slice(0, limit - used)
            entry.write(_rows_xml(part, used + 1))
            used += part.num_rows
            batch = batch.slice(part.num_rows)
        yield sink.take()
    if entry is None:
        next_sheet()
    entry.write(_SHEET_TAIL)
    entry.close()
    for name, text in _package_files(sheets).items():
        archive.writestr(name, text)
    archive.close()
    yield sink.take()

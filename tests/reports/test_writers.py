"""The writers: every format's contents and column order, escaping of text cells only."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dashboard.reports.rows import REPORT_COLUMNS
from dashboard.reports.writers import write_report
from dashboard.reports.xlsx import MAX_ROWS, write_xlsx

COLUMNS = list(REPORT_COLUMNS)
assert COLUMNS == [
    "time", "cluster", "source", "group", "topic", "partition", "committed", "latest", "lag",
    "time_lag_s", "status",
]  # fmt: skip

T = 1_772_323_200_000  # 2026-03-01T00:00:00Z


def batch(rows: list[dict], dictionary: bool = False) -> pa.RecordBatch:
    def text(name):
        array = pa.array([r[name] for r in rows], pa.string())
        return array.dictionary_encode() if dictionary else array

    return pa.RecordBatch.from_arrays(
        [
            pa.array([r["time"] for r in rows], pa.int64()).view(pa.timestamp("ms", tz="UTC")),
            text("cluster"), text("source"), text("group"), text("topic"),
            pa.array([r["partition"] for r in rows], pa.int32()),
            pa.array([r["committed"] for r in rows], pa.int64()),
            pa.array([r["latest"] for r in rows], pa.int64()),
            pa.array([r["lag"] for r in rows], pa.int64()),
            pa.array([r["time_lag_s"] for r in rows], pa.float64()),
            text("status"),
        ],
        names=COLUMNS,
    )  # fmt: skip


ROWS = [
    {"time": T, "cluster": "lab", "source": "kafka", "group": "=HYPERLINK(\"http://x\")",
     "topic": "-orders", "partition": 0, "committed": 100, "latest": 95, "lag": -5,
     "time_lag_s": 1.25, "status": "OK"},
    {"time": T + 1_234, "cluster": "lab", "source": "storm", "group": "@sum", "topic": "+t",
     "partition": 7, "committed": 10, "latest": None, "lag": None, "time_lag_s": None,
     "status": "STALL"},
    {"time": T + 60_000, "cluster": "lab", "source": "kafka", "group": "plain, \"quoted\"",
     "topic": "\tcmd", "partition": 2, "committed": 0, "latest": 3, "lag": 3,
     "time_lag_s": float("nan"), "status": "UNKNOWN"},
]  # fmt: skip


def render(fmt: str, batches) -> bytes:
    return b"".join(write_report(batches, fmt))


@pytest.mark.parametrize("dictionary", [False, True])
def test_csv_contents_order_and_escaping(dictionary):
    data = render("csv", [batch(ROWS[:2], dictionary), batch(ROWS[2:], dictionary)])
    text = data.decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == COLUMNS  # one header, even across batches
    assert len(rows) == 4
    assert rows[1] == [
        "2026-03-01T00:00:00.000Z", "lab", "kafka", "'=HYPERLINK(\"http://x\")", "'-orders",
        "0", "100", "95", "-5", "1.25", "OK",
    ]  # fmt: skip
    assert rows[2][:5] == ["2026-03-01T00:00:01.234Z", "lab", "storm", "'@sum", "'+t"]
    assert rows[2][6:10] == ["10", "", "", ""]  # missing numbers: empty cells
    assert rows[3][3:5] == ['plain, "quoted"', "'\tcmd"]
    # numbers are bare (a spreadsheet reads -5 as the number -5); text is quoted
    first_line = text.splitlines()[1]
    assert ",-5," in first_line
    assert '"\'=HYPERLINK(""http://x"")"' in first_line


def test_csv_empty_report_has_header():
    assert list(csv.reader(io.StringIO(render("csv", []).decode()))) == [COLUMNS]


def test_json_contents_and_order():
    doc = json.loads(render("json", [batch(ROWS[:1]), batch(ROWS[1:], dictionary=True)]))
    assert [list(row) for row in doc] == [COLUMNS] * 3
    assert doc[0] == {
        "time": "2026-03-01T00:00:00.000Z", "cluster": "lab", "source": "kafka",
        "group": "=HYPERLINK(\"http://x\")", "topic": "-orders", "partition": 0,
        "committed": 100, "latest": 95, "lag": -5, "time_lag_s": 1.25, "status": "OK",
    }  # fmt: skip
    assert doc[1]["latest"] is None and doc[1]["lag"] is None and doc[1]["time_lag_s"] is None
    assert doc[2]["time_lag_s"] is None  # NaN is not JSON: null
    assert doc[2]["topic"] == "\tcmd"


def test_json_empty_and_hostile_names():
    assert json.loads(render("json", [])) == []
    nasty = dict(ROWS[0], group='"}]\n<script>\u2028\x01', topic="Grüße")
    doc = json.loads(render("json", [batch([nasty])]))
    assert doc[0]["group"] == nasty["group"]
    assert doc[0]["topic"] == "Grüße"


def test_parquet_types_and_values():
    table = pq.read_table(io.BytesIO(render("parquet", [batch(ROWS[:2]), batch(ROWS[2:], True)])))
    assert table.column_names == COLUMNS
    assert table.schema.field("time").type == pa.timestamp("ms", tz="UTC")
    assert table.schema.field("group").type == pa.string()
    assert table.schema.field("lag").type == pa.int64()
    assert table.schema.field("partition").type == pa.int32()
    assert table["lag"].to_pylist() == [-5, None, 3]
    assert table["group"].to_pylist() == [r["group"] for r in ROWS]  # data, not escaped
    assert table["time"].cast(pa.int64()).to_pylist() == [r["time"] for r in ROWS]


def test_parquet_empty_report_keeps_schema():
    table = pq.read_table(io.BytesIO(render("parquet", [])))
    assert table.num_rows == 0
    assert table.column_names == COLUMNS


def test_xlsx_cells_escaping_and_types():
    workbook = openpyxl.load_workbook(io.BytesIO(render("xlsx", [batch(ROWS)])))
    sheet = workbook["lag"]
    rows = list(sheet.iter_rows(values_only=True))
    assert list(rows[0]) == COLUMNS
    first = rows[1]
    assert first[0] == datetime(2026, 3, 1, 0, 0)  # UTC, as a date-time cell
    assert first[3] == '\'=HYPERLINK("http://x")'
    assert first[4] == "'-orders"
    assert first[8] == -5 and isinstance(first[8], int)  # a number, not escaped text
    assert first[9] == 1.25
    assert sheet.cell(row=2, column=9).data_type == "n"
    assert sheet.cell(row=2, column=4).data_type == "s"  # text, not a formula
    assert abs(rows[2][0] - datetime(2026, 3, 1, 0, 0, 1, 234_000)).total_seconds() < 0.001
    assert rows[2][3] == "'@sum" and rows[2][4] == "'+t"
    assert rows[2][7] is None
    assert rows[3][9] is None  # NaN: empty
    assert rows[3][4] == "'\tcmd"


def test_xlsx_control_characters_do_not_break_the_file():
    nasty = dict(ROWS[0], group="bad\x01name")
    rows = list(openpyxl.load_workbook(io.BytesIO(render("xlsx", [batch([nasty])])))["lag"].values)
    assert rows[1][3] == "bad\ufffdname"


def test_xlsx_empty_has_header():
    rows = list(openpyxl.load_workbook(io.BytesIO(render("xlsx", [])))["lag"].values)
    assert [list(r) for r in rows] == [COLUMNS]


def test_xlsx_sheet_limit_constant():
    assert MAX_ROWS == 1_048_576


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown report format"):
        write_report([], "pdf")


def test_xlsx_continues_on_a_new_sheet_past_the_row_limit():
    data = b"".join(write_xlsx([batch(ROWS)], max_rows=3))  # header + 2 rows a sheet
    workbook = openpyxl.load_workbook(io.BytesIO(data))
    assert workbook.sheetnames == ["lag", "lag 2"]
    assert [r[5] for r in workbook["lag"].iter_rows(min_row=2, values_only=True)] == [0, 7]
    second = list(workbook["lag 2"].values)
    assert list(second[0]) == COLUMNS
    assert [r[5] for r in second[1:]] == [2]

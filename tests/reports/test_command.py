"""``manage.py lag_report``: output, formats, exit codes (2 for bad flags, 1 no cluster)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest
from django.core.management import ManagementUtility

from tests.reports.factory import HOUR, MINUTE, T0, sample, write_cycles

pytestmark = pytest.mark.django_db

START = datetime.fromtimestamp(T0 / 1000, UTC).isoformat()
END = datetime.fromtimestamp((T0 + HOUR) / 1000, UTC).isoformat()


@pytest.fixture
def samples(log, cluster):
    rows = [
        sample(T0 + i * 20_000, g, t, p, i, i + 3)
        for i in range(9)
        for g in ("ga", "gb")
        for t in ("t1", "t2")
        for p in (0, 1)
    ]
    write_cycles(log, "c1", rows)
    return rows


def run(capsysbinary, *args) -> tuple[int, bytes, str]:
    """Run the command as ``manage.py`` does, through argv: real exit codes."""
    code = 0
    try:
        ManagementUtility(["manage.py", "lag_report", *args]).execute()
    except SystemExit as exc:
        code = exc.code
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


def test_csv_to_stdout(capsysbinary, samples):
    code, out, err = run(capsysbinary, "--cluster", "c1", "--start", START, "--end", END)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out.decode())))
    assert len(rows) == len(samples)
    assert "lag_report: 72 rows (csv) to stdout" in err


def test_repeatable_group_and_topic_with_resolution(capsysbinary, samples, tmp_path):
    target = tmp_path / "out.json"
    code, out, err = run(
        capsysbinary, "--cluster", "c1", "--group", "ga", "--group", "zz*", "--topic", "t2",
        "--start", START, "--end", END, "--resolution", "1m", "--format", "json",
        "--output", str(target),
    )  # fmt: skip
    assert code == 0 and out == b""
    rows = json.loads(target.read_text())
    assert {(r["group"], r["topic"]) for r in rows} == {("ga", "t2")}
    assert [r["time"] for r in rows if r["partition"] == 0] == [
        "2026-03-01T00:00:00.000Z",
        "2026-03-01T00:01:00.000Z",
        "2026-03-01T00:02:00.000Z",
    ]
    assert [r["committed"] for r in rows if r["partition"] == 0] == [2, 5, 8]  # last of each minute
    assert not list(tmp_path.glob("*.part"))


def test_parquet_file(capsysbinary, samples, tmp_path):
    target = tmp_path / "r.parquet"
    code, _, _ = run(
        capsysbinary,
        "--cluster",
        "c1",
        "--since",
        "400d",
        "--format",
        "parquet",
        "--output",
        str(target),
    )
    assert code == 0
    assert pq.read_table(target).num_rows == len(samples)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--since", "yesterday"], "--since"),
        (["--since", "1h", "--resolution", "7m"], "--resolution"),
        (["--since", "1h", "--format", "pdf"], "--format"),
        (["--start", "nope"], "--start"),
        (["--since", "1h", "--start", START], "--since"),
        (["--since", "1h", "--source", "redis"], "--source"),
        ([], "--since"),
        (["--since", "1h", "--group", "x" * 300], "--group"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(capsysbinary, samples, args, flag):
    code, out, err = run(capsysbinary, "--cluster", "c1", *args)
    assert code == 2
    assert f"{flag}: " in err
    assert out == b""


def test_missing_cluster_flag_exits_2(capsysbinary, samples):
    code, _, err = run(capsysbinary, "--since", "1h")
    assert code == 2
    assert "--cluster" in err


def test_unknown_cluster_exits_1(capsysbinary, samples, tmp_path):
    target = tmp_path / "x.csv"
    code, out, err = run(
        capsysbinary, "--cluster", "nope", "--since", "1h", "--output", str(target)
    )
    assert code == 1
    assert "no cluster named 'nope'" in err
    assert not target.exists()


def test_output_in_missing_directory_exits_2(capsysbinary, samples, tmp_path):
    code, _, err = run(
        capsysbinary, "--cluster", "c1", "--since", "1h", "--output", str(tmp_path / "no" / "x.csv")
    )
    assert code == 2
    assert "--output" in err


def test_escaping_in_command_output(capsysbinary, log, cluster):
    write_cycles(log, "c1", [sample(T0, "=cmd|' /C calc'!A0", "@t", 0, 5, 2)])
    code, out, _ = run(capsysbinary, "--cluster", "c1", "--start", START, "--end", END)
    assert code == 0
    row = next(csv.DictReader(io.StringIO(out.decode())))
    assert row["group"] == "'=cmd|' /C calc'!A0" and row["topic"] == "'@t"
    assert row["lag"] == "-3"
    assert ",-3," in out.decode().splitlines()[1]
    _ = MINUTE

"""Cell transformations: formula escaping (Python and Arrow) and ISO-8601 times."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest

from dashboard.reports.cells import escape_formula, escape_text_array, iso_ms_strings


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=SUM(A1)", "'=SUM(A1)"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@cmd", "'@cmd"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("orders", "orders"),
        ("a=b", "a=b"),
        ("", ""),
        ("'quoted", "'quoted"),
    ],
)
def test_escape_formula_text(value, expected):
    assert escape_formula(value) == expected


@pytest.mark.parametrize("value", [-5, -1.5, 0, None, 3])
def test_escape_formula_leaves_non_text(value):
    assert escape_formula(value) == value


def test_escape_text_array_plain():
    values = ["=1+1", "ok", "-x", None, "@a", "\tb", "\rc", "+d", "e-"]
    assert escape_text_array(pa.array(values)).to_pylist() == [
        "'=1+1",
        "ok",
        "'-x",
        None,
        "'@a",
        "'\tb",
        "'\rc",
        "'+d",
        "e-",
    ]


def test_escape_text_array_dictionary_keeps_indices():
    array = pa.array(["=a", "b", "=a", "b"]).dictionary_encode()
    escaped = escape_text_array(array)
    assert pa.types.is_dictionary(escaped.type)
    assert escaped.to_pylist() == ["'=a", "b", "'=a", "b"]
    assert escaped.indices.equals(array.indices)


def test_escape_text_array_untouched_when_clean():
    array = pa.array(["a", "b"])
    assert escape_text_array(array) is array


def test_escape_text_array_chunked_and_empty():
    chunked = pa.chunked_array([pa.array(["=x"]), pa.array(["y"])])
    assert escape_text_array(chunked).to_pylist() == ["'=x", "y"]
    assert escape_text_array(pa.array([], pa.string())).to_pylist() == []


def reference(ms: int) -> str:
    at = datetime.fromtimestamp(ms / 1000, UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def test_iso_times_match_datetime():
    rng = np.random.default_rng(7)
    ms = np.concatenate(
        [
            rng.integers(0, 253_402_300_799_999, 3000),  # 1970..9999: the wide-span path
            1_772_000_000_000 + rng.integers(0, 3 * 86_400_000, 3000),  # a few days
            np.array([0, 951_782_400_000, 4_107_542_399_999]),  # epoch, 2000-02-29, 2100-02-28
        ]
    )
    got = iso_ms_strings(ms).to_pylist()
    assert got == [reference(int(m)) for m in ms]


def test_iso_times_from_timestamp_array_and_empty():
    ts = pa.array([1_772_323_200_123], pa.int64()).view(pa.timestamp("ms", tz="UTC"))
    assert iso_ms_strings(ts).to_pylist() == ["2026-03-01T00:00:00.123Z"]
    assert iso_ms_strings(np.array([], dtype=np.int64)).to_pylist() == []

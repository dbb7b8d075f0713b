"""The packed columns of the raw history (``dashboard.store.packing``): every value comes
back as it went in, and damaged bytes are a clear error, not wrong figures."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.store.packing import (
    BOOL,
    FLOAT,
    INT,
    STR,
    PackingError,
    pack,
    unpack,
    unpack_row,
)
from dashboard.store.raw_history import KINDS

INT64 = (-(2**63), 2**63 - 1)

CASES = {
    "empty": ({"a": []}, {"a": INT}),
    "no columns": ({}, {}),
    "one int": ({"a": [7]}, {"a": INT}),
    "int64 limits, deltas wrap": ({"a": [INT64[1], INT64[0], 0, INT64[1], -1]}, {"a": INT}),
    "all null ints": ({"a": [None, None, None]}, {"a": INT}),
    "nulls among ints": ({"a": [None, 5, None, -5]}, {"a": INT}),
    "nine rows (a mask of two bytes)": ({"a": [None] * 8 + [1]}, {"a": INT}),
    "floats with nulls": ({"f": [0.0, None, -1.5, 1e300, float("inf")]}, {"f": FLOAT}),
    "bools with nulls": ({"b": [True, False, None, True]}, {"b": BOOL}),
    "strings, repeated, unicode": ({"s": ["é", "a", "é", "", "</script>"]}, {"s": STR}),
    "several columns": (
        {"t": ["x", "y"], "p": [0, 1], "f": [None, 2.5], "b": [False, True]},
        {"t": STR, "p": INT, "f": FLOAT, "b": BOOL},
    ),
}


@pytest.mark.parametrize("columns, kinds", list(CASES.values()), ids=list(CASES))
def test_round_trip(columns: dict, kinds: dict) -> None:
    assert unpack(pack(columns, kinds), kinds) == {name: list(columns[name]) for name in kinds}


REFUSED = {
    "columns of different lengths": ({"a": [1], "b": [1, 2]}, {"a": INT, "b": INT}, ValueError),
    "an int past int64": ({"a": [2**63]}, {"a": INT}, OverflowError),
    "an unknown kind": ({"a": [1]}, {"a": "decimal"}, ValueError),
    "a missing column": ({"a": [1]}, {"a": INT, "b": INT}, KeyError),
}


@pytest.mark.parametrize("columns, kinds, error", list(REFUSED.values()), ids=list(REFUSED))
def test_what_cannot_be_packed_is_refused(columns: dict, kinds: dict, error: type) -> None:
    with pytest.raises(error):
        pack(columns, kinds)


GOOD = pack({"a": [1, 2, None], "s": ["x", "y", "x"]}, {"a": INT, "s": STR})
DAMAGED = {
    "no tag": b"",
    "another tag": b"LWP2" + GOOD[4:],
    "not zlib": b"LWP1 not compressed",
    "truncated": GOOD[:-3],
    "not bytes": "LWP1",
}


@pytest.mark.parametrize("data", list(DAMAGED.values()), ids=list(DAMAGED))
def test_damaged_bytes_are_a_packing_error(data) -> None:
    with pytest.raises(PackingError):
        unpack(data, {"a": INT, "s": STR})


def test_other_columns_than_packed_are_a_packing_error() -> None:
    with pytest.raises(PackingError):
        unpack(GOOD, {"a": INT})  # the string column is left over
    with pytest.raises(PackingError):
        unpack(GOOD, {"a": INT, "s": STR, "more": INT})


_ROW = st.tuples(
    st.sampled_from(["orders", "clicks", "é"]),
    st.integers(0, 2**31 - 1),
    *(st.none() | st.integers(*INT64) for _ in range(3)),
    st.none() | st.floats(allow_nan=False),
    *(st.none() | st.integers(*INT64) for _ in range(3)),
    st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ROW, max_size=40))
def test_any_partitions_figures_come_back(rows: list[tuple]) -> None:
    columns = {name: [r[i] for r in rows] for i, name in enumerate(KINDS)}
    assert unpack(pack(columns, KINDS), KINDS) == columns


def test_a_kafka_groups_partitions_take_a_few_tens_of_bytes() -> None:
    """What the hot database's size rests on (benchmarks/bench_hot_db.py measures the whole)."""
    rnd = random.Random(3)
    n = 50
    committed = [rnd.randrange(10**6, 10**10) for _ in range(n)]
    lag = [rnd.randrange(0, 5_000) for _ in range(n)]
    columns = {
        "topic": ["orders"] * n, "partition": list(range(n)), "committed": committed,
        "latest": [c + x for c, x in zip(committed, lag, strict=True)], "lag": lag,
        "time_lag_s": [rnd.random() * 30 for _ in range(n)], "pending": [None] * n,
        "failed": [None] * n, "acked": [None] * n, "stale": [False] * n,
    }  # fmt: skip
    assert len(pack(columns, KINDS)) / n < 30


ROWS = {
    "topic": ["orders", "orders", "clicks", "clicks"],
    "partition": [0, 1, 0, 1],
    "lag": [5, None, 7, 2**63 - 1],
    "t": [0.5, 1.5, None, 3.5],
    "ok": [True, None, False, True],
}
ROW_KINDS = {"topic": STR, "partition": INT, "lag": INT, "t": FLOAT, "ok": BOOL}
FOUND = {
    "the first row": ({"topic": "orders", "partition": 0},
                      {"topic": "orders", "partition": 0, "lag": 5, "t": 0.5, "ok": True}),
    "nulls come back as None": ({"topic": "orders", "partition": 1},
                                {"topic": "orders", "partition": 1, "lag": None, "t": 1.5,
                                 "ok": None}),
    "the last row, int64 max": ({"topic": "clicks", "partition": 1},
                                {"topic": "clicks", "partition": 1, "lag": 2**63 - 1, "t": 3.5,
                                 "ok": True}),
    "a string not there": ({"topic": "nope", "partition": 0}, None),
    "a number not there": ({"topic": "orders", "partition": 9}, None),
    "a number past int64": ({"partition": 2**64}, None),
    "a float key": ({"t": 1.5}, {"topic": "orders", "partition": 1, "lag": None, "t": 1.5,
                                 "ok": None}),
}  # fmt: skip


@pytest.mark.parametrize("key, row", list(FOUND.values()), ids=list(FOUND))
def test_one_row_is_read_by_its_key(key: dict, row: dict | None) -> None:
    assert unpack_row(pack(ROWS, ROW_KINDS), ROW_KINDS, key) == row


@settings(max_examples=100, deadline=None)
@given(st.lists(_ROW, min_size=1, max_size=30), st.data())
def test_a_row_read_by_key_is_the_first_with_that_key(rows: list[tuple], data) -> None:
    columns = {name: [r[i] for r in rows] for i, name in enumerate(KINDS)}
    i = data.draw(st.integers(0, len(rows) - 1))
    key = {"topic": rows[i][0], "partition": rows[i][1]}
    first = next(j for j, r in enumerate(rows) if (r[0], r[1]) == (rows[i][0], rows[i][1]))
    assert unpack_row(pack(columns, KINDS), KINDS, key) == {
        name: columns[name][first] for name in KINDS
    }

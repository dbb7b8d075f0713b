"""Status at a time from the history of changes (the rule every report row uses)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dashboard.reports.status import StatusHistory

CHANGES = [
    ("kafka", "g", "t", 0, 1_000, "OK"),
    ("kafka", "g", "t", 0, 5_000, "STALL"),
    ("kafka", "g", "t", 0, 9_000, "OK"),
    ("kafka", "g", "t", 1, 2_000, "WARN"),
    ("storm", "g", "t", 0, 3_000, "STOP"),
    ("kafka", "h", "t", 0, 4_000, "ERR"),
]


@pytest.fixture
def history() -> StatusHistory:
    return StatusHistory(CHANGES)


@pytest.mark.parametrize(
    ("key", "at", "expected"),
    [
        (("kafka", "g", "t", 0), 999, "UNKNOWN"),  # before any change
        (("kafka", "g", "t", 0), 1_000, "OK"),  # a change holds from its own time
        (("kafka", "g", "t", 0), 4_999, "OK"),
        (("kafka", "g", "t", 0), 5_000, "STALL"),
        (("kafka", "g", "t", 0), 8_999, "STALL"),
        (("kafka", "g", "t", 0), 10**12, "OK"),
        (("kafka", "g", "t", 1), 1_999, "UNKNOWN"),
        (("kafka", "g", "t", 1), 2_000, "WARN"),
        (("storm", "g", "t", 0), 4_000, "STOP"),  # the source is part of the key
        (("zookeeper", "g", "t", 0), 4_000, "UNKNOWN"),
        (("kafka", "h", "t", 0), 4_000, "ERR"),
        (("kafka", "g", "u", 0), 6_000, "UNKNOWN"),  # no history: unknown
        (("kafka", "g", "t", 2), 6_000, "UNKNOWN"),
        (("kafka", "x", "t", 0), 6_000, "UNKNOWN"),
    ],
)
def test_status_at(history, key, at, expected):
    assert history.status_at(*key, at) == expected


def test_vectorised_lookup_over_dictionary_batch(history):
    batch = pa.record_batch(
        {
            "source": pa.array(["kafka", "kafka", "storm", "kafka"]).dictionary_encode(),
            "group": pa.array(["g", "g", "g", "nope"]).dictionary_encode(),
            "topic": pa.array(["t", "t", "t", "t"]).dictionary_encode(),
            "partition": pa.array([0, 1, 0, 0], pa.int32()),
        }
    )
    statuses = history.lookup(batch, np.array([6_000, 2_500, 100, 6_000]))
    assert statuses.to_pylist() == ["STALL", "WARN", "UNKNOWN", "UNKNOWN"]


def test_empty_history_is_all_unknown():
    empty = StatusHistory([])
    batch = pa.table(
        {
            "source": ["kafka"],
            "group": ["g"],
            "topic": ["t"],
            "partition": pa.array([0], pa.int32()),
        }
    )
    assert empty.lookup(batch, np.array([5])).to_pylist() == ["UNKNOWN"]
    assert len(empty) == 0


def test_unsorted_input_and_unusual_status():
    history = StatusHistory([("kafka", "g", "t", 0, 5, "REWIND"), ("kafka", "g", "t", 0, 1, "OK")])
    assert history.status_at("kafka", "g", "t", 0, 3) == "OK"
    assert history.status_at("kafka", "g", "t", 0, 7) == "REWIND"

"""``dashboard.api.burrow.shapes``: Burrow's status documents from rows, case by case."""

from __future__ import annotations

import pytest

from dashboard.api.burrow import shapes as burrow
from dashboard.api.burrow.shapes import Offset, PartitionRow


def row(n: int, status: str = "OK", lag: int | None = 0, complete: float | None = 1.0,
        committed: bool = True) -> PartitionRow:  # fmt: skip
    end = Offset(100 + n, 1_000, 2_000, lag) if committed else None
    return PartitionRow("t", n, "/h", "cid", status, lag, complete, end, end)


@pytest.mark.parametrize(
    ("status", "partition", "group"),
    [
        ("OK", "OK", "OK"), ("WARN", "WARN", "WARN"), ("ERR", "ERR", "ERR"),
        ("STOP", "STOP", "ERR"), ("STALL", "STALL", "ERR"), ("REWIND", "REWIND", "ERR"),
        ("UNKNOWN", "OK", "OK"), ("SOMETHING_NEW", "OK", "OK"),
    ],
)  # fmt: skip
def test_status_mapping(status: str, partition: str, group: str) -> None:
    assert burrow.partition_status(status) == partition
    assert burrow.group_status(status) == group


def test_maxlag_is_the_first_partition_with_the_largest_lag() -> None:
    doc = burrow.status_doc("c", "g", "OK", 1.0, [row(0, lag=5), row(1, lag=9), row(2, lag=9)],
                            show_all=True)  # fmt: skip
    assert doc["maxlag"]["partition"] == 1
    assert doc["totallag"] == 23 and doc["partition_count"] == 3


def test_status_keeps_only_partitions_not_ok_but_totals_cover_all() -> None:
    rows = [row(0, lag=50), row(1, "STALL", lag=10), row(2, "UNKNOWN", lag=3)]
    doc = burrow.status_doc("c", "g", "ERR", None, rows, show_all=False)
    assert [p["partition"] for p in doc["partitions"]] == [1]
    assert doc["maxlag"]["partition"] == 0 and doc["totallag"] == 63
    # complete computed from partitions when the group has none: UNKNOWN counts as incomplete
    assert doc["complete"] == pytest.approx(2 / 3)


def test_unknown_lag_is_zero_and_negative_never_appears() -> None:
    doc = burrow.partition_doc(row(0, "ERR", lag=None))
    assert doc["current_lag"] == 0 and doc["status"] == "ERR"
    assert burrow.partition_doc(row(0, lag=-4))["current_lag"] == 0


def test_no_commit_yet_has_null_offsets() -> None:
    doc = burrow.partition_doc(row(0, committed=False))
    assert doc["start"] is None and doc["end"] is None


def test_offsets_use_burrows_names() -> None:
    assert burrow.offset_doc(Offset(7, 1, 2, None)) == {
        "offset": 7, "timestamp": 1, "observedAt": 2, "lag": None,
    }  # fmt: skip


def test_empty_group() -> None:
    doc = burrow.status_doc("c", "g", "OK", None, [], show_all=True)
    assert (doc["maxlag"], doc["totallag"], doc["complete"], doc["partitions"]) == (
        None, 0, 0.0, [],
    )  # fmt: skip


def test_not_found_is_burrows_evaluator_answer() -> None:
    assert burrow.not_found_status("c", "g") == {
        "cluster": "c", "group": "g", "status": "NOTFOUND", "complete": 1.0, "partitions": [],
        "partition_count": 0, "maxlag": None, "totallag": 0,
    }  # fmt: skip


# --- consumer detail -----------------------------------------------------------------------


def polls(n: int) -> list[Offset]:
    return [Offset(90 + k, 100 * k, 100 * k, 5) for k in range(n)]


def test_detail_offsets_are_the_last_polls_then_the_latest_state() -> None:
    latest = row(0)
    offsets = burrow.partition_offsets(latest, polls(12), window=4)
    assert offsets == [*polls(12)[-3:], latest.end]  # at most `window`, oldest first
    assert burrow.partition_offsets(latest, polls(2), window=4) == [*polls(2), latest.end]
    assert burrow.partition_offsets(latest, polls(5), window=1) == [latest.end]
    assert burrow.partition_offsets(row(0, committed=False), polls(3), window=4) == []


def test_detail_lists_each_topic_by_partition_id_with_burrows_keys() -> None:
    rows = [row(1, lag=-3), PartitionRow("a", 0, "", "", "OK", None, None, None, None)]
    topics = burrow.consumer_topics(rows, {("t", 1): polls(1)}, window=10)
    assert list(topics) == ["a", "t"]
    assert topics["t"][0] == {"offsets": [], "owner": "", "client_id": "", "current-lag": 0}
    one = topics["t"][1]
    assert list(one) == ["offsets", "owner", "client_id", "current-lag"]
    assert [o["offset"] for o in one["offsets"]] == [90, 101]
    assert (one["owner"], one["client_id"], one["current-lag"]) == ("/h", "cid", 0)  # never < 0
    assert topics["a"] == [{"offsets": [], "owner": "", "client_id": "", "current-lag": 0}]
    assert burrow.consumer_topics([], {}, window=10) == {}

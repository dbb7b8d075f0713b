"""``dashboard.monitoring.membership``: stored members as every reader shows them (pure)."""

from __future__ import annotations

import pytest

from collectors.records import GroupMember
from dashboard.monitoring.membership import (
    by_topic,
    group_type,
    member_details,
    reconciling,
)
from dashboard.store.rows import member_document


@pytest.mark.parametrize(
    ("source", "stored", "expected"),
    [
        ("kafka", "classic", "classic"),
        ("kafka", "consumer", "consumer"),
        ("kafka", "", None),  # unknown, or written before types were stored
        ("kafka", "share", "share"),  # KIP-932's share groups (queues)
        ("kafka", "streams", "streams"),  # KIP-1071's streams groups (Kafka Streams)
        ("kafka", "connect", None),  # not a type Lagwatch reads
        ("zookeeper", "consumer", None),
        ("storm", "", None),
    ],
)
def test_group_type(source: str, stored: str, expected: str | None) -> None:
    assert group_type(source, stored) == expected


def test_assignments_regroup_by_topic_and_skip_what_is_not_a_pair() -> None:
    pairs = [["b", 2], ["a", 1], ["b", 0], ["b", 2], "x", ["c"], [3, 1], ["d", "1"], ["e", True]]
    assert by_topic(pairs) == {"a": [1], "b": [0, 2]}
    assert by_topic(None) == {} and by_topic("nonsense") == {}


# What a member of any group but a streams group has in these keys (KIP-1071's).
NOT_STREAMS = {"process_id": None, "tasks": None, "target_tasks": None}


def test_what_the_store_writes_reads_back_in_full() -> None:
    member = GroupMember(
        member_id="m-1", client_id="app", host="/10.0.0.1",
        assignment=(("t", 1), ("t", 0)), instance_id="pod-1", member_epoch=5,
        target_assignment=(("t", 0), ("u", 3)),
    )  # fmt: skip
    (detail,) = member_details([member_document(member)])
    assert detail == {
        "member_id": "m-1", "client_id": "app", "host": "/10.0.0.1", "instance_id": "pod-1",
        "member_epoch": 5, "assignment": {"t": [0, 1]}, "target_assignment": {"t": [0], "u": [3]},
        **NOT_STREAMS,
    }  # fmt: skip
    assert reconciling(detail)
    classic = member_details([member_document(GroupMember("m-2", assignment=(("t", 2),)))])[0]
    assert classic["target_assignment"] is None and not reconciling(classic)


def test_old_rows_and_odd_values_read_as_unknown() -> None:
    old = {"member_id": "m-1", "client_id": "", "host": None, "assignment": [["t", 0]]}
    odd = {"member_id": 7, "member_epoch": True, "instance_id": "", "target_assignment": []}
    assert member_details([old, "not a member", odd]) == [
        {"member_id": "m-1", "client_id": None, "host": None, "instance_id": None,
         "member_epoch": None, "assignment": {"t": [0]}, "target_assignment": None,
         **NOT_STREAMS},
        {"member_id": "7", "client_id": None, "host": None, "instance_id": None,
         "member_epoch": None, "assignment": {}, "target_assignment": {}, **NOT_STREAMS},
    ]  # fmt: skip
    assert member_details(None) == [] and member_details({"m": 1}) == []


def test_reconciling_means_a_known_target_not_held_yet() -> None:
    assert not reconciling({"assignment": {"t": [0]}, "target_assignment": None})
    assert not reconciling({"assignment": {"t": [0]}, "target_assignment": {"t": [0]}})
    assert reconciling({"assignment": {}, "target_assignment": {"t": [0]}})
    assert reconciling({"assignment": {"t": [0]}, "target_assignment": {}})  # to give it up

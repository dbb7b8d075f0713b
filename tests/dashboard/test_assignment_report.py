"""A stored group's balance and what-if (``assignment.whatif``, ``assignment.balance``) and the
Java orders the assignors rest on (``assignment.java``): pure, no database."""

from __future__ import annotations

import pytest

from dashboard.whatif import Figures, assignment_report, balance
from dashboard.whatif.java import (
    hashmap_order,
    int_set_order,
    string_hash,
    string_key,
    topic_partition_hash,
)


def rows(n: int, topic: str = "t", lag=lambda p: 10 * p, owner: str = "") -> list[dict]:
    return [
        {"topic": topic, "partition": p, "lag": lag(p), "time_lag_s": float(p), "owner": owner}
        for p in range(n)
    ]


def kafka(members, partitions, group_type="classic", source="kafka", known=True) -> dict:
    return assignment_report(
        source=source, group_type_stored=group_type, members=members, members_known=known,
        rows=partitions,
    )  # fmt: skip


def held(member_id: str, *partitions: int, topic: str = "t", **extra) -> dict:
    return {"member_id": member_id, "assignment": [[topic, p] for p in partitions], **extra}


# --- balance ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("holdings", "expected"),
    [
        ({"a": [0, 1, 2, 3], "b": [4, 5, 6], "c": [7, 8, 9]}, (4, 3.3333, 1.2, "c", 0.5333)),
        ({"a": [0, 1], "b": [2, 3]}, (2, 2.0, 1.0, "b", 0.8333)),
        ({"a": list(range(10)), "b": [], "c": []}, (10, 3.3333, 3.0, "a", 1.0)),
        ({"a": [0]}, (1, 1.0, 1.0, None, None)),  # partition 0 has no lag: nobody is busiest
        ({}, (None, None, None, None, None)),
    ],
    ids=["4/3/3", "even", "one member holds all", "no lag", "no member"],
)
def test_imbalance_figures(holdings, expected) -> None:
    figures = {("t", p): Figures(10 * p, float(p)) for p in range(10)}
    b = balance({m: [("t", p) for p in ps] for m, ps in holdings.items()}, [], figures)
    got = (b["partitions_max"], b["partitions_mean"], b["partitions_imbalance"],
           b["busiest_member"], b["busiest_lag_share"])  # fmt: skip
    assert got == expected


def test_member_figures_sum_lag_take_the_worst_time_lag_and_keep_unknowns() -> None:
    figures = {("t", 0): Figures(5, 2.0), ("t", 1): Figures(None, 9.0), ("t", 2): Figures(None)}
    b = balance({"a": [("t", 0), ("t", 1)], "b": [("t", 2)], "c": []}, [("t", 3)], figures)
    assert b["members"] == [
        {"member_id": "a", "partitions": 2, "lag": 5, "time_lag_s": 9.0, "lag_share": 1.0},
        {"member_id": "b", "partitions": 1, "lag": None, "time_lag_s": None, "lag_share": None},
        {"member_id": "c", "partitions": 0, "lag": 0, "time_lag_s": None, "lag_share": 0.0},
    ]
    assert b["unowned"] == {"partitions": 1, "lag": None} and b["total_lag"] == 5


def test_unowned_lag_counts_in_the_groups_lag() -> None:
    report = kafka([held("a", 0)], rows(2, lag=lambda p: 30 if p else 10))
    assert report["balance"]["unowned"] == {"partitions": 1, "lag": 30}
    assert report["balance"]["busiest_lag_share"] == 0.25


def test_members_from_partition_owners_where_the_source_reports_none() -> None:
    parts = rows(2, owner="host-1") + rows(1, topic="u", owner="host-2") + rows(1, topic="v")
    report = kafka([], parts, source="zookeeper", known=False)
    assert [(m["member_id"], m["partitions"]) for m in report["balance"]["members"]] == [
        ("host-1", 2), ("host-2", 1),
    ]  # fmt: skip
    assert report["balance"]["unowned"]["partitions"] == 1
    assert report["what_if"] is None and report["what_if_subscriptions"] is None


# --- what-if ---------------------------------------------------------------------------


def what_if(report: dict) -> dict[str, tuple]:
    return {
        f"{w['assignor']}/{w['protocol']}": (
            {m["member_id"]: m["partitions"] for m in w["members"]},
            w["moved"],
            w["unowned_assigned"],
        )
        for w in report["what_if"]
    }


def test_what_if_of_a_classic_group_range_round_robin_sticky() -> None:
    report = kafka([held("a", 0, 1, 2, 3, 4), held("b", 5), held("c")], rows(8))
    assert what_if(report) == {
        "range/classic": ({"a": 3, "b": 3, "c": 2}, 2, 2),
        "roundrobin/classic": ({"a": 3, "b": 3, "c": 2}, 4, 2),
        "sticky/classic": ({"a": 3, "b": 3, "c": 2}, 2, 2),
    }
    assert report["what_if_subscriptions"] == "inferred"
    sticky = report["what_if"][2]
    assert sticky["members"][0] == {
        "member_id": "a",
        "partitions": 3,
        "assignment": {"t": [0, 1, 2]},
    }


def test_kip848_groups_add_the_brokers_assignors_from_their_targets() -> None:
    members = [
        held("a", 0, 1, target_assignment=[["t", 0], ["t", 1], ["t", 2]]),
        held("b", 2, target_assignment=[["t", 3]]),
    ]
    got = what_if(kafka(members, rows(4), group_type="consumer"))
    # a's target (0-2) is over quota: the broker keeps 0 and 1 there and gives 2 to b, which
    # holds it already; 3, held by nobody yet, stays b's target.
    assert got["uniform/consumer"] == ({"a": 2, "b": 2}, 0, 1)
    assert got["range/consumer"] == got["range/classic"] == ({"a": 2, "b": 2}, 0, 1)
    assert "uniform/consumer" not in what_if(kafka(members, rows(4), group_type=""))


def test_a_balanced_group_moves_nothing_with_the_sticky_assignors() -> None:
    members = [held("a", 0, 3, 6, 9), held("b", 1, 4, 7), held("c", 2, 5, 8)]
    got = what_if(kafka(members, rows(10), group_type="consumer"))
    assert got["sticky/classic"][1] == got["uniform/consumer"][1] == 0
    assert got["range/classic"][1] == 6


def test_members_without_reported_assignments_hold_what_names_them_owner() -> None:
    parts = rows(2, owner="a") + rows(1, topic="u", owner="b")
    report = kafka([{"member_id": "a"}, {"member_id": "b"}], parts)
    assert [m["partitions"] for m in report["balance"]["members"]] == [2, 1]
    assert what_if(report)["sticky/classic"] == ({"a": 2, "b": 1}, 0, 0)


def test_subscriptions_inferred_from_what_is_held_not_from_old_offsets() -> None:
    # "old" still has committed offsets, but nobody has held it since the group left it.
    report = kafka([held("a", 0), held("b", 1)], rows(2) + rows(3, topic="old"))
    assert what_if(report)["range/classic"] == ({"a": 1, "b": 1}, 0, 0)


def test_reported_subscriptions_are_used_as_reported() -> None:
    members = [held("a", 0, subscription=["t"]), held("b", subscription=["t", "u"])]
    report = kafka(members, rows(2) + rows(2, topic="u"))
    assert report["what_if_subscriptions"] == "reported"
    assert what_if(report)["range/classic"] == ({"a": 1, "b": 3}, 0, 3)
    members[1].pop("subscription")
    assert kafka(members, rows(2))["what_if_subscriptions"] == "partly reported"


def test_empty_group_and_group_without_partitions() -> None:
    report = kafka([], rows(3))
    assert report["balance"]["members"] == [] and report["balance"]["unowned"]["partitions"] == 3
    assert all(w["members"] == [] and w["moved"] == 0 for w in report["what_if"])
    assert what_if(kafka([held("a")], []))["sticky/classic"] == ({"a": 0}, 0, 0)


def test_more_members_than_partitions_and_odd_stored_members() -> None:
    members = [held("a", 0), held("b"), held("c"), "not a member", {"assignment": "junk"}]
    got = what_if(kafka(members, rows(2)))
    # "?" (a member stored without an id) sorts first, as Kafka would sort its real id
    assert got["range/classic"] == ({"?": 1, "a": 1, "b": 0, "c": 0}, 1, 1)


def test_a_refusal_or_an_oversized_general_case_is_a_note_not_a_crash(monkeypatch) -> None:
    from dashboard.whatif import whatif

    monkeypatch.setattr(whatif, "GENERAL_STICKY_BUDGET", 3)
    members = [held("a", 0, subscription=["t"]), held("b", subscription=["t", "u"])]
    sticky = kafka(members, rows(2) + rows(2, topic="u"))["what_if"][2]
    assert sticky["members"] is None and sticky["moved"] is None
    assert sticky["note"].startswith("not simulated")


# --- Java's orders ---------------------------------------------------------------------


def test_java_string_hash_and_order() -> None:
    assert string_hash("hello") == 99162322  # "hello".hashCode()
    assert string_hash("app-61") == 2883843559  # negative in Java: the same 32 bits
    assert string_hash("\U0001f600") == (0xD83D * 31 + 0xDE00)  # two UTF-16 code units
    assert sorted(["\uff21", "\U0001f600", "b"], key=string_key) == ["b", "\U0001f600", "\uff21"]
    assert topic_partition_hash("t", 3) == 31 * 34 + ord("t")


def test_java_hashmap_and_hashset_orders() -> None:
    assert hashmap_order(["m-1", "m-2", "m-3"]) == ["m-1", "m-3", "m-2"]
    assert hashmap_order(["consumer-1", "consumer-2"]) == ["consumer-2", "consumer-1"]
    assert int_set_order([0, 1, 16, 17]) == [0, 16, 1, 17]  # 16 buckets: 16 lands with 0
    assert int_set_order(list(range(20))) == list(range(20))  # 20 values: 32 buckets

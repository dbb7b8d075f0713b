"""``/api/v1/groups/<id>/``: the assignment ``balance`` object, the ``what_if`` list and
``what_if_subscriptions`` (docs/API.md), their shapes, and no query more per member."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.monitoring.models import ConsumerGroup, PartitionState
from tests.api.world import HOSTILE, World

pytestmark = pytest.mark.django_db

BALANCE_KEYS = {
    "members", "unowned", "total_lag", "partitions_max", "partitions_mean",
    "partitions_imbalance", "busiest_member", "busiest_lag_share",
}  # fmt: skip
MEMBER_KEYS = {"member_id", "partitions", "lag", "time_lag_s", "lag_share"}
WHAT_IF_KEYS = {"assignor", "protocol", "members", "moved", "unowned_assigned", "note"}


def _group(world: World, name: str, members: list, partitions: int, **kw) -> ConsumerGroup:
    g = ConsumerGroup.objects.create(
        cluster=world.clusters["prod"], source="kafka", name=name, status="OK", members=members,
        first_seen_at=world.now, last_seen_at=world.now, **kw,
    )  # fmt: skip
    PartitionState.objects.bulk_create(
        PartitionState(group=g, topic="orders", partition=p, committed=0, latest=10 * (p + 1),
                       lag=10 * (p + 1), time_lag_s=float(p), sampled_at=world.now)
        for p in range(partitions)
    )  # fmt: skip
    return g


def _held(member_id: str, *partitions: int, **extra) -> dict:
    return {"member_id": member_id, "assignment": [["orders", p] for p in partitions], **extra}


def test_balance_and_what_if_shapes_of_a_kip848_group(api, world: World) -> None:
    members = [
        _held("c-1", 0, 1, 2, target_assignment=[["orders", 0], ["orders", 1], ["orders", 2]]),
        _held("c-2", 3, target_assignment=[["orders", 3]]),
    ]
    g = _group(world, "checkout", members, 4, group_type="consumer")
    body = api.get(f"/api/v1/groups/{g.pk}/")
    balance = body["balance"]
    assert set(balance) == BALANCE_KEYS
    assert balance["members"] == [
        {"member_id": "c-1", "partitions": 3, "lag": 60, "time_lag_s": 2.0, "lag_share": 0.6},
        {"member_id": "c-2", "partitions": 1, "lag": 40, "time_lag_s": 3.0, "lag_share": 0.4},
    ]
    assert balance["unowned"] == {"partitions": 0, "lag": None}
    assert (balance["partitions_max"], balance["partitions_mean"]) == (3, 2.0)
    assert (balance["partitions_imbalance"], balance["busiest_member"]) == (1.5, "c-1")
    assert body["what_if_subscriptions"] == "inferred"
    assert [(w["assignor"], w["protocol"]) for w in body["what_if"]] == [
        ("range", "classic"), ("roundrobin", "classic"), ("sticky", "classic"),
        ("uniform", "consumer"), ("range", "consumer"),
    ]  # fmt: skip
    for w in body["what_if"]:
        assert set(w) == WHAT_IF_KEYS and w["note"] is None
        assert [set(m) for m in w["members"]] == [{"member_id", "partitions", "assignment"}] * 2
    uniform = body["what_if"][3]
    assert uniform["members"] == [
        {"member_id": "c-1", "partitions": 2, "assignment": {"orders": [0, 1]}},
        {"member_id": "c-2", "partitions": 2, "assignment": {"orders": [2, 3]}},
    ]
    assert (uniform["moved"], uniform["unowned_assigned"]) == (1, 0)


def test_world_groups_kafka_from_owners_and_not_kafka_without_what_if(api, world: World) -> None:
    billing = api.get(f"/api/v1/groups/{world.groups['billing'].pk}/")
    # the stored members report no assignment: each partition's owner says who holds it
    assert [(m["member_id"], m["partitions"], m["lag"]) for m in billing["balance"]["members"]] == [
        ("m-1", 2, 50), ("m-2", 1, 400),
    ]  # fmt: skip
    assert billing["balance"]["busiest_member"] == "m-2"
    assert [w["assignor"] for w in billing["what_if"]] == ["range", "roundrobin", "sticky"]
    zk = api.get(f"/api/v1/groups/{world.groups['legacy-zk'].pk}/")
    assert zk["what_if"] is None and zk["what_if_subscriptions"] is None
    assert zk["balance"]["members"][0]["member_id"] == "legacy-zk_host-1-0"


def test_hostile_member_ids_come_back_intact(api, world: World) -> None:
    g = _group(world, "hostile-members", [_held(HOSTILE, 0), _held("b")], 2)
    body = api.get(f"/api/v1/groups/{g.pk}/")
    assert body["balance"]["members"][1]["member_id"] == HOSTILE
    assert body["what_if"][0]["members"][1]["member_id"] == HOSTILE
    assert b"</script>" not in api.raw(f"/api/v1/groups/{g.pk}/").content


def test_no_query_more_per_member(api, world: World) -> None:
    api.get("/api/v1/")  # the token's last use is written once a minute: not in the counts
    counts = []
    for n in (2, 50):
        g = _group(world, f"g{n}", [_held(f"m{i}", i) for i in range(n)], 2 * n)
        with CaptureQueriesContext(connection) as ctx:
            api.get(f"/api/v1/groups/{g.pk}/")
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1], counts


def test_whatif_document_is_the_commands(api, world: World) -> None:
    """``/api/v1/groups/<id>/whatif/`` serves exactly what ``assignment_whatif --json`` prints:
    members by id with partitions by topic, assignors by name with assignment and moves."""
    members = [
        _held("c-1", 0, 1, 2, target_assignment=[["orders", 0], ["orders", 1]]),
        _held("c-2", 3, target_assignment=[["orders", 2], ["orders", 3]]),
    ]
    g = _group(world, "checkout", members, 4, group_type="consumer")
    body = api.get(f"/api/v1/groups/{g.pk}/whatif/")
    out = StringIO()
    call_command("assignment_whatif", "--cluster", "prod", "--group", "checkout", "--json",
                 stdout=out)  # fmt: skip
    assert body == json.loads(out.getvalue())
    assert (body["group"], body["type"], body["imbalance"]) == ("checkout", "consumer", 1.5)
    assert [(m["member_id"], m["partitions"]) for m in body["members"]] == [
        ("c-1", {"orders": [0, 1, 2]}), ("c-2", {"orders": [3]}),
    ]  # fmt: skip
    assert set(body["assignors"]) == {"range", "roundrobin", "sticky", "uniform", "server-range"}
    # The broker's uniform starts from the target (2 + 2): nothing of the target moves, but
    # against what the members hold now one partition (2) changes hands.
    assert body["assignors"]["uniform"]["assignment"] == {
        "c-1": {"orders": [0, 1]}, "c-2": {"orders": [2, 3]},
    }  # fmt: skip
    assert body["assignors"]["uniform"]["moves"] == 1
    assert api.get(f"/api/v1/groups/{g.pk + 1000}/whatif/", expect=404)["error"]

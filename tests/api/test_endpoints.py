"""Each /api/v1/ endpoint's content against the world in the test database."""

from __future__ import annotations

from datetime import datetime

import pytest

from dashboard.monitoring.models import LagRollup
from tests.api.world import HOSTILE, World

pytestmark = pytest.mark.django_db


def by_name(results: list[dict], **match) -> dict:
    found = [r for r in results if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, results)
    return found[0]


# --- clusters ------------------------------------------------------------------------------


def test_clusters_list_with_groups_by_status(api, world: World) -> None:
    body = api.get("/api/v1/clusters/")
    assert body["count"] == 2 and [c["name"] for c in body["results"]] == ["prod", "staging"]
    prod = body["results"][0]
    assert prod["groups_by_status"] == {"ERR": 1, "OK": 1, "WARN": 1, "UNKNOWN": 1}
    assert prod["sources"]["zookeeper_consumers"] is True
    assert prod["sources"]["storm_spout_roots"] == ["/spouts"]
    assert body["results"][1]["enabled"] is False


def test_clusters_filter_enabled(api, world: World) -> None:
    assert [c["name"] for c in api.get("/api/v1/clusters/", enabled="false")["results"]] == [
        "staging"
    ]


def test_cluster_detail_has_source_health_and_errors(api, world: World) -> None:
    body = api.get("/api/v1/clusters/prod/")
    health = {h["source"]: h for h in body["source_health"]}
    assert health["kafka"]["reachable"] is True and health["kafka"]["last_duration_s"] == 0.25
    assert health["zookeeper"]["reachable"] is False
    assert health["zookeeper"]["consecutive_failures"] == 4
    assert body["collection_errors"][0]["where"] == "/spouts/x"


def test_cluster_detail_has_its_brokers_purgatory(api, world: World) -> None:
    b1, b2 = api.get("/api/v1/clusters/prod/")["brokers"]
    assert (b1["broker"], b1["fetch_purgatory"], b1["produce_purgatory"]) == ("b1:7071", 12, 1)
    assert b1["fetch_expirations_per_s"] == 0.5 and b1["produce_expirations_per_s"] is None
    assert b1["error"] is None and b1["as_of"].endswith("Z")
    assert (b2["fetch_purgatory"], b2["as_of"], b2["error"]) == (None, None, "Connection refused")
    assert api.get("/api/v1/clusters/staging/")["brokers"] == []


def test_unknown_cluster_is_404_in_the_error_shape(api, world: World) -> None:
    body = api.get("/api/v1/clusters/nope/", expect=404)
    assert body == {"error": {"message": "cluster 'nope' not found"}}


# --- groups --------------------------------------------------------------------------------


def test_groups_list_totals_come_from_partitions(api, world: World) -> None:
    body = api.get("/api/v1/groups/", cluster="prod", source="kafka", name="billing")
    assert body["count"] == 1
    g = body["results"][0]
    assert (g["cluster"], g["source"], g["name"], g["status"]) == (
        "prod",
        "kafka",
        "billing",
        "ERR",
    )
    assert g["partitions"] == 3
    assert g["total_lag"] == 50 + 400 + 0  # not the stale 0 on the group row
    assert g["max_time_lag_s"] == 600.0
    assert g["members"] == 2 and g["generation"] == 7


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"source": "storm"}, {"orders-spout"}),
        ({"source": "kafka,zookeeper", "cluster": "prod"}, {"billing", "legacy-zk", HOSTILE}),
        ({"status": "warn,err"}, {"orders-spout", "billing"}),
        ({"search": "ORDERS"}, {"orders-spout"}),
        ({"cluster": "staging"}, {"billing"}),
        ({"cluster": "nope"}, set()),
    ],
)
def test_groups_filters(api, world: World, query: dict, expected: set) -> None:
    body = api.get("/api/v1/groups/", **query)
    assert {g["name"] for g in body["results"]} == expected


def test_groups_ordering(api, world: World) -> None:
    names = [g["name"] for g in api.get("/api/v1/groups/", ordering="-total_lag")["results"]]
    assert names[:2] == ["billing", "orders-spout"]
    worst = api.get("/api/v1/groups/", ordering="-status")["results"][0]
    assert worst["status"] == "ERR"


def test_group_detail_with_partitions_and_members(api, world: World) -> None:
    gid = world.groups["billing"].pk
    body = api.get(f"/api/v1/groups/{gid}/")
    assert [(p["topic"], p["partition"]) for p in body["partition_list"]] == [
        ("invoices", 0), ("invoices", 1), ("payments", 0),
    ]  # fmt: skip
    stalled = body["partition_list"][1]
    assert stalled["status"] == "STALL" and stalled["lag"] == 400
    assert stalled["diagnosis"][0]["code"] == "POISON_MESSAGE"
    assert body["member_list"][0] == {
        "member_id": "m-1", "client_id": "billing-app", "host": "/10.0.0.1", "assignment": [],
    }  # fmt: skip


def test_a_spout_groups_detail_has_its_topologys_latest_spout_figures(api, world: World) -> None:
    body = api.get(f"/api/v1/groups/{world.groups['orders-spout'].pk}/")
    assert body["spouts"] == [
        {
            "topology_id": "orders-topo-1-1700000000", "spout_id": "orders-spout",
            "at": body["spouts"][0]["at"], "emitted": 1000, "acked": 975, "failed": 2,
            "complete_latency_ms": 12.5, "pending": 20, "max_spout_pending": 20,
        }
    ]  # fmt: skip
    assert body["spouts"][0]["at"].endswith("Z")
    assert api.get(f"/api/v1/groups/{world.groups['billing'].pk}/")["spouts"] == []


def test_unknown_group_is_404(api, world: World) -> None:
    assert api.get("/api/v1/groups/999999/", expect=404)["error"]["message"] == (
        "group 999999 not found"
    )


def test_hostile_names_come_back_intact(api, world: World) -> None:
    body = api.get("/api/v1/groups/", search="evil")
    assert body["results"][0]["name"] == HOSTILE
    raw = api.raw("/api/v1/groups/", search="evil").content
    assert b"</script>" not in raw  # JsonResponse escapes <, > and & in strings


# --- partitions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"status": "STALL"}, {("billing", "invoices", 1)}),
        (
            {"topic": "invoices", "cluster": "prod"},
            {("billing", "invoices", 0), ("billing", "invoices", 1)},
        ),
        ({"diagnosis": "poison_message"}, {("billing", "invoices", 1)}),
        ({"diagnosis": "SLOW_CONSUMER"}, {("orders-spout", "orders", 0)}),
        ({"min_lag": 100}, {("billing", "invoices", 1)}),
        ({"source": "zookeeper"}, {("legacy-zk", "audit", 0)}),
        ({"partition": 0, "topic": "payments"}, {("billing", "payments", 0)}),
    ],
)
def test_partitions_filters(api, world: World, query: dict, expected: set) -> None:
    body = api.get("/api/v1/partitions/", **query)
    assert {(p["group"], p["topic"], p["partition"]) for p in body["results"]} == expected


def test_partitions_of_one_group_ordered_by_lag(api, world: World) -> None:
    gid = world.groups["billing"].pk
    body = api.get("/api/v1/partitions/", group_id=gid, ordering="-lag")
    assert [p["lag"] for p in body["results"]] == [400, 50, 0]


def test_partition_detail(api, world: World) -> None:
    p = world.partitions[("orders-spout", "orders", 0)]
    body = api.get(f"/api/v1/partitions/{p.pk}/")
    assert (body["pending"], body["failed"], body["acked"]) == (3, 0, 100)
    assert body["source"] == "storm" and body["group"] == "orders-spout"


# --- status --------------------------------------------------------------------------------


def test_status_lists_worst_first_with_non_ok_partitions(api, world: World) -> None:
    body = api.get("/api/v1/status/", cluster="prod")
    assert [g["status"] for g in body["results"]] == ["ERR", "WARN", "UNKNOWN", "OK"]
    billing = body["results"][0]
    assert [(p["topic"], p["partition"]) for p in billing["partition_statuses"]] == [
        ("invoices", 1)
    ]
    p = billing["partition_statuses"][0]
    assert p["reason"].startswith("committed offset frozen")
    assert p["diagnosis"] == [{"code": "POISON_MESSAGE", "evidence": {"offset": 500}}]
    assert p["status_since"] is not None
    assert body["summary"]["groups"] == {"ERR": 1, "WARN": 1, "UNKNOWN": 1, "OK": 1}
    assert body["summary"]["partitions"]["STALL"] == 1
    assert body["summary"]["last_status_run"]["outcome"] == "failed"


def test_status_all_partitions_or_none(api, world: World) -> None:
    body = api.get("/api/v1/status/", name="billing", cluster="prod", partitions="all")
    assert len(body["results"][0]["partition_statuses"]) == 3
    body = api.get("/api/v1/status/", name="billing", cluster="prod", partitions="none")
    assert "partition_statuses" not in body["results"][0]


def test_status_changes(api, world: World) -> None:
    body = api.get("/api/v1/status/changes/", level="partition")
    assert body["count"] == 1
    change = body["results"][0]
    assert (change["topic"], change["partition"], change["old_status"], change["new_status"]) == (
        "invoices", 1, "OK", "STALL",
    )  # fmt: skip
    assert api.get("/api/v1/status/changes/", level="group")["results"][0]["new_status"] == "ERR"
    assert api.get("/api/v1/status/changes/", since="1m")["count"] == 0
    assert api.get("/api/v1/status/changes/", status="STALL", since="10m")["count"] == 1


# --- rebalances ----------------------------------------------------------------------------


def test_rebalances_newest_first_and_filtered(api, world: World) -> None:
    body = api.get("/api/v1/rebalances/", cluster="prod")
    assert [e["cause"] for e in body["results"]] == ["member_left", "member_joined"]
    assert body["results"][0]["generation"] == 7
    assert api.get("/api/v1/rebalances/", since="10m")["count"] == 1
    assert api.get("/api/v1/rebalances/", cause="member_joined")["results"][0]["detail"] == {
        "member": "m-2"
    }


# --- history -------------------------------------------------------------------------------


def test_partition_history_recent_range_comes_from_raw_samples(api, world: World) -> None:
    p = world.partitions[("billing", "invoices", 1)]
    body = api.get(f"/api/v1/partitions/{p.pk}/history/", since="5m")
    assert body["resolution"] == "raw" and body["source"] == "raw samples"
    # samples every 10 s; the window [now-5m, now) holds 30 of them, oldest first
    assert body["count"] == 30
    assert all(pt["committed"] == 500 for pt in body["points"])
    assert body["points"][-1]["lag"] == 400
    assert body["points"][0]["time"] < body["points"][-1]["time"]


def test_partition_history_long_range_comes_from_hourly_rollups(api, world: World) -> None:
    p = world.partitions[("billing", "invoices", 1)]
    body = api.get(f"/api/v1/partitions/{p.pk}/history/", since="2d")
    assert body["resolution"] == "1h"
    assert 47 <= body["count"] <= 49
    assert body["points"][-1]["max_lag"] == body["points"][-1]["lag"] + 1


def test_group_history_raw_sums_partitions(api, world: World) -> None:
    gid = world.groups["billing"].pk
    body = api.get(f"/api/v1/groups/{gid}/history/", since="1m")
    assert body["resolution"] == "raw"
    last = body["points"][-1]
    assert last["lag"] == 50 + 400 + 0 and last["partitions"] == 3


def test_group_history_minutes_then_hours(api, world: World) -> None:
    gid = world.groups["billing"].pk
    assert api.get(f"/api/v1/groups/{gid}/history/", since="1d")["resolution"] == "1m"
    body = api.get(f"/api/v1/groups/{gid}/history/", since="7d", resolution="auto")
    assert body["resolution"] == "1h" and body["count"] == 72
    body = api.get(f"/api/v1/groups/{gid}/history/", since="90m", resolution="1m")
    since = datetime.fromisoformat(body["since"])
    expected = LagRollup.objects.filter(
        level="group", resolution="1m", group="billing", bucket_start__gte=since
    ).count()
    assert 89 <= body["count"] == expected <= 90
    assert [p["lag"] for p in body["points"]] == sorted(p["lag"] for p in body["points"])

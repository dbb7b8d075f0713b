"""The Burrow-compatible /v3 endpoints, matched to Burrow's documented shapes field by field."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client

from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from dashboard.store import raw_history
from tests.api import burrow_documented as doc
from tests.api.world import HOSTILE, World

pytestmark = pytest.mark.django_db


def assert_shape(actual: Any, documented: Any, path: str = "$") -> None:
    """Same keys at every level, same JSON types (ints stay ints, floats may be written as
    ints, documented pointers may be null), every list item shaped like the documented one."""
    key = path.rsplit(".", 1)[-1]
    if actual is None and key in doc.NULLABLE:
        return
    if isinstance(documented, dict):
        assert isinstance(actual, dict), f"{path}: {actual!r} is not an object"
        assert set(actual) == set(documented), (
            f"{path}: keys {sorted(actual)} != documented {sorted(documented)}"
        )
        for name, value in documented.items():
            assert_shape(actual[name], value, f"{path}.{name}")
    elif isinstance(documented, list):
        assert isinstance(actual, list), f"{path}: {actual!r} is not a list"
        for i, item in enumerate(actual):
            assert_shape(item, documented[0], f"{path}[{i}]")
    elif isinstance(documented, bool):
        assert isinstance(actual, bool), f"{path}: {actual!r} is not a boolean"
    elif key in doc.FLOAT:
        assert isinstance(actual, int | float) and not isinstance(actual, bool), path
    elif isinstance(documented, int):
        assert isinstance(actual, int) and not isinstance(actual, bool), (
            f"{path}: {actual!r} is not an integer"
        )
    elif isinstance(documented, str):
        assert isinstance(actual, str), f"{path}: {actual!r} is not a string"
    else:
        raise AssertionError(f"{path}: undocumented type {type(documented)}")


def get(client: Client, url: str, expect: int = 200) -> dict:
    response = client.get(url)
    assert response.status_code == expect, response.content[:300]
    assert response["Content-Type"] == "application/json"
    return response.json()


# --- the comparator itself -----------------------------------------------------------------


def test_the_shape_check_catches_a_missing_key_a_wrong_type_and_an_extra_key() -> None:
    good = {"error": False, "message": "m", "clusters": ["a"], "request": {"url": "/", "host": "h"}}
    assert_shape(good, doc.CLUSTER_LIST)
    with pytest.raises(AssertionError, match="keys"):
        assert_shape({**good, "extra": 1}, doc.CLUSTER_LIST)
    with pytest.raises(AssertionError, match="not a boolean"):
        assert_shape({**good, "error": "false"}, doc.CLUSTER_LIST)
    with pytest.raises(AssertionError, match="not a string"):
        assert_shape({**good, "clusters": [1]}, doc.CLUSTER_LIST)
    status = copy.deepcopy(doc.CONSUMER_STATUS)
    status["status"]["totallag"] = 1.5
    with pytest.raises(AssertionError, match="not an integer"):
        assert_shape(status, doc.CONSUMER_STATUS)


# --- /v3/kafka -----------------------------------------------------------------------------


def test_cluster_list_matches_burrow(client: Client, world: World) -> None:
    body = get(client, "/v3/kafka")
    assert_shape(body, doc.CLUSTER_LIST)
    assert body["error"] is False and body["message"] == "cluster list returned"
    assert body["clusters"] == ["prod", "staging"]
    assert body["request"]["url"] == "/v3/kafka" and body["request"]["host"]


def test_consumer_list_matches_burrow_and_names_spouts_apart(client: Client, world: World) -> None:
    body = get(client, "/v3/kafka/prod/consumer")
    assert_shape(body, doc.CONSUMER_LIST)
    assert body["message"] == "consumer list returned"
    assert body["consumers"] == sorted(["billing", "legacy-zk", "storm:orders-spout", HOSTILE])


def test_unknown_cluster_is_burrows_404_error(client: Client, world: World) -> None:
    body = get(client, "/v3/kafka/nope/consumer", expect=404)
    assert_shape(body, doc.ERROR)
    assert body["error"] is True and body["message"] == "cluster not found"
    assert body["request"]["url"] == "/v3/kafka/nope/consumer"


# --- status and lag ------------------------------------------------------------------------


def test_lag_of_a_kafka_group_matches_burrow_field_by_field(client: Client, world: World) -> None:
    body = get(client, "/v3/kafka/prod/consumer/billing/lag")
    assert_shape(body, doc.CONSUMER_STATUS)
    assert body["error"] is False and body["message"] == "consumer status returned"
    status = body["status"]
    assert (status["cluster"], status["group"], status["status"]) == ("prod", "billing", "ERR")
    assert status["partition_count"] == 3 and len(status["partitions"]) == 3
    assert status["totallag"] == 450 and status["complete"] == 1.0
    stalled = status["partitions"][1]
    assert (stalled["topic"], stalled["partition"], stalled["status"]) == ("invoices", 1, "STALL")
    assert stalled["owner"] == "/10.0.0.2" and stalled["client_id"] == "billing-app"
    assert stalled["current_lag"] == 400
    assert status["maxlag"] == stalled
    p = world.partitions[("billing", "invoices", 1)]
    end = stalled["end"]
    assert end["offset"] == 500 and end["lag"] == 400
    assert end["timestamp"] == int(p.last_commit_at.timestamp() * 1000)
    assert end["observedAt"] == int(p.sampled_at.timestamp() * 1000)
    # start: the oldest raw sample within one window (10 commits x 10 s) before the last poll
    window_start = world.now - timedelta(seconds=10 * 10)
    first = raw_history.partition_points(p.group_id, p.topic, p.partition, window_start)[0]
    assert stalled["start"] == {
        "offset": first.committed, "timestamp": int(first.at.timestamp() * 1000),
        "observedAt": int(first.at.timestamp() * 1000), "lag": first.lag,
    }  # fmt: skip
    moving = status["partitions"][0]
    assert moving["start"]["offset"] < moving["end"]["offset"] == 100


def test_status_lists_only_partitions_not_ok(client: Client, world: World) -> None:
    body = get(client, "/v3/kafka/prod/consumer/billing/status")
    assert_shape(body, doc.CONSUMER_STATUS)
    status = body["status"]
    assert [(p["topic"], p["partition"]) for p in status["partitions"]] == [("invoices", 1)]
    assert status["partition_count"] == 3 and status["totallag"] == 450
    assert status["maxlag"]["partition"] == 1


def test_storm_spout_status_under_its_prefixed_name(client: Client, world: World) -> None:
    body = get(client, "/v3/kafka/prod/consumer/storm:orders-spout/lag")
    assert_shape(body, doc.CONSUMER_STATUS)
    status = body["status"]
    assert status["group"] == "storm:orders-spout" and status["status"] == "WARN"
    part = status["partitions"][0]
    assert part["owner"] == "orders-topo" and part["client_id"] == "orders-topo-1-1700000000"
    # the plain spout id is not a Burrow consumer of its own
    get(client, "/v3/kafka/prod/consumer/orders-spout/lag", expect=404)


def test_zookeeper_consumer_status(client: Client, world: World) -> None:
    status = get(client, "/v3/kafka/prod/consumer/legacy-zk/lag")["status"]
    assert status["status"] == "OK" and status["partitions"][0]["owner"] == "legacy-zk_host-1-0"
    assert status["partitions"][0]["client_id"] == ""


def test_unknown_group_and_unknown_cluster_are_burrows_notfound_404(
    client: Client, world: World
) -> None:
    for url in ("/v3/kafka/prod/consumer/ghost/status", "/v3/kafka/nope/consumer/billing/lag"):
        body = get(client, url, expect=404)
        assert_shape(body, doc.CONSUMER_STATUS)
        status = body["status"]
        assert status["status"] == "NOTFOUND" and status["partitions"] == []
        assert status["maxlag"] is None and status["complete"] == 1.0
        assert status["totallag"] == 0 and status["partition_count"] == 0


def test_no_verdict_yet_is_ok_with_complete_zero_and_null_offsets(
    client: Client, world: World
) -> None:
    url = f"/v3/kafka/prod/consumer/{quote(HOSTILE, safe='')}/lag"
    body = get(client, url)
    assert_shape(body, doc.CONSUMER_STATUS)
    status = body["status"]
    assert status["group"] == HOSTILE and status["status"] == "OK"
    part = status["partitions"][0]
    assert part["status"] == "OK" and part["complete"] == 0.0
    assert part["start"] is None and part["end"] is None and part["current_lag"] == 0
    assert b"</script>" not in client.get(url).content


def test_group_names_with_slashes_route_to_the_group(client: Client, world: World) -> None:
    g = ConsumerGroup.objects.create(
        cluster=world.clusters["prod"], source="kafka", name="team/a/status", status="OK",
        first_seen_at=world.now, last_seen_at=world.now,
    )  # fmt: skip
    PartitionState.objects.create(group=g, topic="t", partition=0, committed=1, latest=3, lag=2,
                                  sampled_at=world.now, status="OK")  # fmt: skip
    status = get(client, "/v3/kafka/prod/consumer/team/a/status/lag")["status"]
    assert status["group"] == "team/a/status" and status["totallag"] == 2
    status = get(client, "/v3/kafka/prod/consumer/team/a/status/status")["status"]
    assert status["group"] == "team/a/status" and status["partitions"] == []


# --- consumer detail -----------------------------------------------------------------------


def assert_detail_shape(body: dict) -> None:
    """Burrow's consumer detail, key by key; ``topics`` is keyed by the monitored topics, so
    each of its lists is compared with the documented topic's."""
    assert set(body) == set(doc.CONSUMER_DETAIL)
    assert_shape({**body, "topics": {}}, {**doc.CONSUMER_DETAIL, "topics": {}})
    assert isinstance(body["topics"], dict)
    for topic, entries in body["topics"].items():
        assert_shape(entries, doc.CONSUMER_DETAIL["topics"]["testtopic"], f"$.topics.{topic}")


def ms(at) -> int:
    return round(at.timestamp() * 1000)


def test_consumer_detail_of_a_kafka_group_matches_burrow(client: Client, world: World) -> None:
    body = get(client, "/v3/kafka/prod/consumer/billing")
    assert_detail_shape(body)
    assert body["error"] is False and body["message"] == "consumer detail returned"
    assert body["request"]["url"] == "/v3/kafka/prod/consumer/billing"
    topics = body["topics"]
    assert sorted(topics) == ["invoices", "payments"]
    assert [len(topics["invoices"]), len(topics["payments"])] == [2, 1]  # indexed by partition
    stalled = topics["invoices"][1]
    assert (stalled["owner"], stalled["client_id"]) == ("/10.0.0.2", "billing-app")
    assert stalled["current-lag"] == 400
    # Burrow's ring of `intervals` commits: the polls of one window (10 x 10 s) before the
    # latest, oldest first, then the latest state with its commit's own timestamp.
    offsets = stalled["offsets"]
    assert len(offsets) == 10
    assert [o["offset"] for o in offsets] == [500] * 10  # frozen
    polls = [ms(world.now - timedelta(seconds=10 * k)) for k in range(9, 0, -1)]
    assert [o["timestamp"] for o in offsets[:-1]] == polls
    assert [o["observedAt"] for o in offsets[:-1]] == polls
    p = world.partitions[("billing", "invoices", 1)]
    assert offsets[-1] == {"offset": 500, "timestamp": ms(p.last_commit_at),
                           "observedAt": ms(p.sampled_at), "lag": 400}  # fmt: skip
    # the latest offset is the /lag endpoint's `end`, field for field
    lag = get(client, "/v3/kafka/prod/consumer/billing/lag")["status"]["partitions"][1]
    assert offsets[-1] == lag["end"]
    moving = [o["offset"] for o in topics["invoices"][0]["offsets"]]
    assert moving == sorted(moving) and moving[-1] == 100
    assert topics["invoices"][0]["owner"] == "/10.0.0.1"


def test_a_cluster_with_its_own_window_rings_that_many_commits(
    client: Client, world: World
) -> None:
    """SPEC §2.4: a cluster's own evaluator window is Burrow's ``intervals`` for its groups."""
    Cluster.objects.filter(pk=world.clusters["prod"].pk).update(evaluator={"window": 4})
    body = get(client, "/v3/kafka/prod/consumer/billing")
    offsets = body["topics"]["invoices"][1]["offsets"]
    assert len(offsets) == 4
    polls = [ms(world.now - timedelta(seconds=10 * k)) for k in range(3, 0, -1)]
    assert [o["timestamp"] for o in offsets[:-1]] == polls


def test_consumer_detail_fills_partitions_without_a_row_as_burrow_does(
    client: Client, world: World
) -> None:
    g = ConsumerGroup.objects.create(
        cluster=world.clusters["prod"], source="kafka", name="sparse", status="OK",
        first_seen_at=world.now, last_seen_at=world.now,
        members=[{"member_id": "m-9", "client_id": "c", "host": "/h"}],  # an old row: no epochs
    )  # fmt: skip
    PartitionState.objects.create(group=g, topic="t", partition=2, committed=7, latest=9, lag=2,
                                  owner="m-9", sampled_at=world.now, status="OK")  # fmt: skip
    PartitionState.objects.create(group=g, topic="u", partition=0, committed=None, latest=9,
                                  sampled_at=world.now, status="UNKNOWN")  # fmt: skip
    topics = get(client, "/v3/kafka/prod/consumer/sparse")["topics"]
    empty = {"offsets": [], "owner": "", "client_id": "", "current-lag": 0}
    assert topics["t"][:2] == [empty, empty]
    assert topics["t"][2]["offsets"][0]["offset"] == 7 and topics["t"][2]["current-lag"] == 2
    assert (topics["t"][2]["owner"], topics["t"][2]["client_id"]) == ("/h", "c")
    # never committed: no offsets and no lag, as in Burrow before the first commit
    assert topics["u"] == [empty]


def test_consumer_detail_of_spouts_zookeeper_consumers_and_hostile_names(
    client: Client, world: World
) -> None:
    spout = get(client, "/v3/kafka/prod/consumer/storm:orders-spout")["topics"]["orders"][0]
    assert (spout["owner"], spout["client_id"]) == ("orders-topo", "orders-topo-1-1700000000")
    zk = get(client, "/v3/kafka/prod/consumer/legacy-zk")["topics"]["audit"][0]
    assert (zk["owner"], zk["client_id"]) == ("legacy-zk_host-1-0", "")
    url = f"/v3/kafka/prod/consumer/{quote(HOSTILE, safe='')}"
    body = get(client, url)
    assert_detail_shape(body)
    assert b"</script>" not in client.get(url).content


def test_consumer_detail_of_an_unknown_group_or_cluster_is_burrows_404(
    client: Client, world: World
) -> None:
    for url in ("/v3/kafka/prod/consumer/ghost", "/v3/kafka/nope/consumer/billing",
                "/v3/kafka/prod/consumer/orders-spout"):  # fmt: skip
        body = get(client, url, expect=404)
        assert_shape(body, doc.ERROR)
        assert body["message"] == "cluster or consumer not found"
    response = client.delete("/v3/kafka/prod/consumer/billing")
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"


def test_consumer_detail_keeps_the_open_endpoint_protection(
    client: Client, world: World, settings, read_secret: str
) -> None:
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "token"
    refused = get(client, "/v3/kafka/prod/consumer/billing", expect=401)
    assert refused["error"] is True
    response = client.get(
        "/v3/kafka/prod/consumer/billing", headers={"Authorization": f"Bearer {read_secret}"}
    )
    assert response.status_code == 200 and response.json()["topics"]


def test_burrow_endpoints_outside_the_subset_answer_burrow_json(
    client: Client, world: World
) -> None:
    body = get(client, "/v3/kafka/prod/topic", expect=404)
    assert_shape(body, doc.ERROR)
    response = client.delete("/v3/kafka/prod/consumer/billing/lag")
    assert response.status_code == 405 and response.json()["error"] is True


def test_burrow_endpoints_need_no_login_by_default(client: Client, world: World) -> None:
    assert client.get("/v3/kafka").status_code == 200  # anonymous, no token

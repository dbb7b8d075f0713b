"""The overview: empty states, counts by status, top groups, alerts, heat map, outages."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.alerts.models import Alert
from tests.ui import world

pytestmark = pytest.mark.django_db


def test_no_cluster_yet_says_how_to_add_one(web: Client) -> None:
    body = web.get(reverse("ui:overview")).content.decode()
    assert "No clusters yet" in body
    assert "lagwatch_config import" in body


def test_clusters_but_no_groups_says_no_data_yet(web: Client) -> None:
    world.cluster()
    body = web.get(reverse("ui:overview")).content.decode()
    assert "No data yet" in body
    assert "No partitions collected yet" in body


def test_groups_by_status_link_to_the_filtered_list(web: Client) -> None:
    c = world.cluster()
    for i in range(3):
        world.group(c, f"ok-{i}")
    world.partitions(world.group(c, "dead", status="ERR"), 2, status="STOP")
    body = web.get(reverse("ui:overview")).content.decode()
    assert f'href="{reverse("ui:groups")}?status=ERR">ERR <strong>1</strong>' in body
    assert f'href="{reverse("ui:groups")}?status=OK">OK <strong>3</strong>' in body
    assert "4 groups, 2 partitions" in body


def test_top_groups_by_lag_and_time_lag_are_ordered(web: Client) -> None:
    c = world.cluster()
    world.partitions(world.group(c, "small"), 2, lag=10)
    world.partitions(world.group(c, "huge"), 2, lag=5000)
    world.partitions(world.group(c, "none"), 2, lag=0)
    response = web.get(reverse("ui:overview"))
    top = [r["group"].name for r in response.context["top_lag"]]
    assert top == ["huge", "small"]  # a group with no lag is not a "top" group
    body = response.content.decode()
    assert body.index(">huge<") < body.index(">small<")
    assert "10\u202f000" in body  # 2 × 5000, summed over the partitions


def test_open_alerts_are_listed_with_their_count(web: Client) -> None:
    now = timezone.now()
    Alert.objects.create(
        rule_name="stuck", subject_key="k1", level="partition", cluster="prod", group="billing",
        severity="critical", title="billing/orders-0 STOP", started_at=now - timedelta(minutes=3),
        fired_at=now,
    )  # fmt: skip
    body = web.get(reverse("ui:overview")).content.decode()
    assert "billing/orders-0 STOP" in body
    assert '<span class="count">1</span>' in body


def test_heat_map_has_a_cell_per_partition_worst_group_first(web: Client) -> None:
    c = world.cluster()
    world.partitions(world.group(c, "fine"), 3)
    world.partitions(world.group(c, "broken", status="ERR"), 4, status="STALL")
    response = web.get(reverse("ui:overview"))
    fig = response.context["heatmap"]
    heat = fig["data"][0]
    assert heat["type"] == "heatmap"
    assert heat["y"][0].startswith("broken")
    assert [len(row) for row in heat["z"]] == [4, 4]  # rows padded to the widest group
    assert heat["z"][1][3] is None
    assert 'id="fig-heatmap-data" type="application/json"' in response.content.decode()
    charts = web.get(reverse("ui:overview") + "?live=charts").json()
    assert charts["figures"]["heatmap"]["data"][0]["z"][0][:4] == heat["z"][0][:4]


def test_unreachable_source_is_shown_as_unreachable_not_stuck(web: Client) -> None:
    c = world.cluster()
    world.health(c, "zookeeper", reachable=False, error="ConnectionLoss")
    world.group(c, "legacy", source="zookeeper", stale=True)
    body = web.get(reverse("ui:overview")).content.decode()
    assert "ZooKeeper of cluster prod unreachable" in body
    assert "marked stale" in body
    assert "zookeeper unreachable" in body
    assert "1 stale group" in body


def test_live_update_is_json_with_the_regions_rendered(web: Client) -> None:
    c = world.cluster()
    world.group(c, "billing", status="STOP")
    doc = web.get(reverse("ui:overview") + "?live=1").json()
    assert set(doc["regions"]) == {"overview"}
    assert "STOP <strong>1</strong>" in doc["regions"]["overview"]
    json.dumps(doc)  # plain JSON all the way down


@pytest.mark.parametrize(
    ("statuses", "line"),
    [
        # Before the first status run (it once read "UNKNOWN 40, .").
        ({"UNKNOWN": 40}, "1 groups, 40 partitions: UNKNOWN 40."),
        ({"OK": 3, "STALL": 2}, "1 groups, 5 partitions: STALL 2, OK 3."),
    ],
)
def test_partition_summary_lists_the_statuses_present(
    web: Client, statuses: dict[str, int], line: str
) -> None:
    g = world.group(world.cluster(), "g", status="UNKNOWN")
    for status, n in statuses.items():
        world.partitions(g, n, topic=f"t-{status}", status=status)
    text = " ".join(
        re.sub(r"<[^>]+>", "", web.get(reverse("ui:overview")).content.decode()).split()
    )
    assert line in text

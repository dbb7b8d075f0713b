"""Names from monitored systems are hostile: a group, topic and member named like a script
render as text on every page, in figures and in the JSON of live updates."""

import json
import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring.models import RebalanceEvent, StatusChange
from tests.ui import world

pytestmark = pytest.mark.django_db
XSS = world.XSS
RAW = XSS.encode()


@pytest.fixture
def hostile():
    c = world.cluster()
    members = [
        {"member_id": XSS, "client_id": XSS, "host": XSS, "assignment": [[XSS, 0]],
         "instance_id": XSS, "member_epoch": 3, "target_assignment": [[XSS, 1]]},
    ]  # fmt: skip
    g = world.group(c, XSS, status="ERR", members=members, owner=XSS, state=XSS,
                    group_type="consumer", assignor=XSS, coordinator=XSS)  # fmt: skip
    parts = world.partitions(
        g, 2, topic=XSS, status="STOP", owner=XSS, reason=XSS,
        diagnosis=[{"code": XSS, "evidence": {XSS: XSS}}],
    )  # fmt: skip
    world.samples(parts)
    RebalanceEvent.objects.create(
        group=g, at=timezone.now(), generation=2, cause=XSS, detail={"causes": [XSS], XSS: XSS}
    )
    StatusChange.objects.create(
        group=g,
        topic=XSS,
        partition=0,
        at=timezone.now(),
        old_status="OK",
        new_status="STOP",
        reason=XSS,
    )
    world.health(c, "kafka", reachable=False, error=XSS)
    return g, parts[0]


def _pages(g, p) -> list[str]:
    return [
        reverse("ui:overview"), reverse("ui:groups"), reverse("ui:groups") + "?q=" + XSS,
        reverse("ui:group", args=[g.pk]), reverse("ui:group", args=[g.pk]) + "?topic=" + XSS,
        reverse("ui:partition", args=[p.pk]), reverse("ui:sources"),
    ]  # fmt: skip


def test_pages_render_hostile_names_as_text(web: Client, hostile) -> None:
    g, p = hostile
    for url in _pages(g, p):
        response = web.get(url)
        assert response.status_code == 200, url
        assert RAW not in response.content, url
        assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in response.content, url


def test_figures_carry_names_escaped_for_plotly_and_json_script(web: Client, hostile) -> None:
    g, p = hostile
    body = web.get(reverse("ui:group", args=[g.pk])).content.decode()
    blocks = re.findall(r'<script id="([^"]+)" type="application/json">(.*?)</script>', body, re.S)
    assert {name for name, _ in blocks} >= {
        "fig-lag-data",
        "fig-assignment-data",
        "fig-rebalances-data",
    }
    for _, text in blocks:
        assert "<" not in text  # json_script escapes < > & inside the block
        fig = json.loads(text)
        flat = json.dumps(fig)
        assert XSS not in flat  # Plotly reads its text as HTML: names arrive as entities
    assert "&lt;script&gt;" in json.loads(dict(blocks)["fig-lag-data"])["layout"]["title"]["text"]
    overview = web.get(reverse("ui:overview")).content.decode()
    heat = json.loads(
        re.search(
            r'id="fig-heatmap-data" type="application/json">(.*?)</script>', overview, re.S
        ).group(1)
    )
    assert heat["data"][0]["y"][0].startswith("&lt;script&gt;")
    assert all(XSS not in t for row in heat["data"][0]["text"] for t in row)


def test_live_updates_carry_escaped_html(web: Client, hostile) -> None:
    g, p = hostile
    for url in _pages(g, p):
        for mode in ("1", "charts"):
            sep = "&" if "?" in url else "?"
            response = web.get(f"{url}{sep}live={mode}")
            assert response.status_code == 200, url
            doc = response.json()
            assert XSS not in json.dumps(doc), (url, mode)


def test_members_table_renders_hostile_ids_hosts_and_targets_as_text(web: Client, hostile) -> None:
    g, _ = hostile
    body = web.get(reverse("ui:group", args=[g.pk])).content.decode()
    table = re.search(r'<table class="data compact" id="members-table">(.*?)</table>', body, re.S)
    cells = table.group(1)
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert XSS not in cells
    # member id, instance id, client id, host, assigned topic and target topic: six times
    assert cells.count(escaped) >= 6
    assert "reconciling" in cells
    head = web.get(reverse("ui:group", args=[g.pk]) + "?live=1").json()["regions"]["group-head"]
    assert XSS not in head and head.count(escaped) >= 3  # name, state, assignor, coordinator


def test_links_to_hostile_groups_use_their_number(web: Client, hostile) -> None:
    g, _ = hostile
    body = web.get(reverse("ui:groups")).content.decode()
    assert f'href="/groups/{g.pk}/"' in body

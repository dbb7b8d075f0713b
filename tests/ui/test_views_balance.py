"""The group page's "Assignment balance" section: per-member partitions, lag, time lag and
share of the lag, the imbalance figures, the what-if of Kafka's assignors with the partitions
each would move; hostile member names as text; no query more per member."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.ui import world

pytestmark = pytest.mark.django_db


def url(g) -> str:
    return reverse("ui:group", args=[g.pk])


def section(body: str) -> str:
    return body.split('id="balance"')[1].split("</section>")[0]


def held(member_id: str, *partitions: int, **extra) -> dict:
    return {"member_id": member_id, "assignment": [["t", p] for p in partitions], **extra}


def test_balance_figures_and_what_if_of_a_classic_group(web: Client) -> None:
    members = [held("m-a", 0, 1, 2, 3, 4), held("m-b", 5), held("m-c")]
    g = world.group(world.cluster(), "payments", members=members, group_type="classic")
    world.partitions(g, 8, topic="t", lag=10)  # time lag = partition number
    r = web.get(url(g))
    b = r.context["balance"]
    assert [(m["member_id"], m["partitions"], m["lag"], m["time_lag_s"]) for m in b["members"]] == [
        ("m-a", 5, 50, 4.0), ("m-b", 1, 10, 5.0), ("m-c", 0, 0, None),
    ]  # fmt: skip
    assert (b["partitions_max"], b["partitions_mean"], b["partitions_imbalance"]) == (5, 2.0, 2.5)
    assert (b["busiest_member"], b["busiest_lag_share"]) == ("m-a", 0.625)
    assert [w["label"] for w in b["what_if"]] == ["range", "round-robin", "sticky"]
    assert [m["what_if"] for m in b["members"]] == [[3, 3, 3], [3, 3, 3], [2, 2, 2]]
    assert [(w["moved"], w["unowned_assigned"]) for w in b["what_if"]] == [(2, 2), (4, 2), (2, 2)]
    html = section(r.content.decode())
    for text in ("Assignment balance", "imbalance <strong>2.50×</strong>", "62%", "m-a",
                 "round-robin", "Partitions moved from their holder", "held by nobody (lag 20)",
                 "taking every member to subscribe to every topic the group holds"):  # fmt: skip
        assert text in html, text


def test_kip848_groups_show_the_brokers_assignors_too(web: Client) -> None:
    members = [
        held("c-1", 0, 1, target_assignment=[["t", 0], ["t", 1]], member_epoch=4),
        held("c-2", 2, 3, target_assignment=[["t", 2], ["t", 3]], member_epoch=4),
    ]
    g = world.group(world.cluster(), "checkout", members=members, group_type="consumer")
    world.partitions(g, 4, topic="t")
    b = web.get(url(g)).context["balance"]
    assert [w["label"] for w in b["what_if"]] == [
        "range", "round-robin", "sticky", "uniform (broker)", "range (broker)",
    ]  # fmt: skip
    assert [w["moved"] for w in b["what_if"]] == [0, 2, 0, 0, 0]


def test_zookeeper_group_balance_from_owners_without_what_if(web: Client) -> None:
    g = world.group(world.cluster(), "legacy", source="zookeeper", members_known=False)
    world.partitions(g, 6)  # owners member-0, member-1, member-2
    r = web.get(url(g))
    b = r.context["balance"]
    assert [(m["member_id"], m["partitions"]) for m in b["members"]] == [
        ("member-0", 2), ("member-1", 2), ("member-2", 2),
    ]  # fmt: skip
    assert b["what_if"] == [] and b["partitions_imbalance"] == 1.0
    assert "What-if" not in section(r.content.decode())


def test_group_without_members_says_so(web: Client) -> None:
    g = world.group(world.cluster(), "empty", members=[])
    world.partitions(g, 3)
    g.partitions.update(owner="")
    html = section(web.get(url(g)).content.decode())
    assert "No member known: all 3 partitions are held by nobody" in html


def test_member_names_are_text(web: Client) -> None:
    xss = world.XSS
    g = world.group(world.cluster(), xss, members=[held(xss, 0), held("b")])
    world.partitions(g, 2, topic="t")
    body = web.get(url(g)).content.decode()
    html = section(body)
    assert xss not in body
    assert f"<code>{xss.replace('<', '&lt;').replace('>', '&gt;')}</code>" in html


def _queries(web: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert web.get(path).status_code == 200
    return len(ctx.captured_queries)


def test_no_query_more_per_member(web: Client) -> None:
    c = world.cluster()
    counts = []
    for n in (2, 60):
        members = [held(f"m{i}", i, target_assignment=[["t", i]]) for i in range(n)]
        g = world.group(c, f"g{n}", members=members, group_type="consumer")
        world.partitions(g, 2 * n, topic="t")
        counts.append(_queries(web, url(g)))
    assert counts[0] == counts[1], counts

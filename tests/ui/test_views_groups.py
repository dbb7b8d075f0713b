"""The groups list: search, filters, sort, pages, sparklines; every view a deep link."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring.models import LagRollup
from tests.ui import world

pytestmark = pytest.mark.django_db


def URL_() -> str:
    return reverse("ui:groups")


def names(response) -> list[str]:
    return [r["group"].name for r in response.context["rows"]]


@pytest.fixture
def fleet():
    prod, test = world.cluster("prod"), world.cluster("test")
    world.partitions(world.group(prod, "billing", status="OK"), 2, lag=10)
    world.partitions(world.group(prod, "payments", status="ERR"), 3, lag=900, status="STOP")
    world.partitions(world.group(prod, "orders-spout", source="storm", status="STALL"), 1, lag=50)
    world.partitions(world.group(test, "billing", status="WARN"), 1, lag=300)
    return prod, test


def test_default_sort_is_worst_status_first(web: Client, fleet) -> None:
    assert names(web.get(URL_())) == ["payments", "orders-spout", "billing", "billing"]


def test_search_is_a_case_insensitive_substring(web: Client, fleet) -> None:
    assert sorted(names(web.get(URL_(), {"q": "BILL"}))) == ["billing", "billing"]


def test_filters_combine(web: Client, fleet) -> None:
    assert names(web.get(URL_(), {"cluster": "prod", "q": "bill"})) == ["billing"]
    assert names(web.get(URL_(), {"source": "storm"})) == ["orders-spout"]
    r = web.get(URL_() + "?status=ERR&status=WARN")
    assert names(r) == ["payments", "billing"]
    assert r.context["rows"][1]["group"].cluster.name == "test"


def test_sort_by_lag_uses_the_partitions_total(web: Client, fleet) -> None:
    r = web.get(URL_(), {"sort": "lag"})
    assert names(r) == ["payments", "billing", "orders-spout", "billing"]
    assert [row["group"].lag_total for row in r.context["rows"]] == [2700, 300, 50, 20]


def test_sort_by_name_and_by_members(web: Client, fleet) -> None:
    prod = fleet[0]
    world.group(prod, "aaa", members=[{"member_id": "m1"}, {"member_id": "m2"}])
    assert names(web.get(URL_(), {"sort": "name"}))[0] == "aaa"
    assert names(web.get(URL_(), {"sort": "members"}))[0] == "aaa"


def test_pages_link_to_each_other_keeping_the_filters(web: Client) -> None:
    c = world.cluster()
    for i in range(30):
        world.group(c, f"g{i:02d}", status="WARN")
    r = web.get(URL_(), {"status": "WARN", "sort": "name", "per_page": 25})
    assert len(r.context["rows"]) == 25
    body = r.content.decode()
    assert 'href="?status=WARN&amp;sort=name&amp;per_page=25&amp;page=2" rel="next"' in body
    r2 = web.get(URL_() + "?status=WARN&sort=name&per_page=25&page=2")
    assert names(r2) == ["g25", "g26", "g27", "g28", "g29"]
    assert "Page 2 of 2" in r2.content.decode()


def test_status_chips_count_matches_and_toggle_the_filter(web: Client, fleet) -> None:
    r = web.get(URL_(), {"status": "ERR"})
    chips = {c["status"]: c for c in r.context["status_chips"]}
    assert chips["ERR"]["active"] and chips["ERR"]["count"] == 1
    assert chips["ERR"]["toggle"] == ""  # clicking the active chip removes the filter
    assert chips["WARN"]["toggle"] == "status=ERR&status=WARN"


@pytest.mark.parametrize(
    "query, field",
    [
        ("status=BROKEN", "status"),
        ("source=kafkaa", "source"),
        ("sort=evil", "sort"),
        ("page=0", "page"),
        ("page=x", "page"),
        ("per_page=7", "per_page"),
        ("q=" + "x" * 201, "q"),
        ("sort=name&sort=lag", "sort"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_field(web: Client, query: str, field: str) -> None:
    response = web.get(URL_() + "?" + query)
    assert response.status_code == 400
    assert f"'{field}'".encode() in response.content


def test_a_page_past_the_end_shows_the_last_page(web: Client, fleet) -> None:
    r = web.get(URL_(), {"page": 99})
    assert r.status_code == 200 and r.context["page"].number == 1


def test_nothing_matching_and_nothing_at_all_read_differently(web: Client) -> None:
    assert "No data yet" in web.get(URL_()).content.decode()
    world.group(world.cluster(), "billing")
    assert "No group matches these filters" in web.get(URL_(), {"q": "zzz"}).content.decode()


def test_sparkline_from_group_rollups(web: Client) -> None:
    c = world.cluster()
    g = world.group(c, "billing")
    now = timezone.now()
    LagRollup.objects.bulk_create(
        LagRollup(cluster="prod", level="group", source="kafka", group="billing", resolution="1m",
                  bucket_start=now - timedelta(minutes=10 - i), lag=lag)
        for i, lag in enumerate([0, 10, 20, 40])
    )  # fmt: skip
    r = web.get(URL_())
    points = r.context["rows"][0]["spark"].split()
    assert len(points) == 4
    ys = [float(p.split(",")[1]) for p in points]
    assert ys == sorted(ys, reverse=True)  # rising lag draws upwards (SVG y grows down)
    assert r.context["rows"][0]["group"].pk == g.pk


def test_sparkline_falls_back_to_the_raw_history(web: Client) -> None:
    c = world.cluster()
    parts = world.partitions(world.group(c, "fresh"), 2, lag=5)
    world.samples(parts, points=5)
    r = web.get(URL_())
    assert len(r.context["rows"][0]["spark"].split()) == 5
    assert "<polyline" in r.content.decode()


def test_live_update_keeps_the_filters(web: Client, fleet) -> None:
    doc = web.get(URL_() + "?status=STALL&live=1").json()
    html = doc["regions"]["groups"]
    assert "orders-spout" in html and "payments" not in html


@pytest.fixture
def typed():
    c = world.cluster("prod")
    world.group(c, "classic-app", group_type="classic", generation=4)
    world.group(c, "kip848-app", group_type="consumer", generation=9, assignment_epoch=9)
    world.group(c, "untyped-app")  # a Kafka group of unknown type
    world.group(c, "zk-app", source="zookeeper")
    world.group(c, "odd-zk", source="zookeeper", group_type="consumer")  # not Kafka: no type
    return c


def test_type_column_shows_kafkas_group_type(web: Client, typed) -> None:
    r = web.get(URL_(), {"sort": "name"})
    types = {row["group"].name: row["type"] for row in r.context["rows"]}
    assert types == {"classic-app": "classic", "kip848-app": "consumer", "untyped-app": None,
                     "zk-app": None, "odd-zk": None}  # fmt: skip
    body = r.content.decode()
    assert "<th>Type</th>" in body and 'title="KIP-848 consumer group">consumer<' in body


@pytest.mark.parametrize(
    ("gtype", "expected"),
    [
        ("classic", ["classic-app"]),
        ("consumer", ["kip848-app"]),
        ("none", ["odd-zk", "untyped-app", "zk-app"]),
        ("", ["classic-app", "kip848-app", "odd-zk", "untyped-app", "zk-app"]),
    ],
)
def test_type_filter(web: Client, typed, gtype: str, expected: list[str]) -> None:
    r = web.get(URL_(), {"type": gtype, "sort": "name"})
    assert names(r) == expected
    if gtype:
        assert sum(c["count"] for c in r.context["status_chips"]) == len(expected)
        assert f"type={gtype}" in r.context["sort_qs"]["lag"]  # links keep the filter
        assert f'<option value="{gtype}" selected>' in r.content.decode()


def test_bad_type_is_a_400_naming_it(web: Client) -> None:
    response = web.get(URL_() + "?type=connect")  # a group type Lagwatch does not read
    assert response.status_code == 400 and b"'type'" in response.content


def test_streams_groups_filtered_by_type(web: Client) -> None:
    c = world.cluster()
    world.group(c, "wordcount", group_type="streams")
    world.group(c, "billing", group_type="classic")
    page = web.get(URL_() + "?type=streams").content.decode()
    assert "wordcount" in page and "billing" not in page


def test_share_groups_filtered_by_type(web: Client) -> None:
    c = world.cluster()
    world.group(c, "jobs-workers", group_type="share")
    world.group(c, "billing", group_type="classic")
    page = web.get(URL_() + "?type=share").content.decode()
    assert "jobs-workers" in page and "billing" not in page


def test_query_count_does_not_grow_with_groups(web: Client) -> None:
    c = world.cluster()
    counts = []
    for n in (10, 40):
        for i in range(len(counts) * 10, n):
            g = world.group(c, f"g{i:03d}", group_type="consumer", generation=i,
                            members=[{"member_id": f"m{i}", "target_assignment": [["t", 0]]}])  # fmt: skip
            world.partitions(g, 3)
        for query in ("", "?live=1", "?type=consumer"):
            with CaptureQueriesContext(connection) as ctx:
                assert web.get(URL_() + query).status_code == 200
            counts.append(len(ctx.captured_queries))
    assert counts[:3] == counts[3:], counts

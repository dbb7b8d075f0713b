"""Pages: sizes, links, bounds; and validation errors are 400s naming the parameter."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from dashboard.api.pagination import MAX_PAGE_SIZE
from dashboard.monitoring.models import Cluster, ConsumerGroup

pytestmark = pytest.mark.django_db


@pytest.fixture
def many_groups(db: None) -> int:
    cluster = Cluster.objects.create(name="big")
    now = timezone.now()
    ConsumerGroup.objects.bulk_create(
        ConsumerGroup(
            cluster=cluster, source="kafka", name=f"g{i:03d}", first_seen_at=now, last_seen_at=now
        )  # fmt: skip
        for i in range(123)
    )
    return 123


def test_default_page_and_links(api, many_groups: int) -> None:
    body = api.get("/api/v1/groups/")
    assert (body["count"], body["page"], body["page_size"], body["pages"]) == (123, 1, 50, 3)
    assert len(body["results"]) == 50 and body["previous"] is None
    assert body["next"] == "http://testserver/api/v1/groups/?page=2"


def test_walking_the_next_links_visits_every_row_once(api, many_groups: int) -> None:
    url, seen = "/api/v1/groups/?page_size=40&source=kafka", []
    while url:
        body = api.get(url)
        seen += [g["name"] for g in body["results"]]
        url = body["next"]
    assert seen == [f"g{i:03d}" for i in range(123)]


def test_links_keep_the_filters(api, many_groups: int) -> None:
    body = api.get("/api/v1/groups/", page=2, page_size=10, search="g0")
    for link in (body["next"], body["previous"]):
        query = parse_qs(urlsplit(link).query)
        assert query["search"] == ["g0"] and query["page_size"] == ["10"]
    assert parse_qs(urlsplit(body["previous"]).query)["page"] == ["1"]
    assert parse_qs(urlsplit(body["next"]).query)["page"] == ["3"]


def test_last_page_is_partial_with_no_next(api, many_groups: int) -> None:
    body = api.get("/api/v1/groups/", page=3)
    assert len(body["results"]) == 23 and body["next"] is None


def test_page_size_is_capped(api, many_groups: int) -> None:
    body = api.get("/api/v1/groups/", page_size=MAX_PAGE_SIZE, expect=200)
    assert len(body["results"]) == 123
    error = api.get("/api/v1/groups/", page_size=MAX_PAGE_SIZE + 1, expect=400)["error"]
    assert error == {"message": f"page_size: must be at most {MAX_PAGE_SIZE}, got 501",
                     "field": "page_size"}  # fmt: skip


def test_empty_list_has_one_empty_page(api, db: None) -> None:
    body = api.get("/api/v1/groups/")
    assert (body["count"], body["pages"], body["results"], body["next"]) == (0, 1, [], None)


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"page": 4}, "page", "page 4 is past the last page (3)"),
        ({"page": 0}, "page", "must be at least 1"),
        ({"page": "two"}, "page", "must be an integer, got 'two'"),
        ({"page_size": 0}, "page_size", "must be at least 1"),
        ({"status": "BROKEN"}, "status", "'BROKEN' is not one of UNKNOWN, OK, WARN"),
        ({"source": "rabbitmq"}, "source", "'rabbitmq' is not one of kafka, zookeeper, storm"),
        ({"stale": "maybe"}, "stale", "must be true or false"),
        ({"ordering": "size"}, "ordering", "'size' is not one of name, -name"),
        ({"stauts": "OK"}, "stauts", "unknown parameter (this endpoint takes:"),
        ({"search": "x" * 300}, "search", "at most 255 characters"),
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(
    api, many_groups: int, query: dict, field: str, message: str
) -> None:
    error = api.get("/api/v1/groups/", expect=400, **query)["error"]
    assert error["field"] == field
    assert error["message"].startswith(f"{field}: ")
    assert message in error["message"]


@pytest.mark.parametrize(
    ("url", "query", "field"),
    [
        ("/api/v1/partitions/", {"min_lag": -1}, "min_lag"),
        ("/api/v1/partitions/", {"group_id": "abc"}, "group_id"),
        ("/api/v1/rebalances/", {"since": "yesterday"}, "since"),
        ("/api/v1/status/", {"partitions": "some"}, "partitions"),
        ("/api/v1/status/changes/", {"level": "topic"}, "level"),
        ("/api/v1/clusters/", {"enabled": "perhaps"}, "enabled"),
    ],
)
def test_other_endpoints_validate_too(api, db: None, url: str, query: dict, field: str) -> None:
    assert api.get(url, expect=400, **query)["error"]["field"] == field


def test_history_parameters(api, world) -> None:
    p = world.partitions[("billing", "invoices", 1)]
    url = f"/api/v1/partitions/{p.pk}/history/"
    error = api.get(url, expect=400, since="2d", resolution="raw")["error"]
    assert error["field"] == "resolution" and "raw samples are kept 6 h" in error["message"]
    error = api.get(url, expect=400, resolution="1m")["error"]
    assert "partition rollups are kept at 1h only" in error["message"]
    error = api.get(url, expect=400, since="1h", until="2h")["error"]
    assert error == {"message": "since: must be before until", "field": "since"}
    error = api.get(url, expect=400, resolution="5m")["error"]
    assert error["field"] == "resolution"
    assert api.get(url, since="2026-01-01T00:00:00", until="2026-01-02T00:00:00Z")["count"] == 0

"""What the move onto django-ninja must keep, beyond the endpoint tests: the document's
vocabularies are read from the code that enforces them, answers stay closed and safe, HEAD is
GET, the query schemas are the accepted parameters, and one request has one "now"."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from dashboard.alerts.models import AlertState
from dashboard.api import openapi
from dashboard.api.models import TokenScope
from dashboard.api.schemas.query import GroupQuery, PartitionQuery, QueryParams
from dashboard.monitoring.models import SourceKind, Status
from dashboard.reports.spec import FORMATS
from tests.api.conftest import Api
from tests.api.world import HOSTILE, World

pytestmark = pytest.mark.django_db


def _schemas() -> dict[str, Any]:
    return openapi.document()["components"]["schemas"]


def _parameter(path: str, name: str) -> dict[str, Any]:
    operation = openapi.document()["paths"][path]["get"]
    return next(p for p in operation["parameters"] if p["name"] == name)


def test_vocabularies_are_read_from_the_code() -> None:
    group = _schemas()["Group"]["properties"]
    assert group["status"]["enum"] == list(Status.values)
    assert group["source"]["enum"] == list(SourceKind.values)
    assert _schemas()["You"]["properties"]["scope"]["enum"] == [*TokenScope.values, "session"]
    assert _parameter("/reports/export", "format")["schema"]["enum"] == list(FORMATS)
    assert _parameter("/alerts/", "state")["schema"]["items"]["enum"] == list(AlertState.values)


def test_every_answer_object_is_closed() -> None:
    for name, schema in _schemas().items():
        if "properties" in schema:
            assert schema.get("additionalProperties") is False, name


def test_the_accepted_parameters_are_the_query_schema_fields(api: Api) -> None:
    for url, schema in (("/api/v1/groups/", GroupQuery), ("/api/v1/partitions/", PartitionQuery)):
        assert issubclass(schema, QueryParams)
        message = api.get(url, expect=400, zz=1)["error"]["message"]
        assert message.endswith(f"(this endpoint takes: {', '.join(sorted(schema.model_fields))})")


def test_head_is_answered_as_get(client: Client, api: Api, world: World) -> None:
    response = client.head("/api/v1/groups/", headers=api.headers)
    assert response.status_code == 200
    refused = client.head("/api/v1/alerts/1/acknowledge", headers=api.headers)
    assert refused.status_code == 405 and refused["Allow"] == "POST"


def test_answers_are_json_escaped_and_not_sniffed(client: Client, api: Api, world: World) -> None:
    response = client.get("/api/v1/groups/", {"name": HOSTILE}, headers=api.headers)
    assert response["Content-Type"] == "application/json"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "<" not in response.content.decode() and "\\u003c" in response.content.decode()
    assert [g["name"] for g in response.json()["results"]] == [HOSTILE]


def test_one_now_per_request(api: Api, world: World) -> None:
    # The range's start and the resolution's reckoning share the request's "now": 6h of
    # raw samples (kept 6 h) is served, not refused for starting a microsecond too early.
    group = world.groups["billing"].pk
    body = api.get(f"/api/v1/groups/{group}/history/", since="6h", resolution="raw")
    assert body["resolution"] == "raw"


def test_times_keep_their_microseconds(api: Api, world: World) -> None:
    from dashboard.monitoring.models import ConsumerGroup

    group = world.groups["billing"]
    seen = group.last_seen_at.replace(microsecond=123456)
    ConsumerGroup.objects.filter(pk=group.pk).update(last_seen_at=seen)
    body = api.get(f"/api/v1/groups/{group.pk}/")
    assert body["last_seen_at"] == seen.isoformat().replace("+00:00", "Z")
    assert body["last_seen_at"].endswith(".123456Z")


def test_with_several_faults_the_first_read_is_named(api: Api) -> None:
    # As the views read them before the schemas: filters in order, the page last.
    assert api.get("/api/v1/groups/", expect=400, page=0, status="BROKEN")["error"]["field"] == (
        "status"
    )
    error = api.get("/api/v1/partitions/", expect=400, page_size=0, topic=["a", "b"])["error"]
    assert error == {"message": "topic: given more than once", "field": "topic"}
    error = api.get("/api/v1/status/", expect=400, partitions="x", status="y")["error"]
    assert error["field"] == "partitions"

"""The OpenAPI document of ``/api/v1/`` (``dashboard/api/openapi.py``) is kept true:

- it is a valid OpenAPI 3.1 document, served at ``/api/v1/openapi.json`` behind the API's
  authentication;
- every route of ``dashboard/api/urls.py`` has its path in it, and every path a route;
- each path's methods are the ones the endpoint takes (its 405's ``Allow``), and each
  operation's query parameters the ones it accepts (its "unknown parameter" 400 lists them);
- Schemathesis runs the live application (the WSGI app, a read token) against it: no 500, and
  every answer's status, content type, headers and body match the document.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate

from collectors.sample_log import SampleLog
from dashboard.alerts.models import Alert, AlertEvent
from dashboard.api import openapi
from dashboard.api.models import TokenScope
from dashboard.api.tokens import create_token
from dashboard.reports.models import Report
from dashboard.reports.spec import FORMATS
from tests.api.world import World, build_world

pytestmark = pytest.mark.django_db

PREFIX = "/api/v1"
_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


def _routes(patterns: list, prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and not str(pattern.pattern).startswith("^"):
            yield prefix + str(pattern.pattern)  # (the one regex route is the catch-all 404)


def api_routes() -> set[str]:
    """``dashboard/api/urls.py``'s routes as OpenAPI paths (``/groups/{group_id}/``); a route
    registered with and without its trailing slash counts once, as the API serves both."""
    from dashboard.api import urls

    return {"/" + _CONVERTER.sub(r"{\1}", route) for route in _routes(urls.urlpatterns)}


def test_document_is_valid_openapi_3_1() -> None:
    document = openapi.document()
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_route_has_a_path_and_every_path_a_route() -> None:
    routes = {r.rstrip("/") for r in api_routes()}
    paths = {p.rstrip("/") for p in openapi.document()["paths"]}
    assert routes - paths == set(), "routes missing from the OpenAPI document"
    assert paths - routes == set(), "paths of the OpenAPI document that are not routes"
    # The API is mounted where the document's server says.
    assert get_resolver().resolve(f"{PREFIX}/openapi.json").url_name == "openapi"
    assert openapi.document()["servers"] == [{"url": PREFIX, "description": "This Lagwatch"}]


@pytest.fixture
def world(settings: Any, tmp_path) -> World:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    settings.LAGWATCH_REPORTS_DIR = str(tmp_path / "reports")
    world = build_world()
    now = timezone.now()
    log = SampleLog(tmp_path / "samples")  # what an export reads: ten polls of two partitions
    for i in range(10):
        ts = int((now - timedelta(minutes=20 - i)).timestamp() * 1000)
        rows = [{"ts_ms": ts, "source": "kafka", "group": "billing", "topic": "invoices",
                 "partition": n, "committed": 100 * i, "latest": 100 * i + 7 if n else None,
                 "lag": 7 if n else None, "time_lag_s": 1.5 if n else None, "stale": False}
                for n in (0, 1)]  # fmt: skip
        log.write_batch("prod", f"prod-{ts}", rows)
    for n, state in enumerate(("firing", "acknowledged", "resolved")):
        alert = Alert.objects.create(
            rule_name="stuck", subject_key=f"k{n}", level="partition", cluster="prod",
            source="kafka", group="billing", topic="invoices", partition=n, state=state,
            severity="critical", title=f"billing invoices/{n} STALL", status="STALL",
            diagnosis=[{"code": "POISON_MESSAGE", "evidence": {"offset": 500}}], lag=400,
            time_lag_s=600.0, started_at=now - timedelta(minutes=9), fired_at=now,
            resolved_at=now if state == "resolved" else None, details={"partitions": [n]},
        )  # fmt: skip
        AlertEvent.objects.create(alert=alert, kind="fired", at=now, actor="rules")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "report-done.csv").write_text("time,lag\n")
    spec = {
        "cluster": "prod",
        "groups": [],
        "topics": [],
        "sources": [],
        "start": "2026-11-20T00:00:00Z",
        "end": "2026-11-21T00:00:00Z",
        "resolution": "raw",
    }
    Report.objects.create(fmt="csv", spec=spec, status="queued")
    Report.objects.create(
        fmt="csv",
        spec=spec,
        status="done",
        file_name="report-done.csv",
        size_bytes=9,
        progress=1.0,
        rows=0,
        finished_at=now,
        started_at=now,
    )
    Report.objects.create(fmt="json", spec=spec, status="done", file_name="gone.json",
                          expired=True, progress=1.0, finished_at=now)  # fmt: skip
    return world


@pytest.fixture
def reader() -> dict[str, str]:
    return {"Authorization": f"Bearer {create_token('openapi-reader', TokenScope.READ)[1]}"}


def test_served_behind_the_api_authentication(client: Client, reader: dict) -> None:
    assert client.get(f"{PREFIX}/openapi.json").status_code == 401
    response = client.get(f"{PREFIX}/openapi.json", headers=reader)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.json() == openapi.document()
    assert client.get(f"{PREFIX}/openapi", headers=reader).status_code == 404
    assert (
        client.get(f"{PREFIX}/", headers=reader)
        .json()["endpoints"]["openapi"]
        .endswith(f"{PREFIX}/openapi.json")
    )


def _concrete(path: str, world: World) -> str:
    billing = world.groups["billing"]
    ids = {"name": "prod", "group_id": billing.pk, "alert_id": Alert.objects.first().pk,
           "partition_id": world.partitions["billing", "invoices", 1].pk,
           "report_id": Report.objects.first().pk}  # fmt: skip
    return PREFIX + path.format(**ids)


def test_each_path_takes_the_documented_methods(client: Client, world: World, reader: dict) -> None:
    for path, item in openapi.document()["paths"].items():
        response = client.put(_concrete(path, world), headers=reader)
        assert response.status_code == 405, path
        allowed = {m.strip() for m in response["Allow"].split(",")} - {"HEAD"}
        assert allowed == {m.upper() for m in item}, path


def test_each_operation_refuses_an_anonymous_caller(client: Client, world: World) -> None:
    for path, item in openapi.document()["paths"].items():
        for method in item:
            response = getattr(client, method)(_concrete(path, world))
            assert response.status_code == 401, (method, path)
            assert response["WWW-Authenticate"].startswith('Bearer realm="lagwatch"')


def _unknown_parameter_answer(client: Client, url: str, headers: dict) -> set[str] | None:
    """The parameters an endpoint takes, as its refusal of an unknown one lists them; None if
    it does not check (it ignores what it does not read)."""
    response = client.get(url, {"zz_not_a_parameter": "1"}, headers=headers)
    if response.status_code != 400:
        return None
    message = response.json()["error"]["message"]
    listed = re.search(r"\((?:this endpoint takes|known): ([^)]*)\)", message)
    assert listed, message
    return {name for name in listed.group(1).split(", ") if name and name != "none"}


def test_each_operation_documents_the_parameters_it_takes(
    client: Client, world: World, reader: dict
) -> None:
    document = openapi.document()
    shared = document["components"].get("parameters", {})  # (ninja writes them inline)
    for path, item in document["paths"].items():
        if "get" not in item:
            continue
        params = [shared[p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p
                  for p in item["get"]["parameters"]]  # fmt: skip
        documented = {p["name"] for p in params if p["in"] == "query"}
        taken = _unknown_parameter_answer(client, _concrete(path, world), reader)
        if taken is None:  # the index, this document, a download: no parameters at all
            assert documented == set(), path
        else:
            assert documented == taken, path


# --- Schemathesis against the live application ----------------------------------------------

# Examples per operation: 21 operations, about half a minute in all on the 2-core machine.
EXAMPLES_PER_OPERATION = 25
CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_headers_conformance,
    schemathesis.checks.response_schema_conformance,
]


@pytest.fixture
def wsgi_app() -> Iterator[Any]:
    """The project's WSGI application, calling into the test's database transaction (as
    Django's test client does, the per-request connection clean-up is held off)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def run_operation(
    operation: schemathesis.APIOperation, headers: dict, ids: dict[str, list]
) -> set[int]:
    """Schemathesis' positive cases of one operation, each called and checked; the statuses
    seen. Half the cases get ids of objects that exist (random ids find nothing), and half of
    the exports and queued reports a time range (its one requirement the document cannot
    state as a schema)."""
    seen: set[int] = set()

    @settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None,
              database=None, suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy(), data=st.data())
    def run(case: schemathesis.Case, data: st.DataObject) -> None:
        if case.path_parameters and data.draw(st.booleans(), label="existing object"):
            case.path_parameters = {
                name: data.draw(st.sampled_from(ids[name]), label=name)
                for name in case.path_parameters
            }
        if operation.label == "GET /reports/export" and data.draw(st.booleans(), label="range"):
            case.query = {
                "cluster": "prod",
                "since": "6h",
                "format": data.draw(st.sampled_from(FORMATS), label="format"),
            }
        # The same for a queued report: the generated bodies find a valid one only by chance,
        # and which strings Hypothesis draws depends on the modules loaded.
        if operation.label == "POST /reports/" and data.draw(st.booleans(), label="range"):
            case.body = {
                "cluster": "prod",
                "since": "6h",
                "format": data.draw(st.sampled_from(FORMATS), label="format"),
            }
        response = case.call(headers=headers)
        seen.add(response.status_code)
        case.validate_response(response, checks=CHECKS, headers=headers)

    run()
    return seen


def test_live_api_matches_the_document(world: World, reader: dict, wsgi_app: Any) -> None:
    schema = schemathesis.openapi.from_wsgi(
        f"{PREFIX}/openapi.json", wsgi_app, headers=dict(reader)
    )
    operations = [result.ok() for result in schema.get_all_operations()]
    documented = {f"{method.upper()} {path}" for path, item in openapi.document()["paths"].items()
                  for method in item}  # fmt: skip
    # (Schemathesis leaves out the document's own location.)
    assert {o.label for o in operations} == documented - {"GET /openapi.json"}
    ids = {
        "name": [c.name for c in world.clusters.values()],
        "group_id": [g.pk for g in world.groups.values()],
        "partition_id": [p.pk for p in world.partitions.values()],
        "alert_id": list(Alert.objects.values_list("pk", flat=True)),
        "report_id": list(Report.objects.values_list("pk", flat=True)),
    }
    statuses = {o.label: run_operation(o, reader, ids) for o in operations}
    # And the writes, with a write token: acknowledge, queue a report (never built: the
    # Celery task is sent on commit, and the test's transaction is rolled back).
    writer = {"Authorization": f"Bearer {create_token('openapi-writer', TokenScope.WRITE)[1]}"}
    for operation in operations:
        if operation.method.upper() == "POST":
            statuses[f"{operation.label} (write)"] = run_operation(operation, writer, ids)
    # The run reached real answers, not only refusals.
    assert 200 in statuses["GET /groups/"], statuses
    assert 200 in statuses["GET /status/"], statuses
    assert 403 in statuses["POST /reports/"], statuses  # a read token does not write
    for label in (
        "GET /groups/{group_id}/",
        "GET /partitions/{partition_id}/history/",
        "GET /reports/{report_id}/download",
        "GET /reports/export",
        "POST /alerts/{alert_id}/acknowledge (write)",
        "POST /reports/ (write)",
    ):
        assert statuses[label] & {200, 202}, (label, statuses[label])

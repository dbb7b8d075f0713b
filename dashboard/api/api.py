"""The ``/api/v1/`` application: a django-ninja ``NinjaAPI`` with one router per resource.

The API keeps the answers it had before ninja: errors in the one shape of ``errors.py``
(ninja's own errors are translated by the handlers below), JSON written by
``SafeJSONRenderer`` as ``application/json`` with ``nosniff``, token or session
authentication (``auth.py``) on every operation. Ninja's generated pages (``/docs``) and its
anonymous ``openapi.json`` are off: the document is an operation of its own, behind the same
authentication (``views/index.py``), post-processed by ``openapi.py``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from dashboard.api.auth import READERS, unauthorized
from dashboard.api.errors import ApiError, error_response
from dashboard.api.responses import SafeJSONRenderer


class LagwatchApi(NinjaAPI):
    """``NinjaAPI`` whose answers carry ``X-Content-Type-Options: nosniff`` and the bare
    ``application/json`` type, as ``ApiJsonResponse`` does."""

    def create_response(
        self,
        request: HttpRequest,
        data: Any,
        *,
        status: int | None = None,
        temporal_response: HttpResponse | None = None,
    ) -> HttpResponse:
        response = super().create_response(
            request, data, status=status, temporal_response=temporal_response
        )
        response["X-Content-Type-Options"] = "nosniff"
        return response

    def get_content_type(self) -> str:
        return "application/json"


def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return exc.response()


def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    """A parameter a schema refused without a reader's words (a path parameter out of
    range): the first error, naming the parameter, in the API's shape."""
    first = exc.errors[0] if exc.errors else {}
    location = [str(part) for part in first.get("loc", ()) if part not in ("query", "path")]
    name = location[-1] if location else "request"
    return error_response(400, f"{name}: {first.get('msg', 'invalid')}", field=name)


def _not_authenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return unauthorized("authentication required: Authorization: Bearer <token>").response()


def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return error_response(exc.status_code, str(exc))


def build_api() -> LagwatchApi:
    """The API with its routers (imported here: their modules import this package)."""
    from dashboard.api.views import (
        alerts,
        audit,
        clusters,
        events,
        groups,
        history,
        index,
        partitions,
        producers,
        reports,
        status,
    )

    api = LagwatchApi(
        title="Lagwatch API",
        version="1",
        auth=READERS,
        renderer=SafeJSONRenderer(),
        urls_namespace="api-v1",
        docs_url=None,
        openapi_url=None,
    )
    api.add_exception_handler(ApiError, _api_error)
    api.add_exception_handler(ValidationError, _validation_error)
    api.add_exception_handler(AuthenticationError, _not_authenticated)
    api.add_exception_handler(HttpError, _http_error)
    api.add_router("", index.router)
    api.add_router("clusters/", clusters.router)
    api.add_router("groups/", groups.router)
    api.add_router("groups/", history.group_router)
    api.add_router("partitions/", partitions.router)
    api.add_router("partitions/", history.partition_router)
    api.add_router("status/", status.router)
    api.add_router("rebalances/", events.router)
    api.add_router("producers/", producers.router)
    api.add_router("alerts/", alerts.router)
    api.add_router("reports/", reports.router)
    api.add_router("audit/", audit.router)
    return api


api = build_api()

"""``/api/v1/``: what the API offers, so a client can discover it with its token; the OpenAPI
document; and the API's own 404 for anything else under ``/api/v1/``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.csrf import csrf_exempt
from ninja import Router

from dashboard.accounts.access import request_role
from dashboard.api.errors import error_response
from dashboard.api.models import TokenScope
from dashboard.api.responses import ApiJsonResponse
from dashboard.api.schemas.common import AnyObject, Closed, Uri, answers, one_of

router = Router(tags=["index"])

ENDPOINTS = (
    ("clusters", "api:clusters"),
    ("groups", "api:groups"),
    ("partitions", "api:partitions"),
    ("status", "api:status"),
    ("status_changes", "api:status-changes"),
    ("rebalances", "api:rebalances"),
    ("producers", "api:producers"),
    ("alerts", "api:alerts"),
    ("reports", "api:reports"),
    ("openapi", "api:openapi"),
)


class You(Closed):
    actor: str
    scope: one_of((*TokenScope.values, "session"))
    role: one_of(("viewer", "operator", "admin"))


class Index(Closed):
    version: one_of(("v1",))
    endpoints: dict[str, Uri]
    you: You
    docs: str


@router.get("/", response=answers(Index), url_name="index", operation_id="index",
            summary="What the API offers, and who you are")  # fmt: skip
def index(request: HttpRequest) -> dict:
    """Links to the lists and the document, and the caller's identity and role."""
    token = getattr(request, "api_token", None)
    return {
        "version": "v1",
        "endpoints": {
            name: request.build_absolute_uri(reverse(route)) for name, route in ENDPOINTS
        },
        "you": {
            "actor": request.api_actor,
            "scope": token.scope if token is not None else "session",
            "role": str(request_role(request)),
        },
        "docs": "docs/API.md",
    }


@router.get("/openapi.json", response=answers(AnyObject), url_name="openapi",
            operation_id="openapi", summary="This document")  # fmt: skip
def openapi_document(request: HttpRequest) -> HttpResponse:
    """The OpenAPI 3.1 document of /api/v1/."""
    # Behind the API's authentication: it describes nothing secret, but an anonymous caller
    # has no use for it and every other path under /api/v1/ refuses one.
    from dashboard.api import openapi

    return ApiJsonResponse(openapi.document())


@login_not_required
@csrf_exempt
def unknown(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Anything else under /api/v1/: an endpoint named without its trailing slash is served
    as if the slash were there (a redirect would lose a POST's body and hand API clients an
    empty 301, SPEC §9); the rest is the API's own 404, JSON rather than an HTML page."""
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            pass
        else:
            if match.func is not unknown:
                return match.func(request, *match.args, **match.kwargs)
    return error_response(404, f"no such endpoint: {request.path} (see /api/v1/)")

"""``/api/v1/``: what the API offers, so a client can discover it with its token."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.csrf import csrf_exempt

from dashboard.accounts.access import request_role
from dashboard.api.auth import api_view
from dashboard.api.errors import error_response
from dashboard.api.responses import ApiJsonResponse

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


@api_view()
def index(request: HttpRequest) -> ApiJsonResponse:
    links = {}
    for name, route in ENDPOINTS:
        links[name] = request.build_absolute_uri(reverse(route))
    token = getattr(request, "api_token", None)
    return ApiJsonResponse(
        {
            "version": "v1",
            "endpoints": links,
            "you": {
                "actor": request.api_actor,
                "scope": token.scope if token is not None else "session",
                "role": str(request_role(request)),
            },
            "docs": "docs/API.md",
        }
    )


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

"""The REST API under /api/v1/ (token authentication; docs/API.md): ninja's routes
(``dashboard/api/api.py``), each answering as the API always has, then the API's own 404.

Ninja's views are wrapped, not changed: exempt from the login middleware (a script wants a
401, not a redirect to the login page) and from the CSRF middleware (token clients have no
cookie; ``auth.DashboardSession`` checks CSRF itself), HEAD served as GET, and a method the
path does not take answered with the API's 405 (``Allow`` listed) before authentication.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.urls import URLPattern, path, re_path
from django.views.decorators.csrf import csrf_exempt

from dashboard.api.api import api
from dashboard.api.errors import error_response
from dashboard.api.views.index import unknown

METHOD_ORDER = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _allowed(refusal: HttpResponse) -> tuple[str, ...]:
    """The methods ninja's 405 lists, in a stable order, with HEAD wherever GET is."""
    listed = {m.strip() for m in refusal["Allow"].split(",") if m.strip()}
    allowed = tuple(m for m in METHOD_ORDER if m in listed)
    return (*allowed, "HEAD") if "GET" in allowed else allowed


def _served(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def serve(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if not isinstance(response, HttpResponseNotAllowed):
            return response
        allowed = _allowed(response)
        if request.method == "HEAD" and "HEAD" in allowed:
            request.method = "GET"  # ninja routes by method; HEAD is GET without a body
            try:
                return view(request, *args, **kwargs)
            finally:
                request.method = "HEAD"
        refusal = error_response(405, f"method {request.method} not allowed here")
        refusal["Allow"] = ", ".join(allowed)
        return refusal

    return login_not_required(csrf_exempt(serve))


def _patterns() -> list[URLPattern]:
    """ninja's routes (one per path: a path with GET and POST is listed once), without its
    root view, which /api/v1/'s index replaces."""
    seen: set[str] = set()
    patterns = []
    for pattern in api.urls[0]:
        route = str(pattern.pattern)
        if pattern.name == "api-root" or route in seen:
            continue
        seen.add(route)
        patterns.append(path(route, _served(pattern.callback), name=pattern.name))
    return patterns


app_name = "api"
urlpatterns = [
    *_patterns(),
    re_path(r"^(?P<rest>[\s\S]*)$", unknown),
]

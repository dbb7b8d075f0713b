"""Protection of the endpoints that are open by default: ``/metrics`` and ``/v3``.

``LAGWATCH_OPEN_ENDPOINTS_AUTH`` (SPEC §9, docs/API.md):

- ``none`` (default): open, as Burrow's API and Prometheus exporters are, so scrapers and
  Burrow clients work unchanged;
- ``token``: ``Authorization: Bearer <API token>`` (any active token; read scope suffices);
- ``basic``: HTTP basic auth with ``LAGWATCH_OPEN_ENDPOINTS_USER`` and
  ``LAGWATCH_OPEN_ENDPOINTS_PASSWORD`` (from the environment); an API token works too.

A logged-in browser session always passes. An unknown mode, or ``basic`` without
credentials, refuses everyone (fails closed) rather than opening up.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from dashboard.api.auth import REALM, bearer_secret
from dashboard.api.tokens import authenticate

MODES = ("none", "token", "basic")

# (request, status, message, extra headers) -> response in the endpoint's own format
Refusal = Callable[[HttpRequest, int, str, dict[str, str]], HttpResponse]


def _basic_matches(request: HttpRequest) -> bool:
    user = getattr(settings, "LAGWATCH_OPEN_ENDPOINTS_USER", "")
    password = getattr(settings, "LAGWATCH_OPEN_ENDPOINTS_PASSWORD", "")
    if not user or not password:
        return False
    scheme, _, encoded = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    given_user, sep, given_password = given.partition(":")
    user_ok = hmac.compare_digest(given_user.encode(), user.encode())
    password_ok = hmac.compare_digest(given_password.encode(), password.encode())
    return bool(sep) and user_ok and password_ok


def _token_matches(request: HttpRequest) -> bool:
    secret = bearer_secret(request)
    return bool(secret) and authenticate(secret) is not None


def refusal_reason(request: HttpRequest) -> tuple[int, str, dict[str, str]] | None:
    """None to let the request through, else (status, message, headers)."""
    mode = getattr(settings, "LAGWATCH_OPEN_ENDPOINTS_AUTH", "none")
    if mode == "none":
        return None
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return None
    if mode == "token":
        if _token_matches(request):
            return None
        return (
            401,
            "authentication required: Authorization: Bearer <token>",
            {"WWW-Authenticate": f'Bearer realm="{REALM}"'},
        )
    if mode == "basic":
        if _basic_matches(request) or _token_matches(request):
            return None
        return (
            401,
            "authentication required (HTTP basic auth)",
            {"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'},
        )
    return 503, f"LAGWATCH_OPEN_ENDPOINTS_AUTH={mode!r} is not one of {', '.join(MODES)}", {}


def open_endpoint(refuse: Refusal) -> Callable:
    """Exempt a read-only view from the login middleware, guarded by the setting above."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            reason = refusal_reason(request)
            if reason is not None:
                status, message, headers = reason
                return refuse(request, status, message, headers)
            return view(request, *args, **kwargs)

        return login_not_required(csrf_exempt(wrapper))

    return decorate

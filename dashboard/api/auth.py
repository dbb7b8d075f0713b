"""Who may call the API (SPEC §9): a bearer token, or a logged-in browser session.

- ``Authorization: Bearer <token>``: an active token, whose scope is a role (read → viewer,
  operate → operator, write → admin; ``dashboard.accounts.roles``). Reads need any token; an
  unsafe method (POST…) needs the action its operation names (``auth=writers(Action.…)``),
  by default ``Action.CHANGE`` (admin). No token or an unknown/revoked one: 401 with
  ``WWW-Authenticate``; a token whose role does not allow the action: 403.
- A logged-in session (the dashboard's own pages calling the API) has the user's role, and
  writes only with Django's CSRF check passed, as a form would: a cookie alone never writes.

These are ninja auth classes (so the document lists both schemes), tried in order: a request
with an ``Authorization`` header is judged by it alone (a wrong header is a 401 even with a
session), one without falls to the session. A refusal is an ``ApiError`` carrying its
``WWW-Authenticate``; neither class accepting is ninja's ``AuthenticationError``, answered as
"authentication required" (``dashboard/api/api.py``). The URLs are exempt from the CSRF
middleware (token clients have no cookie), which is why the session class checks CSRF itself.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from ninja.security import APIKeyCookie, HttpBearer

from dashboard.accounts.access import user_role
from dashboard.accounts.roles import ACTION_TEXT, Action, allows, scopes_for
from dashboard.api.errors import ApiError
from dashboard.api.tokens import authenticate

REALM = "lagwatch"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def bearer_secret(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Bearer`` header; "" for another scheme or an empty
    one; None when there is no header at all."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return secret.strip()


def unauthorized(message: str, error: str | None = None) -> ApiError:
    challenge = f'Bearer realm="{REALM}"'
    if error:
        challenge += f', error="{error}"'
    return ApiError(401, message, headers={"WWW-Authenticate": challenge})


def _needed(request: HttpRequest, action: Action) -> Action:
    """Reads need only ``Action.VIEW``; anything else the operation's action."""
    return Action.VIEW if request.method in SAFE_METHODS else action


class BearerToken(HttpBearer):
    """An API token (read, operate or write scope)."""

    openapi_bearerFormat = "lw_..."
    openapi_description = "An API token (read, operate or write scope)."

    def __init__(self, action: Action = Action.CHANGE) -> None:
        self.action = action
        super().__init__()

    def __call__(self, request: HttpRequest) -> Any:
        # ninja's HttpBearer passes on another scheme to the next class; here any header
        # decides (bearer_secret: "" for another scheme, None for no header).
        secret = bearer_secret(request)
        return None if secret is None else self.authenticate(request, secret)

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        if not token:
            raise unauthorized("expected Authorization: Bearer <token>", "invalid_request")
        found = authenticate(token)
        if found is None:
            raise unauthorized("invalid or revoked token", "invalid_token")
        action = _needed(request, self.action)
        if not found.allows(action):
            scopes = scopes_for(action)
            raise ApiError(
                403,
                f"a {found.scope} token may not {ACTION_TEXT[action]}; "
                f"needs scope {' or '.join(scopes)}",
                headers={
                    "WWW-Authenticate": f'Bearer realm="{REALM}", error="insufficient_scope", '
                    f'scope="{" ".join(scopes)}"'
                },
            )
        request.api_token = found
        request.api_actor = f"token:{found.name}"
        return found


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request: HttpRequest, reason: str) -> str:  # a reason, not a page
        return reason


def _csrf_failure(request: HttpRequest) -> str | None:
    check = _CsrfCheck(lambda r: HttpResponse())
    check.process_request(request)
    return check.process_view(request, None, (), {})


class DashboardSession(APIKeyCookie):
    """The dashboard's login session, with its user's role; writes need Django's CSRF token
    (X-CSRFToken) as well."""

    param_name = settings.SESSION_COOKIE_NAME
    openapi_description = (
        "The dashboard's login session, with its user's role; writes need Django's CSRF "
        "token (X-CSRFToken) as well."
    )

    def __init__(self, action: Action = Action.CHANGE) -> None:
        self.action = action
        super().__init__(csrf=False)  # checked below, with the API's own refusal

    def __call__(self, request: HttpRequest) -> Any:
        return self.authenticate(request, self._get_key(request))

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        action = _needed(request, self.action)
        role = user_role(user)
        if not allows(role, action):
            raise ApiError(403, f"your role ({role}) may not {ACTION_TEXT[action]}; ask an admin")
        if request.method not in SAFE_METHODS:
            reason = _csrf_failure(request)
            if reason:
                raise ApiError(403, f"CSRF check failed ({reason}); use a token")
        request.api_token = None
        request.api_actor = user.get_username()
        return user


def writers(action: Action) -> list[Any]:
    """The authentication of an operation that changes something with ``action``: a new
    endpoint that writes names it in one line, ``auth=writers(Action.SILENCE)``."""
    return [BearerToken(action), DashboardSession(action)]


# Everything else: reads with any token or session (an unsafe method would need admin).
READERS = writers(Action.CHANGE)

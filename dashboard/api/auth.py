"""Who may call the API (SPEC §9): a bearer token, or a logged-in browser session.

- ``Authorization: Bearer <token>``: an active token, whose scope is a role (read → viewer,
  operate → operator, write → admin; ``dashboard.accounts.roles``). Reads need any token; an
  unsafe method (POST…) needs the action its view names (``api_view(action=…)``), by default
  ``Action.CHANGE`` (admin). No token or an unknown/revoked one: 401 with
  ``WWW-Authenticate``; a token whose role does not allow the action: 403.
- A logged-in session (the dashboard's own pages calling the API) has the user's role, and
  writes only with Django's CSRF check passed, as a form would: a cookie alone never writes.

``api_view`` also turns ``ApiError`` into the one error shape and answers methods a view does
not take with 405. Views under it are exempt from the login middleware and from the CSRF
middleware (token clients have no cookie), which is why the session branch checks CSRF itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from dashboard.accounts.access import user_role
from dashboard.accounts.roles import ACTION_TEXT, Action, allows, scopes_for
from dashboard.api.errors import ApiError, error_response
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


def unauthorized(message: str, error: str | None = None) -> HttpResponse:
    response = error_response(401, message)
    challenge = f'Bearer realm="{REALM}"'
    if error:
        challenge += f', error="{error}"'
    response["WWW-Authenticate"] = challenge
    return response


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):  # a reason instead of Django's HTML 403 page
        return reason


def _csrf_failure(request: HttpRequest) -> str | None:
    check = _CsrfCheck(lambda r: HttpResponse())
    check.process_request(request)
    return check.process_view(request, None, (), {})


def _insufficient(action: Action, who: str) -> HttpResponse:
    scopes = scopes_for(action)
    response = error_response(
        403, f"{who} may not {ACTION_TEXT[action]}; needs scope {' or '.join(scopes)}"
    )
    wanted = " ".join(scopes)
    response["WWW-Authenticate"] = (
        f'Bearer realm="{REALM}", error="insufficient_scope", scope="{wanted}"'
    )
    return response


def identify(request: HttpRequest, action: Action, unsafe: bool) -> HttpResponse | None:
    """Set ``request.api_token`` and ``request.api_actor``; a refusal, or None to go on."""
    request.api_token = None
    secret = bearer_secret(request)
    if secret is not None:
        if not secret:
            return unauthorized("expected Authorization: Bearer <token>", error="invalid_request")
        token = authenticate(secret)
        if token is None:
            return unauthorized("invalid or revoked token", error="invalid_token")
        if not token.allows(action):
            return _insufficient(action, f"a {token.scope} token")
        request.api_token = token
        request.api_actor = f"token:{token.name}"
        return None
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        role = user_role(user)
        if not allows(role, action):
            return error_response(
                403, f"your role ({role}) may not {ACTION_TEXT[action]}; ask an admin"
            )
        if unsafe:
            reason = _csrf_failure(request)
            if reason:
                return error_response(403, f"CSRF check failed ({reason}); use a token")
        request.api_actor = user.get_username()
        return None
    return unauthorized("authentication required: Authorization: Bearer <token>")


def api_view(methods: Iterable[str] = ("GET",), action: Action = Action.CHANGE) -> Callable:
    """A JSON API view taking ``methods``: safe methods need ``Action.VIEW`` (any token or
    user), the others ``action``. A new endpoint that writes names its action in one line,
    ``@api_view(["POST"], action=Action.SILENCE)``; left out, only admins may call it."""
    allowed = tuple(m.upper() for m in methods)
    if "GET" in allowed and "HEAD" not in allowed:
        allowed = (*allowed, "HEAD")

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method not in allowed:
                response = error_response(405, f"method {request.method} not allowed here")
                response["Allow"] = ", ".join(allowed)
                return response
            unsafe = request.method not in SAFE_METHODS
            refused = identify(request, action if unsafe else Action.VIEW, unsafe)
            if refused is not None:
                return refused
            try:
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return error_response(exc.status, exc.message, exc.field)

        return login_not_required(csrf_exempt(wrapper))

    return decorate

"""The role table (``roles.py``) applied to requests: users and tokens, page views, the admin,
templates. A page adopts the check in one line::

    @requires(Action.EDIT_RULES)                 # every method
    @requires(Action.SILENCE, methods=UNSAFE)    # only POST & co.; GET stays a viewer's

and an API operation names its action in ``auth=writers(Action.ACKNOWLEDGE)`` (api/auth.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

from dashboard.accounts.roles import (
    ACTION_TEXT,
    ROLE_ORDER,
    Action,
    Role,
    allows,
    role_for_scope,
    role_from_groups,
)

UNSAFE = ("POST", "PUT", "PATCH", "DELETE")
_CACHE = "_lagwatch_role"


def user_role(user: Any) -> Role | None:
    """The role of a Django user (None when not logged in). Cached on the user object: one
    query per request, however many checks a page makes."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    if not hasattr(user, _CACHE):
        names = (
            ()
            if user.is_superuser
            else user.groups.filter(name__in=[r.value for r in ROLE_ORDER]).values_list(
                "name", flat=True
            )
        )
        setattr(user, _CACHE, role_from_groups(names, is_superuser=user.is_superuser))
    return getattr(user, _CACHE)


def request_role(request: HttpRequest) -> Role | None:
    """A request's role: its API token's scope when it came with one, else its user's."""
    token = getattr(request, "api_token", None)
    if token is not None:
        return role_for_scope(token.scope) if token.active else None
    return user_role(getattr(request, "user", None))


def may(request: HttpRequest, action: Action) -> bool:
    return allows(request_role(request), action)


def forbidden(request: HttpRequest, action: Action) -> HttpResponse:
    """The 403 page: what was refused, the user's role, and whom to ask."""
    role = request_role(request)
    body = render_to_string(
        "accounts/forbidden.html",
        {"action_text": ACTION_TEXT[action], "role": role.value if role else "none"},
        request=request,
    )
    return HttpResponse(body, status=403)


def requires(action: Action, methods: Iterable[str] | None = None) -> Callable:
    """A page view needs ``action`` (for ``methods`` only, when given); otherwise 403 and the
    view does not run, so nothing changes."""
    only = tuple(m.upper() for m in methods) if methods is not None else None

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if (only is None or request.method in only) and not may(request, action):
                return forbidden(request, action)
            return view(request, *args, **kwargs)

        wrapper.required_action = action  # type: ignore[attr-defined]
        return wrapper

    return decorate


class RoleRequiredMixin:
    """The same for a class-based view: ``required_action = Action.X`` (and optionally
    ``required_methods = UNSAFE``)."""

    required_action: Action = Action.VIEW
    required_methods: Iterable[str] | None = None

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        only = self.required_methods
        if (only is None or request.method in only) and not may(request, self.required_action):
            return forbidden(request, self.required_action)
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


class RoleAdmin(admin.ModelAdmin):
    """A ModelAdmin whose permissions follow the roles: reading needs ``view_action``,
    adding, changing and deleting need ``change_action`` (None: nobody changes it here).
    Subclasses may refuse more (a read-only record), never allow more."""

    view_action: Action = Action.VIEW
    change_action: Action | None = None

    def has_module_permission(self, request: HttpRequest) -> bool:
        return may(request, self.view_action)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may(request, self.view_action) or self._may_change(request)

    def _may_change(self, request: HttpRequest) -> bool:
        return self.change_action is not None and may(request, self.change_action)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._may_change(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may_change(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may_change(request)


class _Permissions:
    """``{{ may.edit_rules }}`` in templates: computed once per request, on first use."""

    def __init__(self, request: HttpRequest) -> None:
        self._request = request
        self._role: Role | None | bool = False

    @property
    def role(self) -> str:
        return str(self._resolve() or "")

    def _resolve(self) -> Role | None:
        if self._role is False:
            self._role = request_role(self._request)
        return self._role  # type: ignore[return-value]

    def __getattr__(self, name: str) -> bool:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            action = Action(name)
        except ValueError:
            raise AttributeError(name) from None
        return allows(self._resolve(), action)

    def __getitem__(self, name: str) -> bool:  # the template engine tries item lookup first
        try:
            return getattr(self, name)
        except AttributeError:
            raise KeyError(name) from None


def permissions(request: HttpRequest) -> dict[str, Any]:
    """Context processor: ``may`` (see :class:`_Permissions`) in every template."""
    return {"may": _Permissions(request)}

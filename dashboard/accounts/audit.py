"""The audit log: every change to rules, channels, silences, acknowledgements, clusters, API
tokens and users, with who, when, what and from where (``AuditEntry``).

**Written from model signals, in this one module.** A change reaches these models through
the pages, the admin, ``/api/v1``, the YAML imports and management commands; each of them
saves or deletes a model, so ``pre_save``/``post_save``/``post_delete`` (and ``m2m_changed``
for a user's role groups and a rule's channels) see every one, and a new page or endpoint
cannot forget to record. A view only has to run inside a request, which
:class:`AuditMiddleware` makes known here: who acted (the logged-in user, or the API token),
how (page, admin, API, single sign-on) and from which address (``clients.client_address``).
Outside a request the actor is the management command that runs (``manage.py NAME``) or
"system". Bulk ``QuerySet.update()`` bypasses signals: the tracked models' changing code
saves each object instead.

**Secrets never stored**: a token's hash is never read, a channel's URL is masked as
everywhere else, its key and a cluster's secret settings are written as ``********``, a
password change is recorded as "changed" without a value.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db.models import Model
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.http import HttpRequest, HttpResponse

from dashboard.accounts.clients import client_address
from dashboard.accounts.roles import ROLE_ORDER
from dashboard.alerts.masking import mask_url
from dashboard.secrecy import MASK, mask_config

_request: contextvars.ContextVar[HttpRequest | None] = contextvars.ContextVar(
    "lagwatch_audit_request", default=None
)
_BEFORE = "_lagwatch_audit_before"


def _masked(value: Any) -> Any:
    return MASK if value else value


@dataclass(frozen=True)
class Tracked:
    """How one model is audited. ``kind`` names its objects in the log; ``ignore`` lists
    fields never recorded; ``mask`` turns a secret field's value into what may be shown;
    ``only`` (when set) limits the log to changes touching these fields; ``action`` names a
    change from the fields it changed (default "changed"); ``label`` names the object."""

    kind: str
    ignore: frozenset[str] = frozenset()
    mask: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    only: frozenset[str] | None = None
    action: Callable[[dict[str, list[Any]]], str] | None = None
    label: Callable[[Any], str] = str  # how the log names the object


def _alert_action(changes: dict[str, list[Any]]) -> str:
    return "acknowledged" if changes.get("acknowledged_at", [None, None])[1] else "changed"


def _token_action(changes: dict[str, list[Any]]) -> str:
    return "revoked" if changes.get("revoked_at", [None, None])[1] else "changed"


TRACKED: dict[str, Tracked] = {
    "alerts.rule": Tracked("rule", frozenset({"created_at", "updated_at"})),
    "alerts.channel": Tracked(
        "channel",
        frozenset({"created_at"}),
        {"url": lambda v: mask_url(v) if v else v, "secret": _masked},
    ),
    "alerts.silence": Tracked("silence", frozenset({"created_at"})),
    "alerts.alert": Tracked(
        "alert",
        only=frozenset({"acknowledged_at", "acknowledged_by"}),
        action=_alert_action,
    ),
    # (a re-import that changes nothing only moves updated_at: not a change)
    "monitoring.cluster": Tracked(
        "cluster", frozenset({"created_at", "updated_at"}), {"kafka_config": mask_config}
    ),
    "api.apitoken": Tracked(
        "token",
        frozenset({"secret_hash", "prefix", "last_used_at", "created_at"}),
        action=_token_action,
        label=lambda token: token.name,  # its str shows the secret's first characters
    ),
    "auth.user": Tracked(
        "user",
        frozenset({"last_login", "date_joined"}),
        {"password": lambda v: "changed"},
    ),
}


# The tracked models themselves (filled by ``connect``): a migration's historical models,
# which send the same signals before the log's table exists, are other classes.
_BY_MODEL: dict[type[Model], Tracked] = {}


def _tracked(model: type[Model]) -> Tracked | None:
    return _BY_MODEL.get(model)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def _fields(instance: Model, spec: Tracked) -> dict[str, Any]:
    values = {}
    for f in instance._meta.concrete_fields:
        if f.primary_key or f.name in spec.ignore:
            continue
        if spec.only is not None and f.name not in spec.only:
            continue
        value = f.value_from_object(instance)
        values[f.name] = _jsonable(spec.mask[f.name](value) if f.name in spec.mask else value)
    return values


def _diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    return {k: [before.get(k), v] for k, v in after.items() if before.get(k) != v}


# --- who, how, from where ---------------------------------------------------------------------


def _via(request: HttpRequest) -> str:
    path = request.path
    if path.startswith("/admin/"):
        return "admin"
    if path.startswith("/api/"):
        return "api"
    if path.startswith("/oidc/"):
        return "sso"
    return "page"


def _actor(instance: Model | None) -> tuple[Any, str, str, str | None]:
    """(user or None, name, via, client address) of the change being made now."""
    request = _request.get()
    if request is None:
        argv = sys.argv
        if argv and argv[0].endswith("manage.py") and len(argv) > 1:
            return None, f"manage.py {argv[1]}", "command", None
        return None, "system", "system", None
    address = client_address(request)
    token = getattr(request, "api_token", None)
    if token is not None:
        return None, f"token:{token.name}", "api", address
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user, user.get_username(), _via(request), address
    if _via(request) == "sso" and isinstance(instance, get_user_model()):
        return None, "single sign-on", "sso", address  # the person logging in, made or updated
    return None, "anonymous", _via(request), address


def _label(instance: Model | None) -> str:
    if instance is None:
        return ""
    spec = _tracked(type(instance))
    return (spec.label if spec is not None else str)(instance)


def record(
    action: str,
    kind: str,
    instance: Model | None,
    changes: dict[str, list[Any]] | None = None,
    *,
    object_id: str = "",
    object_repr: str = "",
) -> Model:
    """Write one entry (the signals below call this; so may code whose change no model
    save shows)."""
    from dashboard.accounts.models import AuditEntry

    user, name, via, address = _actor(instance)
    return AuditEntry.objects.create(
        actor=user if user is not None and user.pk else None,
        actor_name=name[:200],
        via=via,
        action=action,
        object_type=kind,
        object_id=object_id or (str(instance.pk) if instance is not None else ""),
        object_repr=(object_repr or _label(instance))[:300],
        changes=changes or {},
        client_address=address,
    )


# --- the signals ------------------------------------------------------------------------------


def _before_save(
    sender: type[Model], instance: Model, raw: bool = False, update_fields: Any = None, **kw: Any
) -> None:
    """The row as it was, read only when the save may touch what is recorded (an alert's
    state saved by the evaluation costs nothing here)."""
    spec = _tracked(sender)
    setattr(instance, _BEFORE, None)
    if spec is None or raw or instance.pk is None:
        return
    if update_fields is not None and spec.only is not None and not spec.only & set(update_fields):
        setattr(instance, _BEFORE, {})  # nothing recorded changes: compared as unchanged
        return
    old = sender._base_manager.filter(pk=instance.pk).first()
    setattr(instance, _BEFORE, _fields(old, spec) if old is not None else None)


def _after_save(
    sender: type[Model], instance: Model, created: bool, raw: bool = False, **kw: Any
) -> None:
    spec = _tracked(sender)
    if spec is None or raw:
        return
    before = None if created else getattr(instance, _BEFORE, None)
    if before == {}:
        return
    after = _fields(instance, spec)
    if before is None:
        if spec.only is not None:
            return  # made by the system (an alert firing), not a change of a person's
        changes = {k: [None, v] for k, v in after.items() if v not in (None, "", [], {})}
        record("created", spec.kind, instance, changes)
        return
    changes = _diff(before, after)
    if spec.only is not None and not spec.only & changes.keys():
        return
    if changes:
        record(spec.action(changes) if spec.action else "changed", spec.kind, instance, changes)


def _after_delete(sender: type[Model], instance: Model, **kw: Any) -> None:
    spec = _tracked(sender)
    if spec is not None and spec.only is None:
        record("deleted", spec.kind, instance)


def _members_changed(
    sender: Any, instance: Model, action: str, reverse: bool, model: type[Model], pk_set: Any,
    **kw: Any,
) -> None:  # fmt: skip
    """A user's role groups, or a rule's channels (from either side of the relation)."""
    if action not in ("post_add", "post_remove", "post_clear") or reverse:
        return
    spec = _tracked(type(instance))
    if spec is None:
        return
    names = sorted(str(o) for o in model._base_manager.filter(pk__in=pk_set or ()))
    if spec.kind == "user":
        names = [n for n in names if n in {r.value for r in ROLE_ORDER}]
        if not names and action != "post_clear":
            return
        key = "role"
    else:
        key = model._meta.verbose_name_plural.replace(" ", "_")
    verb = {"post_add": "added", "post_remove": "removed", "post_clear": "cleared"}[action]
    record("changed", spec.kind, instance, {key: {verb: names}})


def connect() -> None:
    """Called once from ``AccountsConfig.ready``."""
    _BY_MODEL.update({apps.get_model(label): spec for label, spec in TRACKED.items()})
    pre_save.connect(_before_save, dispatch_uid="lagwatch_audit_pre_save")
    post_save.connect(_after_save, dispatch_uid="lagwatch_audit_post_save")
    post_delete.connect(_after_delete, dispatch_uid="lagwatch_audit_post_delete")
    user_groups = get_user_model().groups.through
    rule_channels = apps.get_model("alerts", "Rule").channels.through
    for through in (user_groups, rule_channels):
        m2m_changed.connect(_members_changed, sender=through, dispatch_uid=f"audit_{through}")


# --- the request ------------------------------------------------------------------------------


@contextmanager
def request_context(request: HttpRequest) -> Iterator[None]:
    token = _request.set(request)
    try:
        yield
    finally:
        _request.reset(token)


class AuditMiddleware:
    """Makes the request known to the signals above while its view runs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with request_context(request):
            return self.get_response(request)

"""Who may do what: the one table of roles and actions (pure, no Django).

Three roles, each one the one before plus more (docs/DASHBOARD.md "Roles"):

- **viewer** reads everything: pages, the API's documents, reports already built, exports
  streamed on the fly (they store nothing);
- **operator** also acts on alerts (acknowledge, silence), builds stored reports and
  schedules them (report schedules, mailed);
- **admin** also changes what Lagwatch watches and tells: rules, channels, clusters, API
  tokens and users, and reads the audit log of changes.

A user's role comes from the Django group of the same name (the highest one when in several);
a superuser is an admin; a logged-in user in no role group is a viewer, so an account that
predates roles can still read but no longer change anything. An API token's scope maps to a
role (``SCOPE_ROLES``). Every check in views, the API and the admin asks :func:`allows`.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Role(StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"


class Action(StrEnum):
    VIEW = "view"
    ACKNOWLEDGE = "acknowledge"
    SILENCE = "silence"
    BUILD_REPORT = "build_report"
    EDIT_RULES = "edit_rules"
    EDIT_CHANNELS = "edit_channels"
    EDIT_CLUSTERS = "edit_clusters"
    MANAGE_TOKENS = "manage_tokens"
    MANAGE_USERS = "manage_users"
    VIEW_AUDIT = "view_audit"  # the audit log of changes (who, when, what, from where)
    # Any other change: what an API endpoint taking POST/PUT/DELETE needs when it does not
    # name its action, so a new endpoint is admin-only until someone decides otherwise.
    CHANGE = "change"


# Lowest first: a user in several role groups has the last (highest) one.
ROLE_ORDER: tuple[Role, ...] = (Role.VIEWER, Role.OPERATOR, Role.ADMIN)

_VIEWER = frozenset({Action.VIEW})
_OPERATOR = _VIEWER | {Action.ACKNOWLEDGE, Action.SILENCE, Action.BUILD_REPORT}
ROLE_ACTIONS: dict[Role, frozenset[Action]] = {
    Role.VIEWER: _VIEWER,
    Role.OPERATOR: _OPERATOR,
    Role.ADMIN: frozenset(Action),
}

# What a refusal page says the user tried ("Your role does not allow you to …").
ACTION_TEXT: dict[Action, str] = {
    Action.VIEW: "view the dashboard",
    Action.ACKNOWLEDGE: "acknowledge alerts",
    Action.SILENCE: "silence alerts",
    Action.BUILD_REPORT: "build reports",
    Action.EDIT_RULES: "change alert rules",
    Action.EDIT_CHANNELS: "change or test alert channels",
    Action.EDIT_CLUSTERS: "change monitored clusters",
    Action.MANAGE_TOKENS: "manage API tokens",
    Action.MANAGE_USERS: "manage users",
    Action.VIEW_AUDIT: "read the audit log",
    Action.CHANGE: "change this",
}

# API token scopes (dashboard.api.models.TokenScope values) → role. "read" and "write" are the
# scopes tokens had before roles: a read token still only reads, a write token still does
# everything it could (acknowledge, build reports) and whatever admin endpoints come.
SCOPE_ROLES: dict[str, Role] = {
    "read": Role.VIEWER,
    "operate": Role.OPERATOR,
    "write": Role.ADMIN,
}

# The Django model permissions each action stands for, given to the role groups by the
# migration (dashboard/accounts/migrations) so the stock admin (users, groups) and any
# ``user.has_perm`` agree with this table. "app_label.codename".
_VIEW_MODELS = {
    "monitoring": ("cluster", "consumergroup", "partitionstate", "sourcehealth",
                   "collectionerror", "sparkjobrun", "serviceheartbeat"),
    "alerts": ("rule", "channel", "silence", "alert", "alertevent", "delivery",
               "deliveryattempt", "candidate"),
    "reports": ("report", "reportschedule", "scheduledrun"),
}  # fmt: skip


def _crud(app: str, model: str) -> tuple[str, ...]:
    return tuple(f"{app}.{verb}_{model}" for verb in ("add", "change", "delete", "view"))


ACTION_PERMISSIONS: dict[Action, tuple[str, ...]] = {
    Action.VIEW: tuple(f"{app}.view_{m}" for app, ms in _VIEW_MODELS.items() for m in ms),
    Action.ACKNOWLEDGE: ("alerts.change_alert",),
    Action.SILENCE: ("alerts.add_silence", "alerts.change_silence", "alerts.delete_silence"),
    Action.BUILD_REPORT: (
        "reports.add_report",
        "reports.add_reportschedule",
        "reports.change_reportschedule",
        "reports.delete_reportschedule",
    ),  # fmt: skip
    Action.EDIT_RULES: ("alerts.add_rule", "alerts.change_rule", "alerts.delete_rule"),
    Action.EDIT_CHANNELS: (
        "alerts.add_channel",
        "alerts.change_channel",
        "alerts.delete_channel",
    ),  # fmt: skip
    Action.EDIT_CLUSTERS: (
        "monitoring.add_cluster",
        "monitoring.change_cluster",
        "monitoring.delete_cluster",
    ),  # fmt: skip
    Action.MANAGE_TOKENS: _crud("api", "apitoken"),
    Action.MANAGE_USERS: _crud("auth", "user") + _crud("auth", "group"),
    Action.VIEW_AUDIT: ("accounts.view_auditentry",),
    Action.CHANGE: (),
}


def allows(role: Role | None, action: Action) -> bool:
    """May ``role`` do ``action``? No role (anonymous, unknown token) may do nothing."""
    return role is not None and action in ROLE_ACTIONS[role]


def role_from_groups(
    group_names: Iterable[str], *, is_superuser: bool = False, authenticated: bool = True
) -> Role | None:
    """The role of a user in these groups: the highest role group; a superuser is an admin;
    a logged-in user in none is a viewer; nobody logged in has no role."""
    if not authenticated:
        return None
    if is_superuser:
        return Role.ADMIN
    names = set(group_names)
    found = [r for r in ROLE_ORDER if r.value in names]
    return found[-1] if found else Role.VIEWER


def role_for_scope(scope: str) -> Role | None:
    return SCOPE_ROLES.get(scope)


def scopes_for(action: Action) -> list[str]:
    """The token scopes that allow ``action`` (for a 403's ``WWW-Authenticate``)."""
    return [scope for scope, role in SCOPE_ROLES.items() if allows(role, action)]


def group_permissions(role: Role) -> set[str]:
    """Every "app.codename" the role's group holds."""
    return {perm for action in ROLE_ACTIONS[role] for perm in ACTION_PERMISSIONS[action]}

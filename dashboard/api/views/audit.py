"""``/api/v1/audit/``: the audit log of changes, newest first (admins and write tokens only:
``Action.VIEW_AUDIT``, also for this read)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router

from dashboard.accounts.access import may
from dashboard.accounts.roles import ACTION_TEXT, Action
from dashboard.accounts.views import entries
from dashboard.api.errors import ApiError
from dashboard.api.pagination import paginate
from dashboard.api.schemas.common import Closed, Time, answers, page_of
from dashboard.api.schemas.query import PageQuery, moment, text

router = Router(tags=["audit"])


class AuditQuery(PageQuery):
    object_type: text("rule, channel, silence, alert, cluster, token or user.", 40) = None
    actor: text("Who acted: a user name, token:NAME, manage.py COMMAND or system.", 200) = None
    since: moment() = None
    until: moment() = None


class AuditRecord(Closed):
    id: int
    at: Time
    actor: str = Field(description="A user name, token:NAME, manage.py COMMAND or system.")
    via: str = Field(description="page, admin, api, sso, command or system.")
    action: str = Field(description="created, changed, deleted, acknowledged, revoked.")
    object_type: str
    object_id: str
    object: str = Field(description="The object as it was named when changed.")
    changes: dict[str, Any] = Field(
        description="field → [before, after] (secrets masked); role or channel membership "
        "→ {added|removed|cleared: [names]}; empty for a deletion."
    )
    client_address: str | None

    @staticmethod
    def resolve_actor(obj: Any) -> str:
        return obj.actor_name

    @staticmethod
    def resolve_object(obj: Any) -> str:
        return obj.object_repr


AuditPage = page_of(AuditRecord, "AuditPage")


@router.get("/", response=answers(AuditPage, 400, 403), url_name="audit",
            operation_id="listAuditEntries",
            summary="Changes (rules, channels, silences, acknowledgements, clusters, tokens, "
                    "users): who, when, what, from where; newest first")  # fmt: skip
def audit_list(request: HttpRequest, query: Query[AuditQuery]) -> dict:
    if not may(request, Action.VIEW_AUDIT):
        what = ACTION_TEXT[Action.VIEW_AUDIT]
        raise ApiError(403, f"only an admin (or a write token) may {what}")
    found = entries(query.object_type or "", query.actor or "")
    if query.since is not None:
        found = found.filter(at__gte=query.since)
    if query.until is not None:
        found = found.filter(at__lt=query.until)
    return paginate(request, found.order_by("-at", "-id"), query.page, query.page_size)

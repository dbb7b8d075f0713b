"""``/audit/``: the audit log for admins, newest first, filtered by kind of object and actor."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.accounts.access import requires
from dashboard.accounts.audit import TRACKED
from dashboard.accounts.models import AuditEntry
from dashboard.accounts.roles import Action

PAGE_SIZE = 100


def entries(object_type: str = "", actor: str = "") -> QuerySet[AuditEntry]:
    found = AuditEntry.objects.all()
    if object_type:
        found = found.filter(object_type=object_type)
    if actor:
        found = found.filter(actor_name=actor)
    return found


@requires(Action.VIEW_AUDIT)
def audit_log(request: HttpRequest) -> HttpResponse:
    object_type = request.GET.get("type", "").strip()
    actor = request.GET.get("actor", "").strip()
    page = Paginator(entries(object_type, actor), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "accounts/audit.html", {
        "page": page,
        "kinds": sorted({spec.kind for spec in TRACKED.values()}),
        "object_type": object_type,
        "actor": actor,
    })  # fmt: skip

"""The audit log in the admin, read-only (its entries are never changed), for admins."""

from django.contrib import admin

from dashboard.accounts.access import RoleAdmin
from dashboard.accounts.models import AuditEntry
from dashboard.accounts.roles import Action


@admin.register(AuditEntry)
class AuditEntryAdmin(RoleAdmin):
    view_action = Action.VIEW_AUDIT
    change_action = None  # nobody adds, edits or deletes an entry
    list_display = ("at", "actor_name", "via", "action", "object_type", "object_repr",
                    "client_address")  # fmt: skip
    list_filter = ("object_type", "action", "via")
    search_fields = ("actor_name", "object_repr", "object_id")
    date_hierarchy = "at"

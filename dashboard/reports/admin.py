"""Reports in the Django admin: to look at and delete, not to edit (the task owns them)."""

from django.contrib import admin

from dashboard.accounts.access import RoleAdmin
from dashboard.accounts.roles import Action
from dashboard.reports.models import Report


@admin.register(Report)
class ReportAdmin(RoleAdmin):
    change_action = Action.BUILD_REPORT  # delete a report; adding is refused below
    list_display = (
        "id", "created_at", "requested_by", "description", "fmt", "status", "progress", "rows",
    )  # fmt: skip
    list_filter = ("status", "fmt", "expired")
    search_fields = ("description", "requested_by")
    readonly_fields = [f.name for f in Report._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

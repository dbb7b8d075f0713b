"""Reports in the Django admin: built reports to look at and delete, not to edit (the task
owns them); report schedules to create and change (the same form as the pages), with their
runs read-only."""

from django.contrib import admin

from dashboard.accounts.access import RoleAdmin
from dashboard.accounts.roles import Action
from dashboard.reports.forms import ReportScheduleForm
from dashboard.reports.models import Report, ReportSchedule, ScheduledRun


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


RUN_FIELDS = ("due_at", "state", "started_at", "finished_at", "rows", "size_bytes",
              "delivered_as", "attempts", "error", "report")  # fmt: skip


class ScheduledRunInline(admin.TabularInline):
    model = ScheduledRun
    extra = 0
    fields = RUN_FIELDS
    readonly_fields = RUN_FIELDS
    can_delete = False
    ordering = ("-due_at",)

    def has_add_permission(self, request, obj=None) -> bool:  # noqa: ANN001 - the admin's
        return False


@admin.register(ReportSchedule)
class ReportScheduleAdmin(RoleAdmin):
    change_action = Action.BUILD_REPORT  # an operator's, as on the schedules page
    form = ReportScheduleForm
    list_display = ("name", "enabled", "cluster", "cron", "range", "resolution", "fmt")
    list_filter = ("enabled", "fmt")
    search_fields = ("name", "cluster")
    inlines = [ScheduledRunInline]

    def save_model(self, request, obj, form, change) -> None:  # noqa: ANN001 - the admin's
        if not change:
            obj.created_by = request.user.get_username()
        super().save_model(request, obj, form, change)


@admin.register(ScheduledRun)
class ScheduledRunAdmin(RoleAdmin):
    change_action = Action.BUILD_REPORT  # delete a run; runs come from beat only
    list_display = ("schedule", "due_at", "state", "rows", "size_bytes", "delivered_as")
    list_filter = ("state",)
    readonly_fields = ("schedule", *RUN_FIELDS)

    def has_add_permission(self, request) -> bool:
        return False

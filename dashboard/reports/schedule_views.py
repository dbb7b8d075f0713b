"""Report schedule pages: the list (with each schedule's next due time and last run), a
schedule's history of runs, and the form. Reading is every role's; creating, changing and
deleting a schedule is an operator's (it builds stored reports: ``Action.BUILD_REPORT``)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from dashboard.accounts.access import requires
from dashboard.accounts.roles import Action
from dashboard.reports import cron
from dashboard.reports.forms import ReportScheduleForm
from dashboard.reports.models import ReportSchedule, ScheduledRun

HISTORY_SIZE = 100


def _next_due(schedule: ReportSchedule) -> object:
    try:
        return cron.next_due(schedule.cron, timezone.now()) if schedule.enabled else None
    except (ValueError, KeyError):
        return None


def schedules(request: HttpRequest) -> HttpResponse:
    rows = []
    for schedule in ReportSchedule.objects.all():
        last = schedule.runs.select_related("report").first()
        rows.append({"schedule": schedule, "next_due": _next_due(schedule), "last": last})
    return render(request, "reports/schedules.html", {"rows": rows})


def schedule_detail(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = get_object_or_404(ReportSchedule, pk=schedule_id)
    runs = ScheduledRun.objects.filter(schedule=schedule).select_related("report")
    return render(request, "reports/schedule_detail.html", {
        "schedule": schedule, "next_due": _next_due(schedule), "runs": runs[:HISTORY_SIZE],
    })  # fmt: skip


@requires(Action.BUILD_REPORT)
def schedule_edit(request: HttpRequest, schedule_id: int | None = None) -> HttpResponse:
    """Create (no id) or change a schedule: the form again with a 400 when invalid."""
    schedule = get_object_or_404(ReportSchedule, pk=schedule_id) if schedule_id else None
    form = ReportScheduleForm(request.POST or None, instance=schedule)
    if request.method == "POST" and form.is_valid():
        saved = form.save(commit=False)
        if schedule is None:
            saved.created_by = request.user.get_username()
        saved.save()
        messages.success(request, f"Schedule “{saved.name}” saved.")
        return redirect("reports:schedule_detail", saved.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "reports/schedule_edit.html", {
        "form": form, "schedule": schedule,
    }, status=status)  # fmt: skip


@require_POST
@requires(Action.BUILD_REPORT)
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    """The schedule and its history of runs; the reports it built stay in the list."""
    schedule = get_object_or_404(ReportSchedule, pk=schedule_id)
    name = schedule.name
    schedule.delete()
    messages.success(request, f"Schedule “{name}” deleted.")
    return redirect("reports:schedules")

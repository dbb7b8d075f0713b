"""Celery tasks of the reports app: thin wrappers around :mod:`dashboard.reports.build`."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="dashboard.reports.tasks.build_report", ignore_result=True)
def build_report(report_id: int) -> None:
    """Build a queued report's file, updating its progress as it goes."""
    from dashboard.reports.build import build_report_file

    build_report_file(report_id)


@shared_task(name="dashboard.reports.tasks.prune_reports", ignore_result=True)
def prune_reports() -> int:
    """Delete report files older than ``LAGWATCH_REPORTS_KEEP_DAYS``."""
    from dashboard.reports.build import prune_old_reports

    return prune_old_reports()


@shared_task(name="dashboard.reports.tasks.send_scheduled_report", ignore_result=True)
def send_scheduled_report(run_id: int) -> None:
    """Build and mail one scheduled run; a mail refused for now waits to retry, and beat's
    pass queues it again once the wait is over (``scheduled.requeue_due_retries``)."""
    from dashboard.reports.scheduled import send_run

    send_run(run_id)


@shared_task(name="dashboard.reports.tasks.run_report_schedules", ignore_result=True)
def run_report_schedules() -> int:
    """Beat's pass over the schedules: a run, and its task, for each new due time."""
    from dashboard.reports.scheduled import run_due_schedules

    return len(run_due_schedules())

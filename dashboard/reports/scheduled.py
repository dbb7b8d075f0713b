"""Scheduled lag reports: beat finds the due ones, a task builds and mails each.

Each due time is sent **once**. Beat's task (:func:`run_due_schedules`, every
``LAGWATCH_REPORT_SCHEDULES_CHECK_S``) takes each enabled schedule's latest due time
(:func:`cron.latest_due`) and inserts a :class:`ScheduledRun` for it; the unique constraint on
(schedule, due time) lets exactly one insert through, whichever beat (two running by mistake) or
retry tries, and only that one queues the task. The task (:func:`send_run`) claims the run
with a conditional update (queued or retrying → running), so a redelivered task finds it taken
and does nothing; a worker lost mid-run leaves it running, and it is marked failed (outcome
unknown) rather than sent again: one mail too few beats one too many, and the history says so.

The report is built as any other (:func:`build.build_report_file`, a :class:`Report` row and
its file), for ``range`` ending at the due time, so a late run reports the same period. It is
attached when at most ``LAGWATCH_REPORT_MAIL_MAX_BYTES``, else linked (the reports page's
download, a login needed, kept ``LAGWATCH_REPORTS_KEEP_DAYS``). A mail refused for now (an SMTP
4xx, no connection) is tried again, the file kept; refused for good (5xx) it fails the run.
The retry is beat's too (:func:`requeue_due_retries`, in the same pass): a run waiting to retry
is queued again once its back-off is over, never sent as a countdown message (a worker holding
one when Redis went away could die of it, and a broker without persistence loses it).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta
from email import encoders
from email.mime.base import MIMEBase

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from dashboard.alerts.failures import classify_smtp
from dashboard.alerts.transports.mail import smtp_error_message
from dashboard.reports import cron
from dashboard.reports.build import build_report_file
from dashboard.reports.models import (
    Report,
    ReportSchedule,
    ReportStatus,
    RunState,
    ScheduledRun,
)
from dashboard.reports.spec import SpecError

log = logging.getLogger(__name__)
ABANDONED_AFTER = timedelta(hours=12)
MIME_TYPES = {
    "csv": "text/csv",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


def run_due_schedules(now: datetime | None = None) -> list[ScheduledRun]:
    """Beat's pass: a run for each enabled schedule whose latest due time has none yet (and
    is not older than the schedule's last change), its task queued after commit; the runs
    made. Runs a lost worker left behind are marked failed."""
    now = now or timezone.now()
    fail_abandoned_runs(now)
    requeue_due_retries(now)
    made = []
    for schedule in ReportSchedule.objects.filter(enabled=True):
        try:
            due = cron.latest_due(schedule.cron, now)
        except (ValueError, KeyError) as exc:  # stored before validation, or edited by hand
            log.warning("schedule %r has a bad cron %r: %s", schedule.name, schedule.cron, exc)
            continue
        if due < schedule.updated_at:
            continue  # before it existed, or before its last change
        try:
            with transaction.atomic():
                run = ScheduledRun.objects.create(schedule=schedule, due_at=due)
        except IntegrityError:
            continue  # this due time has its run: another pass made it
        made.append(run)
        transaction.on_commit(lambda pk=run.pk: _queue(pk))
    return made


def _queue(run_id: int) -> None:
    from dashboard.reports.tasks import send_scheduled_report

    send_scheduled_report.delay(run_id)


def retry_due_at(run: ScheduledRun) -> datetime | None:
    """When a run waiting to retry its mail is due: its first start plus the back-offs of its
    attempts so far (the mails' own durations are not counted: at the earliest)."""
    if run.started_at is None:
        return None
    waited = settings.LAGWATCH_REPORT_MAIL_RETRY_S * (2**run.attempts - 1)
    return run.started_at + timedelta(seconds=waited)


def requeue_due_retries(now: datetime) -> int:
    """Queue the task of each run whose retry is due, once per attempt (``claim_once``: a
    pass while the task waits in the queue sends none again; the task's claim sends the mail
    once anyway). Redis down: nothing queued, the next pass tries."""
    from dashboard.locks import claim_once

    queued = 0
    for run in ScheduledRun.objects.filter(state=RunState.RETRYING):
        due = retry_due_at(run)
        if due is None or due > now:
            continue
        try:
            if claim_once(f"lagwatch:report-run:{run.pk}:{run.attempts}", ttl_s=3600):
                _queue(run.pk)
                queued += 1
        except Exception as exc:  # noqa: BLE001 - the broker away: the next pass retries
            log.warning("scheduled run %d not queued for its retry: %s", run.pk, exc)
    return queued


def fail_abandoned_runs(now: datetime) -> int:
    """Runs queued or running past :data:`ABANDONED_AFTER`: failed, with why."""
    cutoff = now - ABANDONED_AFTER
    lost = ScheduledRun.objects.filter(state=RunState.RUNNING, started_at__lt=cutoff).update(
        state=RunState.FAILED, finished_at=now,
        error="outcome unknown: the worker running it was lost (the mail may have gone)",
    )  # fmt: skip
    stuck = ScheduledRun.objects.filter(
        state__in=[RunState.QUEUED, RunState.RETRYING], created_at__lt=cutoff
    ).update(state=RunState.FAILED, finished_at=now, error="not run in time (no worker?)")
    return lost + stuck


def _finish(run: ScheduledRun, state: str, **fields: object) -> None:
    for name, value in fields.items():
        setattr(run, name, value)
    run.state, run.finished_at = state, timezone.now()
    run.save()


def send_run(run_id: int) -> float | None:
    """The task's body: claim the run, build its report (unless built by an earlier attempt),
    mail it. Seconds to wait before trying the mail again, or None when the run is over (or
    was not this task's to do)."""
    claimed = ScheduledRun.objects.filter(
        pk=run_id, state__in=[RunState.QUEUED, RunState.RETRYING]
    ).update(state=RunState.RUNNING)
    if not claimed:
        return None  # sent, failed, or another worker has it
    run = ScheduledRun.objects.select_related("schedule", "report").get(pk=run_id)
    if run.started_at is None:
        run.started_at = timezone.now()
        run.save(update_fields=["started_at"])
    schedule = run.schedule
    report = run.report
    if report is None or not report.downloadable:
        try:
            spec = schedule.spec_at(run.due_at)
        except SpecError as exc:
            _finish(run, RunState.FAILED, error=f"the schedule's report is not valid: {exc}")
            return None
        report = Report.objects.create(
            fmt=schedule.fmt, spec=spec.to_dict(), description=spec.describe(),
            requested_by=f"schedule: {schedule.name}"[:150],
        )  # fmt: skip
        run.report = report
        run.save(update_fields=["report"])
        report = build_report_file(report.pk) or report
        if report.status != ReportStatus.DONE:
            _finish(run, RunState.FAILED, error=f"the report failed: {report.error}"[:2000])
            return None
    run.rows, run.size_bytes = report.rows, report.size_bytes
    run.attempts += 1
    try:
        delivered_as = mail(schedule, run, report)
    except Exception as exc:  # noqa: BLE001 - SMTP and socket errors alike, told as text
        error = smtp_error_message(exc)
        if classify_smtp(exc).permanent or run.attempts >= settings.LAGWATCH_REPORT_MAIL_ATTEMPTS:
            _finish(run, RunState.FAILED, error=f"the mail failed: {error}")
            return None
        run.state, run.error = RunState.RETRYING, f"the mail failed, will retry: {error}"
        run.save()
        return float(settings.LAGWATCH_REPORT_MAIL_RETRY_S * 2 ** (run.attempts - 1))
    _finish(run, RunState.SENT, delivered_as=delivered_as, error="")
    return None


def attachment_name(schedule: ReportSchedule, run: ScheduledRun, fmt: str) -> str:
    """``lag-report-<name>-<due>.csv``: the schedule's name reduced to safe characters."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", schedule.name).strip("-")[:60] or "schedule"
    return f"lag-report-{slug}-{run.due_at:%Y%m%dT%H%MZ}.{fmt}"


def download_link(report: Report) -> str:
    path = reverse("reports:download", args=[report.pk])
    base = settings.LAGWATCH_BASE_URL.rstrip("/")
    return f"{base}{path}" if base else path


def _attachment(report: Report, filename: str) -> MIMEBase:
    """The file as a base64 part, whatever its type: a CSV or JSON attached as text would have
    its line endings rewritten on the way, and the file received would not be the one built."""
    maintype, subtype = MIME_TYPES[report.fmt].split("/")
    part = MIMEBase(maintype, subtype)
    with report.open() as handle:
        part.set_payload(handle.read())
    encoders.encode_base64(part)
    part.add_header("Content-Disposition", "attachment", filename=filename)
    return part


def mail(schedule: ReportSchedule, run: ScheduledRun, report: Report) -> str:
    """Mail the report to the schedule's recipients: ``attachment`` or ``link`` (larger than
    ``LAGWATCH_REPORT_MAIL_MAX_BYTES``). Raises what sending raised."""
    spec = report.get_spec()
    size = report.size_bytes or 0
    attach = size <= settings.LAGWATCH_REPORT_MAIL_MAX_BYTES
    lines = [
        f"Lag report “{schedule.name}”, due {run.due_at:%Y-%m-%d %H:%M} UTC.",
        "",
        f"Scope:      {spec.describe()}",
        f"Range:      {spec.start:%Y-%m-%d %H:%M} – {spec.end:%Y-%m-%d %H:%M} UTC",
        f"Format:     {report.fmt.upper()}, {report.rows} rows, {size} bytes",
        "",
    ]
    if attach:
        lines.append("The report is attached.")
    else:
        lines += [
            f"The report is larger than {settings.LAGWATCH_REPORT_MAIL_MAX_BYTES} bytes: "
            "download it (a Lagwatch login is needed) from",
            download_link(report),
            f"within {settings.LAGWATCH_REPORTS_KEEP_DAYS} days.",
        ]
    subject = " ".join(
        f"[Lagwatch] Lag report {schedule.name}: {spec.cluster}, "
        f"{spec.start:%Y-%m-%d %H:%M} to {spec.end:%Y-%m-%d %H:%M} UTC".split()
    )
    message = EmailMessage(
        subject=subject[:200],
        body="\n".join(lines) + "\n",
        from_email=settings.LAGWATCH_REPORTS_EMAIL_FROM,
        to=schedule.recipient_list(),
        connection=get_connection(fail_silently=False, timeout=settings.EMAIL_TIMEOUT),
    )
    if attach:
        message.attach(_attachment(report, attachment_name(schedule, run, report.fmt)))
    message.send(fail_silently=False)
    return "attachment" if attach else "link"

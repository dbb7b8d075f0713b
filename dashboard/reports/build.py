"""Django side of report building: the log and history for a spec, the task's body, pruning.

The views, the API, the command and the Celery task call these; the row logic itself is in
the pure modules (:mod:`samples`, :mod:`rows`, :mod:`status`, :mod:`writers`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from collectors.sample_log import SampleLog
from dashboard.reports.export import export
from dashboard.reports.history import load_status_history
from dashboard.reports.models import Report, ReportStatus, reports_dir
from dashboard.reports.samples import HourPlan, plan_hours
from dashboard.reports.spec import ReportSpec

__all__ = ["ExportProgress", "build_report_file", "prune_old_reports", "report_chunks", "stream"]

log = logging.getLogger(__name__)
# A report still queued or running this long after it was asked for lost its worker (a
# redelivered task would have finished it): pruning marks it failed so the list stops waiting.
ABANDONED_AFTER = timedelta(hours=12)
PROGRESS_EVERY_S = 1.0  # at most one progress write a second: the list polls every 2 s


class ExportProgress:
    """Counts rows passing through, and reports progress by bytes of the log read."""

    def __init__(self, plans: list[HourPlan], on_progress: Callable[[float, int], None] | None):
        self.total = sum(p.size for p in plans) or 1
        self.done = 0
        self.rows = 0
        self.on_progress = on_progress

    def add_rows(self, n: int) -> None:
        self.rows += n

    def hour_done(self, plan: HourPlan) -> None:
        self.done += plan.size
        if self.on_progress is not None:
            self.on_progress(min(self.done / self.total, 0.99), self.rows)


def sample_log() -> SampleLog:
    return SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL, settings.LAGWATCH_S3)


def report_chunks(
    spec: ReportSpec,
    fmt: str,
    on_progress: Callable[[float, int], None] | None = None,
    counter_out: list[ExportProgress] | None = None,
) -> Iterator[bytes]:
    """The report's bytes; ``on_progress(fraction, rows)`` after each hour of the log."""
    samples = sample_log()
    history = load_status_history(spec)
    plans = plan_hours(samples, spec)
    counter = ExportProgress(plans, on_progress)
    if counter_out is not None:
        counter_out.append(counter)
    return export(samples, spec, history, fmt, plans, counter.hour_done, counter.add_rows)


def stream(spec: ReportSpec, fmt: str) -> Iterator[bytes]:
    return report_chunks(spec, fmt)


def build_report_file(report_id: int) -> Report | None:
    """The Celery task's body: write the report's file, keeping its progress up to date.

    The file is written under a temporary name and renamed when complete, so a download never
    sees half a file; a failure marks the report failed with the error, and removes the part.
    """
    report = Report.objects.filter(pk=report_id).first()
    if report is None:
        log.warning("report %s vanished before it was built", report_id)
        return None
    if report.status not in (ReportStatus.QUEUED, ReportStatus.RUNNING):
        return report  # a duplicate delivery of a finished task
    directory = reports_dir()
    directory.mkdir(parents=True, exist_ok=True)
    name = f"report-{report.pk}.{report.fmt}"
    part = directory / f".{name}.part"
    Report.objects.filter(pk=report.pk).update(
        status=ReportStatus.RUNNING, started_at=timezone.now(), progress=0.0, error=""
    )
    last = [0.0]

    def on_progress(fraction: float, rows: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            Report.objects.filter(pk=report.pk).update(progress=fraction, rows=rows)

    counters: list[ExportProgress] = []
    try:
        spec = report.get_spec()
        with part.open("wb") as out:
            for chunk in report_chunks(spec, report.fmt, on_progress, counters):
                out.write(chunk)
        os.replace(part, directory / name)
    except Exception as exc:  # the report says why; the worker goes on
        log.exception("report %s failed", report.pk)
        part.unlink(missing_ok=True)
        Report.objects.filter(pk=report.pk).update(
            status=ReportStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now(),
        )
        report.refresh_from_db()
        return report
    Report.objects.filter(pk=report.pk).update(
        status=ReportStatus.DONE,
        progress=1.0,
        rows=counters[0].rows if counters else 0,
        file_name=name,
        size_bytes=(directory / name).stat().st_size,
        finished_at=timezone.now(),
    )
    report.refresh_from_db()
    return report


def prune_old_reports(now=None) -> int:
    """Delete files of reports older than ``LAGWATCH_REPORTS_KEEP_DAYS`` (rows stay, marked
    expired) and leftover ``.part`` files of crashed builds, and mark reports abandoned by a
    lost worker failed; returns the number of files deleted."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.LAGWATCH_REPORTS_KEEP_DAYS)
    deleted = 0
    for report in Report.objects.filter(created_at__lt=cutoff, expired=False):
        path = report.path
        if path is not None and path.is_file():
            path.unlink()
            deleted += 1
        try:
            Report.objects.filter(pk=report.pk).update(expired=True)
        except DatabaseError:
            log.exception("could not mark report %s expired", report.pk)
    abandoned = Report.objects.filter(
        status__in=[ReportStatus.QUEUED, ReportStatus.RUNNING],
        created_at__lt=now - ABANDONED_AFTER,
    ).update(
        status=ReportStatus.FAILED,
        error=f"abandoned: not finished within {ABANDONED_AFTER} (worker lost?)",
        finished_at=now,
    )
    if abandoned:
        log.warning("marked %d abandoned reports failed", abandoned)
    directory = reports_dir()
    if directory.is_dir():
        for part in directory.glob(".*.part"):
            if part.stat().st_mtime < cutoff.timestamp():
                part.unlink(missing_ok=True)
                deleted += 1
    return deleted

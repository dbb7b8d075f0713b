"""Entry points for building reports: queue one as a task, or stream one now.

Used by the UI views, the API and the ``lag_report`` command; they hold no report logic
themselves.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db import transaction

from dashboard.reports.models import Report
from dashboard.reports.spec import ReportSpec, parse_format

__all__ = ["create_report", "stream_report"]


def create_report(spec: ReportSpec, fmt: str, requested_by: str) -> Report:
    """Record a queued report and send the Celery task that builds its file."""
    from dashboard.reports.tasks import build_report

    fmt = parse_format(fmt)
    report = Report.objects.create(
        fmt=fmt, spec=spec.to_dict(), description=spec.describe(), requested_by=requested_by
    )
    transaction.on_commit(lambda: build_report.delay(report.pk))
    return report


def stream_report(spec: ReportSpec, fmt: str) -> Iterator[bytes]:
    """The report's bytes, generated chunk by chunk (for synchronous downloads)."""
    from dashboard.reports.build import stream

    return stream(spec, parse_format(fmt))

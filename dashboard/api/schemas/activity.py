"""Answers about what Lagwatch did: alerts (with their history) and lag reports.

Read from the ORM rows; a report's links need the request, which ninja hands the resolvers
as the validation context.
"""

from datetime import datetime
from typing import Annotated, Any

from django.urls import reverse
from pydantic import ConfigDict, Field, WithJsonSchema

from dashboard.alerts.models import AlertState, Level, Severity
from dashboard.api.schemas.common import (
    AnyObject,
    Closed,
    Number,
    Time,
    TimeText,
    Uri,
    one_of,
    page_of,
)
from dashboard.api.schemas.groups import Diagnoses
from dashboard.reports.models import ReportStatus
from dashboard.reports.spec import FORMATS


class Alert(Closed):
    id: int
    rule: str = Field(alias="rule_name")
    level: one_of(Level.values)
    cluster: str
    source: str
    group: str
    topic: str | None
    partition: int | None
    state: one_of(AlertState.values)
    severity: one_of(Severity.values)
    title: str
    status: str
    diagnosis: Diagnoses
    reason: str
    lag: int | None
    time_lag_s: Number | None
    started_at: Time
    fired_at: Time
    acknowledged_at: Time | None
    acknowledged_by: str
    resolved_at: Time | None
    resolved_reason: str
    silenced: bool

    @staticmethod
    def resolve_topic(alert: Any) -> str | None:
        return alert.topic or None

    @staticmethod
    def resolve_diagnosis(alert: Any) -> list:
        return alert.diagnosis or []

    @staticmethod
    def resolve_silenced(alert: Any) -> bool:
        return alert.silence_id is not None


class AlertEvent(Closed):
    at: Time
    kind: str
    actor: str
    message: str


class AlertDetail(Alert):
    details: AnyObject
    events: list[AlertEvent]

    @staticmethod
    def resolve_details(alert: Any) -> dict:
        return alert.details or {}

    @staticmethod
    def resolve_events(alert: Any) -> list:
        return list(alert.events.order_by("pk"))


def _isoformat(at: datetime | None) -> str | None:
    # As the reports' own progress document writes them (+00:00, not Z).
    return at.isoformat() if at else None


def _absolute(context: Any, route: str, pk: int) -> str:
    return context["request"].build_absolute_uri(reverse(route, args=[pk]))


class Report(Closed):
    """A report's progress document (``Report.progress_doc``) with what it covers and links."""

    id: int
    status: one_of(ReportStatus.values)
    progress: Number = Field(ge=0, le=1)
    rows: int
    error: str
    fmt: str
    created_at: TimeText | None
    finished_at: TimeText | None
    size_bytes: int | None
    downloadable: bool
    format: one_of(FORMATS)
    description: str
    requested_by: str
    spec: AnyObject = Field(
        description="What the report covers (cluster, groups, topics, sources, start, end, "
        "resolution)."
    )
    started_at: TimeText | None
    expired: bool
    url: Uri
    download_url: Uri | None

    @staticmethod
    def resolve_progress(report: Any) -> float:
        return round(report.progress, 4)

    @staticmethod
    def resolve_created_at(report: Any) -> str | None:
        return _isoformat(report.created_at)

    @staticmethod
    def resolve_finished_at(report: Any) -> str | None:
        return _isoformat(report.finished_at)

    @staticmethod
    def resolve_started_at(report: Any) -> str | None:
        return _isoformat(report.started_at)

    @staticmethod
    def resolve_format(report: Any) -> str:
        return report.fmt

    @staticmethod
    def resolve_url(report: Any, context: Any) -> str:
        return _absolute(context, "api:report", report.pk)

    @staticmethod
    def resolve_download_url(report: Any, context: Any) -> str | None:
        if not report.downloadable:
            return None
        return _absolute(context, "api:report-download", report.pk)


Patterns = Annotated[
    str | list[str],
    WithJsonSchema({
        "description": "Names or shell-style patterns (*, ?, [...]): a string or a list.",
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
    }),
]  # fmt: skip


class ReportRequest(Closed):
    """The body of ``POST /reports/``. Documents it: the report spec parser
    (``dashboard/reports/spec.py``) reads it, as it reads the export's query string, so the
    two refuse a field with the same words."""

    model_config = ConfigDict(
        json_schema_extra={
            "additionalProperties": False,
            "example": {"cluster": "prod", "groups": ["billing-*"], "since": "24h",
                        "resolution": "1m", "format": "parquet"},
        }
    )  # fmt: skip

    cluster: str = Field(max_length=100)
    groups: Patterns = None
    group: Patterns = None
    topics: Patterns = None
    topic: Patterns = None
    sources: Patterns = None
    source: Patterns = None
    since: str = Field(None, description="A duration before end (24h, 90m, 7d).")
    start: Time = None
    end: Time = None
    resolution: str = Field(None, description="raw, or a bucket: 1m, 5m, 1h, 1d")
    format: one_of(FORMATS) = "csv"


AlertPage = page_of(Alert, "AlertPage")
ReportPage = page_of(Report, "ReportPage")

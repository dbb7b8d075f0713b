"""A lag report the UI or API asked for: its spec, its progress, and where its file is."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import IO

from django.conf import settings
from django.db import models

from dashboard.reports.spec import ReportSpec, parse_spec

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


def reports_dir() -> Path:
    """Where report files are kept (``LAGWATCH_REPORTS_DIR``, by default under the data dir)."""
    return Path(settings.LAGWATCH_REPORTS_DIR)


class ReportStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Report(models.Model):
    """One requested export. The file lives under :func:`reports_dir` as ``file_name``; the
    row stays after the file is pruned (``expired``) so the list still shows what was made."""

    status = models.CharField(
        max_length=16, choices=ReportStatus.choices, default=ReportStatus.QUEUED
    )
    progress = models.FloatField(default=0.0)  # 0..1
    rows = models.BigIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    fmt = models.CharField(max_length=16)
    spec = models.JSONField()  # ReportSpec.to_dict()
    description = models.CharField(max_length=1000, blank=True, default="")
    requested_by = models.CharField(max_length=150, blank=True, default="")
    file_name = models.CharField(max_length=255, blank=True, default="")
    size_bytes = models.BigIntegerField(null=True)
    expired = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status"]), models.Index(fields=["created_at"])]

    def __str__(self) -> str:
        return f"report {self.pk} ({self.fmt}, {self.status})"

    def get_spec(self) -> ReportSpec:
        return parse_spec(self.spec)

    @property
    def path(self) -> Path | None:
        return reports_dir() / self.file_name if self.file_name else None

    @property
    def download_name(self) -> str:
        """A safe attachment name: no data from the monitored systems in it."""
        stamp = self.created_at.strftime("%Y%m%dT%H%MZ") if self.created_at else "report"
        return f"lag-report-{self.pk}-{stamp}.{self.fmt}"

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES.get(self.fmt, "application/octet-stream")

    @property
    def downloadable(self) -> bool:
        path = self.path
        return self.status == ReportStatus.DONE and path is not None and path.is_file()

    def open(self) -> IO[bytes]:
        """The finished file, for reading; FileNotFoundError if not done or pruned."""
        path = self.path
        if self.status != ReportStatus.DONE or path is None:
            raise FileNotFoundError(f"report {self.pk} has no file ({self.status})")
        return path.open("rb")

    def progress_doc(self) -> dict:
        """The small JSON the list polls (and the API may return)."""
        return {
            "id": self.pk,
            "status": self.status,
            "progress": round(self.progress, 4),
            "rows": self.rows,
            "error": self.error,
            "fmt": self.fmt,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "size_bytes": self.size_bytes,
            "downloadable": self.downloadable,
        }


class ReportSchedule(models.Model):
    """A lag report built and mailed on a schedule: its scope and format as a report's, its
    range relative to each due time (``range`` ending at the due time), its recipients and
    its cron expression (UTC). Each due time is one :class:`ScheduledRun`."""

    name = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True)
    cluster = models.CharField(max_length=255)
    groups = models.JSONField(default=list, blank=True)  # names or patterns; empty = all
    topics = models.JSONField(default=list, blank=True)
    sources = models.JSONField(default=list, blank=True)
    range = models.CharField(max_length=16, default="24h")  # a spec's ``since``
    resolution = models.CharField(max_length=16, default="1h")
    fmt = models.CharField(max_length=16, default="csv")
    recipients = models.TextField()  # comma or newline separated
    cron = models.CharField(max_length=100)
    created_by = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    # A due time before the last change is not run (a new cron must not send at once).
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def recipient_list(self) -> list[str]:
        parts = self.recipients.replace("\n", ",").replace(";", ",").split(",")
        return [p.strip() for p in parts if p.strip()]

    def spec_at(self, due_at: datetime) -> ReportSpec:
        """The report of the run due at ``due_at``: ``range`` ending then."""
        return parse_spec(
            {
                "cluster": self.cluster,
                "groups": list(self.groups),
                "topics": list(self.topics),
                "sources": list(self.sources),
                "since": self.range,
                "resolution": self.resolution,
            },
            now=due_at,
        )


class RunState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"  # built; the mail is to be tried again
    SENT = "sent"
    FAILED = "failed"


class ScheduledRun(models.Model):
    """One due time of a schedule: when it ran, what it came to. Unique per (schedule, due
    time), which is what makes a due time sent once, whichever beat or retry gets there."""

    schedule = models.ForeignKey(ReportSchedule, on_delete=models.CASCADE, related_name="runs")
    due_at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.QUEUED)
    report = models.ForeignKey(Report, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    rows = models.BigIntegerField(null=True, blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)
    delivered_as = models.CharField(max_length=16, blank=True, default="")  # attachment, link
    attempts = models.PositiveIntegerField(default=0)  # mail attempts
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-due_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["schedule", "due_at"], name="uniq_run_per_due_time")
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} due {self.due_at:%Y-%m-%d %H:%M}: {self.state}"

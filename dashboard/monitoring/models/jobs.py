"""Runs of the Spark jobs (SPEC §6): what each run read, wrote and how it ended.

One row per run, written when the run starts and completed when it ends, so the UI can show
how fresh the statuses are and why they are not (a failed or skipped run, a run that is slow).
"""

from datetime import datetime

from django.db import models


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat().replace("+00:00", "Z")


class SparkJobOutcome(models.TextChoices):
    RUNNING = "running"  # started; a row left so was cut short (worker killed)
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"  # another run of the same job held the lock


class SparkJobRun(models.Model):
    job = models.CharField(max_length=16)  # "status" or "rollups" (spark_jobs.jobs.JOBS)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True)
    duration_s = models.FloatField(null=True)
    window_s = models.PositiveIntegerField()
    as_of_ms = models.BigIntegerField(null=True)  # the run's "now": its results' time
    input_rows = models.BigIntegerField(null=True)
    output_rows = models.BigIntegerField(null=True)
    outcome = models.CharField(
        max_length=16, choices=SparkJobOutcome.choices, default=SparkJobOutcome.RUNNING
    )
    error = models.TextField(blank=True)
    output_path = models.CharField(max_length=1000, blank=True)

    class Meta:
        indexes = [models.Index(fields=["job", "-started_at"])]
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.job} @ {self.started_at:%Y-%m-%d %H:%M:%S}: {self.outcome}"

    def as_dict(self) -> dict:
        """JSON-ready: ``spark_job``'s output and the status document's ``spark_jobs``."""
        iso = _iso
        return {
            "id": self.pk,
            "job": self.job,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "duration_s": None if self.duration_s is None else round(self.duration_s, 3),
            "window_s": self.window_s,
            "as_of_ms": self.as_of_ms,
            "input_rows": self.input_rows,
            "output_rows": self.output_rows,
            "outcome": self.outcome,
            "error": self.error,
            "output_path": self.output_path,
        }

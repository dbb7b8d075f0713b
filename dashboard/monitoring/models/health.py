"""Domain models of the monitoring app."""

from django.db import models


class ServiceHeartbeat(models.Model):
    """Last sign of life of a background process (Celery worker, beat-driven tasks).

    The health check reads it to tell "the web answers" apart from "the pipeline runs".
    """

    name = models.CharField(max_length=100, unique=True)
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} @ {self.at:%Y-%m-%d %H:%M:%S}"


class SourceHealth(models.Model):
    """Per cluster and source: when it last answered, and what went wrong last (SPEC §10)."""

    cluster = models.ForeignKey("monitoring.Cluster", on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=16)
    reachable = models.BooleanField(default=True)
    last_attempt_at = models.DateTimeField(null=True)
    last_success_at = models.DateTimeField(null=True)
    last_error_at = models.DateTimeField(null=True)
    last_error = models.TextField(blank=True)
    last_duration_s = models.FloatField(null=True)
    consecutive_failures = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "source"], name="uniq_source_health")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.source}"


class CollectionError(models.Model):
    """A problem in one place of one source during the latest cycle (bad znode, lost group)."""

    cluster = models.ForeignKey("monitoring.Cluster", on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=16)
    where = models.TextField()
    error = models.TextField()
    at = models.DateTimeField()

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["cluster", "source", "at"])]

    def __str__(self) -> str:
        return f"{self.source} {self.where}: {self.error}"

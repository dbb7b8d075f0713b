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

"""Celery tasks of the monitoring app: thin wrappers around plain functions."""

from celery import shared_task
from django.utils import timezone

from dashboard.monitoring.models import ServiceHeartbeat


@shared_task(name="dashboard.monitoring.tasks.heartbeat", ignore_result=True)
def heartbeat() -> None:
    """Record that beat scheduled and a worker ran a task: the pipeline is alive."""
    ServiceHeartbeat.objects.update_or_create(name="celery", defaults={"at": timezone.now()})

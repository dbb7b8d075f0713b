"""Celery tasks of the API app: the /metrics exposition build (``exposition.py``)."""

from __future__ import annotations

from celery import shared_task

from dashboard.api.metrics import exposition


@shared_task(name="dashboard.api.metrics.tasks.build_metrics_exposition", ignore_result=True)
def build_metrics_exposition() -> str:
    """One build of the stored figures' exposition (``exposition.build_once``)."""
    return str(exposition.build_once() or "")

"""Celery tasks of the API app: the /metrics exposition build (dashboard/api/exposition.py)."""

from __future__ import annotations

from celery import shared_task

from dashboard.api import exposition


@shared_task(name="dashboard.api.tasks.build_metrics_exposition", ignore_result=True)
def build_metrics_exposition() -> str:
    """One build of the stored figures' exposition (``exposition.build_once``)."""
    return str(exposition.build_once() or "")

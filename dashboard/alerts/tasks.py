"""Celery tasks of the alerts: one per delivery (queue "celery"), retried with back-off."""

from __future__ import annotations

from celery import shared_task

from dashboard.alerts.delivery import attempt


@shared_task(bind=True, name="dashboard.alerts.tasks.deliver", max_retries=None)
def deliver(self, delivery_id: int) -> bool:  # noqa: ANN001 - Celery's bound task
    """Send one notice to one channel. A transient failure retries this delivery only, after
    the wait :func:`attempt` chose; a permanent one (or the last attempt) ends it."""
    outcome = attempt(delivery_id)
    if outcome.retry_in_s is not None:
        raise self.retry(countdown=outcome.retry_in_s)
    return outcome.ok

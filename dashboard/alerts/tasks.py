"""Celery tasks of the alerts: one per delivery (queue "celery"), retried with back-off; and
beat's re-send of open alerts to Alertmanager."""

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


@shared_task(name="dashboard.alerts.tasks.resend_to_alertmanager", ignore_result=True)
def resend_to_alertmanager() -> dict[str, int]:
    """Repeat the open alerts to each Alertmanager channel, as Alertmanager expects of its
    clients (:mod:`dashboard.alerts.resend`)."""
    from dashboard.alerts.resend import resend_open_alerts

    return resend_open_alerts()

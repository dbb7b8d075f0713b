"""Celery tasks of the alerts: one per delivery when it is due (queue "celery"), beat's sweep
of the due deliveries (retries with back-off, and what Redis lost: ``due``), and beat's re-send
of open alerts to Alertmanager. No task is sent with a countdown or an ETA (``due`` says why)."""

from __future__ import annotations

from celery import shared_task

from dashboard.alerts.delivery import attempt
from dashboard.alerts.due import claim, send_due


@shared_task(name="dashboard.alerts.tasks.deliver", ignore_result=True)
def deliver(delivery_id: int) -> bool:
    """Send one notice to one channel, if it is due and nobody else holds it. A transient
    failure makes it due again after the wait :func:`attempt` chose (the sweep sends it
    then); a permanent one (or the last attempt) ends it."""
    if not claim(delivery_id):
        return False  # sent, ended, not due yet, or another worker holds it
    return attempt(delivery_id).ok


@shared_task(name="dashboard.alerts.tasks.send_due_deliveries", ignore_result=True)
def send_due_deliveries() -> int:
    """Beat's sweep: a task for each delivery due now (``dashboard.alerts.due``)."""
    return send_due()


@shared_task(name="dashboard.alerts.tasks.resend_to_alertmanager", ignore_result=True)
def resend_to_alertmanager() -> dict[str, int]:
    """Repeat the open alerts to each Alertmanager channel, as Alertmanager expects of its
    clients (:mod:`dashboard.alerts.resend`)."""
    from dashboard.alerts.resend import resend_open_alerts

    return resend_open_alerts()

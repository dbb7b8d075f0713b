"""Alert transitions made by people (acknowledge), written to the alert's event log in the same
transaction. The evaluator's own transitions (fire, resolve) are in ``evaluation.py``."""

from django.db import transaction
from django.utils import timezone

from dashboard.alerts.models import Alert, AlertEvent, AlertState


class AlertNotFound(LookupError):
    pass


class AlertTransitionError(ValueError):
    pass


def acknowledge(alert_id: int, by: str) -> Alert:
    """Firing → acknowledged. Acknowledging twice is harmless; a resolved alert is an error."""
    with transaction.atomic():
        alert = Alert.objects.select_for_update().filter(pk=alert_id).first()
        if alert is None:
            raise AlertNotFound(f"alert {alert_id} does not exist")
        if alert.state == AlertState.RESOLVED:
            raise AlertTransitionError(f"alert {alert_id} is already resolved")
        if alert.state == AlertState.ACKNOWLEDGED:
            return alert
        alert.state = AlertState.ACKNOWLEDGED
        alert.acknowledged_at = timezone.now()
        alert.acknowledged_by = by
        alert.save(update_fields=["state", "acknowledged_at", "acknowledged_by"])
        AlertEvent.objects.create(
            alert=alert, kind="acknowledged", actor=by, at=alert.acknowledged_at
        )
        return alert

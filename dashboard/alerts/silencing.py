"""Silences made from an alert ("silence this"), and their effect on alerts already open."""

from __future__ import annotations

from datetime import timedelta
from glob import escape

from django.db import transaction
from django.utils import timezone

from dashboard.alerts.models import OPEN_STATES, Alert, AlertEvent, Silence
from dashboard.alerts.rules import silence_for


def literal(name: str) -> str:
    """A glob matching exactly ``name`` (``*``, ``?`` and ``[`` made literal)."""
    return escape(name)


def silence_alert(alert: Alert, hours: float, reason: str, by: str) -> Silence:
    """Silence this alert's subject (same rule, cluster, group and, for a partition, topic)."""
    with transaction.atomic():
        silence = Silence.objects.create(
            rule=alert.rule, cluster_pattern=literal(alert.cluster),
            group_pattern=literal(alert.group),
            topic_pattern=literal(alert.topic) if alert.topic else "*",
            until=timezone.now() + timedelta(hours=hours), reason=reason, created_by=by,
        )  # fmt: skip
        apply_to_open_alerts(silence)
    return silence


def apply_to_open_alerts(silence: Silence) -> int:
    """Open alerts the new silence covers are marked silenced now: their resolve notice will
    not go out either."""
    from dashboard.alerts.evaluation import alert_subject, silence_spec

    spec = silence_spec(silence)
    now = timezone.now()
    count = 0
    for alert in Alert.objects.filter(state__in=OPEN_STATES, silence__isnull=True):
        if silence_for([spec], alert.rule_id, alert_subject(alert), now):
            alert.silence = silence
            alert.save(update_fields=["silence"])
            AlertEvent.objects.create(
                alert=alert, kind="silenced", actor=silence.created_by,
                message=f"silence #{silence.pk} until {silence.until:%Y-%m-%d %H:%M} UTC: "
                f"{silence.reason}",
            )  # fmt: skip
            count += 1
    return count

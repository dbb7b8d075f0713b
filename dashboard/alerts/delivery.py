"""One attempt at one delivery, recorded; the back-off between attempts.

The Celery task (tasks.deliver) is a thin shell: it calls :func:`attempt` and, when told to,
retries after :func:`backoff_s`. Every attempt is a DeliveryAttempt row, so the alert page
shows what was tried, when, and why it failed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from dashboard.alerts import messages
from dashboard.alerts.masking import scrub_url
from dashboard.alerts.models import (
    Alert,
    AlertEvent,
    Channel,
    Delivery,
    DeliveryAttempt,
    DeliveryState,
)
from dashboard.alerts.transports import DeliveryError, transport_for

log = logging.getLogger(__name__)


def backoff_s(attempt: int, base_s: float, cap_s: float) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): base, 2×, 4×…"""
    return float(min(cap_s, base_s * 2 ** max(attempt - 1, 0)))


def alert_url(alert: Alert) -> str:
    path = reverse("alerts:detail", args=[alert.pk])
    base = settings.LAGWATCH_BASE_URL.rstrip("/")
    return f"{base}{path}" if base else path


@dataclass
class Outcome:
    ok: bool
    error: str = ""
    retry_in_s: float | None = None  # set: the task should retry after this long


def send_now(channel: Channel, notice: str, doc: dict) -> tuple[bool, str, float]:
    """Send once; (ok, error, duration in ms). Never raises for a channel's failure. The error
    is kept, shown and logged, so it never holds the channel's URL (it may carry a secret)."""
    t0 = time.perf_counter()
    try:
        transport_for(channel).notify(notice, doc)
        ok, error = True, ""
    except DeliveryError as exc:
        ok, error = False, scrub_url(str(exc), channel.url)
        log.warning(
            "alert delivery failed",
            extra={"channel": channel.name, "target": channel.masked_target,
                   "notice": notice, "error": error},
        )  # fmt: skip
    return ok, error, (time.perf_counter() - t0) * 1000


def attempt(delivery_id: int) -> Outcome:
    delivery = Delivery.objects.select_related("alert", "channel").filter(pk=delivery_id).first()
    if delivery is None or delivery.state in (DeliveryState.SENT, DeliveryState.FAILED):
        return Outcome(ok=delivery is not None and delivery.state == DeliveryState.SENT)
    channel = delivery.channel
    number = delivery.attempts + 1
    now = timezone.now()
    if channel is None or not channel.enabled:
        ok, error, ms = False, "the channel was deleted or disabled", 0.0
        final = True
    else:
        doc = messages.alert_document(delivery.alert, alert_url(delivery.alert))
        ok, error, ms = send_now(channel, delivery.notice, doc)
        final = number >= settings.LAGWATCH_ALERTS_MAX_ATTEMPTS
    retry_in = None
    if ok:
        delivery.state, delivery.sent_at, delivery.next_attempt_at = DeliveryState.SENT, now, None
    elif final:
        delivery.state, delivery.next_attempt_at = DeliveryState.FAILED, None
    else:
        retry_in = backoff_s(
            number, settings.LAGWATCH_ALERTS_RETRY_BASE_S, settings.LAGWATCH_ALERTS_RETRY_MAX_S
        )
        delivery.state = DeliveryState.RETRYING
        delivery.next_attempt_at = now + timedelta(seconds=retry_in)
    delivery.attempts = number
    delivery.last_error = error
    delivery.save(update_fields=["state", "sent_at", "next_attempt_at", "attempts", "last_error"])
    DeliveryAttempt.objects.create(
        delivery=delivery,
        number=number,
        at=now,
        ok=ok,
        error=error,
        duration_ms=ms,
        retry_in_s=retry_in,
    )
    if ok:
        AlertEvent.objects.create(
            alert=delivery.alert,
            at=now,
            kind="notified",
            message=f"{delivery.notice} notice sent to {delivery.channel_name} (attempt {number})",
        )
    elif retry_in is None:
        AlertEvent.objects.create(
            alert=delivery.alert,
            at=now,
            kind="delivery_failed",
            message=f"{delivery.notice} notice to {delivery.channel_name} failed after "
            f"{number} attempt(s): {error}",
        )
    return Outcome(ok=ok, error=error, retry_in_s=retry_in)


def send_test_notice(channel: Channel, by: str) -> tuple[bool, str]:
    """The test-send button: a sample notice, sent at once (no retries), result shown."""
    now = timezone.now()
    doc = {
        "id": 0,
        "url": settings.LAGWATCH_BASE_URL or "/alerts/",
        "rule": "test",
        "severity": "info",
        "state": "firing",
        "level": "partition",
        "cluster": "example",
        "source": "kafka",
        "group": "example-group",
        "topic": "example-topic",
        "partition": 0,
        "status": "STALL",
        "diagnosis": [],
        "reason": f"Test notice sent by {by}.",
        "lag": 0,
        "time_lag_s": 0.0,
        "partitions": [],
        "title": f"Test notice for channel {channel.name}",
        "started_at": messages.iso(now),
        "fired_at": messages.iso(now),
        "acknowledged_at": None,
        "acknowledged_by": None,
        "resolved_at": None,
        "resolved_reason": None,
    }
    ok, error, _ = send_now(channel, "test", doc)
    return ok, error

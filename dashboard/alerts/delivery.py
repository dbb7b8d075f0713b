"""One attempt at one delivery, recorded; the back-off between attempts.

The Celery task (tasks.deliver) is a thin shell: it claims the delivery (``due``) and calls
:func:`attempt`, which on a transient failure makes the delivery due again after
:func:`retry_wait_s` (``next_attempt_at``; beat's sweep sends it then). A permanent failure
(:mod:`failures`: the webhook is gone, the address refused) ends the delivery at once; a
transient one is retried until
``LAGWATCH_ALERTS_MAX_ATTEMPTS``. Every attempt is a DeliveryAttempt row, so the alert page
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
from dashboard.alerts.failures import PERMANENT, TRANSIENT, Verdict
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
from dashboard.secrecy import redact

log = logging.getLogger(__name__)


def backoff_s(attempt: int, base_s: float, cap_s: float) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): base, 2×, 4×…"""
    return float(min(cap_s, base_s * 2 ** max(attempt - 1, 0)))


def retry_wait_s(attempt: int, retry_after_s: float | None, base_s: float, cap_s: float) -> float:
    """Seconds to wait after failed attempt ``attempt``: the back-off, or the server's own wait
    (``Retry-After``) when it asks for longer; never more than ``cap_s``."""
    wait = backoff_s(attempt, base_s, cap_s)
    if retry_after_s is not None:
        wait = min(float(cap_s), max(wait, retry_after_s))
    return wait


def alert_url(alert: Alert) -> str:
    path = reverse("alerts:detail", args=[alert.pk])
    base = settings.LAGWATCH_BASE_URL.rstrip("/")
    return f"{base}{path}" if base else path


@dataclass
class Outcome:
    ok: bool
    error: str = ""
    retry_in_s: float | None = None  # set: the task should retry after this long


@dataclass
class Sent:
    """What one send came to. ``error`` never holds the channel's URL (it may carry a
    secret): it is kept, shown and logged."""

    ok: bool
    error: str = ""
    duration_ms: float = 0.0
    verdict: Verdict = TRANSIENT  # of a failure: permanent, or worth a retry (and when)


def scrub(text: str, channel: Channel) -> str:
    """An error about ``channel`` without its secrets: the URL masked, the key redacted."""
    return redact(scrub_url(text, channel.url), [channel.secret] if channel.secret else [])


def send_now(channel: Channel, notice: str, doc: dict) -> Sent:
    """Send once. Never raises for a channel's failure."""
    t0 = time.perf_counter()
    try:
        transport_for(channel).notify(notice, doc)
        sent = Sent(ok=True)
    except DeliveryError as exc:
        sent = Sent(ok=False, error=scrub(str(exc), channel), verdict=exc.verdict)
        log.warning(
            "alert delivery failed",
            extra={"channel": channel.name, "target": channel.masked_target, "notice": notice,
                   "error": sent.error, "permanent": exc.verdict.permanent},
        )  # fmt: skip
    sent.duration_ms = (time.perf_counter() - t0) * 1000
    return sent


def attempt(delivery_id: int) -> Outcome:
    delivery = Delivery.objects.select_related("alert", "channel").filter(pk=delivery_id).first()
    if delivery is None or delivery.state in (DeliveryState.SENT, DeliveryState.FAILED):
        return Outcome(ok=delivery is not None and delivery.state == DeliveryState.SENT)
    channel = delivery.channel
    number = delivery.attempts + 1
    now = timezone.now()
    if channel is None or not channel.enabled:
        sent = Sent(ok=False, error="the channel was deleted or disabled", verdict=PERMANENT)
    else:
        doc = messages.alert_document(delivery.alert, alert_url(delivery.alert))
        sent = send_now(channel, delivery.notice, doc)
        if not sent.ok and sent.verdict.permanent:
            sent.error = f"{sent.error} (permanent failure: not retried)"
    ok, error, ms = sent.ok, sent.error, sent.duration_ms
    permanent = not ok and sent.verdict.permanent
    final = permanent or number >= settings.LAGWATCH_ALERTS_MAX_ATTEMPTS
    retry_in = None
    if ok:
        delivery.state, delivery.sent_at, delivery.next_attempt_at = DeliveryState.SENT, now, None
    elif final:
        delivery.state, delivery.next_attempt_at = DeliveryState.FAILED, None
    else:
        retry_in = retry_wait_s(
            number,
            sent.verdict.retry_after_s,
            settings.LAGWATCH_ALERTS_RETRY_BASE_S,
            settings.LAGWATCH_ALERTS_RETRY_MAX_S,
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
        how = f"at attempt {number}" if permanent else f"after {number} attempt(s)"
        AlertEvent.objects.create(
            alert=delivery.alert,
            at=now,
            kind="delivery_failed",
            message=f"{delivery.notice} notice to {delivery.channel_name} failed {how}: {error}",
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
    sent = send_now(channel, "test", doc)
    return sent.ok, sent.error

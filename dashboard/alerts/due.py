"""When each delivery is due, kept in the database: no delivery waits in the broker.

A retry sent as a Celery countdown is a message the worker holds until its ETA; when Redis
goes away meanwhile, kombu's restore of unacknowledged messages can kill the worker, and a
broker without persistence loses the message. So a delivery's next attempt is a time on its
row (``Delivery.next_attempt_at``), and the messages are plain ones, sent when it is due:

- **claim** (:func:`claim`): one conditional UPDATE takes a due delivery for ``CLAIM_S``
  (pushing its due time past a send's longest wait); whoever's update matched sends it, so a
  delivery whose message arrives twice (sent on commit and by the sweep, or redelivered after
  an outage) is sent once. A worker lost mid-send leaves it due again after the claim.
- **the sweep** (:func:`due_deliveries`, beat's ``send_due_deliveries`` every
  ``LAGWATCH_ALERTS_SWEEP_S``): the deliveries due (a retry whose wait is over, a new one
  whose message never came: Redis down when it was queued, or lost with Redis) get a message
  each, one per due time (``claim_once``), so a busy worker's backlog does not grow by one a
  sweep.

Deliveries pending while Redis is down are therefore sent once it is back: the first sweep
after it finds them due.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from dashboard.alerts.models import Delivery, DeliveryState

log = logging.getLogger(__name__)

__all__ = ["claim", "claim_s", "dispatch", "due_deliveries", "send_due"]

# A new delivery's message normally arrives within a second of its commit; the sweep leaves it
# this long before sending one of its own.
NEW_GRACE = timedelta(seconds=10)
_OPEN = (DeliveryState.PENDING, DeliveryState.RETRYING)


def claim_s() -> float:
    """How long a claim holds a delivery: longer than any one send may take."""
    return float(max(60, 3 * settings.LAGWATCH_ALERTS_HTTP_TIMEOUT_S))


def claim(delivery_id: int, now: datetime | None = None) -> bool:
    """Take the delivery if it is open and due (or new, never claimed); True if this caller
    now holds it and must attempt it."""
    now = now or timezone.now()
    taken = Delivery.objects.filter(
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now),
        pk=delivery_id, state__in=_OPEN,
    ).update(next_attempt_at=now + timedelta(seconds=claim_s()))  # fmt: skip
    return taken == 1


def due_deliveries(now: datetime | None = None, limit: int = 500) -> list[tuple[int, datetime]]:
    """The open deliveries due at ``now`` with their due time, the oldest first: retries whose
    wait is over, claims that lapsed, and new ones whose message has not come in
    ``NEW_GRACE``."""
    now = now or timezone.now()
    rows = (
        Delivery.objects.filter(state__in=_OPEN)
        .filter(
            Q(next_attempt_at__lte=now)
            | Q(next_attempt_at__isnull=True, created_at__lte=now - NEW_GRACE)
        )
        .order_by("created_at", "pk")
        .values_list("pk", "next_attempt_at", "created_at")[:limit]
    )
    return [(pk, due or created) for pk, due, created in rows]


def dispatch(delivery_id: int) -> bool:
    """Send the delivery's task (a plain message, no countdown). False when the broker cannot
    take it: the sweep sends it once the broker is back, as the delivery is due in the
    database."""
    from dashboard.alerts.tasks import deliver

    try:
        deliver.delay(delivery_id)
    except Exception as exc:  # noqa: BLE001 - any broker error: the row keeps it due
        log.warning("delivery %d not queued now (the sweep will): %s", delivery_id, exc)
        return False
    return True


def send_due(now: datetime | None = None) -> int:
    """The sweep: a task for each due delivery, once per due time; how many were sent."""
    from dashboard.locks import claim_once

    sent = 0
    for pk, due in due_deliveries(now):
        key = f"lagwatch:delivery:{pk}:{int(due.timestamp() * 1000)}"
        if claim_once(key, ttl_s=int(claim_s())) and dispatch(pk):
            sent += 1
    return sent

"""Queue notices: one Delivery row and one Celery task per (alert, notice, channel), sent
after the transaction commits, so each channel fails, retries and succeeds on its own. A task
the broker cannot take now is sent by the sweep later (``due``): the row is the delivery."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, transaction

from dashboard.alerts.models import Alert, Channel, Delivery, DeliveryState, Rule


def channels_for_rule(rule: Rule) -> list[Channel]:
    """The rule's channels, or every enabled channel when it names none."""
    named = list(rule.channels.all())  # prefetched by the evaluation
    if named:
        return [c for c in named if c.enabled]
    return list(Channel.objects.filter(enabled=True))


def channels_notified(alert: Alert) -> list[Channel]:
    """A resolve notice goes where the firing notice went (and wants resolve notices)."""
    ids = alert.deliveries.filter(notice="firing").values_list("channel_id", flat=True)
    return list(Channel.objects.filter(pk__in=list(ids), enabled=True, send_resolved=True))


def queue(alert: Alert, notice: str, channels: Iterable[Channel]) -> list[Delivery]:
    from dashboard.alerts.due import dispatch

    created = []
    for channel in channels:
        try:
            with transaction.atomic():
                delivery = Delivery.objects.create(
                    alert=alert,
                    channel=channel,
                    channel_name=channel.name,
                    notice=notice,
                    state=DeliveryState.PENDING,
                )
        except IntegrityError:
            continue  # this notice was already queued to this channel
        created.append(delivery)
        transaction.on_commit(lambda pk=delivery.pk: dispatch(pk))
    return created

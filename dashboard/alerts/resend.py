"""Beat's re-send of open alerts to Alertmanager, which expects its clients to repeat a firing
alert while it lasts (docs/ALERTS.md): without it, Alertmanager would end each alert four
re-send intervals after its firing notice, though it still fires in Lagwatch.

Which alerts: the open ones (firing or acknowledged: taking an alert does not end the fault)
whose firing notice was routed to the channel, that no active silence holds. One POST per
channel and chunk, no Delivery rows (a re-send is the same notice again): a channel that
cannot be reached is logged, and the next interval tries again.
"""

from __future__ import annotations

import logging

from django.db.models import Q
from django.utils import timezone

from dashboard.alerts import messages
from dashboard.alerts.delivery import alert_url, scrub
from dashboard.alerts.models import OPEN_STATES, Alert, Channel, ChannelKind
from dashboard.alerts.transports import AlertmanagerTransport, DeliveryError

log = logging.getLogger(__name__)
CHUNK = 500  # alerts per POST


def open_alerts_for(channel: Channel) -> list[Alert]:
    """The channel's alerts to repeat: open, notified there, not silenced now."""
    now = timezone.now()
    return list(
        Alert.objects.filter(
            state__in=OPEN_STATES,
            deliveries__channel=channel,
            deliveries__notice="firing",
        )
        .filter(Q(silence__isnull=True) | Q(silence__until__lte=now))
        .distinct()
        .order_by("pk")
    )


def resend_open_alerts() -> dict[str, int]:
    """Re-post every open alert to every enabled Alertmanager channel; per channel, the
    number of alerts sent (-1: the channel failed, logged)."""
    done: dict[str, int] = {}
    now = timezone.now()
    for channel in Channel.objects.filter(kind=ChannelKind.ALERTMANAGER, enabled=True):
        alerts = open_alerts_for(channel)
        docs = [messages.alert_document(a, alert_url(a)) for a in alerts]
        transport = AlertmanagerTransport(channel)
        try:
            for start in range(0, len(docs), CHUNK):
                transport.post_batch(docs[start : start + CHUNK], now)
        except DeliveryError as exc:
            log.warning(
                "alertmanager re-send failed",
                extra={"channel": channel.name, "target": channel.masked_target,
                       "error": scrub(str(exc), channel), "alerts": len(docs)},
            )  # fmt: skip
            done[channel.name] = -1
            continue
        done[channel.name] = len(docs)
    return done

"""Where an alert leaves Lagwatch: one class per channel kind, one module per channel, each
with the same ``notify(notice, doc)`` (:mod:`base`). :func:`transport_for` picks the class."""

from __future__ import annotations

from dashboard.alerts.models import Channel, ChannelKind
from dashboard.alerts.transports.alertmanager import AlertmanagerTransport
from dashboard.alerts.transports.base import (
    DeliveryError,
    HttpTransport,
    Post,
    Transport,
    http_error_message,
    post_json,
)
from dashboard.alerts.transports.mail import EmailTransport, smtp_error_message
from dashboard.alerts.transports.opsgenie import OpsgenieTransport
from dashboard.alerts.transports.pagerduty import PagerDutyTransport
from dashboard.alerts.transports.teams import TeamsTransport
from dashboard.alerts.transports.webhook import SlackTransport, WebhookTransport

__all__ = [
    "TRANSPORTS",
    "AlertmanagerTransport",
    "DeliveryError",
    "EmailTransport",
    "HttpTransport",
    "OpsgenieTransport",
    "PagerDutyTransport",
    "Post",
    "SlackTransport",
    "TeamsTransport",
    "Transport",
    "WebhookTransport",
    "http_error_message",
    "post_json",
    "smtp_error_message",
    "transport_for",
]

TRANSPORTS: dict[str, type[Transport]] = {
    ChannelKind.EMAIL: EmailTransport,
    ChannelKind.WEBHOOK: WebhookTransport,
    ChannelKind.SLACK: SlackTransport,
    ChannelKind.ALERTMANAGER: AlertmanagerTransport,
    ChannelKind.PAGERDUTY: PagerDutyTransport,
    ChannelKind.OPSGENIE: OpsgenieTransport,
    ChannelKind.TEAMS: TeamsTransport,
}


def transport_for(channel: Channel) -> Transport:
    return TRANSPORTS[channel.kind](channel)

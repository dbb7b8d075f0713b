"""One class per channel kind with the same small surface, ``notify(notice, doc)``, as
Healthchecks' transports: it sends or raises :class:`DeliveryError` with a message fit to show
(never the URL: it may carry the secret)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.utils import timezone

from dashboard.alerts import messages
from dashboard.alerts.models import Channel, ChannelKind


class DeliveryError(Exception):
    pass


class Transport(ABC):
    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    @abstractmethod
    def notify(self, notice: str, doc: dict[str, Any], now: datetime | None = None) -> None:
        """Send ``notice`` ("firing", "resolved", "test") about ``doc``, or raise DeliveryError."""


class HttpTransport(Transport):
    """A JSON POST; the subclass says what the body is."""

    @abstractmethod
    def payload(self, notice: str, doc: dict[str, Any], now: datetime) -> dict[str, Any]:
        """The JSON body of the POST."""

    def notify(self, notice: str, doc: dict[str, Any], now: datetime | None = None) -> None:
        body = json.dumps(self.payload(notice, doc, now or timezone.now())).encode()
        request = urllib.request.Request(
            self.channel.url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "Lagwatch-alerts/1"},
        )
        try:
            with urllib.request.urlopen(
                request, timeout=settings.LAGWATCH_ALERTS_HTTP_TIMEOUT_S
            ) as r:
                r.read(65536)
        except urllib.error.HTTPError as exc:
            raise DeliveryError(f"HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise DeliveryError(f"cannot reach the endpoint: {exc.reason}") from None
        except TimeoutError:
            raise DeliveryError("the endpoint did not answer in time") from None
        except (OSError, ValueError) as exc:
            raise DeliveryError(f"{type(exc).__name__}: {exc}") from None


class WebhookTransport(HttpTransport):
    def payload(self, notice: str, doc: dict[str, Any], now: datetime) -> dict[str, Any]:
        return messages.webhook_payload(notice, doc, now)


class SlackTransport(HttpTransport):
    def payload(self, notice: str, doc: dict[str, Any], now: datetime) -> dict[str, Any]:
        return messages.slack_payload(notice, doc)


class EmailTransport(Transport):
    def notify(self, notice: str, doc: dict[str, Any], now: datetime | None = None) -> None:
        recipients = self.channel.recipient_list()
        if not recipients:
            raise DeliveryError("no recipients")
        overrides: dict[str, Any] = {"timeout": settings.LAGWATCH_ALERTS_HTTP_TIMEOUT_S}
        if self.channel.smtp_host:
            overrides["host"] = self.channel.smtp_host
        if self.channel.smtp_port:
            overrides["port"] = self.channel.smtp_port
        message = EmailMessage(
            subject=messages.one_line(messages.headline(notice, doc)),
            body=messages.text_body(notice, doc),
            from_email=settings.LAGWATCH_ALERTS_EMAIL_FROM,
            to=recipients,
        )
        try:
            connection = get_connection(fail_silently=False, **overrides)
            message.connection = connection
            message.send(fail_silently=False)
        except Exception as exc:  # noqa: BLE001 - SMTP and socket errors alike, told as text
            raise DeliveryError(f"{type(exc).__name__}: {exc}") from None


TRANSPORTS: dict[str, type[Transport]] = {
    ChannelKind.EMAIL: EmailTransport,
    ChannelKind.WEBHOOK: WebhookTransport,
    ChannelKind.SLACK: SlackTransport,
}


def transport_for(channel: Channel) -> Transport:
    return TRANSPORTS[channel.kind](channel)

"""One class per channel kind with the same small surface, ``notify(notice, doc)``, as
Healthchecks' transports: it sends or raises :class:`DeliveryError` with a message fit to show
(never the URL: it may carry the secret) and the verdict on it (:mod:`failures`): permanent,
or worth a retry."""

from __future__ import annotations

import http.client
import json
import smtplib
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.utils import timezone

from dashboard.alerts import messages
from dashboard.alerts.failures import PERMANENT, TRANSIENT, Verdict, classify_http, classify_smtp
from dashboard.alerts.models import Channel, ChannelKind


class DeliveryError(Exception):
    """A notice not sent: ``str(exc)`` says why, ``verdict`` whether to try again."""

    def __init__(self, message: str, verdict: Verdict = TRANSIENT) -> None:
        super().__init__(message)
        self.verdict = verdict


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
        try:
            request = urllib.request.Request(
                self.channel.url,
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", "User-Agent": "Lagwatch-alerts/1"},
            )
        except ValueError as exc:
            raise DeliveryError(f"not a usable URL: {exc}", PERMANENT) from None
        try:
            with urllib.request.urlopen(
                request, timeout=settings.LAGWATCH_ALERTS_HTTP_TIMEOUT_S
            ) as r:
                r.read(65536)
        except urllib.error.HTTPError as exc:
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            verdict = classify_http(exc.code, retry_after, timezone.now())
            raise DeliveryError(http_error_message(exc, retry_after), verdict) from None
        except urllib.error.URLError as exc:
            raise DeliveryError(f"cannot reach the endpoint: {exc.reason}") from None
        except TimeoutError:
            raise DeliveryError("the endpoint did not answer in time") from None
        except (ValueError, http.client.InvalidURL) as exc:
            raise DeliveryError(f"{type(exc).__name__}: {exc}", PERMANENT) from None
        except (OSError, http.client.HTTPException) as exc:
            raise DeliveryError(f"{type(exc).__name__}: {exc}") from None


def http_error_message(exc: urllib.error.HTTPError, retry_after: str | None) -> str:
    """``HTTP 404 Not Found: no_service``: the status, the start of a short text answer (Slack
    names its error in the body; an HTML error page is left out) and any Retry-After."""
    message = f"HTTP {exc.code} {exc.reason}"
    try:
        text = exc.read(512).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException, ValueError, AttributeError):
        text = ""
    text = messages.one_line(text, 120)
    if text and not text.startswith("<"):
        message += f": {text}"
    if retry_after:
        message += f" (Retry-After: {messages.one_line(retry_after, 40)})"
    return message


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
            raise DeliveryError("no recipients", PERMANENT)
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
            raise DeliveryError(smtp_error_message(exc), classify_smtp(exc)) from None


def smtp_error_message(exc: BaseException) -> str:
    """The SMTP server's refusal as text (its reply code and words), else the exception."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        refused = ", ".join(
            f"{address} ({code} {_reply_text(text)})"
            for address, (code, text) in exc.recipients.items()
        )
        return f"recipients refused: {refused}"
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"{type(exc).__name__}: {exc.smtp_code} {_reply_text(exc.smtp_error)}"
    return f"{type(exc).__name__}: {exc}"


def _reply_text(text: bytes | str) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return messages.one_line(text, 160)


TRANSPORTS: dict[str, type[Transport]] = {
    ChannelKind.EMAIL: EmailTransport,
    ChannelKind.WEBHOOK: WebhookTransport,
    ChannelKind.SLACK: SlackTransport,
}


def transport_for(channel: Channel) -> Transport:
    return TRANSPORTS[channel.kind](channel)

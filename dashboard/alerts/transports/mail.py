"""Email: Django's mail backend, a per-channel SMTP server when the channel names one (a
relay); plain text, the subject kept on one line so a hostile group name adds no header."""

from __future__ import annotations

import smtplib
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from dashboard.alerts import messages
from dashboard.alerts.failures import PERMANENT, classify_smtp
from dashboard.alerts.transports.base import DeliveryError, Transport


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

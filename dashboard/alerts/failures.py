"""Whether a failed delivery is worth retrying: pure functions of what the service answered.

A *permanent* failure is one the service says will not go away by sending again (the webhook
is gone, the token revoked, the address refused); a *transient* one may (overload, rate limit,
network). The rules follow the services' documented behaviour:

* HTTP (RFC 9110, Slack's incoming webhooks): 4xx is permanent — Slack answers 404
  ``no_service``/``channel_not_found``, 403 ``invalid_token``, 410 ``channel_is_archived``,
  400 ``invalid_payload`` — except 408 (request timeout), 425 (too early) and 429 (rate
  limited), which are transient like 5xx. A transient answer's ``Retry-After`` (seconds or an
  HTTP-date) is the server's own wait.
* SMTP (RFC 5321 §4.2.1): a 5xx reply is permanent (550 recipient refused, 553 sender refused,
  535 authentication failed), a 4xx reply transient (450 mailbox busy, 451 greylisting, 454
  temporary authentication failure). Refused recipients are permanent only when every one
  was refused with a 5xx.
* The incident and chat services (:data:`VENDOR_HTTP_ANSWERS`) document their own answers;
  each listed status keeps that service's verdict and meaning (Opsgenie's 401 "the API key is
  invalid or the integration is disabled", PagerDuty's 400 "invalid event"), so the alert page
  says what to fix. A status a service does not list follows the HTTP rule above.
* No answer at all (refused connection, timeout, a dropped line) is transient, and so is any
  failure not recognised here: retrying what might work beats dropping a notice.
"""

from __future__ import annotations

import smtplib
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# 4xx answers that mean "not now" rather than "never".
TRANSIENT_HTTP_4XX = frozenset({408, 425, 429})


@dataclass(frozen=True)
class Verdict:
    """How a failed attempt counts: ``permanent`` ends the delivery; otherwise it is retried,
    not before ``retry_after_s`` when the server named a wait."""

    permanent: bool
    retry_after_s: float | None = None


TRANSIENT = Verdict(permanent=False)
PERMANENT = Verdict(permanent=True)


def retry_after_s(value: str | None, now: datetime) -> float | None:
    """A ``Retry-After`` header's wait in seconds from ``now`` (an aware datetime): the header
    is either delay-seconds or an HTTP-date (RFC 9110 §10.2.3). None when absent or unreadable;
    a date in the past is 0."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        at = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if at.tzinfo is None:  # asctime's form, or "-0000": HTTP dates are all GMT
        at = at.replace(tzinfo=UTC)
    return max(0.0, (at - now).total_seconds())


# What each service documents of its non-2xx answers: status -> (permanent, what it means).
# (Slack names its error in the body, which the message keeps: the HTTP rule covers it.)
# PagerDuty: Events API v2 "Response Codes & Retry Logic" (202; 400 no retry; 429 and 5xx retry).
# Opsgenie: REST API "Response" codes (the Alert API answers 202 and works asynchronously).
# Alertmanager: API v2 ``postAlerts`` (200; 400 invalid alerts; 500). Teams: a Workflows
# ("When a Teams webhook request is received") URL answers 202; a deleted flow, a bad
# signature or a card it cannot post are 4xx; Power Automate throttles with 429.
VENDOR_HTTP_ANSWERS: dict[str, dict[int, tuple[bool, str]]] = {
    "alertmanager": {
        400: (True, "Alertmanager refused the alerts as invalid"),
        401: (True, "not authenticated (credentials in the URL?)"),
        403: (True, "not allowed"),
        404: (True, "no Alertmanager API v2 at this URL"),
        500: (False, "Alertmanager could not store the alerts"),
    },
    "pagerduty": {
        400: (True, "invalid event (check the routing key)"),
        429: (False, "rate limited (about 120 events a minute per routing key)"),
        500: (False, "PagerDuty could not process the event"),
    },
    "opsgenie": {
        400: (True, "invalid JSON body"),
        401: (True, "the API key is invalid or the integration is disabled"),
        402: (True, "the account's plan does not allow this"),
        403: (True, "the API key may not do this"),
        404: (True, "no such resource"),
        422: (True, "the request was understood but refused"),
        429: (False, "rate limited"),
        500: (False, "Opsgenie internal error"),
        503: (False, "Opsgenie unavailable"),
    },
    "teams": {
        400: (True, "the workflow refused the card"),
        401: (True, "the workflow URL's signature is not valid"),
        403: (True, "the workflow may not post here"),
        404: (True, "no such workflow (deleted, or a wrong URL)"),
        429: (False, "throttled by Power Automate"),
        502: (False, "Power Automate unavailable"),
        503: (False, "Power Automate unavailable"),
    },
}


def vendor_meaning(kind: str | None, status: int) -> str | None:
    """What ``kind``'s service documents ``status`` to mean, if it does."""
    answer = VENDOR_HTTP_ANSWERS.get(kind or "", {}).get(status)
    return answer[1] if answer else None


def classify_http(
    status: int, retry_after: str | None, now: datetime, kind: str | None = None
) -> Verdict:
    """An HTTP endpoint's non-2xx answer ``status``, with its ``Retry-After`` header if any, by
    what the channel ``kind``'s service documents, else by the HTTP rule."""
    answer = VENDOR_HTTP_ANSWERS.get(kind or "", {}).get(status)
    permanent = (
        answer[0]
        if answer is not None
        else 400 <= status < 500 and status not in TRANSIENT_HTTP_4XX
    )
    if permanent:
        return PERMANENT
    return Verdict(permanent=False, retry_after_s=retry_after_s(retry_after, now))


def classify_smtp_reply(code: int) -> Verdict:
    """An SMTP reply code that refused the mail: 5xx permanent, anything else transient."""
    return PERMANENT if 500 <= code <= 599 else TRANSIENT


def classify_smtp(exc: BaseException) -> Verdict:
    """The exception sending a mail raised (smtplib's, or the socket's)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        # Raised only when every recipient was refused; one refused "try later" is worth a retry.
        codes = [code for code, _message in exc.recipients.values()]
        permanent = bool(codes) and all(classify_smtp_reply(c).permanent for c in codes)
        return PERMANENT if permanent else TRANSIENT
    if isinstance(exc, smtplib.SMTPResponseException):
        # Sender refused, data refused, authentication failed, HELO refused, refusing greeting.
        return classify_smtp_reply(exc.smtp_code)
    if isinstance(exc, smtplib.SMTPNotSupportedError):
        return PERMANENT  # STARTTLS or AUTH asked of a server without it: configuration
    return TRANSIENT  # connection refused or dropped, timeout, anything else

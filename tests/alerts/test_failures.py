"""Which delivery failures are retried: the pure classification, case by case (the real servers
answering so are in test_channels.py)."""

import smtplib
import socket
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from dashboard.alerts.failures import (
    classify_http,
    classify_smtp,
    classify_smtp_reply,
    retry_after_s,
)

NOW = datetime(2026, 11, 21, 13, 40, 5, tzinfo=UTC)


def http_date(delta_s: float) -> str:
    return format_datetime(NOW + timedelta(seconds=delta_s), usegmt=True)


P, T = "permanent", "transient"


@pytest.mark.parametrize(
    ("status", "retry_after", "kind", "wait"),
    [
        # Slack's incoming-webhook errors, and 4xx alike: the request will never be accepted.
        (400, None, P, None),  # invalid_payload, no_text
        (401, None, P, None),
        (403, None, P, None),  # invalid_token, action_prohibited
        (404, None, P, None),  # no_service, channel_not_found
        (405, None, P, None),
        (409, None, P, None),
        (410, None, P, None),  # channel_is_archived
        (413, None, P, None),
        (422, None, P, None),
        (404, "30", P, None),  # a permanent answer's Retry-After changes nothing
        # "Not now": a request timeout, too early, rate limited.
        (408, None, T, None),
        (425, None, T, None),
        (429, None, T, None),
        (429, "30", T, 30.0),
        (429, " 12 ", T, 12.0),
        (429, "0", T, 0.0),
        (429, http_date(90), T, 90.0),
        (429, http_date(-90), T, 0.0),  # a date already past: no wait of its own
        (429, "soon", T, None),
        (429, "-5", T, None),
        (429, "1.5", T, None),  # delay-seconds is a whole number
        (429, "", T, None),
        # The server's trouble: retried, with its Retry-After if it names one.
        (500, None, T, None),
        (502, None, T, None),
        (503, None, T, None),
        (503, "120", T, 120.0),
        (504, None, T, None),
        # Not a 4xx: nothing says it is final.
        (307, None, T, None),
    ],
)
def test_http_answers(status, retry_after, kind, wait):
    verdict = classify_http(status, retry_after, NOW)
    assert (verdict.permanent, verdict.retry_after_s) == (kind == P, wait)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("120", 120.0),
        ("Sat, 21 Nov 2026 13:41:05 GMT", 60.0),  # IMF-fixdate
        ("Saturday, 21-Nov-26 13:41:05 GMT", 60.0),  # the obsolete forms RFC 9110 still
        ("Sat Nov 21 13:41:05 2026", 60.0),  # asks a recipient to read: RFC 850, asctime
        ("Sat, 21 Nov 2026 13:41:05 -0000", 60.0),
        ("Sat, 21 Nov 2026 14:41:05 +0100", 60.0),
        ("tomorrow", None),
    ],
)
def test_retry_after_header(value, expected):
    assert retry_after_s(value, NOW) == expected


@pytest.mark.parametrize(
    ("code", "kind"),
    [(550, P), (553, P), (554, P), (535, P), (500, P), (421, T), (450, T), (451, T), (452, T),
     (454, T), (-1, T), (250, T)],
)  # fmt: skip
def test_smtp_reply_codes(code, kind):
    assert classify_smtp_reply(code).permanent is (kind == P)


def refused(*codes: int) -> smtplib.SMTPRecipientsRefused:
    return smtplib.SMTPRecipientsRefused(
        {f"r{i}@example.com": (code, b"refused") for i, code in enumerate(codes)}
    )


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (refused(550), P),  # the one recipient does not exist
        (refused(550, 553), P),
        (refused(550, 450), T),  # one mailbox is only busy: worth another try
        (refused(451), T),  # greylisting
        (refused(), T),
        (smtplib.SMTPSenderRefused(553, b"5.7.1 sender not allowed", "lagwatch@x"), P),
        (smtplib.SMTPSenderRefused(451, b"4.3.0 try again", "lagwatch@x"), T),
        (smtplib.SMTPAuthenticationError(535, b"5.7.8 credentials invalid"), P),
        (smtplib.SMTPAuthenticationError(454, b"4.7.0 temporary auth failure"), T),
        (smtplib.SMTPDataError(554, b"5.7.1 message rejected"), P),
        (smtplib.SMTPDataError(452, b"4.3.1 insufficient storage"), T),
        (smtplib.SMTPHeloError(501, b"5.5.4 invalid domain"), P),
        (smtplib.SMTPConnectError(554, b"no SMTP service here"), P),
        (smtplib.SMTPConnectError(421, b"too busy"), T),
        (smtplib.SMTPResponseException(-1, b"garbled reply"), T),
        (smtplib.SMTPNotSupportedError("SMTP AUTH extension not supported by server."), P),
        (smtplib.SMTPServerDisconnected("Connection unexpectedly closed"), T),
        (ConnectionRefusedError(111, "Connection refused"), T),
        (TimeoutError("timed out"), T),
        (socket.gaierror(-2, "Name or service not known"), T),
        (RuntimeError("anything else"), T),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else v,
)
def test_smtp_failures(exc, kind):
    verdict = classify_smtp(exc)
    assert (verdict.permanent, verdict.retry_after_s) == (kind == P, None)

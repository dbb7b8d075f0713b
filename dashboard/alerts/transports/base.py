"""What every channel shares: the small surface ``notify(notice, doc)`` (as Healthchecks'
transports), the error it raises, and the one JSON POST the HTTP channels make.

A transport sends or raises :class:`DeliveryError` with a message fit to show (never the URL
or a key: either may be the secret) and the verdict on it (:mod:`failures`): permanent, or
worth a retry. An HTTP channel builds a list of :class:`Post` (most send one; a test notice to
PagerDuty or Opsgenie opens and closes) and :func:`post_json` sends each in turn.
"""

from __future__ import annotations

import base64
import http.client
import json
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from django.conf import settings
from django.utils import timezone

from dashboard.alerts import messages
from dashboard.alerts.failures import PERMANENT, TRANSIENT, Verdict, classify_http, vendor_meaning
from dashboard.alerts.models import Channel

USER_AGENT = "Lagwatch-alerts/1"


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


@dataclass(frozen=True)
class Post:
    """One JSON POST: where, what, and any header of the service's own (its auth)."""

    url: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class HttpTransport(Transport):
    """JSON POSTs; the subclass says which (:meth:`posts`)."""

    @abstractmethod
    def posts(self, notice: str, doc: dict[str, Any], now: datetime) -> list[Post]:
        """The requests that carry ``notice``, in the order they are sent."""

    def notify(self, notice: str, doc: dict[str, Any], now: datetime | None = None) -> None:
        for post in self.posts(notice, doc, now or timezone.now()):
            post_json(post, self.channel.kind)


class SinglePostTransport(HttpTransport):
    """One POST of :meth:`payload` to the channel's URL (webhook, Slack, Teams)."""

    @abstractmethod
    def payload(self, notice: str, doc: dict[str, Any], now: datetime) -> Any:
        """The JSON body of the POST."""

    def posts(self, notice: str, doc: dict[str, Any], now: datetime) -> list[Post]:
        return [Post(self.channel.url, self.payload(notice, doc, now))]


def _with_basic_auth(url: str, headers: dict[str, str]) -> str:
    """``https://user:pass@host/…`` as urllib cannot send it: the credentials moved into an
    ``Authorization: Basic`` header (an Alertmanager behind a proxy asks for them)."""
    parts = urlsplit(url)
    if parts.username is None:
        return url
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    headers.setdefault("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


def post_json(post: Post, kind: str | None = None) -> bytes:
    """POST ``post.body`` as JSON; the start of the answer's body, or DeliveryError judged by
    what ``kind``'s service documents (:func:`failures.classify_http`)."""
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **post.headers}
    try:
        url = _with_basic_auth(post.url, headers)
        request = urllib.request.Request(
            url, data=json.dumps(post.body).encode(), method="POST", headers=headers
        )
    except ValueError as exc:
        raise DeliveryError(f"not a usable URL: {exc}", PERMANENT) from None
    try:
        with urllib.request.urlopen(request, timeout=settings.LAGWATCH_ALERTS_HTTP_TIMEOUT_S) as r:
            return r.read(65536)
    except urllib.error.HTTPError as exc:
        retry_after = exc.headers.get("Retry-After") if exc.headers else None
        verdict = classify_http(exc.code, retry_after, timezone.now(), kind)
        raise DeliveryError(http_error_message(exc, retry_after, kind), verdict) from None
    except urllib.error.URLError as exc:
        raise DeliveryError(f"cannot reach the endpoint: {exc.reason}") from None
    except TimeoutError:
        raise DeliveryError("the endpoint did not answer in time") from None
    except (ValueError, http.client.InvalidURL) as exc:
        raise DeliveryError(f"{type(exc).__name__}: {exc}", PERMANENT) from None
    except (OSError, http.client.HTTPException) as exc:
        raise DeliveryError(f"{type(exc).__name__}: {exc}") from None


def answer_text(raw: str) -> str:
    """The words of an error answer: Slack's plain error name, or the message a JSON answer
    carries (PagerDuty's ``message`` and ``errors``, Opsgenie's ``message``, Power Automate's
    ``error.message``, Alertmanager's ``message``); the text itself otherwise."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(doc, dict):
        return raw
    error = doc.get("error")
    if isinstance(error, dict):
        doc = {**doc, **error}
    parts = [str(doc[k]) for k in ("code", "message") if isinstance(doc.get(k), str | int)]
    errors = doc.get("errors")
    if isinstance(errors, list):
        parts.append("; ".join(map(str, errors[:5])))
    return ": ".join(p for p in parts if p) or raw


def http_error_message(
    exc: urllib.error.HTTPError, retry_after: str | None, kind: str | None = None
) -> str:
    """``HTTP 404 Not Found (no such webhook or channel): no_service``: the status, what the
    service documents it to mean, the start of a short text answer (an HTML error page is left
    out) and any Retry-After."""
    message = f"HTTP {exc.code} {exc.reason}"
    meaning = vendor_meaning(kind, exc.code)
    if meaning:
        message += f" ({meaning})"
    try:
        text = exc.read(2048).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException, ValueError, AttributeError):
        text = ""
    text = messages.one_line(answer_text(text.strip()), 160)
    if text and not text.startswith("<"):
        message += f": {text}"
    if retry_after:
        message += f" (Retry-After: {messages.one_line(retry_after, 40)})"
    return message


def is_absolute(url: str | None) -> bool:
    """A link a service can show: ``LAGWATCH_BASE_URL`` set, so not a bare path."""
    return bool(url) and str(url).startswith(("http://", "https://"))

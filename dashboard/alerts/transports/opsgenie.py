"""Opsgenie, through its Alert API v2: a firing notice creates an alert (``POST /v2/alerts``)
with an ``alias`` (:func:`messages.incident_key`), a resolve notice closes it by that alias
(``POST /v2/alerts/{alias}/close?identifierType=alias``). Opsgenie keeps one open alert per
alias, so a retried create adds nothing.

The API key (of an API integration: ``Authorization: GenieKey <key>``) is the channel's
secret. The region picks the endpoint (``api.opsgenie.com`` or ``api.eu.opsgenie.com``); a
URL, when the channel names one, replaces it. Opsgenie answers 202 and works asynchronously:
an accepted request can still fail later (Opsgenie's integration log says so), which no
answer tells Lagwatch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from dashboard.alerts import messages
from dashboard.alerts.transports.base import HttpTransport, Post

ENDPOINTS = {"us": "https://api.opsgenie.com", "eu": "https://api.eu.opsgenie.com"}
PRIORITIES = {"critical": "P1", "warning": "P3", "info": "P5"}
MESSAGE_MAX = 130  # Opsgenie's limits
DESCRIPTION_MAX = 15000
ENTITY_MAX = 512
SOURCE = "Lagwatch"


def create(notice: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The create request: ``message`` the title (130 characters), ``description`` the text
    of an email notice, ``details`` every fact, ``entity`` the group on its cluster, the
    priority from the severity; fixed tags only (names are data, and tags are matched)."""
    return {
        "message": messages.one_line(doc["title"], MESSAGE_MAX),
        "alias": messages.incident_key(doc),
        "description": messages.text_body(notice, doc)[:DESCRIPTION_MAX],
        "details": messages.detail_fields(doc),
        "entity": messages.one_line(f"{doc['cluster']}/{doc['group']}", ENTITY_MAX),
        "source": SOURCE,
        "priority": PRIORITIES.get(doc["severity"], "P3"),
        "tags": ["lagwatch", doc["severity"], doc["status"] or "unknown"],
    }


def close(doc: dict[str, Any]) -> dict[str, Any]:
    """The close request's body (the alias is in the URL)."""
    reason = doc.get("resolved_reason") or "resolved"
    return {"source": SOURCE, "user": SOURCE, "note": f"Resolved in Lagwatch: {reason}"}


def base_url(url: str, region: str) -> str:
    return (url or ENDPOINTS.get(region or "us", ENDPOINTS["us"])).rstrip("/")


def close_url(base: str, doc: dict[str, Any]) -> str:
    alias = quote(messages.incident_key(doc), safe="")
    return f"{base}/v2/alerts/{alias}/close?identifierType=alias"


class OpsgenieTransport(HttpTransport):
    def posts(self, notice: str, doc: dict[str, Any], now: datetime) -> list[Post]:
        base = base_url(self.channel.url, self.channel.region)
        auth = {"Authorization": f"GenieKey {self.channel.secret}"}
        opening = Post(f"{base}/v2/alerts", create(notice, doc), auth)
        closing = Post(close_url(base, doc), close(doc), auth)
        if notice == "resolved":
            return [closing]
        if notice == "test":  # opened and closed at once: no alert is left open
            return [opening, closing]
        return [opening]

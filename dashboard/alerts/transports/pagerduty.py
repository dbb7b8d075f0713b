"""PagerDuty, through its Events API v2 (``POST /v2/enqueue``): a firing notice is a
``trigger``, a resolve notice a ``resolve``, both with the same ``dedup_key``
(:func:`messages.incident_key`), so PagerDuty keeps one alert for one Lagwatch alert, a
retried trigger adds nothing, and the resolve closes it.

The routing key (an Events API v2 integration key) is the channel's secret: masked wherever the
channel is shown, exported as an environment reference, redacted from errors. The region
picks the endpoint (``events.pagerduty.com`` or ``events.eu.pagerduty.com``); a URL, when the
channel names one, replaces it (a proxy, a test server).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dashboard.alerts import messages
from dashboard.alerts.transports.base import HttpTransport, Post, is_absolute

ENDPOINTS = {
    "us": "https://events.pagerduty.com/v2/enqueue",
    "eu": "https://events.eu.pagerduty.com/v2/enqueue",
}
# Lagwatch's severities onto PagerDuty's (critical, error, warning, info).
SEVERITIES = {"critical": "critical", "warning": "warning", "info": "info"}
SUMMARY_MAX = 1024  # PagerDuty's limit on payload.summary
CLIENT = "Lagwatch"


def trigger(doc: dict[str, Any], routing_key: str) -> dict[str, Any]:
    """The ``trigger`` event: the summary is the title; ``source`` the cluster, ``component``
    the group, ``group`` the kind of consumer, ``class`` the status (PagerDuty's common event
    format); every fact in ``custom_details``; a link to the alert when Lagwatch knows its own
    address (``LAGWATCH_BASE_URL``)."""
    event: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": messages.incident_key(doc),
        "payload": {
            "summary": messages.one_line(doc["title"], SUMMARY_MAX),
            "source": doc["cluster"],
            "severity": SEVERITIES.get(doc["severity"], "warning"),
            "timestamp": doc["fired_at"],
            "component": doc["group"],
            "group": doc["source"],
            "class": doc["status"],
            "custom_details": messages.detail_fields(doc),
        },
        "client": CLIENT,
    }
    if is_absolute(doc["url"]):
        event["client_url"] = doc["url"]
        event["links"] = [{"href": doc["url"], "text": "Open in Lagwatch"}]
    return event


def resolve(doc: dict[str, Any], routing_key: str) -> dict[str, Any]:
    """The ``resolve`` event: the routing key and the same ``dedup_key``, nothing else."""
    return {
        "routing_key": routing_key,
        "event_action": "resolve",
        "dedup_key": messages.incident_key(doc),
    }


def endpoint(url: str, region: str) -> str:
    return url or ENDPOINTS.get(region or "us", ENDPOINTS["us"])


class PagerDutyTransport(HttpTransport):
    def posts(self, notice: str, doc: dict[str, Any], now: datetime) -> list[Post]:
        url = endpoint(self.channel.url, self.channel.region)
        key = self.channel.secret
        if notice == "resolved":
            return [Post(url, resolve(doc, key))]
        if notice == "test":  # opened and closed at once: no incident is left open
            return [Post(url, trigger(doc, key)), Post(url, resolve(doc, key))]
        return [Post(url, trigger(doc, key))]

"""Prometheus Alertmanager, through its API v2 (``POST /api/v2/alerts``): Lagwatch's alerts
become Alertmanager alerts, so they are routed, grouped, inhibited and silenced with the rest.

Alertmanager identifies an alert by its labels and expects its clients to re-send firing
alerts continuously (every 30 s to 3 min, its "Sending alerts" page); an alert not heard from
again ends at its ``endsAt``. So a firing alert is sent with ``endsAt`` four re-send intervals
ahead (as Prometheus does), beat re-posts every open alert each interval
(:func:`dashboard.alerts.resend.resend_open_alerts`), and the resolve notice sends ``endsAt``
= the time Lagwatch resolved it, which resolves it in Alertmanager at once. If Lagwatch stops,
its alerts end by themselves four intervals later instead of firing forever.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from dashboard.alerts import messages
from dashboard.alerts.transports.base import HttpTransport, Post, is_absolute, post_json

API_PATH = "/api/v2/alerts"
SOURCE_LABEL = "lagwatch"  # every alert carries source="lagwatch", for routes to match
TEST_ALERTNAME = "LagwatchTest"
TEST_LASTS = timedelta(minutes=5)
# Firing alerts last this many re-send intervals unless re-sent (Prometheus: 4).
ENDS_AFTER_RESENDS = 4


def api_url(base: str) -> str:
    """``http://am:9093`` (or a path prefix, ``https://host/alertmanager``) → its alerts API;
    a URL already ending in ``/api/v2/alerts`` is kept."""
    base = base.rstrip("/")
    return base if base.endswith(API_PATH) else base + API_PATH


def _rfc3339(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _parse(value: str | None) -> datetime | None:
    return None if not value else datetime.fromisoformat(value.replace("Z", "+00:00"))


def labels(doc: dict[str, Any]) -> dict[str, str]:
    """What identifies the alert in Alertmanager, and what routes match: the rule as
    ``alertname``, ``source="lagwatch"``, ``severity``, the subject (``cluster``,
    ``group_source`` kafka/storm/zookeeper, ``group``, ``topic``, ``partition``, ``level``) and
    its ``status`` and ``diagnosis`` (comma-separated codes). Empty values are left out, as
    Alertmanager treats an empty label as absent."""
    found = {
        "alertname": doc["rule"],
        "source": SOURCE_LABEL,
        "severity": doc["severity"],
        "level": doc["level"],
        "cluster": doc["cluster"],
        "group_source": doc["source"],
        "group": doc["group"],
        "topic": doc["topic"],
        "partition": doc["partition"],
        "status": doc["status"],
        "diagnosis": ",".join(doc["diagnosis"]),
    }
    return {k: str(v) for k, v in found.items() if v is not None and str(v) != ""}


def annotations(doc: dict[str, Any]) -> dict[str, str]:
    """What is shown, not matched: ``summary`` (the title), ``description`` (the reason),
    ``link`` (the alert's page) and the figures (``lag``, ``time_lag_s``, …)."""
    found = {
        "summary": doc["title"],
        "description": doc["reason"],
        "link": doc["url"],
        **{
            k: v
            for k, v in messages.detail_fields(doc).items()
            if k in ("lag", "time_lag_s", "partitions", "acknowledged_by", "reason")
        },
    }
    return {k: v for k, v in found.items() if v}


def alert(doc: dict[str, Any], notice: str, now: datetime, resend_s: float) -> dict[str, Any]:
    """One Alertmanager alert (API v2 ``postableAlert``) for ``notice`` at ``now``: firing
    (and test) alerts end ``ENDS_AFTER_RESENDS`` re-sends ahead unless re-sent; a resolved one
    ends when Lagwatch resolved it (not later than now, not before it started)."""
    starts = _parse(doc["fired_at"]) or now
    if notice == "resolved":
        resolved = _parse(doc["resolved_at"]) or now
        ends = max(starts, min(resolved, now))
    elif notice == "test":
        ends = now + TEST_LASTS
    else:
        ends = now + timedelta(seconds=ENDS_AFTER_RESENDS * resend_s)
    found = labels(doc)
    if notice == "test":
        found["alertname"] = TEST_ALERTNAME
    body: dict[str, Any] = {
        "labels": found,
        "annotations": annotations(doc),
        "startsAt": _rfc3339(starts),
        "endsAt": _rfc3339(ends),
    }
    if is_absolute(doc["url"]):
        body["generatorURL"] = doc["url"]
    return body


class AlertmanagerTransport(HttpTransport):
    """The channel's URL is the Alertmanager's (``http://alertmanager:9093``); credentials in
    it (``https://user:pass@…``) are sent as basic auth. For a cluster of Alertmanagers, one
    channel per instance (each gets every alert, as Prometheus sends them) or one behind a
    load balancer."""

    def posts(self, notice: str, doc: dict[str, Any], now: datetime) -> list[Post]:
        body = [alert(doc, notice, now, settings.LAGWATCH_ALERTMANAGER_RESEND_S)]
        return [Post(api_url(self.channel.url), body)]

    def post_batch(self, docs: list[dict[str, Any]], now: datetime) -> None:
        """Re-send these firing alerts in one request (beat's re-send)."""
        resend_s = settings.LAGWATCH_ALERTMANAGER_RESEND_S
        body = [alert(doc, "firing", now, resend_s) for doc in docs]
        post_json(Post(api_url(self.channel.url), body), self.channel.kind)

"""What a notice says, per format, as pure functions of the alert's fields.

Names come from the monitored systems and are hostile: the JSON payload carries them as
strings (JSON-encoded), Slack text escapes ``&``, ``<`` and ``>`` (Slack's own escaping, so a
group named ``<!channel>`` cannot ping anyone or fake a link), email is plain text with the
subject kept on one line.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

PAYLOAD_VERSION = 1


def iso(at: datetime | None) -> str | None:
    """``at`` in ISO 8601 as the payloads carry it (UTC written ``Z``), or None for None."""
    return None if at is None else at.isoformat().replace("+00:00", "Z")


def alert_document(alert: Any, url: str) -> dict[str, Any]:
    """The alert as the webhook payload's ``alert`` object (docs/ALERTS.md)."""
    return {
        "id": alert.pk,
        "url": url,
        "rule": alert.rule_name,
        "severity": alert.severity,
        "state": alert.state,
        "level": alert.level,
        "cluster": alert.cluster,
        "source": alert.source,
        "group": alert.group,
        "topic": alert.topic or None,
        "partition": alert.partition,
        "status": alert.status,
        "diagnosis": list(alert.diagnosis or []),
        "reason": alert.reason,
        "lag": alert.lag,
        "time_lag_s": alert.time_lag_s,
        "partitions": [
            {"topic": t, "partition": p} for t, p in (alert.details or {}).get("partitions", [])
        ],
        "title": alert.title,
        "started_at": iso(alert.started_at),
        "fired_at": iso(alert.fired_at),
        "acknowledged_at": iso(alert.acknowledged_at),
        "acknowledged_by": alert.acknowledged_by or None,
        "resolved_at": iso(alert.resolved_at),
        "resolved_reason": alert.resolved_reason or None,
    }


def webhook_payload(notice: str, alert_doc: dict[str, Any], sent_at: datetime) -> dict[str, Any]:
    return {
        "version": PAYLOAD_VERSION,
        "source": "lagwatch",
        "notice": notice,  # "firing", "resolved" or "test"
        "sent_at": iso(sent_at),
        "alert": alert_doc,
    }


def one_line(text: str, limit: int = 200) -> str:
    """For an email subject: no header injection, no wrapped mess."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def headline(notice: str, doc: dict[str, Any]) -> str:
    label = {"firing": "FIRING", "resolved": "RESOLVED", "test": "TEST"}.get(notice, notice)
    return f"[Lagwatch {label}] [{doc['severity']}] {doc['title']}"


def text_body(notice: str, doc: dict[str, Any]) -> str:
    """Plain text (email, and the Slack fallback before escaping)."""
    where = (
        doc["group"]
        if doc["topic"] is None
        else f"{doc['group']} {doc['topic']}/{doc['partition']}"
    )
    time_lag = "-" if doc["time_lag_s"] is None else f"{doc['time_lag_s']:.0f} s"
    lines = [
        headline(notice, doc),
        "",
        f"Rule:       {doc['rule']}",
        f"Cluster:    {doc['cluster']} ({doc['source']})",
        f"Subject:    {where}",
        f"Status:     {doc['status']}",
        f"Diagnosis:  {', '.join(doc['diagnosis']) or '-'}",
        f"Lag:        {doc['lag'] if doc['lag'] is not None else '-'}",
        f"Time lag:   {time_lag}",
        f"Since:      {doc['started_at']}",
    ]
    if doc["partitions"]:
        parts = ", ".join(f"{p['topic']}/{p['partition']}" for p in doc["partitions"][:20])
        more = len(doc["partitions"]) - 20
        lines.append(f"Partitions: {parts}{f' (+{more} more)' if more > 0 else ''}")
    if doc["reason"]:
        lines.append(f"Reason:     {doc['reason']}")
    if notice == "resolved":
        lines.append(f"Resolved:   {doc['resolved_at']} ({doc['resolved_reason']})")
    lines += ["", f"Alert: {doc['url']}"]
    return "\n".join(lines) + "\n"


def slack_escape(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_payload(notice: str, doc: dict[str, Any]) -> dict[str, Any]:
    """Slack's incoming-webhook shape: ``text`` (the fallback) and ``blocks``; the ``url`` is
    ours, so it alone is a link."""
    title = slack_escape(headline(notice, doc))
    details = text_body(notice, doc).split("\n", 2)[2].rsplit("\n\nAlert:", 1)[0]
    body = slack_escape(details.replace("`", "'"))  # a backtick would end the code block
    colour = {"firing": "#d0312d", "resolved": "#2e8540"}.get(notice, "#888888")
    link = doc["url"] if doc["url"].startswith(("http://", "https://")) else None
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{title}*"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"```{body}```"}},
    ]
    if link:
        blocks.append(
            {
                "type": "context",
                "elements": [
                    {"type": "mrkdwn", "text": f"<{slack_escape(link)}|Open in Lagwatch>"}
                ],
            }
        )
    return {"text": title, "blocks": blocks, "attachments": [{"color": colour, "fallback": title}]}


def incident_key(doc: dict[str, Any]) -> str:
    """The key an incident service knows this alert by (PagerDuty's ``dedup_key``, Opsgenie's
    ``alias``): the rule and the subject, hashed, so the trigger and the resolve of one alert
    meet, a re-send is the same incident, and no name (hostile, long) reaches a URL or a key.
    Two Lagwatch alerts of the same rule and subject (the fault came back) share it: by then
    the first is resolved, and the services open a new incident."""
    raw = "\x1f".join(
        str(doc.get(k) if doc.get(k) is not None else "")
        for k in ("rule", "level", "cluster", "source", "group", "topic", "partition")
    )
    return "lagwatch-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def where(doc: dict[str, Any]) -> str:
    """``group topic/partition``, or the group alone for a group alert."""
    if doc["topic"] is None:
        return str(doc["group"])
    return f"{doc['group']} {doc['topic']}/{doc['partition']}"


def detail_fields(doc: dict[str, Any]) -> dict[str, str]:
    """The alert's facts as text, for the services that take a flat map of strings (Opsgenie's
    ``details``, PagerDuty's ``custom_details``, Alertmanager's annotations); empty ones left
    out."""
    partitions = ", ".join(f"{p['topic']}/{p['partition']}" for p in doc["partitions"][:50])
    if len(doc["partitions"]) > 50:
        partitions += f" (+{len(doc['partitions']) - 50} more)"
    values = {
        "rule": doc["rule"],
        "cluster": doc["cluster"],
        "source": doc["source"],
        "group": doc["group"],
        "topic": doc["topic"],
        "partition": doc["partition"],
        "status": doc["status"],
        "diagnosis": ", ".join(doc["diagnosis"]),
        "lag": doc["lag"],
        "time_lag_s": None if doc["time_lag_s"] is None else f"{doc['time_lag_s']:.0f}",
        "partitions": partitions,
        "reason": doc["reason"],
        "started_at": doc["started_at"],
        "acknowledged_by": doc["acknowledged_by"],
        "url": doc["url"],
    }
    return {k: str(v) for k, v in values.items() if v is not None and str(v) != ""}

"""Microsoft Teams, through a Workflows webhook ("When a Teams webhook request is received" →
post a card in a chat or channel): the documented way to post into Teams since Microsoft
retired the Office 365 connectors, whose MessageCard format Workflows do not take. The body is
a message with one Adaptive Card attachment, the shape Microsoft documents for both Workflows
and the older incoming webhooks.

The workflow URL carries its signature (``sig=…``): a secret, masked like a Slack URL. Names
are hostile: Teams renders a subset of Markdown in a card's text, so every name is escaped
(:func:`escape`): a group named ``[click](https://evil)`` shows as text, not as a link. A
resolve notice is a second card: a webhook cannot edit the card it posted.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from dashboard.alerts import messages
from dashboard.alerts.transports.base import SinglePostTransport, is_absolute

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
CARD_VERSION = "1.2"  # every element used here exists since 1.0; Teams renders up to 1.5
COLOURS = {"firing": "Attention", "resolved": "Good"}
# Markdown that Teams renders inside a card: emphasis, code, links; at a text's start, lists,
# headings and quotes. Escaped with a backslash (CommonMark's escape).
_INLINE = re.compile(r"([\\`*_~\[\]()<>])")
_LEADING = re.compile(r"^([-+#>]|\d+(?=[.)]))")


def escape(text: object) -> str:
    """``text`` on one line with the Markdown Teams renders escaped, so it shows as written."""
    flat = " ".join(str(text).split())
    flat = _INLINE.sub(r"\\\1", flat)
    # "- x" → "\- x"; "1. x" → "1\. x" (a backslash escapes punctuation only).
    leading = _LEADING.match(flat)
    if leading is None:
        return flat
    head = leading.group(1)
    return f"{head}\\{flat[len(head) :]}" if head[0].isdigit() else f"\\{flat}"


def facts(notice: str, doc: dict[str, Any]) -> list[dict[str, str]]:
    """The card's table of facts, each value escaped."""
    rows = [
        ("Rule", doc["rule"]),
        ("Cluster", f"{doc['cluster']} ({doc['source']})"),
        ("Subject", messages.where(doc)),
        ("Status", doc["status"]),
        ("Diagnosis", ", ".join(doc["diagnosis"]) or "-"),
        ("Lag", "-" if doc["lag"] is None else doc["lag"]),
        ("Time lag", "-" if doc["time_lag_s"] is None else f"{doc['time_lag_s']:.0f} s"),
        ("Since", doc["started_at"]),
    ]
    if doc["partitions"]:
        rows.append(("Partitions", messages.detail_fields(doc)["partitions"]))
    if notice == "resolved":
        rows.append(("Resolved", f"{doc['resolved_at']} ({doc['resolved_reason']})"))
    return [{"title": title, "value": escape(value)} for title, value in rows]


def card(notice: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The Adaptive Card: the headline, the facts, the reason, and a button to the alert when
    Lagwatch knows its own address."""
    body: list[dict[str, Any]] = [
        {
            "type": "TextBlock",
            "text": escape(messages.headline(notice, doc)),
            "weight": "Bolder",
            "size": "Medium",
            "wrap": True,
            "color": COLOURS.get(notice, "Default"),
        },
        {"type": "FactSet", "facts": facts(notice, doc)},
    ]
    if doc["reason"]:
        body.append({"type": "TextBlock", "text": escape(doc["reason"]), "wrap": True})
    content: dict[str, Any] = {
        "$schema": CARD_SCHEMA,
        "type": "AdaptiveCard",
        "version": CARD_VERSION,
        "msteams": {"width": "Full"},
        "body": body,
    }
    if is_absolute(doc["url"]):
        content["actions"] = [
            {"type": "Action.OpenUrl", "title": "Open in Lagwatch", "url": doc["url"]}
        ]
    return content


def message(notice: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The POST's body: a ``message`` with the card as its one attachment."""
    return {
        "type": "message",
        "attachments": [
            {"contentType": CARD_CONTENT_TYPE, "contentUrl": None, "content": card(notice, doc)}
        ],
    }


class TeamsTransport(SinglePostTransport):
    def payload(self, notice: str, doc: dict[str, Any], now: datetime) -> dict[str, Any]:
        return message(notice, doc)

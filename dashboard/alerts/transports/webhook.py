"""The JSON webhook (Lagwatch's own payload, docs/ALERTS.md) and the Slack-compatible webhook
(Slack, Mattermost, Rocket.Chat): one POST each to the channel's URL."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dashboard.alerts import messages
from dashboard.alerts.transports.base import SinglePostTransport


class WebhookTransport(SinglePostTransport):
    def payload(self, notice: str, doc: dict[str, Any], now: datetime) -> dict[str, Any]:
        return messages.webhook_payload(notice, doc, now)


class SlackTransport(SinglePostTransport):
    def payload(self, notice: str, doc: dict[str, Any], now: datetime) -> dict[str, Any]:
        return messages.slack_payload(notice, doc)

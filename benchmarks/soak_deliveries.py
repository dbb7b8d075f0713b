"""The soak's alert notices counted where a user would count them: at a webhook receiver.

Why: the product's own rows say what it meant to send (``alerts_delivery``: pending, retrying,
sent, failed), not what arrived. A worker killed between the POST and the row's update, or a
task redelivered after Redis came back, sends a notice twice; a row marked sent whose POST
went nowhere, or an alert whose delivery was never queued, loses one. Only the receiving end
tells them apart, so the soak runs one: ``tests/alerts/receivers.py``'s ``HookReceiver``, a
real HTTP server in the soak's process, and a webhook channel (``soak-hook``) pointing at it
on every enabled rule (the product's default rule: any STALL, STOP or ERR lasting two
evaluations), attached once the stack is up, before the warm-up ends.

A notice is identified by its webhook body's ``alert.id`` (the ``Alert`` row's primary key,
``dashboard/alerts/messages.py: alert_document``) and ``notice`` (``firing``/``resolved``).
The figures (:func:`count_notices`, pure):

- sent twice: a (alert, notice) received more than once, with each arrival's time;
- lost: a delivery the database marks ``sent`` that never arrived; an alert fired after the
  channel was attached with no firing notice received and none pending or retrying (a failed
  delivery is lost too: the user never got it); the same for the resolved notice of such an
  alert once it is resolved (every notice goes to this channel: it resolves where it fired);
- still pending or retrying at the end (after waiting up to ``SETTLE_S`` for them): listed,
  not counted lost;
- received while the database does not say sent (a send not yet recorded, or one that will be
  sent again).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any, NamedTuple

from benchmarks.soak_db import db_time
from benchmarks.soak_watch import iso, now

if TYPE_CHECKING:
    from benchmarks.soak import Lab
    from tests.alerts.receivers import HookReceiver

CHANNEL = "soak-hook"
NOTICES = ("firing", "resolved")
WAITING = ("pending", "retrying")
SETTLE_S = 90  # at the end, how long pending deliveries are given to arrive
# Run by ``manage.py shell -c`` against the stack: the channel, on every enabled rule.
ATTACH = """
import json
from dashboard.alerts.models import Channel, Rule
channel, _ = Channel.objects.update_or_create(
    name={name!r}, defaults={{"kind": "webhook", "url": {url!r}, "enabled": True,
                             "send_resolved": True}})
rules = list(Rule.objects.filter(enabled=True))
for rule in rules:
    rule.channels.add(channel)
print(json.dumps({{"channel": channel.pk, "rules": [r.name for r in rules]}}))
"""


class Received(NamedTuple):
    alert: int
    notice: str
    at: float


class DeliveryRow(NamedTuple):
    alert: int
    notice: str
    state: str
    attempts: int


class AlertRow(NamedTuple):
    alert: int
    fired: float
    resolved: float | None


def count_notices(
    received: list[Received],
    deliveries: list[DeliveryRow],
    alerts: list[AlertRow],
    since: float,
) -> dict[str, Any]:
    """Notices sent twice, lost, still waiting, and received unrecorded: the receiver's
    ``received`` against the channel's ``deliveries`` and the ``alerts`` fired from ``since``
    (when the channel was attached; an alert fired before it has no notice to receive)."""
    arrivals: dict[tuple[int, str], list[float]] = defaultdict(list)
    for r in received:
        if r.notice in NOTICES:
            arrivals[(r.alert, r.notice)].append(r.at)
    rows = {(d.alert, d.notice): d for d in deliveries}
    twice = [
        {"alert": a, "notice": n, "count": len(ats), "at": [iso(t) for t in sorted(ats)]}
        for (a, n), ats in sorted(arrivals.items()) if len(ats) > 1
    ]  # fmt: skip
    lost: dict[tuple[int, str], str] = {}
    for key, d in sorted(rows.items()):
        if d.state == "sent" and key not in arrivals:
            lost[key] = "the database says sent; never received"
    for a in sorted(alerts, key=lambda a: a.alert):
        if a.fired < since:
            continue
        for notice in ("firing", "resolved") if a.resolved is not None else ("firing",):
            key = (a.alert, notice)
            d = rows.get(key)
            if key in arrivals or key in lost or (d and d.state in WAITING):
                continue
            lost[key] = f"none received; delivery {d.state}" if d else "none received or queued"
    waiting = [
        {"alert": d.alert, "notice": d.notice, "state": d.state, "attempts": d.attempts}
        for key, d in sorted(rows.items()) if d.state in WAITING and key not in arrivals
    ]  # fmt: skip
    unrecorded = [
        {"alert": a, "notice": n, "state": rows[(a, n)].state if (a, n) in rows else None}
        for (a, n) in sorted(arrivals) if (a, n) not in rows or rows[(a, n)].state != "sent"
    ]  # fmt: skip
    return {
        "received": sum(len(ats) for ats in arrivals.values()),
        "deliveries": len(rows),
        "alerts_fired": sum(1 for a in alerts if a.fired >= since),
        "sent_twice": len(twice),
        "sent_twice_list": twice,
        "lost": len(lost),
        "lost_list": [{"alert": a, "notice": n, "why": why} for (a, n), why in lost.items()],
        "waiting_at_end": waiting,
        "received_not_recorded_sent": unrecorded,
    }


class NoticeReceiver:
    """The receiver and its channel: :meth:`attach` once the stack is up, :meth:`figures`
    while it still runs, :meth:`close` always."""

    def __init__(self) -> None:
        self.hook: HookReceiver | None = None
        self.attached_at = 0.0
        self.attached: dict[str, Any] = {}

    def attach(self, lab: Lab) -> None:
        """Start the receiver; create the channel on every enabled rule of the stack."""
        from tests.alerts.receivers import HookReceiver

        self.hook = HookReceiver()
        code = ATTACH.format(name=CHANNEL, url=f"{self.hook.base}/lagwatch-soak")
        self.attached = json.loads(lab.manage("shell", "-c", code).strip().splitlines()[-1])
        self.attached_at = now()

    def figures(self, lab: Lab) -> dict[str, Any]:
        """The counts, once the channel's pending deliveries arrived (or ``SETTLE_S`` passed).
        The rows are read before the receiver: a row marked sent was received before."""
        if self.hook is None:
            return {"error": "no receiver: the channel was never attached"}
        deadline = now() + SETTLE_S
        while True:
            deliveries = [
                DeliveryRow(a, n, s, k)
                for a, n, s, k in lab.rows(
                    "SELECT alert_id, notice, state, attempts FROM alerts_delivery "
                    "WHERE channel_name = ?", CHANNEL,
                )
            ]  # fmt: skip
            if now() >= deadline or not any(d.state in WAITING for d in deliveries):
                break
            time.sleep(2)
        alerts = [
            AlertRow(pk, db_time(fired), db_time(resolved) if resolved else None)
            for pk, fired, resolved in lab.rows(
                "SELECT id, fired_at, resolved_at FROM alerts_alert"
            )
        ]  # fmt: skip
        received = [
            Received(body["alert"]["id"], body["notice"], r["at"])
            for r in list(self.hook.requests)
            if isinstance(body := r["body"], dict) and isinstance(body.get("alert"), dict)
        ]
        return {
            "counted": "webhook bodies received by a HookReceiver in the soak's process, by "
            "alert.id and notice, against alerts_delivery and alerts_alert",
            "channel_on_rules": self.attached.get("rules", []),
            "attached": iso(self.attached_at),
            "posts": len(self.hook.requests),
            **count_notices(received, deliveries, alerts, self.attached_at),
        }

    def close(self) -> None:
        if self.hook is not None:
            self.hook.close()

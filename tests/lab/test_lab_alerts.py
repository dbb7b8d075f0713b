"""Alerts end to end in the shared lab stack (``lab_world``): the real worker evaluates the
rules after each status run and delivers through the real channels to receivers in this
process (an HTTP server for the webhook, aiosmtpd for the email).

The ``poison-message`` scenario (orders-spout partition 0 STALL, POISON_MESSAGE) fires exactly
one alert of this test's rule, delivered to both receivers; removing the poison resolves it
with a resolve notice on both; a webhook on a closed port gets retries with back-off meanwhile
and never holds the others up. Then, with the spout silenced, the same fault is recorded as a
new alert but sends nothing, firing or resolved. Other tests' alerts in the same stack (the
browser test's dead-consumer on payments-ledger, the default rule's) are not counted: only
this rule's.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest

from tests.alerts.receivers import HookReceiver, SmtpReceiver
from tests.waiting import wait_for, wait_for_verdict

pytestmark = pytest.mark.lab

RULE = "lab: orders-spout stuck"
GROUP = "orders-spout"
POLL_S, JOB_S, WINDOW = 5, 15, 10  # tests/lab/conftest.py
# The evaluator's target for the STALL (window + two periods, test_lab_verdicts.py), one more
# period for the rule's second evaluation: 95 s. The waits allow twice that plus the worker's
# queue, so a loaded machine is not a red test; the latency itself is measured by
# benchmarks/bench_alert_latency.py.
FIRE_TIMEOUT_S = 2 * (WINDOW * POLL_S + 3 * JOB_S) + 30
RESOLVE_TIMEOUT_S = 2 * (WINDOW * POLL_S + 3 * JOB_S) + 30


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(hook: HookReceiver, smtp: SmtpReceiver, dead_port: int) -> str:
    return json.dumps({
        "channels": [
            {"name": "lab-hook", "kind": "webhook", "url": hook.url},
            {"name": "lab-mail", "kind": "email", "recipients": ["oncall@example.com"],
             "smtp_host": smtp.host, "smtp_port": smtp.port},
            {"name": "lab-dead-hook", "kind": "webhook",
             "url": f"http://127.0.0.1:{dead_port}/hooks/SECRET"},
        ],
        "rules": [{
            "name": RULE, "group_pattern": GROUP, "statuses": ["STALL", "STOP", "ERR"],
            "min_evaluations": 2, "severity": "critical",
            "channels": ["lab-hook", "lab-mail", "lab-dead-hook"],
        }],
    })  # fmt: skip


def my_alerts(lab_world: Any) -> list[dict[str, Any]]:
    doc = json.loads(lab_world.manage("alerts_config", "alerts", "--json").stdout)
    return [a for a in doc["alerts"] if a["rule"] == RULE]


def mine(hook: HookReceiver, notice: str) -> list[dict[str, Any]]:
    return [b["alert"] for b in hook.bodies(notice) if b["alert"]["rule"] == RULE]


def mails(smtp: SmtpReceiver, word: str, since: int = 0) -> list[Any]:
    """This rule's emails (the body names the rule; the default rule mails these channels too)."""
    return [
        m["msg"] for m in smtp.messages[since:]
        if f"[Lagwatch {word}]" in m["msg"]["Subject"]
        and f"Rule:       {RULE}" in m["msg"].get_content().splitlines()
    ]  # fmt: skip


@pytest.fixture
def receivers():
    hook, smtp = HookReceiver(), SmtpReceiver()
    yield hook, smtp
    hook.close()
    smtp.close()


def test_poison_message_alert_fires_once_resolves_and_silence_sends_nothing(lab_world, receivers):
    hook, smtp = receivers
    runs = lab_world.status_runs
    lab_world.manage("alerts_config", "import", "-", input=config(hook, smtp, closed_port()))
    assert not [a for a in my_alerts(lab_world) if a["state"] != "resolved"]

    # Phase 1: the fault fires one alert, delivered to both; the dead webhook retries.
    t0 = time.time()
    lab_world.start_scenario("poison-message")
    try:
        wait_for_verdict(
            lambda: mine(hook, "firing"), FIRE_TIMEOUT_S, "the webhook's firing notice", runs
        )
        print(f"firing webhook {time.time() - t0:.0f} s after the poison", flush=True)
        wait_for(lambda: mails(smtp, "FIRING"), 30, "the firing email", 0.5)
        (fired,) = mine(hook, "firing")
        assert (fired["group"], fired["source"], fired["topic"], fired["partition"]) == (
            GROUP, "storm", "orders", 0,
        )  # fmt: skip
        assert fired["status"] == "STALL" and fired["severity"] == "critical"
        (mail,) = mails(smtp, "FIRING")
        assert "Subject:    orders-spout orders/0" in mail.get_content()

        def dead_hook_retried() -> dict | None:
            (alert,) = [a for a in my_alerts(lab_world) if a["state"] == "firing"]
            d = next(d for d in alert["deliveries"] if d["channel"] == "lab-dead-hook")
            return d if len(d["attempts"]) >= 2 else None

        dead = wait_for(dead_hook_retried, 60, "two attempts at the dead webhook", 2)
        first, second = dead["attempts"][:2]
        assert not first["ok"] and not second["ok"] and "cannot reach" in first["error"]
        assert first["retry_in_s"] == 10 and second["retry_in_s"] == 20  # base 10 s, doubled
        assert "SECRET" not in first["error"]
    finally:
        lab_world.stop_scenario("poison-message")

    t_stop = time.time()
    wait_for_verdict(
        lambda: mine(hook, "resolved"), RESOLVE_TIMEOUT_S, "the resolve notice", runs
    )
    print(f"resolve webhook {time.time() - t_stop:.0f} s after the fix", flush=True)
    wait_for(lambda: mails(smtp, "RESOLVED"), 30, "the resolve email", 0.5)
    (resolved,) = mine(hook, "resolved")
    assert resolved["id"] == fired["id"] and resolved["state"] == "resolved"
    alerts = my_alerts(lab_world)
    assert len(alerts) == 1, [a["title"] for a in alerts]  # one alert, never one per cycle
    kinds = [e["kind"] for e in alerts[0]["events"]]
    assert kinds[0] == "fired" and "resolved" in kinds
    assert len(mine(hook, "firing")) == 1 and len(mails(smtp, "FIRING")) == 1

    # Phase 2: silenced, the same fault (on partition 1: partition 0's window still holds the
    # recovery) is a new alert, recorded, that sends nothing.
    silence = json.dumps({"silences": [{"group_pattern": GROUP, "hours": 1, "reason": "lab"}]})
    lab_world.manage("alerts_config", "import", "-", input=silence)
    hook_before, mail_before = len(hook.requests), len(smtp.messages)
    t0 = time.time()
    lab_world.start_scenario("poison-message", partition=1)
    try:
        new = wait_for_verdict(
            lambda: [a for a in my_alerts(lab_world) if a["id"] != fired["id"]],
            FIRE_TIMEOUT_S + 60, "the silenced alert recorded", runs, every=3,
        )  # fmt: skip
        print(f"silenced alert {time.time() - t0:.0f} s after the poison", flush=True)
        assert len(new) == 1 and new[0]["silenced"] and new[0]["deliveries"] == []
        assert (new[0]["topic"], new[0]["partition"]) == ("orders", 1)
        assert [e["kind"] for e in new[0]["events"]][:2] == ["fired", "silenced"]
    finally:
        lab_world.stop_scenario("poison-message")
    wait_for_verdict(
        lambda: [a for a in my_alerts(lab_world) if a["id"] == new[0]["id"]
                 and a["state"] == "resolved"],
        RESOLVE_TIMEOUT_S, "the silenced alert resolved", runs, every=3,
    )  # fmt: skip
    assert [r for r in hook.requests[hook_before:] if r["body"]["alert"]["rule"] == RULE] == []
    assert mails(smtp, "FIRING", mail_before) == [] and mails(smtp, "RESOLVED", mail_before) == []
    # Leave the stack as found: no channel of this test's receivers stays enabled.
    off = json.dumps({"channels": [
        {"name": n, "kind": "webhook", "url": "http://127.0.0.1:9/off", "enabled": False}
        for n in ("lab-hook", "lab-dead-hook")
    ] + [{"name": "lab-mail", "kind": "email", "recipients": ["x@example.com"], "enabled": False}],
        "rules": [{"name": RULE, "statuses": ["STALL"], "enabled": False}]})  # fmt: skip
    lab_world.manage("alerts_config", "import", "-", input=off)

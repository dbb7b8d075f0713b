"""The channels SREs route through, end to end with the deliveries run as Celery tasks
(eagerly): a real Prometheus Alertmanager (its API read back), and local HTTP servers standing
in for PagerDuty, Opsgenie and Teams that record each request, checked field by field against
the shape each service documents, resolve and close included."""

from datetime import UTC, datetime, timedelta

import pytest

from dashboard.alerts.delivery import send_test_notice
from dashboard.alerts.models import Alert, Channel, Delivery
from dashboard.alerts.resend import resend_open_alerts
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db

BASE = "https://lagwatch.example.com"
PD_KEY = "R0123456789abcdef0123456789abcd"
GENIE_KEY = "11111111-2222-3333-4444-555555555555"
HOSTILE = "[click](https://evil.example) **x** <at>all</at>"
STEP_S = 0.01  # status runs a moment apart: the alert's times stay at the wall clock's


def fire(mworld, run_on_commit, group="orders-spout", topic="orders"):
    mworld.set(group, topic, 0, "STALL", ("POISON_MESSAGE",), source="storm", lag=42,
               time_lag_s=120.0, reason="committed offset frozen at 1234")  # fmt: skip
    run_on_commit(mworld, STEP_S)
    run_on_commit(mworld, STEP_S)
    return Alert.objects.get(group=group)


def clear(mworld, run_on_commit, group="orders-spout", topic="orders"):
    mworld.set(group, topic, 0, "OK", source="storm")
    run_on_commit(mworld, STEP_S)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- Prometheus Alertmanager (real) -----------------------------------------------------------


LABELS = {
    "alertname": "Stuck partition (default)", "source": "lagwatch", "severity": "warning",
    "level": "partition", "cluster": "prod", "group_source": "storm", "group": "orders-spout",
    "topic": "orders", "partition": "0", "status": "STALL", "diagnosis": "POISON_MESSAGE",
}  # fmt: skip


def test_alertmanager_holds_the_alert_while_it_fires_and_resolves_it(
    mworld, run_on_commit, alertmanager, am_hook, settings
):
    settings.LAGWATCH_BASE_URL = BASE
    settings.LAGWATCH_ALERTMANAGER_RESEND_S = 60
    Channel.objects.create(name="am", kind="alertmanager", url=alertmanager.url + "/")
    alert = fire(mworld, run_on_commit)
    assert Delivery.objects.get().state == "sent"
    (held,) = wait_for(alertmanager.alerts, 10, "the alert in Alertmanager")
    assert held["labels"] == LABELS
    assert held["annotations"]["summary"] == alert.title
    assert held["annotations"]["description"] == "committed offset frozen at 1234"
    assert held["annotations"]["link"] == f"{BASE}/alerts/{alert.pk}/"
    assert (held["annotations"]["lag"], held["annotations"]["time_lag_s"]) == ("42", "120")
    assert held["generatorURL"] == f"{BASE}/alerts/{alert.pk}/"
    assert held["status"]["state"] in ("active", "unprocessed")
    assert abs(at(held["startsAt"]) - alert.fired_at) < timedelta(seconds=1)
    # Not re-sent, it would end 4 intervals on (so a stopped Lagwatch does not page forever).
    ends = at(held["endsAt"]) - datetime.now(UTC)
    assert timedelta(seconds=200) < ends <= timedelta(seconds=240)
    # Alertmanager routed it by source="lagwatch" (docs/ALERTS.md's route) and notified.
    notified = wait_for(lambda: am_hook.bodies(), 15, "Alertmanager's firing notification")
    assert notified[0]["status"] == "firing"
    assert notified[0]["alerts"][0]["labels"] == LABELS

    # Beat's re-send moves endsAt on, as Alertmanager expects of a client.
    settings.LAGWATCH_ALERTMANAGER_RESEND_S = 120
    assert resend_open_alerts() == {"am": 1}
    (held,) = alertmanager.alerts()
    assert at(held["endsAt"]) - datetime.now(UTC) > timedelta(seconds=400)

    clear(mworld, run_on_commit)
    alert.refresh_from_db()
    assert alert.state == "resolved"
    assert Delivery.objects.get(notice="resolved").state == "sent"
    wait_for(lambda: alertmanager.alerts() == [], 10, "the alert resolved in Alertmanager")
    resolved = wait_for(
        lambda: [b for b in am_hook.bodies() if b["status"] == "resolved"], 15,
        "Alertmanager's resolved notification",
    )  # fmt: skip
    assert resolved[0]["alerts"][0]["labels"] == LABELS
    assert at(resolved[0]["alerts"][0]["endsAt"]) <= datetime.now(UTC)
    assert resend_open_alerts() == {"am": 0}  # resolved: no longer repeated


def test_alertmanager_test_notice_and_refusal(alertmanager, settings, db):
    channel = Channel.objects.create(name="am", kind="alertmanager", url=alertmanager.url)
    assert send_test_notice(channel, "ops") == (True, "")
    (held,) = wait_for(alertmanager.alerts, 10, "the test alert")
    assert held["labels"]["alertname"] == "LagwatchTest"
    assert held["labels"]["source"] == "lagwatch"
    # A URL that is not Alertmanager's API: permanent, said in Alertmanager's terms.
    wrong = Channel.objects.create(name="wrong", kind="alertmanager",
                                   url=alertmanager.url + "/not-here/api/v2/alerts")  # fmt: skip
    ok, error = send_test_notice(wrong, "ops")
    assert not ok and error.startswith("HTTP 404 Not Found (no Alertmanager API v2 at this URL)")


# --- PagerDuty Events API v2 ------------------------------------------------------------------


def test_pagerduty_trigger_and_resolve_share_the_dedup_key(mworld, run_on_commit, hook,
                                                           settings):  # fmt: skip
    settings.LAGWATCH_BASE_URL = BASE
    hook.status, hook.reply_body = 202, b'{"status":"success","message":"Event processed"}'
    Channel.objects.create(name="pd", kind="pagerduty", secret=PD_KEY, url=hook.url)
    alert = fire(mworld, run_on_commit)
    (request,) = hook.requests
    assert request["headers"]["Content-Type"] == "application/json"
    event = request["body"]
    assert set(event) == {"routing_key", "event_action", "dedup_key", "payload", "client",
                          "client_url", "links"}  # fmt: skip
    assert (event["routing_key"], event["event_action"]) == (PD_KEY, "trigger")
    key = event["dedup_key"]
    assert key.startswith("lagwatch-") and len(key) <= 255
    payload = event["payload"]
    assert set(payload) == {"summary", "source", "severity", "timestamp", "component", "group",
                            "class", "custom_details"}  # fmt: skip
    assert payload["summary"] == alert.title and len(payload["summary"]) <= 1024
    assert (payload["source"], payload["component"], payload["group"]) == (
        "prod", "orders-spout", "storm",
    )  # fmt: skip
    assert (payload["severity"], payload["class"]) == ("warning", "STALL")
    assert at(payload["timestamp"]) == alert.fired_at
    details = payload["custom_details"]
    assert (details["topic"], details["partition"], details["diagnosis"]) == (
        "orders", "0", "POISON_MESSAGE",
    )  # fmt: skip
    assert details["reason"] == "committed offset frozen at 1234"
    link = f"{BASE}/alerts/{alert.pk}/"
    assert event["links"] == [{"href": link, "text": "Open in Lagwatch"}]
    assert (event["client"], event["client_url"]) == ("Lagwatch", link)

    clear(mworld, run_on_commit)
    resolve = hook.requests[1]["body"]
    assert resolve == {"routing_key": PD_KEY, "event_action": "resolve", "dedup_key": key}
    assert Delivery.objects.filter(state="sent").count() == 2


def test_pagerduty_test_notice_opens_and_closes(hook, db):
    hook.status = 202
    channel = Channel.objects.create(name="pd", kind="pagerduty", secret=PD_KEY, url=hook.url)
    assert send_test_notice(channel, "ops") == (True, "")
    trigger, resolve = (r["body"] for r in hook.requests)
    assert (trigger["event_action"], resolve["event_action"]) == ("trigger", "resolve")
    assert trigger["dedup_key"] == resolve["dedup_key"]
    assert "client_url" not in trigger and "links" not in trigger  # no LAGWATCH_BASE_URL


@pytest.mark.parametrize(
    ("status", "body", "state", "attempts", "words"),
    [
        (400, b'{"status":"invalid event","message":"Event object is invalid",'
              b'"errors":["Length of \'routing_key\' is incorrect"]}',
         "failed", 1, "HTTP 400 Bad Request (invalid event (check the routing key)): "
                      "Event object is invalid: Length of 'routing_key' is incorrect"),
        (429, b"", "sent", 2, "HTTP 429 Too Many Requests (rate limited"),
        (503, b"", "sent", 2, "HTTP 503 Service Unavailable"),
    ],
)  # fmt: skip
def test_pagerduty_answers_are_judged_as_documented(mworld, run_on_commit, hook, settings,
                                                    status, body, state, attempts, words):  # fmt: skip
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    settings.LAGWATCH_ALERTS_RETRY_BASE_S = 1
    hook.replies = [(status, {}, body)]
    hook.status = 202
    Channel.objects.create(name="pd", kind="pagerduty", secret=PD_KEY, url=hook.url)
    fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert (d.state, d.attempts) == (state, attempts)
    assert d.attempt_log.first().error.startswith(words)
    assert PD_KEY not in d.attempt_log.first().error


# --- Opsgenie Alert API -----------------------------------------------------------------------


def test_opsgenie_create_and_close_by_alias(mworld, run_on_commit, hook, settings):
    settings.LAGWATCH_BASE_URL = BASE
    hook.status = 202
    hook.reply_body = b'{"result":"Request will be processed","took":0.1,"requestId":"r1"}'
    Channel.objects.create(name="og", kind="opsgenie", secret=GENIE_KEY, region="eu",
                           url=hook.base)  # fmt: skip
    alert = fire(mworld, run_on_commit)
    (create,) = hook.requests
    assert create["path"] == "/v2/alerts"
    assert create["headers"]["Authorization"] == f"GenieKey {GENIE_KEY}"
    assert create["headers"]["Content-Type"] == "application/json"
    body = create["body"]
    assert set(body) == {"message", "alias", "description", "details", "entity", "source",
                         "priority", "tags"}  # fmt: skip
    assert body["message"] == alert.title[:130] and len(body["message"]) <= 130
    alias = body["alias"]
    assert alias.startswith("lagwatch-") and len(alias) <= 512
    assert body["description"].startswith("[Lagwatch FIRING] [warning] STALL")
    assert "Reason:     committed offset frozen at 1234" in body["description"]
    assert (body["entity"], body["source"], body["priority"]) == (
        "prod/orders-spout", "Lagwatch", "P3",
    )  # fmt: skip
    assert body["tags"] == ["lagwatch", "warning", "STALL"]
    assert all(isinstance(v, str) for v in body["details"].values())
    assert body["details"]["url"] == f"{BASE}/alerts/{alert.pk}/"

    clear(mworld, run_on_commit)
    close = hook.requests[1]
    assert close["path"] == f"/v2/alerts/{alias}/close?identifierType=alias"
    assert close["headers"]["Authorization"] == f"GenieKey {GENIE_KEY}"
    assert close["body"] == {"source": "Lagwatch", "user": "Lagwatch",
                             "note": "Resolved in Lagwatch: status cleared"}  # fmt: skip


def test_opsgenie_rejected_key_is_permanent_and_test_notice_closes(mworld, run_on_commit, hook,
                                                                  settings):  # fmt: skip
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    hook.status, hook.reply_body = 401, b'{"message":"Key format is not valid!","took":0.0}'
    Channel.objects.create(name="og", kind="opsgenie", secret=GENIE_KEY, url=hook.base)
    fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert (d.state, d.attempts) == ("failed", 1)
    assert d.last_error == (
        "HTTP 401 Unauthorized (the API key is invalid or the integration is disabled): "
        "Key format is not valid! (permanent failure: not retried)"
    )
    hook.status = 202
    hook.requests.clear()
    assert send_test_notice(Channel.objects.get(name="og"), "ops") == (True, "")
    assert [r["path"].split("?")[0].rsplit("/", 1)[-1] for r in hook.requests] == [
        "alerts", "close",
    ]  # fmt: skip


# --- Microsoft Teams (Workflows webhook, Adaptive Card) ---------------------------------------


def test_teams_adaptive_card_firing_and_resolved(mworld, run_on_commit, hook, settings):
    settings.LAGWATCH_BASE_URL = BASE
    hook.status = 202
    Channel.objects.create(name="teams", kind="teams", url=hook.url)
    alert = fire(mworld, run_on_commit, group=HOSTILE)
    (request,) = hook.requests
    message = request["body"]
    assert set(message) == {"type", "attachments"} and message["type"] == "message"
    (attachment,) = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert attachment["contentUrl"] is None
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.2"
    assert card["$schema"] == "http://adaptivecards.io/schemas/adaptive-card.json"
    title, factset, reason = card["body"]
    assert title["type"] == "TextBlock" and title["color"] == "Attention"
    assert title["text"].startswith("\\[Lagwatch FIRING\\] \\[warning\\] STALL")
    facts = {f["title"]: f["value"] for f in factset["facts"]}
    assert facts["Subject"] == (
        "\\[click\\]\\(https://evil.example\\) \\*\\*x\\*\\* \\<at\\>all\\</at\\> orders/0"
    )
    assert "](" not in str(card).replace("\\](", "")  # no Markdown link survives unescaped
    assert (facts["Status"], facts["Diagnosis"], facts["Lag"]) == ("STALL", "POISON\\_MESSAGE",
                                                                  "42")  # fmt: skip
    assert reason["text"] == "committed offset frozen at 1234"
    assert card["actions"] == [{"type": "Action.OpenUrl", "title": "Open in Lagwatch",
                                "url": f"{BASE}/alerts/{alert.pk}/"}]  # fmt: skip

    clear(mworld, run_on_commit, group=HOSTILE)
    resolved = hook.requests[1]["body"]["attachments"][0]["content"]
    assert resolved["body"][0]["text"].startswith("\\[Lagwatch RESOLVED\\]")
    assert resolved["body"][0]["color"] == "Good"
    facts = {f["title"]: f["value"] for f in resolved["body"][1]["facts"]}
    assert facts["Resolved"].endswith("\\(status cleared\\)")


@pytest.mark.parametrize(
    ("status", "state", "words"),
    [(404, "failed", "HTTP 404 Not Found (no such workflow (deleted, or a wrong URL))"),
     (401, "failed", "HTTP 401 Unauthorized (the workflow URL's signature is not valid)"),
     (429, "sent", "HTTP 429 Too Many Requests (throttled by Power Automate)")],
)  # fmt: skip
def test_teams_answers_are_judged(mworld, run_on_commit, hook, settings, status, state, words):
    settings.LAGWATCH_ALERTS_MAX_ATTEMPTS = 4
    settings.LAGWATCH_ALERTS_RETRY_BASE_S = 1
    hook.replies = [(status, {}, b'{"error":{"code":"X","message":"why"}}')]
    hook.status = 202
    Channel.objects.create(name="teams", kind="teams", url=hook.url)
    fire(mworld, run_on_commit)
    d = Delivery.objects.get()
    assert d.state == state
    error = d.attempt_log.first().error
    assert error.startswith(f"{words}: X: why") and "SECRETTOKEN" not in error

"""The pure payload builders of the SRE channels, case by case: Alertmanager's labels,
annotations and times, PagerDuty's events, Opsgenie's requests, the Teams card's escaping, the
incident key, the words of an error answer, and each service's documented verdicts."""

from datetime import UTC, datetime, timedelta

import pytest

from dashboard.alerts import messages
from dashboard.alerts.failures import VENDOR_HTTP_ANSWERS, classify_http, vendor_meaning
from dashboard.alerts.transports import alertmanager, opsgenie, pagerduty, teams
from dashboard.alerts.transports.base import _with_basic_auth, answer_text

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def doc(**changes) -> dict:
    base = {
        "id": 7, "url": "https://lw.example.com/alerts/7/", "rule": "orders stuck",
        "severity": "critical", "state": "firing", "level": "partition", "cluster": "prod",
        "source": "kafka", "group": "orders", "topic": "orders-in", "partition": 3,
        "status": "STOP", "diagnosis": ["DEAD_CONSUMER", "RETENTION_RISK"],
        "reason": "no commit for 10 min", "lag": 500, "time_lag_s": 612.4, "partitions": [],
        "title": "STOP orders orders-in/3 on prod", "started_at": "2026-11-29T11:40:00Z",
        "fired_at": "2026-11-29T11:50:00Z", "acknowledged_at": None, "acknowledged_by": None,
        "resolved_at": None, "resolved_reason": None,
    }  # fmt: skip
    return {**base, **changes}


GROUP = {"level": "group", "topic": None, "partition": None,
         "partitions": [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 1}]}  # fmt: skip


# --- Alertmanager --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, {"alertname": "orders stuck", "source": "lagwatch", "severity": "critical",
              "level": "partition", "cluster": "prod", "group_source": "kafka",
              "group": "orders", "topic": "orders-in", "partition": "3", "status": "STOP",
              "diagnosis": "DEAD_CONSUMER,RETENTION_RISK"}),
        # A group alert: no topic or partition label (Alertmanager: empty = absent).
        ({**GROUP, "diagnosis": []},
         {"alertname": "orders stuck", "source": "lagwatch", "severity": "critical",
          "level": "group", "cluster": "prod", "group_source": "kafka", "group": "orders",
          "status": "STOP"}),
        # Partition 0 is a value, not an absence.
        ({"partition": 0}, {"partition": "0"}),
    ],
)  # fmt: skip
def test_alertmanager_labels(changes, expected):
    labels = alertmanager.labels(doc(**changes))
    if changes.get("partition") == 0:
        assert labels["partition"] == "0"
    else:
        assert labels == expected
    assert all(isinstance(v, str) and v for v in labels.values())


@pytest.mark.parametrize(
    ("notice", "changes", "starts", "ends"),
    [
        ("firing", {}, "2026-11-29T11:50:00Z", NOW + timedelta(seconds=240)),
        ("test", {}, "2026-11-29T11:50:00Z", NOW + timedelta(minutes=5)),
        ("resolved", {"resolved_at": "2026-11-29T11:59:00Z"}, "2026-11-29T11:50:00Z",
         datetime(2026, 11, 29, 11, 59, tzinfo=UTC)),
        # Resolved "in the future" (a status run's time ahead of this clock): now, not later.
        ("resolved", {"resolved_at": "2026-11-29T12:05:00Z"}, "2026-11-29T11:50:00Z", NOW),
        # Never before it started (Alertmanager refuses endsAt < startsAt).
        ("resolved", {"resolved_at": "2026-11-29T11:00:00Z"}, "2026-11-29T11:50:00Z",
         datetime(2026, 11, 29, 11, 50, tzinfo=UTC)),
    ],
)  # fmt: skip
def test_alertmanager_times(notice, changes, starts, ends):
    body = alertmanager.alert(doc(**changes), notice, NOW, resend_s=60)
    assert body["startsAt"] == starts
    assert datetime.fromisoformat(body["endsAt"].replace("Z", "+00:00")) == ends


def test_alertmanager_annotations_and_link():
    body = alertmanager.alert(doc(acknowledged_by="ana"), "firing", NOW, 60)
    assert body["annotations"] == {
        "summary": "STOP orders orders-in/3 on prod", "description": "no commit for 10 min",
        "reason": "no commit for 10 min", "link": "https://lw.example.com/alerts/7/",
        "lag": "500", "time_lag_s": "612", "acknowledged_by": "ana",
    }  # fmt: skip
    assert body["generatorURL"] == "https://lw.example.com/alerts/7/"
    relative = alertmanager.alert(doc(url="/alerts/7/", reason=""), "firing", NOW, 60)
    assert "generatorURL" not in relative and "description" not in relative["annotations"]
    assert alertmanager.alert(doc(), "test", NOW, 60)["labels"]["alertname"] == "LagwatchTest"


@pytest.mark.parametrize(
    ("base", "url"),
    [("http://am:9093", "http://am:9093/api/v2/alerts"),
     ("http://am:9093/", "http://am:9093/api/v2/alerts"),
     ("https://h/alertmanager", "https://h/alertmanager/api/v2/alerts"),
     ("http://am:9093/api/v2/alerts", "http://am:9093/api/v2/alerts")],
)  # fmt: skip
def test_alertmanager_api_url(base, url):
    assert alertmanager.api_url(base) == url


def test_credentials_in_a_url_become_basic_auth():
    headers: dict[str, str] = {}
    url = _with_basic_auth("https://ops:s%40cret@am.example.com:9443/x", headers)
    assert url == "https://am.example.com:9443/x"
    assert headers == {"Authorization": "Basic b3BzOnNAY3JldA=="}  # ops:s@cret
    untouched: dict[str, str] = {}
    assert _with_basic_auth("http://am:9093", untouched) == "http://am:9093" and not untouched


# --- PagerDuty and Opsgenie ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("severity", "pd", "og"),
    [("critical", "critical", "P1"), ("warning", "warning", "P3"), ("info", "info", "P5")],
)
def test_severities_map_onto_each_service(severity, pd, og):
    assert pagerduty.trigger(doc(severity=severity), "k")["payload"]["severity"] == pd
    assert opsgenie.create("firing", doc(severity=severity))["priority"] == og


def test_pagerduty_events():
    event = pagerduty.trigger(doc(title="x" * 2000), "KEY")
    assert len(event["payload"]["summary"]) == 1024
    assert event["payload"]["custom_details"]["time_lag_s"] == "612"
    assert pagerduty.resolve(doc(), "KEY") == {
        "routing_key": "KEY", "event_action": "resolve",
        "dedup_key": messages.incident_key(doc()),
    }  # fmt: skip
    assert "links" not in pagerduty.trigger(doc(url="/alerts/7/"), "KEY")


@pytest.mark.parametrize(
    ("module", "url", "region", "expected"),
    [(pagerduty, "", "us", "https://events.pagerduty.com/v2/enqueue"),
     (pagerduty, "", "eu", "https://events.eu.pagerduty.com/v2/enqueue"),
     (pagerduty, "", "", "https://events.pagerduty.com/v2/enqueue"),
     (pagerduty, "http://proxy/pd", "eu", "http://proxy/pd"),
     (opsgenie, "", "us", "https://api.opsgenie.com"),
     (opsgenie, "", "eu", "https://api.eu.opsgenie.com"),
     (opsgenie, "http://proxy/og/", "eu", "http://proxy/og")],
)  # fmt: skip
def test_endpoints_by_region(module, url, region, expected):
    found = module.endpoint(url, region) if module is pagerduty else module.base_url(url, region)
    assert found == expected


def test_opsgenie_requests_keep_to_its_limits():
    created = opsgenie.create("firing", doc(title="t" * 300, group="g" * 600, reason="r" * 20000))
    assert len(created["message"]) == 130 and len(created["entity"]) == 512
    assert len(created["description"]) <= 15000
    assert created["details"]["diagnosis"] == "DEAD_CONSUMER, RETENTION_RISK"
    assert opsgenie.close_url("https://api.opsgenie.com", doc()) == (
        f"https://api.opsgenie.com/v2/alerts/{messages.incident_key(doc())}/close"
        "?identifierType=alias"
    )
    assert opsgenie.close(doc(resolved_reason="rule deleted"))["note"] == (
        "Resolved in Lagwatch: rule deleted"
    )


def test_incident_key_is_the_rule_and_subject():
    key = messages.incident_key(doc())
    assert key == messages.incident_key(doc(status="STALL", lag=1, id=99, title="other"))
    assert key != messages.incident_key(doc(partition=4))
    assert key != messages.incident_key(doc(rule="another rule"))
    assert key != messages.incident_key(doc(**GROUP))
    assert len(key) == len("lagwatch-") + 40 and key.isascii()


# --- Teams ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shown"),
    [("orders-v2", "orders-v2"),
     ("orders_v2", "orders\\_v2"),
     ("[click](https://evil)", "\\[click\\]\\(https://evil\\)"),
     ("**bold** `code` ~x~", "\\*\\*bold\\*\\* \\`code\\` \\~x\\~"),
     ("- item", "\\- item"), ("1. first", "1\\. first"), ("1) x", "1\\) x"), ("# head", "\\# head"),
     ("> quote", "\\> quote"), ("a\\b", "a\\\\b"), ("two\nlines\r\n", "two lines"),
     ("<at>all</at>", "\\<at\\>all\\</at\\>")],
)  # fmt: skip
def test_teams_escape(name, shown):
    assert teams.escape(name) == shown


def test_teams_card_of_a_group_alert():
    card = teams.card("firing", doc(**GROUP, url="/alerts/7/"))
    facts = {f["title"]: f["value"] for f in card["body"][1]["facts"]}
    assert facts["Subject"] == "orders" and facts["Partitions"] == "a/0, b/1"
    assert "actions" not in card  # a bare path is no link Teams can open


# --- error answers and verdicts ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "words"),
    [("channel_is_archived", "channel_is_archived"),
     ('{"status":"invalid event","message":"Event object is invalid","errors":["a","b"]}',
      "Event object is invalid: a; b"),
     ('{"message":"Key format is not valid!","took":0.0}', "Key format is not valid!"),
     ('{"error":{"code":"WorkflowNotFound","message":"gone"}}', "WorkflowNotFound: gone"),
     ('{"code":400,"message":"start time must be before end time"}',
      "400: start time must be before end time"),
     ("[1, 2]", "[1, 2]"), ("1", "1")],
)  # fmt: skip
def test_answer_text(raw, words):
    assert answer_text(raw) == words


P, T = True, False


@pytest.mark.parametrize(
    ("kind", "status", "permanent"),
    [("pagerduty", 400, P), ("pagerduty", 429, T), ("pagerduty", 500, T), ("pagerduty", 502, T),
     ("pagerduty", 404, P),  # not PagerDuty's: a wrong URL override, by the HTTP rule
     ("opsgenie", 400, P), ("opsgenie", 401, P), ("opsgenie", 402, P), ("opsgenie", 403, P),
     ("opsgenie", 404, P), ("opsgenie", 422, P), ("opsgenie", 429, T), ("opsgenie", 503, T),
     ("alertmanager", 400, P), ("alertmanager", 500, T), ("alertmanager", 502, T),
     ("teams", 400, P), ("teams", 401, P), ("teams", 404, P), ("teams", 429, T),
     ("teams", 408, T), ("webhook", 404, P), ("webhook", 429, T)],
)  # fmt: skip
def test_each_service_documented_verdicts(kind, status, permanent):
    assert classify_http(status, None, NOW, kind).permanent is permanent


def test_every_documented_answer_has_words():
    for kind, answers in VENDOR_HTTP_ANSWERS.items():
        for status, (_permanent, meaning) in answers.items():
            assert vendor_meaning(kind, status) == meaning and meaning
    assert vendor_meaning("webhook", 404) is None and vendor_meaning(None, 400) is None
    # A transient answer keeps the service's own wait.
    assert classify_http(429, "30", NOW, "pagerduty").retry_after_s == 30.0

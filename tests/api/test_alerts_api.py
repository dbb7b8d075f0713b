"""/api/v1/alerts/: the list, one alert with its history, and acknowledging with a write token."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dashboard.accounts.roles import Role
from dashboard.alerts.models import Alert, AlertEvent
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db


def make_alert(n: int, state: str = "firing", severity: str = "warning", **kw) -> Alert:
    now = timezone.now()
    fields = {
        "rule_name": "stuck partitions", "subject_key": f"key-{n}", "level": "partition",
        "cluster": "prod", "source": "kafka", "group": "billing", "topic": "invoices",
        "partition": n, "state": state, "severity": severity,
        "title": f"billing invoices/{n} STALL", "status": "STALL",
        "diagnosis": [{"code": "POISON_MESSAGE", "evidence": {"offset": 500}}],
        "reason": "frozen", "lag": 400, "time_lag_s": 600.0,
        "started_at": now - timedelta(minutes=10 + n), "fired_at": now - timedelta(minutes=n),
    }  # fmt: skip
    fields.update(kw)
    alert = Alert.objects.create(**fields)
    AlertEvent.objects.create(alert=alert, kind="fired", at=alert.fired_at)
    return alert


@pytest.fixture
def alerts(db: None) -> list[Alert]:
    return [
        make_alert(0),
        make_alert(1, severity="critical"),
        make_alert(2, state="resolved", resolved_at=timezone.now()),
        make_alert(3, cluster="staging", group="etl", level="group", partition=None, topic=""),
    ]


def test_list_newest_first(api, alerts: list[Alert]) -> None:
    body = api.get("/api/v1/alerts/")
    assert [a["id"] for a in body["results"]] == [a.pk for a in alerts]
    first = body["results"][0]
    assert (first["state"], first["group"], first["topic"], first["partition"]) == (
        "firing", "billing", "invoices", 0,
    )  # fmt: skip
    assert first["diagnosis"][0]["code"] == "POISON_MESSAGE" and first["silenced"] is False
    assert body["results"][3]["topic"] is None and body["results"][3]["level"] == "group"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"state": "firing"}, [0, 1, 3]),
        ({"state": "firing,acknowledged", "severity": "critical"}, [1]),
        ({"state": "resolved"}, [2]),
        ({"cluster": "staging"}, [3]),
        ({"level": "partition", "topic": "invoices"}, [0, 1, 2]),
        ({"since": "90s"}, [0, 1]),
    ],
)
def test_filters(api, alerts: list[Alert], query: dict, expected: list[int]) -> None:
    ids = [a["id"] for a in api.get("/api/v1/alerts/", **query)["results"]]
    assert ids == [alerts[i].pk for i in expected]


def test_bad_filter_is_400(api, alerts: list[Alert]) -> None:
    error = api.get("/api/v1/alerts/", state="open", expect=400)["error"]
    assert error["field"] == "state" and "'open' is not one of firing" in error["message"]


def test_detail_has_history(api, alerts: list[Alert]) -> None:
    body = api.get(f"/api/v1/alerts/{alerts[0].pk}/")
    assert [e["kind"] for e in body["events"]] == ["fired"]
    api.get("/api/v1/alerts/999999/", expect=404)


def test_acknowledge_needs_a_write_token(api, writer, alerts: list[Alert]) -> None:
    url = f"/api/v1/alerts/{alerts[0].pk}/acknowledge"
    assert api.post(url).status_code == 403  # read token
    body = writer.post(url, expect=200).json()
    assert body["state"] == "acknowledged" and body["acknowledged_by"] == "token:writer"
    assert [e["kind"] for e in body["events"]] == ["fired", "acknowledged"]
    alerts[0].refresh_from_db()
    assert alerts[0].state == "acknowledged" and alerts[0].acknowledged_at is not None
    # twice is harmless
    assert writer.post(url + "/", expect=200).json()["state"] == "acknowledged"


def test_acknowledge_resolved_or_unknown(writer, alerts: list[Alert]) -> None:
    response = writer.post(f"/api/v1/alerts/{alerts[2].pk}/acknowledge", expect=409)
    assert response.json()["error"]["message"] == f"alert {alerts[2].pk} is already resolved"
    writer.post("/api/v1/alerts/999999/acknowledge", expect=404)


def test_acknowledge_by_get_is_405(writer, alerts: list[Alert]) -> None:
    response = writer.client.get(
        f"/api/v1/alerts/{alerts[0].pk}/acknowledge", headers=writer.headers
    )
    assert response.status_code == 405 and response["Allow"] == "POST"


def test_acknowledge_from_a_session_with_csrf_records_the_user(alerts: list[Alert]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user_with_role("sre", Role.OPERATOR))
    client.get("/accounts/login/")
    csrf = client.cookies["csrftoken"].value
    url = f"/api/v1/alerts/{alerts[1].pk}/acknowledge"
    assert client.post(url).status_code == 403
    response = client.post(url, headers={"X-CSRFToken": csrf})
    assert response.status_code == 200 and response.json()["acknowledged_by"] == "sre"

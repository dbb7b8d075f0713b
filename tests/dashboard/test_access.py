"""Login on every page; only the health check is open."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring.models import ServiceHeartbeat

pytestmark = pytest.mark.django_db


def test_home_redirects_anonymous_users_to_login(client: Client) -> None:
    response = client.get(reverse("ui:overview"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_admin_requires_login(client: Client) -> None:
    response = client.get("/admin/")
    assert response.status_code == 302


def test_health_is_open_and_reports_the_database(client: Client) -> None:
    response = client.get(reverse("health"))
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["database"] == "ok"
    assert body["celery"]["status"] == "no heartbeat yet"


def test_health_reports_a_late_heartbeat(client: Client) -> None:
    ServiceHeartbeat.objects.create(name="celery", at=timezone.now() - timezone.timedelta(hours=1))
    body = client.get(reverse("health")).json()
    assert body["celery"]["status"] == "late"
    assert body["celery"]["age_s"] >= 3600


def test_logged_in_user_sees_home(client: Client, django_user_model) -> None:
    user = django_user_model.objects.create_user("sre", password="s3cret-pass-123")
    client.force_login(user)
    response = client.get(reverse("ui:overview"))
    assert response.status_code == 200
    assert b"Pipeline health" in response.content


def test_login_form_is_csrf_protected() -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("login"), {"username": "x", "password": "y"})
    assert response.status_code == 403

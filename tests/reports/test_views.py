"""The report pages: login, CSRF, the form's validation, create → progress → download, and
hostile names escaped in the list."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.accounts.roles import Role
from dashboard.reports.models import Report
from tests.reports.factory import HOUR, MINUTE, T0, sample, write_cycles
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db

START = datetime.fromtimestamp(T0 / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
END = datetime.fromtimestamp((T0 + HOUR) / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
FORM = {"cluster": "c1", "start": START, "end": END, "resolution": "raw", "format": "csv"}


@pytest.fixture
def user_client(client: Client, django_user_model) -> Client:
    client.force_login(user_with_role("sre", Role.OPERATOR))  # builds reports
    return client


@pytest.fixture
def samples(log, cluster):
    rows = [
        sample(T0 + i * MINUTE, g, "t", 0, i, i + 2) for i in range(5) for g in ("g1", "<b>x</b>")
    ]
    write_cycles(log, "c1", rows)
    return rows


@pytest.mark.parametrize("name", ["reports:index", "reports:progress"])
def test_login_required(client: Client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_download_requires_login(client: Client, cluster):
    report = Report.objects.create(fmt="csv", spec={}, status="done", file_name="x.csv")
    assert client.get(reverse("reports:download", args=[report.pk])).status_code == 302


def test_form_page_renders(user_client, cluster):
    response = user_client.get(reverse("reports:index"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="csrfmiddlewaretoken"' in body
    assert '<option value="c1">' in body
    assert "No reports yet." in body


def test_form_is_csrf_protected(django_user_model, cluster):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user_with_role("u2", Role.OPERATOR))
    assert client.post(reverse("reports:index"), {**FORM, "action": "build"}).status_code == 403
    assert Report.objects.count() == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"since": "forever", "start": ""}, "since"),
        ({"resolution": "7m"}, "resolution"),
        ({"format": "pdf"}, "format"),
        ({"cluster": "nope"}, "cluster"),
        ({"start": "yesterday"}, "start"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_keeps_the_form(user_client, samples, change, field):
    response = user_client.post(reverse("reports:index"), {**FORM, **change, "action": "build"})
    assert response.status_code == 400
    body = response.content.decode()
    assert f'role="alert" id="report-error">{field}: ' in body
    assert Report.objects.count() == 0
    for key, value in change.items():  # what the user typed is still in the form
        if value and key not in ("resolution", "format"):  # (those two are menus)
            assert f'name="{key}"' in body and f'value="{value}"' in body


def test_create_progress_download(
    user_client, samples, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = user_client.post(
            reverse("reports:index"), {**FORM, "groups": "g*, <b>*", "action": "build"}
        )
    assert response.status_code == 302 and response["Location"] == reverse("reports:index")
    report = Report.objects.get()
    assert report.requested_by == "sre"

    progress = user_client.get(reverse("reports:progress"), {"ids": str(report.pk)}).json()
    doc = progress["reports"][0]
    assert (doc["id"], doc["status"], doc["progress"], doc["rows"], doc["downloadable"]) == (
        report.pk,
        "done",
        1.0,
        10,
        True,
    )

    page = user_client.get(reverse("reports:index")).content.decode()
    assert reverse("reports:download", args=[report.pk]) in page
    assert "<b>x</b>" not in page and "&lt;b&gt;*" in page  # the scope shown, escaped

    download = user_client.get(reverse("reports:download", args=[report.pk]))
    assert download.status_code == 200
    assert download["Content-Type"].startswith("text/csv")
    assert f'filename="lag-report-{report.pk}-' in download["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert len(rows) == 10
    assert {r["group"] for r in rows} == {"g1", "<b>x</b>"}


def test_progress_of_a_queued_report_and_bad_ids(user_client, cluster):
    report = Report.objects.create(fmt="csv", spec={})
    doc = user_client.get(reverse("reports:progress")).json()["reports"][0]
    assert (doc["status"], doc["progress"], doc["downloadable"]) == ("queued", 0.0, False)
    assert report.pk == doc["id"]
    bad = user_client.get(reverse("reports:progress"), {"ids": "1,x"})
    assert bad.status_code == 400 and "ids" in bad.json()["error"]


def test_download_of_unfinished_report_is_404(user_client, cluster):
    report = Report.objects.create(fmt="csv", spec={})
    assert user_client.get(reverse("reports:download", args=[report.pk])).status_code == 404
    assert user_client.get(reverse("reports:download", args=[report.pk + 99])).status_code == 404


def test_download_now_streams(user_client, samples):
    response = user_client.post(
        reverse("reports:index"), {**FORM, "format": "json", "action": "download"}
    )
    assert response.status_code == 200
    assert response.streaming
    import json

    doc = json.loads(b"".join(response.streaming_content))
    assert len(doc) == 10
    assert Report.objects.count() == 0

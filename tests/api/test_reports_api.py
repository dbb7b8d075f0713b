"""/api/v1/reports/: create (write scope) and download when built; stream an export now.

The reports are built by the reports app's own code from a real sample log written by
``SampleLog`` in a temporary directory; the API's part is the HTTP around it.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from collectors.sample_log import SampleLog
from dashboard.reports.build import build_report_file
from dashboard.reports.models import Report

pytestmark = pytest.mark.django_db

HEADER = ["time", "cluster", "source", "group", "topic", "partition", "committed", "latest",
          "lag", "time_lag_s", "status"]  # fmt: skip


@pytest.fixture
def samples(tmp_path, settings) -> datetime:
    """Ten polls of two partitions of ``billing`` in cluster ``prod``, one a minute."""
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    settings.LAGWATCH_REPORTS_DIR = str(tmp_path / "reports")
    log = SampleLog(tmp_path / "samples")
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=15)
    for i in range(10):
        ts = int((start + timedelta(minutes=i)).timestamp() * 1000)
        rows = [
            {"ts_ms": ts, "source": "kafka", "group": "billing", "topic": "invoices",
             "partition": p, "committed": 100 * i + p, "latest": 100 * i + p + 7, "lag": 7,
             "time_lag_s": 1.5, "stale": False}
            for p in (0, 1)
        ]  # fmt: skip
        log.write_batch("prod", f"prod-{ts}", rows)
    return start


def read_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


def test_create_queues_a_report_then_download_when_built(writer, samples) -> None:
    response = writer.post(
        "/api/v1/reports/",
        {"cluster": "prod", "groups": ["bill*"], "since": "1h", "resolution": "raw",
         "format": "csv"},
        expect=202,
    )  # fmt: skip
    body = response.json()
    assert body["status"] == "queued" and body["format"] == "csv"
    assert body["requested_by"] == "token:writer" and body["download_url"] is None
    assert response["Location"] == body["url"]
    report_id = body["id"]
    early = writer.client.get(f"/api/v1/reports/{report_id}/download", headers=writer.headers)
    assert early.status_code == 409 and "queued" in early.json()["error"]["message"]

    build_report_file(report_id)  # what the Celery task runs

    detail = writer.get(f"/api/v1/reports/{report_id}/")
    assert detail["status"] == "done" and detail["rows"] == 20
    download = writer.client.get(detail["download_url"], headers=writer.headers)
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment; filename=")
    rows = read_csv(b"".join(download.streaming_content))
    assert rows[0] == HEADER and len(rows) == 21
    assert {(r[3], r[4], r[5]) for r in rows[1:]} == {("billing", "invoices", "0"),
                                                      ("billing", "invoices", "1")}  # fmt: skip


def test_create_needs_write_scope_and_a_valid_spec(api, writer, samples) -> None:
    assert api.post("/api/v1/reports/", {"cluster": "prod", "since": "1h"}).status_code == 403
    cases = [
        ({"since": "1h"}, "cluster", "cluster: required"),
        ({"cluster": "prod", "since": "yesterday"}, "since", "is not a duration"),
        ({"cluster": "prod", "since": "1h", "format": "pdf"}, "format", "is not one of csv"),
        ({"cluster": "prod", "since": "1h", "colour": "red"}, "colour", "unknown field"),
        ({"cluster": "prod", "since": "1h", "resolution": "7m"}, "resolution",
         "does not divide a day evenly"),
    ]  # fmt: skip
    for body, field, message in cases:
        error = writer.post("/api/v1/reports/", body, expect=400).json()["error"]
        assert error["field"] == field and message in error["message"], (body, error)
    assert Report.objects.count() == 0  # nothing queued by a refused request


@pytest.mark.parametrize(("raw", "message"), [(b"", "expected a JSON object"),
                                              (b"{nope", "not valid JSON"),
                                              (b"[1, 2]", "expected a JSON object")])  # fmt: skip
def test_body_must_be_a_json_object(writer, raw: bytes, message: str) -> None:
    response = writer.client.post(
        "/api/v1/reports/", raw, content_type="application/json", headers=writer.headers
    )
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "body"
    assert message in response.json()["error"]["message"]


def test_list_and_filter(writer, samples) -> None:
    for fmt in ("csv", "json"):
        writer.post("/api/v1/reports/", {"cluster": "prod", "since": "1h", "format": fmt},
                    expect=202)  # fmt: skip
    body = writer.get("/api/v1/reports/")
    assert [r["format"] for r in body["results"]] == ["json", "csv"]
    assert writer.get("/api/v1/reports/", status="done")["count"] == 0
    assert writer.get("/api/v1/reports/", status="queued")["count"] == 2
    writer.get("/api/v1/reports/", status="lost", expect=400)
    writer.get("/api/v1/reports/999999/", expect=404)


def test_export_streams_at_once_with_a_read_token(api, samples) -> None:
    response = api.raw("/api/v1/reports/export", cluster="prod", group="billing", since="1h",
                       resolution="raw", format="csv")  # fmt: skip
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("text/csv")
    rows = read_csv(b"".join(response.streaming_content))
    assert rows[0] == HEADER and len(rows) == 21
    last = [r for r in rows[1:] if r[5] == "1"][-1]
    assert (last[6], last[7], last[8]) == ("901", "908", "7")
    assert Report.objects.count() == 0


def test_export_validates_like_create(api, samples) -> None:
    error = api.get("/api/v1/reports/export", expect=400, cluster="prod")["error"]
    assert error["field"] == "since"

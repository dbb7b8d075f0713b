"""Reports end to end in the shared lab stack: the command against the stack's database and
sample log, and the UI path through the real web server, Redis and Celery worker (create →
progress → download). Right after the stack's first collections: no rollups needed."""

from __future__ import annotations

import csv
import io
import json
import re
import time

import pytest

from tests.lab_world import Browser
from tests.waiting import wait_for

pytestmark = pytest.mark.lab

COLUMNS = [
    "time", "cluster", "source", "group", "topic", "partition", "committed", "latest", "lag",
    "time_lag_s", "status",
]  # fmt: skip
STATUSES = {"OK", "WARN", "STALL", "STOP", "REWIND", "ERR", "UNKNOWN"}


def test_command_reports_every_collected_partition(lab_world):
    doc = lab_world.status()
    done = lab_world.manage(
        "lag_report", "--cluster", "lab", "--since", "30m", "--resolution", "1m",
        "--format", "json", "--output", "-",
    )  # fmt: skip
    rows = json.loads(done.stdout)
    assert rows and all(list(row) == COLUMNS for row in rows)
    assert re.search(r"lag_report: \d+ rows \(json\) to stdout", done.stderr)
    reported = {(r["source"], r["group"], r["topic"], r["partition"]) for r in rows}
    for p in doc["partitions"]:
        if p["cluster"] == "lab":
            assert (p["source"], p["group"], p["topic"], p["partition"]) in reported, p
    assert {r["status"] for r in rows} <= STATUSES
    assert {r["status"] for r in rows} - {"UNKNOWN"}, "every partition was judged: history"
    for r in rows:
        if r["committed"] is not None and r["latest"] is not None and r["source"] == "kafka":
            assert r["lag"] == r["latest"] - r["committed"]
        assert r["time"].endswith("Z")

    missing = lab_world.manage("lag_report", "--cluster", "nope", "--since", "1h", check=False)
    assert missing.returncode == 1 and "--cluster" in missing.stderr
    bad = lab_world.manage("lag_report", "--cluster", "lab", "--since", "soon", check=False)
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_ui_builds_a_report_with_the_worker(lab_world):
    browser = Browser(lab_world.web_url)
    browser.get("/accounts/login/")
    user, password = lab_world.login
    browser.post("/accounts/login/", {"username": user, "password": password})
    status, page, _ = browser.get("/reports/")
    assert status == 200 and b"New report" in page

    started = time.monotonic()
    status, page = browser.post(
        "/reports/",
        {"cluster": "lab", "since": "20m", "resolution": "raw", "format": "csv",
         "action": "build"},
    )  # fmt: skip
    assert status == 200  # redirected back to the list
    report_id = int(re.search(rb'<tr data-id="(\d+)"', page).group(1))

    def finished():
        _, body, _ = browser.get(f"/reports/progress.json?ids={report_id}")
        doc = json.loads(body)["reports"][0]
        return doc if doc["status"] in ("done", "failed") else None

    doc = wait_for(finished, 120, "the worker built the report", every=1.0)
    assert doc["status"] == "done", doc
    assert doc["progress"] == 1.0 and doc["rows"] > 0 and doc["downloadable"]

    status, body, headers = browser.get(f"/reports/{report_id}/download/")
    assert status == 200
    assert headers["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(body.decode())))
    assert rows[0] == COLUMNS
    assert len(rows) - 1 == doc["rows"]
    assert {r[1] for r in rows[1:]} == {"lab"}
    assert time.monotonic() - started < 120

"""The list's live progress in a real browser (Playwright driving Debian's Chromium) against
pytest-django's live server: a queued report's row follows the server as it runs and finishes,
and its Download link appears without a reload; a hostile error message stays text."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from dashboard.reports.models import Report, ReportStatus, reports_dir

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Playwright's sync API keeps an event loop in this thread; the ORM calls the test makes
    # between page actions are ordinary synchronous ones.
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            try:
                yield b
            finally:
                b.close()
    finally:
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


def test_progress_updates_live(browser, live_server, django_user_model, log, cluster):
    django_user_model.objects.create_user("sre", password="x-pass-123456")
    report = Report.objects.create(fmt="csv", spec={}, description="c1; last 1h; raw")
    failing = Report.objects.create(fmt="csv", spec={}, description="c1")
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        page.goto(live_server.url + "/reports/")
        page.fill("input[name=username]", "sre")
        page.fill("input[name=password]", "x-pass-123456")
        page.click("button[type=submit]")
        page.goto(live_server.url + "/reports/")
        row = page.locator(f'tr[data-id="{report.pk}"]')
        expect(row.locator(".status")).to_have_text("queued")

        Report.objects.filter(pk=report.pk).update(
            status=ReportStatus.RUNNING, progress=0.5, rows=10
        )
        expect(row.locator(".status")).to_have_text("running", timeout=10_000)
        expect(row.locator(".rows")).to_have_text("10")
        assert row.locator("progress").evaluate("p => p.value") == 0.5

        directory = reports_dir()
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"report-{report.pk}.csv").write_text('"time"\n')
        Report.objects.filter(pk=report.pk).update(
            status=ReportStatus.DONE, progress=1.0, rows=20, file_name=f"report-{report.pk}.csv"
        )
        Report.objects.filter(pk=failing.pk).update(
            status=ReportStatus.FAILED, error="<img src=x onerror=alert(1)>"
        )
        link = row.locator(".download a")
        expect(link).to_have_text("Download", timeout=10_000)
        assert link.get_attribute("href") == f"/reports/{report.pk}/download/"
        expect(row.locator(".rows")).to_have_text("20")
        failed = page.locator(f'tr[data-id="{failing.pk}"] .status')
        expect(failed).to_have_text("failed <img src=x onerror=alert(1)>", timeout=10_000)
        assert page.locator(f'tr[data-id="{failing.pk}"] img').count() == 0
        assert dialogs == []
    finally:
        context.close()

"""Scheduled lag reports: beat's pass over real schedules and a real sample log, the task run
eagerly, the mail received by a real SMTP server (aiosmtpd): the attachment there and
parseable, each due time sent once whatever runs twice, a large report linked, refusals
judged; the cron rules case by case; the pages by role."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import openpyxl
import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from dashboard import locks
from dashboard.accounts.roles import Role
from dashboard.reports import cron
from dashboard.reports.models import ReportSchedule, RunState, ScheduledRun
from dashboard.reports.scheduled import (
    requeue_due_retries,
    retry_due_at,
    run_due_schedules,
    send_run,
)
from tests.alerts.receivers import SmtpReceiver
from tests.reports.factory import HOUR, MINUTE, T0, regular_samples, write_cycles
from tests.roles import user_with_role

KEYS = [("kafka", "orders", "orders-in", 0), ("kafka", "orders", "orders-in", 1)]
DUE = datetime.fromtimestamp((T0 + 2 * HOUR) / 1000, UTC)  # 02:00 on the samples' day


def at_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


@pytest.fixture
def smtp(settings):
    receiver = SmtpReceiver()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = receiver.host, receiver.port
    settings.LAGWATCH_REPORTS_EMAIL_FROM = "reports@lagwatch.example.com"
    yield receiver
    receiver.close()


@pytest.fixture
def world(log, cluster, eager_celery, django_capture_on_commit_callbacks):
    """Three hours of samples, a minute apart, of two partitions; and a way to run beat's
    pass at a given time with the queued tasks run as they would be after commit."""
    write_cycles(log, "c1", regular_samples(T0, 180, MINUTE, KEYS))
    eager_celery.conf.task_eager_propagates = False  # a retry runs again, as a worker would

    def beat(now: datetime) -> list[ScheduledRun]:
        with django_capture_on_commit_callbacks(execute=True):
            return run_due_schedules(now)

    return beat


def schedule(**fields) -> ReportSchedule:
    values = {"name": "hourly orders", "cluster": "c1", "groups": ["orders"], "range": "1h",
              "resolution": "raw", "fmt": "csv", "cron": "0 * * * *",
              "recipients": "ops@example.com\nlead@example.com", **fields}  # fmt: skip
    made = ReportSchedule.objects.create(**values)
    # Made long before the samples' day: its due times there are not "before its last change".
    ReportSchedule.objects.filter(pk=made.pk).update(updated_at=at_ms(T0) - timedelta(days=1))
    made.refresh_from_db()
    return made


def attachment(mail) -> tuple[str, str, bytes]:
    (part,) = list(mail["msg"].iter_attachments())
    return part.get_filename(), part.get_content_type(), part.get_payload(decode=True)


def test_a_due_report_is_mailed_once_with_its_attachment(world, smtp):
    schedule()
    (run,) = world(DUE + timedelta(seconds=30))
    (mail,) = smtp.wait(1)
    assert sorted(mail["to"]) == ["lead@example.com", "ops@example.com"]
    msg = mail["msg"]
    assert msg["From"] == "reports@lagwatch.example.com"
    assert msg["Subject"].strip() == (
        "[Lagwatch] Lag report hourly orders: c1, 2026-03-01 01:00 to 2026-03-01 02:00 UTC"
    )
    assert "The report is attached." in msg.get_body(("plain",)).get_content()
    name, mime, data = attachment(mail)
    assert (name, mime) == ("lag-report-hourly-orders-20260301T0200Z.csv", "text/csv")
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    assert len(rows) == 120  # the hour before the due time: 60 samples × 2 partitions
    assert rows[0]["time"] == "2026-03-01T01:00:00.000Z" and rows[-1]["time"] < "2026-03-01T02"
    assert {r["group"] for r in rows} == {"orders"}
    run.refresh_from_db()
    assert (run.state, run.rows, run.delivered_as, run.attempts) == ("sent", 120, "attachment", 1)
    assert run.size_bytes == len(data) and run.due_at == DUE and run.error == ""
    assert run.started_at <= run.finished_at and run.report.downloadable

    # A second beat (or two beats at once), a later pass within the hour, a redelivered task:
    # the due time has its run, which is no longer queued. One mail.
    assert world(DUE + timedelta(seconds=31)) == []
    assert world(DUE + timedelta(minutes=59)) == []
    assert send_run(run.pk) is None
    with pytest.raises(IntegrityError), transaction.atomic():
        ScheduledRun.objects.create(schedule=run.schedule, due_at=DUE)
    assert len(smtp.messages) == 1 and ScheduledRun.objects.count() == 1
    # The next due time is a new run.
    world(DUE + timedelta(hours=1))
    assert len(smtp.wait(2)) == 2
    assert ScheduledRun.objects.filter(state="sent").count() == 2


def test_xlsx_attachment_opens_in_openpyxl(world, smtp):
    schedule(fmt="xlsx", resolution="5m", range="2h")
    world(DUE)
    (mail,) = smtp.wait(1)
    name, mime, data = attachment(mail)
    assert name.endswith(".xlsx") and mime.endswith("spreadsheetml.sheet")
    sheet = openpyxl.load_workbook(io.BytesIO(data), read_only=True)["lag"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:3] == ("time", "cluster", "source")
    assert len(rows) - 1 == 2 * 24  # two hours of 5-minute buckets, two partitions


def test_a_large_report_is_linked_not_attached(world, smtp, settings):
    settings.LAGWATCH_REPORT_MAIL_MAX_BYTES = 100
    settings.LAGWATCH_BASE_URL = "https://lagwatch.example.com"
    schedule()
    (run,) = world(DUE)
    (mail,) = smtp.wait(1)
    assert list(mail["msg"].iter_attachments()) == []
    run.refresh_from_db()
    body = mail["msg"].get_body(("plain",)).get_content()
    assert f"https://lagwatch.example.com/reports/{run.report.pk}/download/" in body
    assert "larger than 100 bytes" in body and "within 7 days" in body
    assert (run.state, run.delivered_as) == ("sent", "link")


def test_a_refused_mail_fails_the_run_and_one_refused_for_now_is_retried(
    world, smtp, redis_url, settings
):
    schedule(recipients="nobody@example.com")
    smtp.refuse("nobody@example.com", "550 5.1.1 No such user")
    (run,) = world(DUE)
    run.refresh_from_db()
    assert run.state == "failed" and smtp.messages == []
    assert (
        run.error
        == "the mail failed: recipients refused: nobody@example.com (550 5.1.1 No such user)"
    )
    assert run.rows == 120 and run.report.downloadable  # built; only the mail failed

    schedule(name="retried", recipients="busy@example.com")
    smtp.refuse("busy@example.com", "451 4.7.1 Greylisted, try again")
    (run,) = world(DUE)
    run.refresh_from_db()
    assert (run.state, run.attempts) == ("retrying", 1) and smtp.messages == []
    # No countdown message: beat's pass queues it again once its back-off is over.
    due = retry_due_at(run)
    assert due == run.started_at + timedelta(seconds=settings.LAGWATCH_REPORT_MAIL_RETRY_S)
    settings.REDIS_URL = redis_url
    locks._client = None
    try:
        assert requeue_due_retries(due - timedelta(seconds=1)) == 0
        assert requeue_due_retries(due) == 1  # the eager task runs: the second attempt
        assert requeue_due_retries(due) == 0  # sent: nothing waits
    finally:
        locks._client = None
    run.refresh_from_db()
    assert (run.state, run.attempts) == ("sent", 2) and len(smtp.wait(1)) == 1
    assert ScheduledRun.objects.filter(schedule__name="retried").count() == 1


def test_what_is_not_run(world, smtp, cluster):
    made = schedule(enabled=False)
    assert world(DUE) == []
    # Changed after its latest due time: that one is not run (a new cron does not fire at once).
    ReportSchedule.objects.filter(pk=made.pk).update(
        enabled=True, updated_at=DUE + timedelta(seconds=10)
    )
    assert world(DUE + timedelta(minutes=5)) == []
    assert len(world(DUE + timedelta(hours=1))) == 1
    smtp.wait(1)


def test_a_lost_worker_leaves_a_failed_run_not_a_second_mail(world, smtp):
    made = schedule()
    run = ScheduledRun.objects.create(schedule=made, due_at=DUE, state=RunState.RUNNING,
                                      started_at=DUE)  # fmt: skip
    assert len(world(DUE + timedelta(hours=13))) == 1  # a new due time: its own run
    run.refresh_from_db()
    assert run.state == "failed" and run.error.startswith("outcome unknown")
    assert send_run(run.pk) is None


def test_a_schedule_whose_report_cannot_be_made_fails_with_why(world, smtp):
    schedule(range="forever")
    (run,) = world(DUE)
    run.refresh_from_db()
    assert run.state == "failed" and run.error.startswith("the schedule's report is not valid:")
    assert smtp.messages == []


# --- cron ----------------------------------------------------------------------------------------


NOW = datetime(2026, 11, 29, 6, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "now", "latest", "following"),
    [("0 6 * * *", NOW, NOW, NOW + timedelta(days=1)),  # due exactly now: now
     ("0 6 * * *", NOW - timedelta(minutes=1), NOW - timedelta(days=1), NOW),
     ("0 6 * * *", NOW + timedelta(seconds=59), NOW, NOW + timedelta(days=1)),
     ("0 7 * * 1", NOW, datetime(2026, 11, 23, 7, tzinfo=UTC), datetime(2026, 11, 30, 7, tzinfo=UTC)),
     ("@daily", NOW, datetime(2026, 11, 29, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC)),
     ("0 */6 * * *", NOW + timedelta(hours=5), NOW, NOW + timedelta(hours=6))],
)  # fmt: skip
def test_due_times(expression, now, latest, following):
    assert cron.latest_due(expression, now) == latest
    assert cron.next_due(expression, now) == following


@pytest.mark.parametrize(
    ("expression", "message"),
    [("", "required"), ("0 6 * *", "five fields"), ("0 0 6 * * *", "five fields"),
     ("61 * * * *", "not a cron expression"), ("@reboot", "not a cron expression"),
     ("* * * * *", "more often than once an hour"), ("*/30 * * * *", "more often"),
     ("0,30 6 * * *", "more often")],
)  # fmt: skip
def test_refused_cron_expressions(expression, message):
    with pytest.raises(cron.CronError, match=message):
        cron.validate(expression, NOW)


def test_accepted_cron_expressions_are_tidied():
    assert cron.validate("0  6 * *   1-5", NOW) == "0 6 * * 1-5"
    assert cron.validate("@weekly", NOW) == "@weekly"
    assert cron.validate("0 * * * *", NOW) == "0 * * * *"  # hourly: the most often allowed


# --- pages ---------------------------------------------------------------------------------------


FORM = {"name": "daily", "enabled": "on", "cluster": "c1", "groups": "orders, pay-*",
        "topics": "", "sources": "kafka", "range": "24h", "resolution": "1h", "fmt": "csv",
        "recipients": "ops@example.com", "cron": "0 6 * * *"}  # fmt: skip


def as_role(role: Role) -> Client:
    client = Client()
    client.force_login(user_with_role(f"u-{role}", role))
    return client


def test_an_operator_creates_a_schedule_and_a_viewer_may_only_read(cluster):
    viewer = as_role(Role.VIEWER)
    assert viewer.post("/reports/schedules/new/", FORM).status_code == 403
    operator = as_role(Role.OPERATOR)
    response = operator.post("/reports/schedules/new/", FORM)
    assert response.status_code == 302, response.content[:2000]
    made = ReportSchedule.objects.get(name="daily")
    assert (made.groups, made.topics, made.sources) == (["orders", "pay-*"], [], ["kafka"])
    assert (made.created_by, made.cron, made.recipients) == ("u-operator", "0 6 * * *",
                                                             "ops@example.com")  # fmt: skip
    page = viewer.get("/reports/schedules/").content.decode()
    assert "daily" in page and "0 6 * * *" in page and "New schedule" not in page
    detail = viewer.get(f"/reports/schedules/{made.pk}/").content.decode()
    assert "No runs yet." in detail and "Delete schedule" not in detail
    edit = operator.get(f"/reports/schedules/{made.pk}/edit/").content.decode()
    assert 'value="orders, pay-*"' in edit
    assert viewer.post(f"/reports/schedules/{made.pk}/delete/").status_code == 403
    assert operator.post(f"/reports/schedules/{made.pk}/delete/").status_code == 302
    assert not ReportSchedule.objects.exists()


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"cron": "* * * * *"}, "more often than once an hour"),
     ({"range": "forever"}, "is not a duration"),
     ({"recipients": "not-an-address"}, "Not an email address"),
     ({"cluster": "nope"}, "No cluster named"),
     ({"sources": "carrier-pigeon"}, "carrier-pigeon")],
)  # fmt: skip
def test_the_form_refuses_with_the_field_named(cluster, changes, message):
    response = as_role(Role.OPERATOR).post("/reports/schedules/new/", {**FORM, **changes})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not ReportSchedule.objects.exists()

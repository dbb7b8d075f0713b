"""The Django side: status history from ``StatusChange``, the task's body, create/stream,
pruning. Real SQLite (pytest-django) and a real sample log on disk."""

from __future__ import annotations

import csv
import io
import json
import os
import time
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from django.utils import timezone

from dashboard.monitoring.models import ConsumerGroup, StatusChange
from dashboard.reports.build import build_report_file, prune_old_reports
from dashboard.reports.history import load_status_history
from dashboard.reports.models import Report, ReportStatus
from dashboard.reports.service import create_report, stream_report
from dashboard.reports.spec import parse_spec
from tests.reports.factory import HOUR, MINUTE, T0, sample, write_cycles

pytestmark = pytest.mark.django_db


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def spec(**extra):
    data = {"cluster": "c1", "start": at(T0).isoformat(), "end": at(T0 + HOUR).isoformat()}
    return parse_spec({**data, **extra})


def group(cluster, name, source="kafka"):
    now = timezone.now()
    return ConsumerGroup.objects.create(
        cluster=cluster, source=source, name=name, first_seen_at=now, last_seen_at=now
    )


def change(g, topic, partition, ms, new, old="UNKNOWN"):
    StatusChange.objects.create(
        group=g, topic=topic, partition=partition, at=at(ms), old_status=old, new_status=new
    )


@pytest.fixture
def world(log, cluster):
    """Ten minutes of two partitions of two groups, and a status history for them."""
    samples = [
        sample(T0 + i * MINUTE, g, "t", p, 100 * i + p, 100 * i + p + 7 - i, time_lag_s=i * 1.5)
        for i in range(10) for g in ("g", "=evil") for p in (0, 1)
    ]  # fmt: skip
    write_cycles(log, "c1", samples)
    g, evil = group(cluster, "g"), group(cluster, "=evil")
    change(g, "t", 0, T0 + 4 * MINUTE, "OK")
    change(g, "t", 0, T0 + 8 * MINUTE, "STALL", old="OK")
    change(g, "", None, T0, "ERR")  # the group itself: not a partition row
    change(evil, "t", 1, T0 - HOUR, "WARN")
    storm = group(cluster, "g", source="storm")  # same name, another source
    change(storm, "t", 0, T0, "STOP")
    return samples


def rows_of(fmt: str, chunks) -> list[dict]:
    data = b"".join(chunks)
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(data.decode())))
    if fmt == "json":
        return json.loads(data)
    return pq.read_table(io.BytesIO(data)).to_pylist()


def test_history_loader_reads_partition_changes(world):
    history = load_status_history(spec())
    assert history.status_at("kafka", "g", "t", 0, T0 + 5 * MINUTE) == "OK"
    assert history.status_at("kafka", "g", "t", 0, T0 + 9 * MINUTE) == "STALL"
    assert history.status_at("kafka", "=evil", "t", 1, T0) == "WARN"
    assert history.status_at("storm", "g", "t", 0, T0) == "STOP"
    assert history.status_at("kafka", "g", "t", 1, T0 + 9 * MINUTE) == "UNKNOWN"
    assert len(history) == 4  # the group-level change is not used


def test_history_loader_honours_scope_and_range_end(world):
    assert len(load_status_history(spec(groups="=e*"))) == 1
    assert len(load_status_history(spec(sources="storm"))) == 1
    short = parse_spec(
        {"cluster": "c1", "start": at(T0).isoformat(), "end": at(T0 + 5 * MINUTE).isoformat()}
    )
    assert len(load_status_history(short)) == 3  # the STALL at +8 min is after the end


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_stream_report_has_status_and_values(world, fmt):
    rows = rows_of(fmt, stream_report(spec(groups="g"), fmt))
    statuses = [r["status"] for r in rows if str(r["partition"]) == "0"]
    assert statuses == ["UNKNOWN"] * 4 + ["OK"] * 4 + ["STALL"] * 2
    assert len(rows) == 20


def test_create_report_runs_the_task_and_writes_a_file(
    world, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        report = create_report(spec(), "csv", "alice")
    report.refresh_from_db()
    assert report.status == ReportStatus.DONE
    assert report.progress == 1.0
    assert report.rows == 40
    assert report.requested_by == "alice"
    assert report.finished_at is not None and report.size_bytes > 0
    with report.open() as handle:
        rows = list(csv.DictReader(io.TextIOWrapper(handle, "utf-8")))
    assert len(rows) == 40
    assert {r["group"] for r in rows} == {"g", "'=evil"}
    assert report.path.name == f"report-{report.pk}.csv"
    assert not list(report.path.parent.glob(".*.part"))


def test_task_progress_is_recorded_while_running(log, cluster, monkeypatch):
    for hour in range(3):
        write_cycles(
            log, "c1", [sample(T0 + hour * HOUR + i * MINUTE, "g", "t", 0, i) for i in range(3)]
        )
    report = Report.objects.create(
        fmt="json", spec=spec(since=None, end=at(T0 + 3 * HOUR).isoformat()).to_dict()
    )
    seen = []
    monkeypatch.setattr("dashboard.reports.build.PROGRESS_EVERY_S", 0.0)
    original = Report.objects.filter

    def spy(*args, **kwargs):
        query = original(*args, **kwargs)
        update = query.update

        def recorded(**fields):
            if "progress" in fields:
                seen.append((fields.get("status"), fields["progress"]))
            return update(**fields)

        query.update = recorded
        return query

    monkeypatch.setattr(Report.objects, "filter", spy)
    build_report_file(report.pk)
    report.refresh_from_db()
    assert report.status == "done" and report.rows == 9
    progress = [p for s, p in seen if s is None]
    assert progress == sorted(progress) and 0 < progress[0] < 1 and len(progress) == 3
    assert seen[0] == ("running", 0.0) and seen[-1] == ("done", 1.0)


def test_task_failure_is_recorded_and_leaves_no_file(log, cluster, monkeypatch):
    write_cycles(log, "c1", [sample(T0, "g", "t", 0, 1)])
    report = Report.objects.create(fmt="csv", spec=spec().to_dict())

    def broken(*args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr("dashboard.reports.export.write_report", broken)
    build_report_file(report.pk)
    report.refresh_from_db()
    assert report.status == ReportStatus.FAILED
    assert "disk on fire" in report.error
    assert not report.downloadable
    with pytest.raises(FileNotFoundError):
        report.open()


def test_task_ignores_finished_and_missing_reports(log, cluster):
    assert build_report_file(123456) is None
    done = Report.objects.create(fmt="csv", spec=spec().to_dict(), status=ReportStatus.DONE)
    assert build_report_file(done.pk).status == ReportStatus.DONE


def test_prune_deletes_old_files_and_keeps_rows(
    world, settings, eager_celery, django_capture_on_commit_callbacks
):
    settings.LAGWATCH_REPORTS_KEEP_DAYS = 7
    with django_capture_on_commit_callbacks(execute=True):
        old = create_report(spec(), "csv", "a")
        new = create_report(spec(), "json", "a")
    Report.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=8))
    old.refresh_from_db()
    stale_part = old.path.parent / ".report-999.csv.part"
    stale_part.write_bytes(b"x")
    os.utime(stale_part, (time.time() - 9 * 86400,) * 2)
    assert prune_old_reports() == 2
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.expired and not old.path.exists() and not old.downloadable
    assert not new.expired and new.downloadable
    assert not stale_part.exists()
    assert prune_old_reports() == 0


def test_create_report_refuses_bad_format(world):
    from dashboard.reports.spec import SpecError

    with pytest.raises(SpecError) as info:
        create_report(spec(), "pdf", "a")
    assert info.value.field == "format"
    assert Report.objects.count() == 0


def test_prune_marks_abandoned_reports_failed(log, cluster):
    stuck = Report.objects.create(fmt="csv", spec=spec().to_dict(), status=ReportStatus.RUNNING)
    fresh = Report.objects.create(fmt="csv", spec=spec().to_dict(), status=ReportStatus.QUEUED)
    Report.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - timedelta(hours=13))
    prune_old_reports()
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == ReportStatus.FAILED and "abandoned" in stuck.error
    assert fresh.status == ReportStatus.QUEUED


def test_admin_lists_reports(client, django_user_model, cluster):
    admin = django_user_model.objects.create_superuser("root", password="x-pass-123456")
    client.force_login(admin)
    Report.objects.create(fmt="csv", spec=spec().to_dict(), description="<script>x</script>")
    page = client.get("/admin/reports/report/")
    assert page.status_code == 200
    assert b"<script>x</script>" not in page.content
    assert b"&lt;script&gt;x&lt;/script&gt;" in page.content

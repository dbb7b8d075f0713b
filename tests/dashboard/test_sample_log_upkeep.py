"""The sample log's open hour compacted by beat's task: a minute's micro-batches become one
file, every sample still read back the same, and the task runs where housekeeping runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.utils import timezone

from collectors.sample_log import KEY_COLUMNS, SampleLog
from dashboard.store import tasks


def test_the_task_compacts_the_open_hour_and_loses_no_sample(
    settings: Any, tmp_path: Path
) -> None:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    log = SampleLog(tmp_path / "samples")
    now_ms = int(timezone.now().timestamp() * 1000)
    hour_start = now_ms - now_ms % 3_600_000
    for i in range(6):  # six polls, 5 s apart, at the start of the open hour
        ts = hour_start + i * 5_000
        log.write_batch("prod", f"cycle-{i}", [_sample(ts, p) for p in range(4)])
    before = {tuple(r[k] for k in KEY_COLUMNS) for r in log.read().to_pylist()}

    report = tasks.compact_sample_log()

    assert report == {"hours": 1, "files_merged": 6}
    files = [p.name for p in Path(log.base).rglob("*.parquet")]
    assert len(files) == 1 and files[0].startswith("compacted-")
    assert {tuple(r[k] for k in KEY_COLUMNS) for r in log.read().to_pylist()} == before
    assert tasks.compact_sample_log() == {"hours": 0, "files_merged": 0}


def test_beat_runs_it_every_minute_on_the_housekeeping_queue() -> None:
    entry = django_settings.CELERY_BEAT_SCHEDULE["compact-sample-log"]
    assert entry["task"] == tasks.compact_sample_log.name
    assert entry["schedule"] == 60.0 and entry["options"] == {"expires": 60}
    assert tasks.compact_sample_log.name not in django_settings.CELERY_TASK_ROUTES  # "celery"


def _sample(ts_ms: int, partition: int) -> dict:
    return {
        "ts_ms": ts_ms, "cluster": "prod", "source": "kafka", "group": "billing",
        "topic": "orders", "partition": partition, "committed": 100 + ts_ms // 1000,
        "earliest": 0, "latest": 200 + ts_ms // 1000, "lag": 100, "time_lag_s": 1.0,
        "commit_time_ms": ts_ms - 1000, "commit_version": None, "owner": "c-1",
        "topology_id": None, "alive": True, "pending": None, "failed": None, "acked": None,
        "stale": False,
    }  # fmt: skip

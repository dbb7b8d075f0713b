"""Backup and restore of the store (``manage.py lagwatch_backup`` / ``lagwatch_restore``):
a restored copy serves the same pages, ``/api/v1`` and ``/v3`` answers and sample log.

The end-to-end test runs the product's commands as an operator would, in processes of their
own, on the engine the suite runs on (``--database``: SQLite by its online backup API,
PostgreSQL by ``pg_dump``/``pg_restore`` on the session's private server): a store is
migrated and filled (``tests/api/world.py``'s world, a viewer, a read token, the sample log's
two closed hours and its open one), backed up, restored into an empty database and data
folder, and asked the same questions (``tests/dashboard/backup_answers.py``).
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from collectors.sample_log import HOUR_MS, SampleLog
from collectors.sample_log.backup import _CLOSED_GRACE, copy_hours
from lab.services import REPO

MINUTE = 60_000


def sample(ts_ms: int, partition: int, committed: int) -> dict[str, Any]:
    return {
        "ts_ms": ts_ms, "cluster": "prod", "source": "kafka", "group": "billing",
        "topic": "orders", "partition": partition, "committed": committed, "earliest": 0,
        "latest": committed + 5, "lag": 5, "stale": False,
    }  # fmt: skip


def fill_log(log: SampleLog, now_ms: int) -> tuple[int, int]:
    """Two closed hours (the older compacted) and the open one; returns the hours' starts."""
    open_hour = now_ms // HOUR_MS * HOUR_MS
    for hour in (open_hour - 2 * HOUR_MS, open_hour - HOUR_MS, open_hour):
        for i in range(3):
            ts = hour + (i + 1) * MINUTE
            log.write_batch("prod", f"c{ts}", [sample(ts, p, 100 * i + p) for p in range(2)])
    first = datetime.fromtimestamp((open_hour - 2 * HOUR_MS) / 1000, UTC)
    log.compact("prod", first.date(), first.hour)
    return open_hour - 2 * HOUR_MS, open_hour


# --- the sample log's copy --------------------------------------------------------------------


def test_closed_hours_are_copied_whole_and_the_open_hour_left(tmp_path: Path) -> None:
    now_ms = int(time.time() * 1000) // HOUR_MS * HOUR_MS + 30 * MINUTE
    live, copy = SampleLog(tmp_path / "live"), SampleLog(tmp_path / "copy")
    first, open_hour = fill_log(live, now_ms)

    done = copy_hours(live, copy, now_ms)

    assert [p.start_ms for p in done.hours] == [first, first + HOUR_MS]
    assert [p.start_ms for p in done.open_hours_left] == [open_hour]
    assert (done.copied, done.present) == (1 + 3, 0)  # one compacted file, three batches
    closed = live.read(end=open_hour).sort_by("ts_ms")
    assert copy.read().sort_by("ts_ms").equals(closed)
    assert not list((tmp_path / "copy").rglob(".*"))  # no temporary file left

    again = copy_hours(live, copy, now_ms)  # an up-to-date backup copies nothing
    assert (again.copied, again.present) == (0, 4)
    later = copy_hours(live, copy, open_hour + HOUR_MS + 10 * MINUTE)  # the hour has closed
    assert (later.copied, later.present) == (3, 4)
    assert copy.read().sort_by("ts_ms").equals(live.read().sort_by("ts_ms"))


def test_a_restore_takes_every_hour_of_the_backup(tmp_path: Path) -> None:
    now_ms = int(time.time() * 1000)
    backup, live = SampleLog(tmp_path / "backup"), SampleLog(tmp_path / "live")
    fill_log(backup, now_ms)
    done = copy_hours(backup, live, None)
    assert (len(done.hours), done.open_hours_left) == (3, [])
    assert live.read().sort_by("ts_ms").equals(backup.read().sort_by("ts_ms"))


# --- the whole store, by the product's commands -----------------------------------------------


class Store:
    """One store (a database and a data folder) and ``manage.py`` against it."""

    def __init__(self, data_dir: Path, database_url: str | None) -> None:
        self.data_dir = data_dir
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings.base",
                    "LAGWATCH_DATA_DIR": str(data_dir)}  # fmt: skip
        self.env.pop("DATABASE_URL", None)
        if database_url:
            self.env["DATABASE_URL"] = database_url

    def run(self, *argv: str) -> str:
        done = subprocess.run(
            [sys.executable, *argv], cwd=REPO, env=self.env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr[-3000:]}"
        return done.stdout

    def manage(self, *args: str) -> str:
        return self.run("manage.py", *args)

    def answers(self, user: str, token: str) -> dict[str, Any]:
        return json.loads(self.run("-m", "tests.dashboard.backup_answers", user, token))


SEED = """
from tests.api.world import build_world
build_world()
"""


@pytest.fixture
def databases(request: pytest.FixtureRequest) -> Iterator[tuple[str | None, str | None]]:
    """Two new, empty databases on the engine of the run: (original, restored copy) URLs;
    on SQLite None, None (each store's file under its data folder)."""
    if request.config.getoption("--database") != "postgresql":
        yield None, None
        return
    request.getfixturevalue("django_db_setup")  # the session's private server is up
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    names = [f"backup_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("src", "dst")]
    admin = dict(host=db["HOST"], port=db["PORT"], user=db["USER"], password=db["PASSWORD"])
    with psycopg.connect(dbname=db["NAME"], autocommit=True, **admin) as conn:
        for name in names:
            conn.execute(f'CREATE DATABASE "{name}"')
    base = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}"
    try:
        yield f"{base}/{names[0]}", f"{base}/{names[1]}"
    finally:
        with psycopg.connect(dbname=db["NAME"], autocommit=True, **admin) as conn:
            for name in names:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def difference(before: dict[str, Any], after: dict[str, Any], url: str) -> str:
    """The lines of the two answers that differ (the first few), for the failure message."""
    lines = [json.dumps(x[url], indent=1, sort_keys=True).splitlines() for x in (before, after)]
    if isinstance(before[url][1], str):
        lines = [x[url][1].splitlines() for x in (before, after)]
    for old, new in zip(*lines, strict=False):
        if old != new:  # a long line (a chart's JSON): where it starts to differ
            at = next(i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b)
            start = max(0, at - 150)
            return f"...{old[start : at + 150]}... became ...{new[start : at + 150]}..."
    return "\n".join(list(difflib.unified_diff(*lines, lineterm="", n=1))[:40])


def closed_at(manifest: dict[str, Any], first: int) -> int:
    """How many of ``fill_log``'s hours (from ``first``) were closed when the backup ran: its
    ``created_at`` is to the second, so an hour ending within that second may go either way
    (then the manifest's own count, checked to be one of the two)."""
    created_ms = int(datetime.fromisoformat(manifest["created_at"]).timestamp() * 1000)
    grace_ms = int(_CLOSED_GRACE.total_seconds() * 1000)
    ends = [first + (i + 1) * HOUR_MS for i in range(3)]
    low = sum(1 for end in ends if end <= created_ms - grace_ms)
    high = sum(1 for end in ends if end <= created_ms + 1000 - grace_ms)
    taken = manifest["samples"]["hours"]
    return taken if low <= taken <= high else low


def test_a_restored_copy_serves_the_same_pages_and_api_answers(
    tmp_path: Path, databases: tuple[str | None, str | None]
) -> None:
    original = Store(tmp_path / "original", databases[0])
    original.manage("migrate", "--noinput", "-v", "0")
    original.manage("shell", "-c", SEED)
    original.manage("demo_user", "viewer")
    token = original.manage("api_token", "create", "backup", "--scope", "read").strip()
    token = token.splitlines()[-1]
    now_ms = int(time.time() * 1000)
    first, open_hour = fill_log(SampleLog(tmp_path / "original" / "samples"), now_ms)
    before = original.answers("viewer", token)

    manifest = json.loads(original.manage("lagwatch_backup", str(tmp_path / "backup")))
    # Which of the three hours the backup took as closed depends on when it ran: an hour is
    # closed once it ended the grace before. The manifest says when (to the second).
    closed = closed_at(manifest, first)
    assert closed >= 1  # the oldest hour ended over an hour ago
    assert manifest["samples"]["hours"] == closed
    assert len(manifest["samples"]["open_hours_left"]) == 3 - closed
    open_hour = first + closed * HOUR_MS
    backup_files = {p.name for p in (tmp_path / "backup").iterdir()}
    assert backup_files == {"manifest.json", manifest["database"], "samples"}

    copy = Store(tmp_path / "restored", databases[1])
    done = json.loads(copy.manage("lagwatch_restore", str(tmp_path / "backup")))
    assert done["samples"]["hours"] == closed
    after = copy.answers("viewer", token)

    rows = before.pop("samples")
    restored_rows = after.pop("samples")
    assert restored_rows == [r for r in rows if r["ts_ms"] < open_hour]  # the closed hours'
    assert len(restored_rows) == 6 * closed and min(r["ts_ms"] for r in restored_rows) > first
    assert {url: status for url, (status, _) in before.items()} == dict.fromkeys(before, 200)
    differ = [
        f"{url}:\n{difference(before, after, url)}" for url in before if after[url] != before[url]
    ]
    assert not differ, "answered otherwise after the restore: " + "\n".join(differ)
    assert "billing" in before["/groups/"][1]  # the pages are the world's, not empty ones
    assert before["/api/v1/partitions/?page_size=500"][1]["count"] > 5


def test_a_restore_refuses_a_database_that_is_not_empty(
    tmp_path: Path, databases: tuple[str | None, str | None]
) -> None:
    store = Store(tmp_path / "store", databases[0])
    store.manage("migrate", "--noinput", "-v", "0")
    store.manage("lagwatch_backup", str(tmp_path / "backup"), "--no-samples")
    done = subprocess.run(
        [sys.executable, "manage.py", "lagwatch_restore", str(tmp_path / "backup")],
        cwd=REPO, env=store.env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode != 0
    assert "not empty" in done.stderr

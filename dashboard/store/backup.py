"""Backup and restore of the store: the database and the sample log's closed hours.

A backup is a folder: ``manifest.json`` (when, which engine, which hours), the database
(``database.sqlite3``, a copy by SQLite's online backup API, consistent while the product
writes; or ``database.pgdump``, ``pg_dump``'s custom format) and ``samples/`` (the sample
log's closed hours, ``collectors.sample_log.backup``). What is not in it, because the
product makes it again: the Spark jobs' results and state (``LAGWATCH_RESULTS_URL``: the
next status run reads the whole look-back), ``/metrics``' published series and built
reports' files. Secrets stay in the environment, never in a backup.

A restore goes into an empty database (a new SQLite file, a new PostgreSQL database) with
the product stopped: ``manage.py migrate`` is not needed, the backup holds the schema. The
steps and what to do with the open hour: docs/OPERATIONS.md, "Backup and restore".

PostgreSQL's tools are run with the connection's password in ``PGPASSWORD`` (never on a
command line, which ``ps`` shows); ``$LAGWATCH_PG_BIN`` names the folder holding them, else
they are found on ``PATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connections

from collectors.sample_log import SampleLog
from collectors.sample_log.backup import CopyResult, copy_hours

__all__ = ["BackupError", "backup", "restore"]

MANIFEST = "manifest.json"
SQLITE_FILE = "database.sqlite3"
PG_FILE = "database.pgdump"
SAMPLES = "samples"


class BackupError(RuntimeError):
    """The backup or restore cannot be made (the message says why and what to do)."""


def backup(dest: Path, *, samples: bool = True, now: datetime | None = None) -> dict[str, Any]:
    """Back the store up into ``dest`` (created; an earlier backup there is updated: the
    database replaced, the sample log's new closed hours added). Returns the manifest."""
    dest.mkdir(parents=True, exist_ok=True)
    now = now or datetime.now(UTC)
    db = settings.DATABASES["default"]
    if _engine() == "sqlite":
        _sqlite_backup(Path(db["NAME"]), dest / SQLITE_FILE)
        database = SQLITE_FILE
    else:
        _pg(
            "pg_dump", "--format=custom", "--no-owner", "--no-privileges",
            f"--file={dest / PG_FILE}", *_pg_target(db),
        )  # fmt: skip
        database = PG_FILE
    manifest: dict[str, Any] = {
        "created_at": now.isoformat(timespec="seconds"),
        "engine": _engine(),
        "database": database,
    }
    if samples:
        copied = copy_hours(_sample_log(), SampleLog(dest / SAMPLES), now)
        manifest["samples"] = _described(copied)
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def restore(src: Path, *, samples: bool = True) -> dict[str, Any]:
    """Restore the backup in ``src`` into the configured (empty) database and sample log."""
    try:
        manifest = json.loads((src / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError(f"{src} holds no backup ({MANIFEST} is missing)") from None
    if manifest["engine"] != _engine():
        raise BackupError(
            f"the backup is of a {manifest['engine']} database and this one is {_engine()}: "
            "restore it into the engine it came from (`manage.py dumpdata` moves data across)"
        )
    db = settings.DATABASES["default"]
    if _engine() == "sqlite":
        connections["default"].close()
        _sqlite_backup(src / SQLITE_FILE, Path(db["NAME"]))
    else:
        _pg(
            "pg_restore", "--no-owner", "--no-privileges", "--single-transaction",
            "--exit-on-error", f"--dbname={db['NAME']}", *_pg_target(db, dbname=False),
            str(src / PG_FILE),
        )  # fmt: skip
    done: dict[str, Any] = {"restored": manifest["created_at"], "engine": manifest["engine"]}
    if samples and (src / SAMPLES).is_dir():
        done["samples"] = _described(copy_hours(SampleLog(src / SAMPLES), _sample_log(), None))
    return done


def _engine() -> str:
    vendor = connections["default"].vendor
    if vendor not in ("sqlite", "postgresql"):
        raise BackupError(f"no backup for a {vendor} database")
    return vendor


def _sample_log() -> SampleLog:
    return SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL)


def _described(copied: CopyResult) -> dict[str, Any]:
    return {
        "hours": len(copied.hours),
        "files_copied": copied.copied,
        "files_present": copied.present,
        "bytes_copied": copied.bytes,
        "open_hours_left": [p.path.rsplit("/", 3)[-3:] for p in copied.open_hours_left],
    }


def _sqlite_backup(source: Path, target: Path) -> None:
    """SQLite's online backup API: a consistent copy while other connections write (each
    step is retried by SQLite when a writer changed the source meanwhile)."""
    if not source.exists():
        raise BackupError(f"no SQLite database at {source}")
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.partial")
    temporary.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=60)
    dst = sqlite3.connect(temporary)
    try:
        src.backup(dst, pages=4096)
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
    finally:
        dst.close()
        src.close()
    for suffix in ("-wal", "-shm"):  # a restored file must not meet the old file's journal
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    os.replace(temporary, target)


def _pg_target(db: dict[str, Any], *, dbname: bool = True) -> list[str]:
    args = [f"--host={db.get('HOST') or 'localhost'}", f"--username={db.get('USER') or ''}"]
    if db.get("PORT"):
        args.append(f"--port={db['PORT']}")
    if dbname:
        args.append(f"--dbname={db['NAME']}")
    return args


def _pg(tool: str, *args: str) -> None:
    """A PostgreSQL tool with the connection's password in its environment."""
    folder = os.environ.get("LAGWATCH_PG_BIN")
    binary = str(Path(folder, tool)) if folder else shutil.which(tool)
    if not binary or not Path(binary).exists():
        raise BackupError(
            f"{tool} not found: install PostgreSQL's client tools or set LAGWATCH_PG_BIN"
        )
    db = settings.DATABASES["default"]
    env = {**os.environ, "PGPASSWORD": str(db.get("PASSWORD") or "")}
    done = subprocess.run(
        [binary, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=3600,
    )  # fmt: skip
    if done.returncode != 0:
        raise BackupError(f"{tool} exited with {done.returncode}: {done.stderr.strip()[-2000:]}")

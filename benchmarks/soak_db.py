"""The soak's view of the stack's database, SQLite or PostgreSQL: the rows its figures read and
the lock it holds as a fault.

Apart from ``benchmarks/soak.py`` so that the soak reads the same figures on either database
(``--database``). The soak reads with its own connection, never through the product's
settings or through Toxiproxy: a network fault on PostgreSQL must not blind the figures.

- SQLite: the file opened read-only (WAL: the reads never block the product's writers); the
  lock is ``BEGIN EXCLUSIVE``, which makes every writer wait.
- PostgreSQL: a direct connection to the lab's server (``lab/postgres.py``), autocommit; the
  lock is ``LOCK TABLE … IN EXCLUSIVE MODE`` on every table of the product's apps, which makes
  every writer wait and still lets the pages read, as SQLite's does under WAL.
"""

from __future__ import annotations

import re
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

DATABASES = ("sqlite", "postgresql")
# The product's own tables (the lock's scope): Django's and Celery's are left alone.
LOCKED_PREFIXES = ("monitoring_", "alerts_", "accounts_")


def db_time(value: str | datetime) -> float:
    """A Django datetime column as the database returns it (SQLite: UTC text; PostgreSQL: an
    aware datetime), as epoch seconds."""
    at = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def _postgres_sql(sql: str) -> str:
    """The soak's queries are written with SQLite's ``?``; psycopg takes ``%s``."""
    return re.sub(r"\?", "%s", sql.replace("%", "%%"))


class SoakDatabase:
    """Rows of the stack's database and a writers' lock, on whichever database it runs."""

    def __init__(self, kind: str, run_dir: Path) -> None:
        if kind not in DATABASES:
            raise ValueError(f"--database must be one of {', '.join(DATABASES)}, not {kind!r}")
        self.kind = kind
        self.sqlite_file = run_dir / "data" / "lagwatch.sqlite3"
        self.url: str | None = None  # PostgreSQL: set once the stack is up

    def connect_postgres(self, url: str) -> None:
        """The direct ``postgres://`` URL of the lab's server (not through Toxiproxy)."""
        self.url = url

    def rows(self, sql: str, *args: object) -> list[tuple]:
        """The rows of ``sql`` (``?`` placeholders), or none while the database cannot answer:
        the figures are read again later, a fault must not end the soak."""
        if self.kind == "sqlite":
            return self._sqlite_rows(sql, args)
        return self._postgres_rows(sql, args)

    def _sqlite_rows(self, sql: str, args: tuple) -> list[tuple]:
        if not self.sqlite_file.exists():
            return []
        conn = sqlite3.connect(f"file:{self.sqlite_file}?mode=ro", uri=True, timeout=30)
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()

    def _postgres_rows(self, sql: str, args: tuple) -> list[tuple]:
        import psycopg

        if self.url is None:
            return []
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                return conn.execute(_postgres_sql(sql), args).fetchall()
        except psycopg.Error:
            return []

    def hold_writers(self, seconds: float) -> tuple[float, float, float]:
        """Make every writer wait ``seconds``; returns (asked, acquired, released) times."""
        asked = time.time()
        if self.kind == "sqlite":
            conn = sqlite3.connect(str(self.sqlite_file), timeout=60, isolation_level=None)
            try:
                conn.execute("BEGIN EXCLUSIVE")
                acquired = time.time()
                time.sleep(seconds)
                conn.execute("ROLLBACK")
            finally:
                conn.close()
            return asked, acquired, time.time()
        return self._postgres_lock(seconds, asked)

    def _postgres_lock(self, seconds: float, asked: float) -> tuple[float, float, float]:
        import psycopg
        from psycopg import sql

        assert self.url is not None, "the stack is not up"
        with psycopg.connect(self.url, connect_timeout=10) as conn:
            tables = [
                name
                for (name,) in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                ).fetchall()
                if name.startswith(LOCKED_PREFIXES)
            ]
            with conn.transaction():
                conn.execute("SET LOCAL lock_timeout = '60s'")
                conn.execute(
                    sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(
                        sql.SQL(", ").join(sql.Identifier(t) for t in sorted(tables))
                    )
                )
                acquired = time.time()
                time.sleep(seconds)
        return asked, acquired, time.time()

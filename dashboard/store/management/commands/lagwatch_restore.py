"""``manage.py lagwatch_restore SRC [--no-samples]``: a backup made by ``lagwatch_backup``
into the configured database, which must be empty and of the same engine, and the sample
log; with the product stopped (docs/OPERATIONS.md, "Backup and restore")."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from dashboard.store.backup import BackupError, restore


class Command(BaseCommand):
    help = "Restore a lagwatch_backup folder into an empty database and the sample log."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("src", type=Path, help="the backup folder")
        parser.add_argument("--no-samples", action="store_true", help="the database only")
        parser.add_argument(
            "--force", action="store_true",
            help="restore over a database that has tables (SQLite: its file is replaced)",
        )  # fmt: skip

    def handle(self, *args, src: Path, no_samples: bool, force: bool, **options) -> None:
        tables = connection.introspection.table_names()
        if tables and not force:
            raise CommandError(
                f"the database is not empty ({len(tables)} tables): restore into a new one, "
                "or pass --force to replace it (SQLite only: PostgreSQL needs a new database)"
            )
        if tables and connection.vendor != "sqlite":
            raise CommandError("restore into a new, empty PostgreSQL database (createdb)")
        try:
            done = restore(src, samples=not no_samples)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(done, indent=1))

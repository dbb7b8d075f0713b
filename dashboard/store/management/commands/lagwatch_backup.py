"""``manage.py lagwatch_backup DEST [--no-samples]``: the database and the sample log's closed
hours into the folder DEST, while the product runs (``dashboard/store/backup.py``)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.store.backup import BackupError, backup


class Command(BaseCommand):
    help = "Back up the database and the sample log's closed hours into a folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dest", type=Path, help="the backup folder (created if missing)")
        parser.add_argument("--no-samples", action="store_true", help="the database only")

    def handle(self, *args, dest: Path, no_samples: bool, **options) -> None:
        try:
            manifest = backup(dest, samples=not no_samples)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(manifest, indent=1))

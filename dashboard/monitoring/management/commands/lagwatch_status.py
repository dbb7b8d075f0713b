"""``manage.py lagwatch_status --json [--cluster NAME]``: the current state, for scripts."""

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.monitoring.models import Cluster
from dashboard.monitoring.status_report import status_document


class Command(BaseCommand):
    # A read-only report that scripts call every few seconds: Django's system checks import
    # every view and its chart library first (1.4 s a call instead of 0.9 s). `check` still
    # runs them; every other command of the project too.
    requires_system_checks: list[str] = []
    help = "Print the latest state of every group and partition, and the collection errors."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="JSON output (the only format)")
        parser.add_argument("--cluster", help="only this cluster")
        parser.add_argument("--indent", type=int, default=None, help="pretty-print with N spaces")

    def handle(self, *args, cluster: str | None, indent: int | None, **options) -> None:
        if cluster is not None and not Cluster.objects.filter(name=cluster).exists():
            raise CommandError(f"unknown cluster {cluster!r}")
        self.stdout.write(json.dumps(status_document(cluster), indent=indent, ensure_ascii=False))

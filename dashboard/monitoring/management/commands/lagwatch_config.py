"""``manage.py lagwatch_config import FILE`` / ``export [FILE] [--secrets env|omit]``: clusters
as YAML. An export never holds a secret librdkafka value: ``{env: LAGWATCH_KAFKA_<CLUSTER>_<KEY>}``
in its place (the default), or nothing (``omit``); an import reads the references from the
environment and keeps a stored secret the file leaves out."""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.monitoring.cluster_config import apply_config, current_config
from dashboard.monitoring.config_file import ConfigError, dump_config, parse_config


class Command(BaseCommand):
    help = "Import or export the monitored clusters as YAML (SPEC §2.4)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        imp = sub.add_parser("import", help="create or update clusters from a YAML file")
        imp.add_argument("file", help="path, or - for standard input")
        exp = sub.add_parser("export", help="write every cluster as YAML")
        exp.add_argument("file", nargs="?", default="-", help="path, or - for standard output")
        exp.add_argument(
            "--secrets",
            choices=["env", "omit"],
            default="env",
            help="secret settings as {env: VARIABLE} references (default) or left out",
        )

    def handle(self, *args, **options) -> None:
        if options["action"] == "import":
            self._import(options["file"])
        else:
            text = dump_config(current_config(), options["secrets"])
            if options["file"] == "-":
                self.stdout.write(text, ending="")
            else:
                Path(options["file"]).write_text(text, encoding="utf-8")

    def _import(self, path: str) -> None:
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}") from exc
        try:
            clusters = parse_config(text)
        except ConfigError as exc:
            raise CommandError(f"{path}: {exc}; nothing was changed") from exc
        outcome = apply_config(clusters)
        for verb, names in outcome.items():
            if names:
                self.stdout.write(f"{verb}: {', '.join(names)}")

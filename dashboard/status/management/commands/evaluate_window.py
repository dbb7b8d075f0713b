"""``manage.py evaluate_window FILE.json`` (or ``-`` for stdin): why a partition has its status.

A thin shell around ``spark_jobs.evaluator``, the same function the Spark status job runs, so
the verdict a user reproduces here is the one the dashboard showed. The input format is in
docs/EVALUATOR.md.
"""

import json
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser

from spark_jobs.evaluator import WindowInputError, evaluate_document


class Command(BaseCommand):
    help = (
        "Evaluate partition windows (JSON from FILE, or - for stdin) with Lagwatch's status "
        "rules and print each status, diagnosis and reason as JSON."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the JSON document to evaluate, or - to read stdin")

    def handle(self, *args, file: str, **options) -> None:
        text = self._read(file)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CommandError(
                f"evaluate_window: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}",
                returncode=2,
            ) from exc
        except (ValueError, RecursionError) as exc:
            # Valid JSON Python will not read: an integer of more than 4,300 digits, or
            # arrays nested deeper than the recursion limit.
            problem = "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise CommandError(
                f"evaluate_window: cannot read the JSON: {problem}", returncode=2
            ) from exc
        try:
            result = evaluate_document(doc)
        except WindowInputError as exc:
            raise CommandError(f"evaluate_window: {exc}", returncode=2) from exc
        self.stdout.write(json.dumps(result, indent=2))

    def _read(self, file: str) -> str:
        if file == "-":
            return sys.stdin.read()
        try:
            with open(file, encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"evaluate_window: cannot read {file}: {exc}", returncode=2) from exc

"""``manage.py spark_job status|rollups [--window 1h]``: one Spark job run, synchronously.

The very code path beat's tasks take (``dashboard.status.runs.run_job``): the run is recorded, takes
the job's lock and loads its results the same way. Prints the recorded run as JSON. Exit status: 0
when the run succeeded, 1 when it failed (the error is printed; the previous results stay), 3 when
another run of the job was in progress and this one was skipped (``--wait 600`` waits up to ten
minutes for that run to end instead: beat's runs keep going while an operator runs one by hand).
"""

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.monitoring.models import SparkJobOutcome
from dashboard.status.runs import JOBS, parse_window, run_job

EXIT_SKIPPED = 3


class Command(BaseCommand):
    help = "Run one Spark job (status or rollups) now, as beat would, and record the run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job", choices=JOBS)
        parser.add_argument(
            "--window",
            help="how much of the sample log to read, like 30m, 1h or 2d (default: the "
            "settings' LAGWATCH_STATUS_LOOKBACK_S or LAGWATCH_ROLLUPS_WINDOW_S)",
        )
        parser.add_argument(
            "--wait",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="wait up to SECONDS for a run of the job in progress to end (default: skip)",
        )

    def handle(self, *args, job: str, window: str | None, wait: float, **options) -> None:
        window_s = None
        if window is not None:
            try:
                window_s = parse_window(window)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        run = run_job(job, window_s, wait_s=max(0.0, wait))
        self.stdout.write(json.dumps(run.as_dict(), ensure_ascii=False))
        if run.outcome == SparkJobOutcome.FAILED:
            raise CommandError(f"spark job {job} failed: {run.error}")
        if run.outcome == SparkJobOutcome.SKIPPED:
            raise CommandError(
                f"spark job {job} skipped: another run is in progress", returncode=EXIT_SKIPPED
            )

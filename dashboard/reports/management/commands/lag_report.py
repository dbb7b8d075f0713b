"""``manage.py lag_report``: export a lag report from the command line (SPEC §9).

Exit codes: 0 done; 2 bad input (the message names the flag); 1 no such cluster, or the
report could not be built.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.monitoring.models import Cluster
from dashboard.reports.build import report_chunks, sample_log
from dashboard.reports.spec import FORMATS, SpecError, parse_format, parse_spec

FLAGS = {
    "cluster": "--cluster",
    "groups": "--group",
    "group": "--group",
    "topics": "--topic",
    "topic": "--topic",
    "sources": "--source",
    "source": "--source",
    "since": "--since",
    "start": "--start",
    "end": "--end",
    "resolution": "--resolution",
    "format": "--format",
}


class Command(BaseCommand):
    help = (
        "Export a lag report (columns time, cluster, source, group, topic, partition, "
        "committed, latest, lag, time_lag_s, status) from the sample log."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, help="cluster name")
        parser.add_argument(
            "--group", action="append", default=[], help="group name or pattern (repeatable)"
        )
        parser.add_argument(
            "--topic", action="append", default=[], help="topic name or pattern (repeatable)"
        )
        parser.add_argument(
            "--source", action="append", default=[], help="kafka, zookeeper or storm (repeatable)"
        )
        parser.add_argument("--since", default="", help="range ending now: 90m, 24h, 7d")
        parser.add_argument("--start", default="", help="range start, ISO-8601 (UTC if no zone)")
        parser.add_argument("--end", default="", help="range end, ISO-8601 (default: now)")
        parser.add_argument("--resolution", default="raw", help="raw, 1m, 5m, 1h, 1d…")
        parser.add_argument("--format", default="csv", help=f"one of {', '.join(FORMATS)}")
        parser.add_argument("--output", default="-", help="file to write, - for stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        data = {
            "cluster": options["cluster"],
            "groups": options["group"],
            "topics": options["topic"],
            "sources": options["source"],
            "since": options["since"],
            "start": options["start"],
            "end": options["end"],
            "resolution": options["resolution"],
        }
        data = {k: v for k, v in data.items() if v not in ("", [], None)}
        try:
            spec = parse_spec(data)
            fmt = parse_format(options["format"])
        except SpecError as exc:
            flag = FLAGS.get(exc.field, exc.field)
            raise CommandError(f"{flag}: {exc.message}", returncode=2) from None
        if not Cluster.objects.filter(name=spec.cluster).exists() and not sample_log().hours(
            spec.cluster
        ):
            raise CommandError(f"--cluster: no cluster named {spec.cluster!r}", returncode=1)

        output = options["output"]
        counters: list = []
        chunks = report_chunks(spec, fmt, counter_out=counters)
        if output == "-":
            if fmt in ("parquet", "xlsx") and sys.stdout.isatty():
                raise CommandError(
                    f"--output: refusing to write {fmt} to a terminal; give a file", returncode=2
                )
            out = sys.stdout.buffer  # bytes: the report is not text for Parquet and XLSX
            for chunk in chunks:
                out.write(chunk)
            out.flush()
        else:
            directory = os.path.dirname(os.path.abspath(output))
            if not os.path.isdir(directory):
                raise CommandError(f"--output: no directory {directory!r}", returncode=2)
            part = f"{output}.part"
            try:
                with open(part, "wb") as out:
                    for chunk in chunks:
                        out.write(chunk)
                os.replace(part, output)
            except BaseException:
                if os.path.exists(part):
                    os.unlink(part)
                raise
        rows = counters[0].rows if counters else 0
        where = "stdout" if output == "-" else output
        self.stderr.write(f"lag_report: {rows} rows ({fmt}) to {where}")

"""``manage.py alerts_config import FILE|-`` (channels, rules, silences as YAML),
``export [--secrets env|omit]`` (webhook URLs as environment references, or left out),
``alerts [--state S] [--json]`` (alerts with their deliveries, for scripts), ``evaluate`` (run
the rules now). Bad input: exit code 2, nothing changed."""

import json
import sys
from pathlib import Path

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.alerts import config_file
from dashboard.alerts.evaluation import evaluate
from dashboard.alerts.messages import alert_document
from dashboard.alerts.models import OPEN_STATES, Alert


class Command(BaseCommand):
    help = "Configure alerts from YAML, list alerts, evaluate the rules (docs/ALERTS.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        imp = sub.add_parser("import", help="create or update channels/rules, add silences")
        imp.add_argument("file", help="path, or - for standard input")
        exp = sub.add_parser("export", help="the configuration as YAML (no webhook URL in it)")
        exp.add_argument(
            "--secrets",
            choices=["env", "omit"],
            default="env",
            help="webhook URLs as {env: VARIABLE} references (default) or left out",
        )
        lst = sub.add_parser("alerts", help="alerts with their history and deliveries")
        lst.add_argument("--state", choices=["open", "firing", "acknowledged", "resolved", "all"],
                         default="all")  # fmt: skip
        lst.add_argument("--json", action="store_true")
        sub.add_parser("evaluate", help="evaluate the rules against the current statuses now")

    def handle(self, *args, **options) -> None:
        action = options["action"]
        if action == "import":
            self._import(options["file"])
        elif action == "export":
            doc = config_file.export(options["secrets"])
            self.stdout.write(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), ending="")
        elif action == "alerts":
            self._alerts(options["state"], options["json"])
        else:
            report = evaluate()
            self.stdout.write(json.dumps(report.__dict__))

    def _import(self, path: str) -> None:
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}", returncode=2) from exc
        try:
            done = config_file.apply(config_file.parse(text))
        except config_file.AlertsConfigError as exc:
            raise CommandError(f"{path}: {exc}; nothing was changed", returncode=2) from exc
        for verb, names in done.items():
            if names:
                self.stdout.write(f"{verb}: {', '.join(names)}")

    def _alerts(self, state: str, as_json: bool) -> None:
        alerts = Alert.objects.order_by("pk").prefetch_related("events", "deliveries__attempt_log")
        if state == "open":
            alerts = alerts.filter(state__in=OPEN_STATES)
        elif state != "all":
            alerts = alerts.filter(state=state)
        docs = []
        for a in alerts:
            doc = alert_document(a, f"/alerts/{a.pk}/")
            doc["silenced"] = a.silenced
            doc["events"] = [{"at": e.at.isoformat(), "kind": e.kind, "actor": e.actor,
                              "message": e.message} for e in a.events.all()]  # fmt: skip
            doc["deliveries"] = [
                {"channel": d.channel_name, "notice": d.notice, "state": d.state,
                 "attempts": [{"number": t.number, "at": t.at.isoformat(), "ok": t.ok,
                               "error": t.error, "retry_in_s": t.retry_in_s}
                              for t in d.attempt_log.all()]}
                for d in a.deliveries.all()
            ]  # fmt: skip
            docs.append(doc)
        if as_json:
            self.stdout.write(json.dumps({"alerts": docs}))
            return
        for d in docs:
            self.stdout.write(f"#{d['id']} {d['state']:<12} {d['severity']:<8} {d['title']}")

"""``manage.py assignment_whatif --cluster C --group G [--source S] [--json]``: how a group's
partitions and lag spread over its members, and what each of Kafka's assignors would assign to
them now (the group page's "Assignment balance" in a terminal, hence in the pages' app, with
their formatting; docs/DASHBOARD.md). ``--json`` prints the document that
``/api/v1/groups/<id>/whatif/`` serves (``dashboard.whatif.document``;
docs/API.md). Unknown cluster or group, or a name several sources use without ``--source``:
exit code 2, nothing printed on stdout.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.formatting import duration, number, percent
from dashboard.monitoring.models import Cluster, ConsumerGroup, SourceKind
from dashboard.whatif import group_report
from dashboard.whatif.document import ROW_FIELDS, whatif_document
from dashboard.whatif.whatif import label


def _fail(message: str) -> CommandError:
    return CommandError(f"assignment_whatif: {message}", returncode=2)


def _name(text: object) -> str:
    """A name from the monitored system, on one line whatever it holds."""
    text = str(text)
    return text if text.isprintable() else repr(text)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


class Command(BaseCommand):
    help = "A group's assignment balance and what Kafka's assignors would assign it now."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, help="cluster name")
        parser.add_argument(
            "--group", required=True, help="group name (exactly as the source gives it)"
        )
        parser.add_argument("--source", choices=SourceKind.values, help="when several have it")
        parser.add_argument("--json", action="store_true", help="JSON output")

    def handle(self, *args, cluster: str, group: str, source: str | None, **options) -> None:
        g = self._group(cluster, group, source)
        rows = list(g.partitions.order_by("topic", "partition").values(*ROW_FIELDS))
        report = group_report(g, rows)
        head = {"id": g.pk, "cluster": cluster, "source": g.source, "group": g.name,
                "assignor": g.assignor or None, "partitions": len(rows)}  # fmt: skip
        if options["json"]:
            document = whatif_document(g, cluster, rows)
            self.stdout.write(json.dumps(document, indent=2, ensure_ascii=False))
        else:
            self.stdout.write("\n".join(self._text(head, report)))

    def _group(self, cluster: str, name: str, source: str | None) -> ConsumerGroup:
        if not Cluster.objects.filter(name=cluster).exists():
            raise _fail(f"unknown cluster {cluster!r}")
        groups = ConsumerGroup.objects.filter(cluster__name=cluster, name=name)
        if source is not None:
            groups = groups.filter(source=source)
        found = list(groups.order_by("source"))
        if not found:
            raise _fail(f"no group {name!r} in cluster {cluster!r}")
        if len(found) > 1:
            sources = ", ".join(g.source for g in found)
            raise _fail(f"{len(found)} groups named {name!r} ({sources}): say which with --source")
        return found[0]

    def _text(self, head: dict[str, Any], report: dict[str, Any]) -> list[str]:
        b, what_if = report["balance"], report["what_if"] or []
        lines = [
            f"{_name(head['group'])} ({head['source']}, cluster {_name(head['cluster'])}): "
            f"{len(b['members'])} members, {head['partitions']} partitions"
            + (f", assignor {_name(head['assignor'])}" if head["assignor"] else ""),
            "",
        ]
        if not b["members"]:
            return [
                *lines,
                f"No member known; {b['unowned']['partitions']} partitions held by nobody.",
            ]
        counts = [{m["member_id"]: m["partitions"] for m in w["members"] or []} for w in what_if]
        table = [["member", "partitions", "lag", "time lag", "share", *(label(w) for w in what_if)]]
        for m in b["members"]:
            table.append(
                [_name(m["member_id"]), number(m["partitions"]), number(m["lag"]),
                 duration(m["time_lag_s"]), percent(m["lag_share"]),
                 *(number(c.get(m["member_id"])) for c in counts)]
            )  # fmt: skip
        if what_if:
            table.append(["moved", "", "", "", "", *(number(w["moved"]) for w in what_if)])
            table.append(
                ["unowned given out", "", "", "", "",
                 *(number(w["unowned_assigned"]) for w in what_if)]
            )  # fmt: skip
        lines += _table(table)
        lines.append("")
        lines.append(
            f"Imbalance {number(b['partitions_imbalance'])}× (most {b['partitions_max']}, "
            f"mean {b['partitions_mean']}); "
            + (
                f"busiest by lag {_name(b['busiest_member'])} "
                f"({percent(b['busiest_lag_share'])} of the group's lag)"
                if b["busiest_member"] is not None
                else "no member holds any lag"
            )
            + (
                f"; {b['unowned']['partitions']} partitions held by nobody "
                f"(lag {number(b['unowned']['lag'])})"
                if b["unowned"]["partitions"]
                else ""
            )
            + "."
        )
        if what_if:
            lines.append(f"What-if subscriptions: {report['what_if_subscriptions']}.")
            lines += [f"{label(w)}: {w['note']}." for w in what_if if w["note"]]
        return lines

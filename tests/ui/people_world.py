"""Data for the browser test of people's pages (tests/ui/test_people_browser.py), written
into its lab stack's database from a process of its own (``python -m tests.ui.people_world``
with the stack's environment): a cluster with groups, partitions and their history, so
every page has its charts; alerts, a rule, a channel, a silence. Prints the ids as JSON."""

from __future__ import annotations

import json
from datetime import timedelta


def seed() -> dict[str, int]:
    from django.utils import timezone

    from dashboard.alerts.models import Alert, Channel, Rule, Silence
    from tests.ui import world

    cluster = world.cluster("prod")
    world.health(cluster)
    stuck = world.group(cluster, "billing", status="ERR")
    parts = world.partitions(stuck, 4, status="STOP", lag=40)
    world.samples(parts, points=12)
    healthy = world.group(cluster, "payments")
    world.samples(world.partitions(healthy, 2), points=12)
    world.spout_samples(cluster, "topo-1", "kafka-spout")
    rule = Rule.objects.create(name="stuck", statuses=["STOP"])
    channel = Channel.objects.create(name="ops", kind="email", recipients="ops@example.com")
    now = timezone.now()
    alert = Alert.objects.create(
        rule=rule, rule_name="stuck", subject_key="k1", level="partition", cluster="prod",
        group="billing", topic="orders", partition=0, severity="critical",
        title="billing orders/0 STOP", status="STOP", started_at=now, fired_at=now,
    )  # fmt: skip
    Silence.objects.create(until=now + timedelta(hours=1), reason="maintenance")
    return {"cluster": cluster.pk, "group": stuck.pk, "partition": parts[0].pk,
            "alert": alert.pk, "rule": rule.pk, "channel": channel.pk}  # fmt: skip


if __name__ == "__main__":
    import django

    django.setup()
    print(json.dumps(seed()))

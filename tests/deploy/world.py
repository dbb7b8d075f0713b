"""The world the tests of deploy/ serve on /metrics: the API tests' world (tests/api/world.py)
and what only the dashboards read."""

from __future__ import annotations

from datetime import timedelta

from dashboard.monitoring import group_totals
from dashboard.monitoring.models import (
    CollectedCycle,
    ConsumerGroup,
    LagRollup,
    PartitionState,
    SparkJobRun,
)
from tests.api.world import World, build_world


def dashboard_world() -> World:
    """The API tests' world, plus what only the dashboards read: a stored cycle, trends of
    the group and its partitions, retention forecasts (one under the cluster's threshold) and
    a rollups run. The poll interval is a minute, so the stored cycle stays within three polls
    for the whole test (no collection-stopped alert)."""
    world = build_world()
    prod = world.clusters["prod"]
    prod.poll_interval_s = 60
    prod.save(update_fields=["poll_interval_s"])
    CollectedCycle.objects.create(cluster=prod, at=world.now, collected_by="test:1")
    billing = world.groups["billing"]
    PartitionState.objects.filter(group=billing, topic="invoices", partition=1).update(
        retention_left_s=1200.0  # under retention_risk_s (3600): RETENTION_RISK
    )
    PartitionState.objects.filter(group=billing, topic="invoices", partition=0).update(
        retention_left_s=86000.0
    )
    group_totals.refresh(ConsumerGroup.objects.values_list("id", flat=True))
    trend = {"produce_per_s": 12.0, "consume_per_s": 10.0, "lag_slope_per_s": 2.0, "eta_s": 600.0}
    LagRollup.objects.create(cluster="prod", level="group", source="kafka", group="billing",
                             resolution="1m", bucket_start=world.now.replace(second=0),
                             lag=450, **trend)  # fmt: skip
    LagRollup.objects.bulk_create(
        LagRollup(cluster="prod", level="partition", source="kafka", group="billing",
                  topic="invoices", partition=n, resolution="1h",
                  bucket_start=world.now.replace(minute=0, second=0), lag=50 * (n + 1), **trend)
        for n in (0, 1)
    )  # fmt: skip
    SparkJobRun.objects.create(job="rollups", started_at=world.now - timedelta(minutes=3),
                               finished_at=world.now - timedelta(minutes=2), duration_s=40.0,
                               window_s=7200, input_rows=4321, output_rows=300,
                               outcome="ok")  # fmt: skip
    return world

"""/metrics: each cluster's newest stored cycle beside its poll interval, the two figures a
Prometheus rule needs to tell that collection stopped (deploy/prometheus/; the rule's threshold
is checked against the sources page's in tests/deploy/)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from dashboard.monitoring.models import CollectedCycle
from tests.api.test_metrics import labels, scrape
from tests.api.world import World

pytestmark = pytest.mark.django_db


def test_newest_cycle_and_poll_interval_per_cluster(client: Client, world: World) -> None:
    prod = world.clusters["prod"]
    for seconds_ago in (40, 30):
        CollectedCycle.objects.create(
            cluster=prod, at=world.now - timedelta(seconds=seconds_ago), collected_by="h:1"
        )
    m = scrape(client)
    assert m["lagwatch_cluster_poll_interval_seconds"] == {labels(cluster="prod"): 10}
    newest = (world.now - timedelta(seconds=30)).timestamp()
    assert m["lagwatch_cluster_last_cycle_timestamp_seconds"] == {labels(cluster="prod"): newest}


def test_a_cluster_never_collected_has_an_interval_and_no_cycle(
    client: Client, world: World
) -> None:
    """The rule's "never collected" half: an interval with no cycle beside it. A disabled
    cluster (staging) is not collected, so it has neither and no rule can fire for it."""
    m = scrape(client)
    assert labels(cluster="prod") in m["lagwatch_cluster_poll_interval_seconds"]
    assert labels(cluster="staging") not in m["lagwatch_cluster_poll_interval_seconds"]
    assert "lagwatch_cluster_last_cycle_timestamp_seconds" not in m

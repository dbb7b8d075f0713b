"""A share group's deliveries (``__share_group_state``, KIP-932) from the Kafka adapter's
records through the store and out again: the sample log's columns, the stored row,
``lagwatch_status --json``, ``/api/v1`` group detail, the group page and ``/metrics``."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from collectors.assemble import CycleMemory, assemble_cycle
from collectors.cycle.write import sample_rows
from collectors.figures import TimeTables
from collectors.rebalance import RebalanceTracker
from collectors.records import SHARE_STATE_COLUMNS, CollectionResult, ShareStateFigures
from dashboard.api.models import TokenScope
from dashboard.api.tokens import create_token
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from dashboard.store.rows import store_cycle
from tests.dashboard.test_share_groups_stored import CYCLE_MS, _cycle

pytestmark = pytest.mark.django_db

POISONED = ShareStateFigures(
    max_deliveries=5, redelivered_offset=42, redelivered_count=3, archived=1,
    archived_offset=17, archived_count=5, archived_ms=CYCLE_MS - 60_000, delivery_limit=5,
)  # fmt: skip
DOCUMENT = {
    "max_deliveries": 5,
    "redelivered": {"offset": 42, "deliveries": 3},
    "archived": 1,
    "last_archived": {"offset": 17, "deliveries": 5, "at": "2027-01-15T07:59:00Z"},
    "delivery_limit": 5,
}


def _outcome(figures: ShareStateFigures | None) -> Any:
    result: CollectionResult = _cycle(lag_reported=True)
    for commit in result.commits:
        commit.share_state = figures
    memory = CycleMemory(TimeTables(), RebalanceTracker())
    return assemble_cycle("c", CYCLE_MS, CYCLE_MS + 100, [result], memory)


@pytest.fixture
def cluster() -> Cluster:
    return Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")


@pytest.mark.parametrize(
    ("figures", "values"),
    [
        (POISONED, [5, 42, 3, 1, 17, 5, CYCLE_MS - 60_000, 5]),
        (ShareStateFigures(), [None, None, None, 0, None, None, None, None]),
        (None, [None] * 8),
    ],
    ids=["poisoned", "nothing to say", "not read"],
)
def test_sample_log_and_store_carry_the_figures(
    cluster: Cluster, figures: ShareStateFigures | None, values: list
) -> None:
    [row] = sample_rows(_outcome(figures))
    assert [row[name] for name in SHARE_STATE_COLUMNS] == values
    store_cycle(cluster, _outcome(figures))
    stored = PartitionState.objects.get(group__name="jobs-workers")
    assert [getattr(stored, name) for name in SHARE_STATE_COLUMNS] == values


def test_a_changed_figure_rewrites_the_row(cluster: Cluster) -> None:
    """The store writes a row only where a figure changed: a new archived record is one."""
    store_cycle(cluster, _outcome(ShareStateFigures()))
    store_cycle(cluster, _outcome(POISONED))
    stored = PartitionState.objects.get(group__name="jobs-workers")
    assert (stored.share_archived, stored.share_archived_offset) == (1, 17)


def test_every_reader_shows_them(cluster: Cluster, admin_client: Client, client: Client) -> None:
    store_cycle(cluster, _outcome(POISONED))
    group = ConsumerGroup.objects.get(name="jobs-workers")

    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    [p] = [p for p in json.loads(out.getvalue())["partitions"] if p["group"] == "jobs-workers"]
    assert p["share_state"] == DOCUMENT

    secret = create_token("reader", TokenScope.READ)[1]
    answer = client.get(
        f"/api/v1/groups/{group.id}/", headers={"Authorization": f"Bearer {secret}"}
    ).json()
    [partition] = answer["partition_list"]
    assert partition["share_state"] == DOCUMENT

    page = admin_client.get(f"/groups/{group.id}/").content.decode()
    assert "Deliveries" in page
    assert "max 5 of 5; offset 42 delivered 3×; 1 archived, last offset 17 after 5×" in page
    stored = PartitionState.objects.get(group=group)
    page = admin_client.get(f"/partitions/{stored.id}/").content.decode()
    assert "<h2>Deliveries</h2>" in page
    assert "offset 42, delivered 3×" in page and "of 5 (share.delivery.count.limit)" in page
    assert "(the newest: offset 17, after 5 deliveries, " in page


    text = Client().get("/metrics").content.decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    key = tuple(sorted({"cluster": "c", "source": "kafka", "group": "jobs-workers",
                        "topic": "jobs", "partition": "0"}.items()))  # fmt: skip
    assert samples[("lagwatch_partition_share_archived_records", key)] == 1
    assert samples[("lagwatch_partition_share_max_delivery_count", key)] == 5


def test_other_groups_have_none(cluster: Cluster) -> None:
    store_cycle(cluster, _outcome(None))
    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    [p] = [p for p in json.loads(out.getvalue())["partitions"] if p["group"] == "jobs-workers"]
    assert p["share_state"] is None
    text = Client().get("/metrics").content.decode()
    assert "lagwatch_partition_share_archived_records{" not in text


def test_a_partition_whose_state_was_not_read_says_so(cluster: Cluster, admin_client) -> None:
    store_cycle(cluster, _outcome(None))
    stored = PartitionState.objects.get(group__name="jobs-workers")
    page = admin_client.get(f"/partitions/{stored.id}/").content.decode()
    assert "<h2>Deliveries</h2>" in page and "has not been read for this partition" in page

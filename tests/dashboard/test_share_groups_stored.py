"""A share group (KIP-932) from the Kafka adapter's records through the cycle's assembly into
the store, and out again: ``lagwatch_status --json`` (type "share", members, start offsets,
the broker's lag or an upper bound said to be one), the group page and ``/metrics``."""

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
from collectors.kafka.share_groups import share_commits, share_snapshot
from collectors.kafka_wire import (
    ShareGroupDescription,
    ShareGroupOffsets,
    ShareMember,
    SharePartitionOffset,
)
from collectors.rebalance import RebalanceTracker
from collectors.records import CollectionResult, PartitionOffsets, Source
from dashboard.monitoring.membership import group_type
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from dashboard.store.rows import store_cycle

pytestmark = pytest.mark.django_db

CYCLE_MS = 1_800_000_000_000


def _cycle(lag_reported: bool) -> CollectionResult:
    described = ShareGroupDescription(
        group="jobs-workers",
        state="Stable",
        group_epoch=4,
        assignment_epoch=4,
        assignor="simple",
        members=(
            ShareMember("w-1", None, 4, "worker-a", "/10.0.0.1", ("jobs",), (("jobs", 0),)),
            ShareMember("w-2", None, 4, "worker-b", "/10.0.0.2", ("jobs",), (("jobs", 0),)),
        ),
    )
    progress = ShareGroupOffsets(
        "jobs-workers",
        (SharePartitionOffset("jobs", "id", 0, 40, 0, 25 if lag_reported else None),),
        lag_reported=lag_reported,
    )
    snapshot = share_snapshot(described, progress, coordinator="k:9092")
    result = CollectionResult(Source.KAFKA, CYCLE_MS, CYCLE_MS + 100)
    result.groups.append(snapshot)
    result.commits.extend(share_commits(snapshot, progress))
    result.offsets.append(PartitionOffsets("jobs", 0, 0, 100, CYCLE_MS + 50))
    return result


def _outcome(lag_reported: bool) -> Any:
    memory = CycleMemory(TimeTables(), RebalanceTracker())
    return assemble_cycle("c", CYCLE_MS, CYCLE_MS + 100, [_cycle(lag_reported)], memory)


def _store(cluster: Cluster, lag_reported: bool) -> None:
    store_cycle(cluster, _outcome(lag_reported))


@pytest.mark.parametrize(("reported", "bound"), [(True, False), (False, True)])
def test_the_sample_log_marks_a_share_partition_and_a_bounded_lag(
    reported: bool, bound: bool
) -> None:
    """What the status job reads: the row is a share group's (its ``committed`` a start
    offset), and its lag an upper bound when the broker reported none."""
    [row] = sample_rows(_outcome(reported))
    assert (row["group"], row["committed"]) == ("jobs-workers", 40)
    assert (row["share"], row["lag_upper_bound"]) == (True, bound)


@pytest.fixture
def cluster() -> Cluster:
    return Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")


@pytest.mark.parametrize(("reported", "lag", "bound"), [(True, 25, False), (False, 60, True)])
def test_a_share_group_stored_and_reported(
    cluster: Cluster, reported: bool, lag: int, bound: bool
) -> None:
    _store(cluster, reported)
    group = ConsumerGroup.objects.get(name="jobs-workers")
    assert (group.group_type, group.generation, group.assignment_epoch) == ("share", 4, 4)
    row = PartitionState.objects.get(group=group)
    assert (row.committed, row.lag, row.lag_upper_bound, row.alive) == (40, lag, bound, True)

    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    doc = json.loads(out.getvalue())
    [g] = [g for g in doc["groups"] if g["group"] == "jobs-workers"]
    assert (g["type"], g["members"], g["total_lag"]) == ("share", 2, lag)
    assert {m["client_id"] for m in g["member_details"]} == {"worker-a", "worker-b"}
    assert all(m["assignment"] == {"jobs": [0]} for m in g["member_details"])
    [p] = [p for p in doc["partitions"] if p["group"] == "jobs-workers"]
    assert (p["start_offset"], p["lag"], p["lag_upper_bound"]) == (40, lag, bound)


def test_the_group_page_and_metrics(cluster: Cluster, admin_client: Client) -> None:
    _store(cluster, lag_reported=False)
    group = ConsumerGroup.objects.get(name="jobs-workers")
    page = admin_client.get(f"/groups/{group.id}/").content.decode()
    assert "share (KIP-932" in page and "Start offset" in page and "≤ 60" in page
    assert "worker-a" in page and "worker-b" in page
    assert "Start offset moved" in page and "Last commit" not in page
    row = PartitionState.objects.get(group=group)
    partition_page = admin_client.get(f"/partitions/{row.id}/").content.decode()
    assert "Start offset" in partition_page and "Committed" not in partition_page
    assert "≤ 60" in partition_page and "Start offset moved" in partition_page

    text = Client().get("/metrics").content.decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    labels = {"cluster": "c", "source": "kafka", "group": "jobs-workers"}
    key = tuple(sorted({**labels, "topic": "jobs", "partition": "0"}.items()))
    assert samples[("lagwatch_partition_lag", key)] == 60
    generation = [v for (name, lab), v in samples.items()
                  if name == "lagwatch_group_generation" and ("type", "share") in lab]  # fmt: skip
    assert generation == [4]


def test_share_is_a_group_type_every_reader_shows() -> None:
    """A Kafka group's stored type "share" is passed on to every reader (/api/v1 too); a
    non-Kafka group has no type, and an unknown stored value is not passed on."""
    assert group_type("kafka", "share") == "share"
    assert group_type("zookeeper", "share") is None
    assert group_type("kafka", "queue") is None

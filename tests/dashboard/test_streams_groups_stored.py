"""A streams group (KIP-1071) from the Kafka adapter's records through the cycle's assembly into
the store, and out again: ``lagwatch_status --json`` (type "streams", members with their
process and tasks, the topology, committed offsets and lag as a consumer group's), /api/v1
and the group page."""

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
from collectors.kafka.streams_groups import streams_commits, streams_snapshot
from collectors.kafka_wire import (
    GroupOffsets,
    PartitionOffset,
    StreamsGroupDescription,
    StreamsMember,
    StreamsTasks,
    Subtopology,
)
from collectors.rebalance import RebalanceTracker
from collectors.records import CollectionResult, PartitionOffsets, Source
from dashboard.monitoring.membership import group_type, topology_detail
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from dashboard.store.cycle import _member
from dashboard.store.documents import member_document
from dashboard.store.rows import store_cycle

pytestmark = pytest.mark.django_db

CYCLE_MS = 1_800_000_000_000


def _member_of(member_id: str, process: str, active: tuple, standby: tuple = ()) -> StreamsMember:
    return StreamsMember(
        member_id=member_id,
        member_epoch=5,
        instance_id=None,
        rack_id=None,
        client_id=f"wordcount-{process}-StreamThread-1-consumer",
        client_host="/10.0.0.1",
        topology_epoch=0,
        process_id=process,
        user_endpoint=None,
        client_tags=(),
        task_offsets=(),
        task_end_offsets=(),
        assignment=StreamsTasks(active=active, standby=standby),
        target_assignment=StreamsTasks(active=active, standby=standby),
    )


DESCRIBED = StreamsGroupDescription(
    group="wordcount",
    state="Stable",
    group_epoch=6,
    assignment_epoch=6,
    assignor="sticky",
    members=(
        _member_of("s-1", "p-a", (("0", 0),), standby=(("0", 1),)),
        _member_of("s-2", "p-b", (("0", 1),)),
    ),
    topology_epoch=0,
    subtopologies=(Subtopology("0", ("words",), (), ("wordcount-counts-changelog",)),),
)
COMMITTED = GroupOffsets(
    "wordcount",
    0,
    (PartitionOffset("words", 0, 70, 0, ""), PartitionOffset("words", 1, 100, 0, "")),
)


def _outcome() -> Any:
    snapshot = streams_snapshot(DESCRIBED, COMMITTED, coordinator="k:9092")
    result = CollectionResult(Source.KAFKA, CYCLE_MS, CYCLE_MS + 100)
    result.groups.append(snapshot)
    result.commits.extend(streams_commits(snapshot, COMMITTED))
    result.offsets.append(PartitionOffsets("words", 0, 0, 100, CYCLE_MS + 50))
    result.offsets.append(PartitionOffsets("words", 1, 0, 100, CYCLE_MS + 50))
    memory = CycleMemory(TimeTables(), RebalanceTracker())
    return assemble_cycle("c", CYCLE_MS, CYCLE_MS + 100, [result], memory)


@pytest.fixture
def cluster() -> Cluster:
    cluster = Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")
    store_cycle(cluster, _outcome())
    return cluster


def test_the_sample_log_rows_are_a_consumer_groups() -> None:
    """What the status job reads: commits, not start offsets, and an exact lag."""
    rows = sorted(sample_rows(_outcome()), key=lambda r: r["partition"])
    assert [(r["committed"], r["lag"]) for r in rows] == [(70, 30), (100, 0)]
    assert not any(r["share"] or r["lag_upper_bound"] for r in rows)


def test_a_streams_group_stored(cluster: Cluster) -> None:
    group = ConsumerGroup.objects.get(name="wordcount")
    assert (group.group_type, group.generation, group.assignment_epoch) == ("streams", 6, 6)
    assert group.topology == {
        "epoch": 0,
        "subtopologies": [
            {
                "id": "0",
                "source_topics": ["words"],
                "repartition_sink_topics": [],
                "state_changelog_topics": ["wordcount-counts-changelog"],
            }
        ],
    }
    rows = {r.partition: r for r in PartitionState.objects.filter(group=group)}
    assert {p: (r.committed, r.lag, r.owner) for p, r in rows.items()} == {
        0: (70, 30, "s-1"),
        1: (100, 0, "s-2"),
    }
    s1 = next(m for m in group.members if m["member_id"] == "s-1")
    assert s1["process_id"] == "p-a" and s1["assignment"] == [["words", 0]]
    assert s1["tasks"] == {"active": [["0", 0]], "standby": [["0", 1]], "warmup": []}


def test_a_stored_member_reads_back_as_it_was() -> None:
    """The store rebuilds a collector's memory from its rows: the tasks come back too."""
    snapshot = streams_snapshot(DESCRIBED, COMMITTED)
    for member in snapshot.members:
        assert _member(json.loads(json.dumps(member_document(member)))) == member


def test_lagwatch_status_json(cluster: Cluster) -> None:
    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    doc = json.loads(out.getvalue())
    [g] = [g for g in doc["groups"] if g["group"] == "wordcount"]
    assert (g["type"], g["members"], g["total_lag"], g["state"]) == ("streams", 2, 30, "Stable")
    assert g["topology"]["subtopologies"][0]["source_topics"] == ["words"]
    s1 = next(m for m in g["member_details"] if m["member_id"] == "s-1")
    assert s1["process_id"] == "p-a"
    assert s1["tasks"] == {"active": {"0": [0]}, "standby": {"0": [1]}, "warmup": {}}
    assert s1["assignment"] == {"words": [0]}
    parts = sorted((p for p in doc["partitions"] if p["group"] == "wordcount"),
                   key=lambda p: p["partition"])  # fmt: skip
    assert [(p["committed"], p["lag"]) for p in parts] == [(70, 30), (100, 0)]


def test_api_v1(cluster: Cluster, admin_client: Client) -> None:
    group = ConsumerGroup.objects.get(name="wordcount")
    answer = admin_client.get(f"/api/v1/groups/{group.id}/").json()
    assert answer["type"] == "streams"
    assert answer["topology"]["epoch"] == 0
    s2 = next(m for m in answer["member_details"] if m["member_id"] == "s-2")
    assert s2["process_id"] == "p-b" and s2["tasks"]["active"] == {"0": [1]}


def test_metrics_name_the_type(cluster: Cluster) -> None:
    text = Client().get("/metrics").content.decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    generation = [v for (name, labels), v in samples.items()
                  if name == "lagwatch_group_generation" and ("type", "streams") in labels]  # fmt: skip
    assert generation == [6]
    key = tuple(sorted({"cluster": "c", "source": "kafka", "group": "wordcount",
                        "topic": "words", "partition": "0"}.items()))  # fmt: skip
    assert samples[("lagwatch_partition_lag", key)] == 30


def test_the_group_page_shows_the_topology_and_tasks(
    cluster: Cluster, admin_client: Client
) -> None:
    group = ConsumerGroup.objects.get(name="wordcount")
    page = admin_client.get(f"/groups/{group.id}/").content.decode()
    assert "streams (KIP-1071" in page and "Topology and tasks" in page
    assert "wordcount-counts-changelog" in page and "p-a" in page and "p-b" in page
    assert 'id="tasks-table"' in page and "reconciling" not in page.split("tasks-table")[1]


def test_other_groups_keep_their_documents(cluster: Cluster, admin_client: Client) -> None:
    assert group_type("kafka", "streams") == "streams"
    assert topology_detail(None) is None
    assert topology_detail({"epoch": 2, "subtopologies": None}) == {
        "epoch": 2,
        "subtopologies": None,
    }
    assert topology_detail({"epoch": "x", "subtopologies": [{"id": 3}, "odd"]}) == {
        "epoch": None,
        "subtopologies": [],
    }

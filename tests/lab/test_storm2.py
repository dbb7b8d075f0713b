"""The product against a real Storm 2.8 topology (``lab/storm2/``): storm-kafka-client's
KafkaSpout in a LocalCluster reads the lab's own broker and commits to it, as a consumer group
whose commit metadata names the topology instance.

One stack for the module (ZooKeeper, the lab's Kafka, the ``storm2`` service, and the product
polling every 5 s with a status run every 15 s and a window of 10 commits, as
``tests/lab_world.py``). The spout's group must appear under the ``lab`` cluster as a Kafka
group linked to the topology its commits name, its partitions judged OK on a full window.
Marked ``storm`` (a Storm beside the product): run by ``scripts/test-storm``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from collectors.kafka_wire import fetch_committed_offsets
from lab.stack import Stack
from lab.storm2.world import GROUP, PARTITIONS, TOPIC, TOPOLOGY
from tests.lab_world import JOB_S, POLL_S, WINDOW, Browser, LabWorld, environment

pytestmark = [pytest.mark.lab, pytest.mark.storm]

SERVICES = ["zookeeper", "kafka", "storm2", "redis", "web", "worker", "collector", "beat"]
CLUSTER = "lab"
# What storm-kafka-client 2.8.2's CommitMetadataManager writes (Jackson, field order), exactly.
METADATA = re.compile(
    r'\{"topologyId":"(?P<id>' + re.escape(TOPOLOGY) + r'-\d+-\d+)","taskId":(?P<task>\d+),'
    r'"threadName":"Thread-\d+-kafka-spout-executor\[(?P=task), (?P=task)\]"\}'
)


def spout_group(doc: dict[str, Any]) -> dict[str, Any] | None:
    found = [g for g in doc["groups"] if g["cluster"] == CLUSTER and g["group"] == GROUP]
    return found[0] if found else None


def spout_partitions(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(
        (p for p in doc["partitions"] if p["cluster"] == CLUSTER and p["group"] == GROUP),
        key=lambda p: p["partition"],
    )


def judged_ok(doc: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The spout's partitions once every one is judged OK on a full window of commits."""
    parts = spout_partitions(doc)
    done = len(parts) == PARTITIONS and all(
        p["evaluated_at"] and p["complete"] == 1.0 and p["status"] == "OK" for p in parts
    )
    return parts if done else None


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabWorld]:
    stack = Stack(tmp_path_factory.mktemp("storm2"))
    try:
        with environment(
            LAGWATCH_LAB_POLL_S=str(POLL_S),
            LAGWATCH_STATUS_EVERY_S=str(JOB_S),
            LAGWATCH_STATUS_WINDOW_COMMITS=str(WINDOW),
        ):
            yield LabWorld(stack, stack.up(SERVICES))
    finally:
        stack.down()


def test_the_real_spouts_commit_metadata(world: LabWorld) -> None:
    """Read straight from the broker: every partition's commit carries the spout's document,
    naming one topology instance and the task that committed it."""
    answer = fetch_committed_offsets(world.endpoints["kafka"], [GROUP], timeout_s=10)[GROUP]
    commits = [p for p in answer.offsets if p.topic == TOPIC and p.has_commit]
    assert len(commits) == PARTITIONS, answer
    matches = [METADATA.fullmatch(p.metadata or "") for p in commits]
    assert all(matches), [p.metadata for p in commits]
    assert len({m["id"] for m in matches if m}) == 1
    print("storm2: commit metadata", json.dumps([p.metadata for p in commits]), flush=True)


def test_the_spouts_group_is_linked_to_its_topology_and_judged_ok(world: LabWorld) -> None:
    parts = world.wait_for_verdict(
        judged_ok, 420, f"{GROUP}'s partitions judged OK on a full window"
    )
    answer = fetch_committed_offsets(world.endpoints["kafka"], [GROUP], timeout_s=10)[GROUP]
    topology = json.loads(answer.offsets[0].metadata or "{}")["topologyId"]
    doc = world.status()
    group = spout_group(doc)
    assert group is not None
    # A Kafka group (the spout assigns its partitions itself: Empty, no members)...
    assert (group["source"], group["type"], group["state"]) == ("kafka", "classic", "Empty")
    assert group["members"] == 0
    # ... linked to the topology instance its commits name.
    assert (group["owner"], group["topology_id"]) == (TOPOLOGY, topology)
    assert group["status"] == "OK"
    assert all(p["lag"] is not None and not p["diagnosis"] for p in parts), parts
    # /api/v1 and the group page say so.
    browser = Browser(world.web_url)
    browser.login(*world.login)
    status, body, _ = browser.get(f"/api/v1/groups/?cluster={CLUSTER}&source=kafka&name={GROUP}")
    assert status == 200
    [api_group] = json.loads(body)["results"]
    assert (api_group["owner"], api_group["topology_id"]) == (TOPOLOGY, topology)
    status, page, _ = browser.get(f"/groups/{api_group['id']}/")
    assert status == 200
    assert f"Storm 2 spout of topology {TOPOLOGY} ({topology})" in page.decode()

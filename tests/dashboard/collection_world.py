"""A small monitored world for whole collection cycles against the real lab services.

One topic with known offsets, a Kafka group, a Storm spout znode and a ZooKeeper consumer
group reading it; helpers to read back what a cycle stored. Shared by test_collection.py and
test_collection_faults.py; ``world`` and ``cluster`` are registered as fixtures by this
package's conftest.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from collectors.cycle.runner import forget_clusters
from dashboard.monitoring.models import Cluster
from tests.collectors.test_kafka_source import alter_offsets, create_topic, produce
from tests.collectors.test_zookeeper_source import spout_data

Figures = tuple[int | None, int | None, int | None]  # committed, latest, lag


class World:
    """What the world holds, and the figures a correct cycle must show for it."""

    def __init__(self, zk: KazooClient, admin, bootstrap: str) -> None:
        tag = uuid.uuid4().hex[:8]
        self.tag = tag
        self.topic = create_topic(admin, 2)
        produce(bootstrap, self.topic, {0: 5, 1: 3})
        self.group = f"grp-{tag}"
        alter_offsets(admin, self.group, {(self.topic, 0): 2, (self.topic, 1): 3})
        self.root = f"/spouts-{tag}"
        self.spout = "orders-spout"
        self.topology = ("orders-topo-1-1700000000", "orders-topo")
        zk.create(self.spout_path, self.spout_node(4), makepath=True)
        self.zk_group = f"zkc-{tag}"
        base = f"/consumers/{self.zk_group}"
        self._remove = [self.root, base]  # what cleanup() deletes
        zk.create(self.zk_offset_path, b"1", makepath=True)
        zk.create(
            f"{base}/ids/{self.zk_group}_host-1",
            b'{"version":1,"subscription":'
            + json.dumps({self.topic: 1}).encode()
            + b',"pattern":"static"}',
            makepath=True,
        )
        zk.create(
            f"{base}/owners/{self.topic}/1", f"{self.zk_group}_host-1-0".encode(), makepath=True
        )

    @property
    def spout_path(self) -> str:
        return f"{self.root}/{self.spout}/partition_0"

    @property
    def zk_offset_path(self) -> str:
        return f"/consumers/{self.zk_group}/offsets/{self.topic}/1"

    def spout_node(self, offset: int) -> bytes:
        return spout_data(self.topic, 0, offset, topology=self.topology)

    def expected(self) -> dict[tuple[str, str], dict[tuple[str, int], Figures]]:
        """(source, group) -> (topic, partition) -> (committed, latest, lag) as created."""
        return {
            ("kafka", self.group): {(self.topic, 0): (2, 5, 3), (self.topic, 1): (3, 3, 0)},
            ("storm", self.spout): {(self.topic, 0): (4, 5, 1)},
            ("zookeeper", self.zk_group): {(self.topic, 1): (1, 3, 2)},
        }

    def also_remove(self, path: str) -> None:
        """A znode a test added outside the world's root, to delete with the world."""
        self._remove.append(path)

    def cleanup(self, zk: KazooClient) -> None:
        # A test that failed during an outage may leave the session unusable: cleaning up
        # must not turn that failure into a second one.
        for path in self._remove:
            with contextlib.suppress(KazooException):
                zk.delete(path, recursive=True)


@pytest.fixture
def world(zk, admin, kafka_bootstrap) -> Iterator[World]:
    w = World(zk, admin, kafka_bootstrap)
    yield w
    w.cleanup(zk)


def make_cluster(
    world: World, zk_hosts: str, kafka_bootstrap: str, poll_interval_s: int
) -> Cluster:
    """The world's cluster. A source's deadline is min(LAGWATCH_SOURCE_TIMEOUT_S, poll
    interval), so a short interval keeps a dead source cheap."""
    return Cluster.objects.create(
        name=f"c-{uuid.uuid4().hex[:6]}",
        poll_interval_s=poll_interval_s,
        kafka_bootstrap_servers=kafka_bootstrap,
        zk_hosts=zk_hosts,
        storm_spout_roots=[world.root],
        zk_consumers=True,
    )


@pytest.fixture
def cluster(
    world: World, zk_hosts: str, kafka_bootstrap: str, settings, tmp_path
) -> Iterator[Cluster]:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    yield make_cluster(world, zk_hosts, kafka_bootstrap, poll_interval_s=10)
    forget_clusters()


def status_json(cluster: Cluster) -> str:
    """``lagwatch_status --json`` exactly as printed."""
    out = io.StringIO()
    call_command("lagwatch_status", "--json", "--cluster", cluster.name, stdout=out)
    return out.getvalue()


def status(cluster: Cluster) -> dict:
    return json.loads(status_json(cluster))


def rows(doc: dict, source: str, group: str) -> dict[tuple[str, int], dict]:
    return {
        (p["topic"], p["partition"]): p
        for p in doc["partitions"]
        if p["source"] == source and p["group"] == group
    }


def figures(doc: dict, source: str, group: str) -> dict[tuple[str, int], Figures]:
    return {k: (v["committed"], v["latest"], v["lag"]) for k, v in rows(doc, source, group).items()}


def logged_rows(sample_log_url: str, cluster: Cluster) -> list[dict[str, Any]]:
    """Every row of every file the sample log holds for ``cluster``, not deduplicated."""
    out: list[dict[str, Any]] = []
    for path in sorted(Path(sample_log_url).glob(f"cluster={cluster.name}/**/*.parquet")):
        out.extend(pq.ParquetFile(path).read().to_pylist())
    return out

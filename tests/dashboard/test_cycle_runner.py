"""The cycle runner's own mechanics through the ORM store, with fake sources (no services):
the sample-log write beside the database transaction, and the garbage-collection policy
around cycles."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator

import pytest
from django.db import DatabaseError

from collectors.cycle import gc_policy, runner
from collectors.cycle.runner import forget_clusters
from collectors.records import (
    CollectionResult,
    CommittedOffset,
    GroupSnapshot,
    PartitionOffsets,
    Source,
)
from collectors.sample_log import SampleLog
from dashboard.monitoring.models import Cluster
from dashboard.store import cycle as cycle_store
from dashboard.store.cycle import run_cluster_cycle
from tests.raw_points import stored_points

pytestmark = pytest.mark.django_db(transaction=True)

SLOT = 1_800_000_000_000


class FakeSources:
    """Stands for ClusterSources: one Kafka group with three partitions, always reachable."""

    gc_enabled_during_collect: list[bool] = []

    def __init__(self, settings) -> None:
        self.settings = settings

    def collect(self, now_ms: int) -> list[CollectionResult]:
        FakeSources.gc_enabled_during_collect.append(gc.isenabled())
        return [
            CollectionResult(
                source=Source.KAFKA, started_ms=now_ms, finished_ms=now_ms + 5,
                commits=[CommittedOffset(Source.KAFKA, "g", "t", p, 2) for p in range(3)],
                offsets=[PartitionOffsets("t", p, 0, 5, now_ms) for p in range(3)],
                groups=[GroupSnapshot(Source.KAFKA, "g", "Empty", topics=("t",))],
            )
        ]  # fmt: skip

    def close(self) -> None:
        pass


@pytest.fixture
def cluster(monkeypatch, settings, tmp_path) -> Iterator[Cluster]:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    monkeypatch.setattr(runner, "ClusterSources", FakeSources)
    FakeSources.gc_enabled_during_collect = []
    yield Cluster.objects.create(name="fake", kafka_bootstrap_servers="k:9092")
    forget_clusters()


def logged(settings) -> int:
    log = SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL)
    return log.read("fake").num_rows if log.hours("fake") else 0


def stored() -> int:
    return stored_points(group__cluster__name="fake")


def test_a_failed_sample_log_write_fails_the_cycle_and_its_retry_completes_it(
    cluster: Cluster, settings, monkeypatch
) -> None:
    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(SampleLog, "write_batch", broken)
        with pytest.raises(OSError, match="disk full"):
            run_cluster_cycle(cluster, SLOT)
    assert stored() == 3  # the transaction was not held back by the write
    assert logged(settings) == 0

    run_cluster_cycle(cluster, SLOT)  # the retry, same slot
    assert (stored(), logged(settings)) == (3, 3)


def test_a_failed_store_fails_the_cycle_once_the_write_has_ended(
    cluster: Cluster, settings, monkeypatch
) -> None:
    write_batch = SampleLog.write_batch
    ended: list[float] = []

    def slow(self, *args, **kwargs):
        time.sleep(0.2)
        try:
            return write_batch(self, *args, **kwargs)
        finally:
            ended.append(time.monotonic())

    def failing_store(cluster, outcome, stale):
        raise DatabaseError("database is locked")

    with monkeypatch.context() as m:
        m.setattr(SampleLog, "write_batch", slow)
        m.setattr(cycle_store, "store_cycle", failing_store)
        with pytest.raises(DatabaseError, match="locked"):
            run_cluster_cycle(cluster, SLOT)
        raised = time.monotonic()
    assert ended and ended[0] <= raised  # no write left running behind the failed cycle
    assert stored() == 0

    run_cluster_cycle(cluster, SLOT)  # the retry rewrites the same micro-batch: no sample twice
    assert (stored(), logged(settings)) == (3, 3)
    run_cluster_cycle(cluster, SLOT + 10_000)
    assert (stored(), logged(settings)) == (6, 6)


def test_no_collection_runs_during_a_cycle_and_the_collector_is_restored(
    cluster: Cluster,
) -> None:
    assert gc.isenabled()
    run_cluster_cycle(cluster, SLOT)
    assert FakeSources.gc_enabled_during_collect == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # the first cycle of the process froze what was alive

    gc.disable()  # whoever turned it off keeps it off
    try:
        run_cluster_cycle(cluster, SLOT + 10_000)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_cycles_keep_the_collector_off_until_the_last_ends() -> None:
    first_in, second_done, release = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with gc_policy.cycle_gc():
            first_in.set()
            release.wait(5)

    def second() -> None:
        first_in.wait(5)
        with gc_policy.cycle_gc():
            pass
        seen["after the second ended"] = gc.isenabled()
        second_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    second_done.wait(5)
    release.set()
    for t in threads:
        t.join(5)
    assert seen == {"after the second ended": False}  # the first was still running
    assert gc.isenabled()


def test_cyclic_garbage_of_a_cycle_is_collected_at_its_end(cluster: Cluster, monkeypatch) -> None:
    class Node:
        pass

    refs: list[weakref.ref] = []
    collect = FakeSources.collect

    def collect_making_a_cycle(self, now_ms: int) -> list[CollectionResult]:
        node = Node()
        node.self = node  # a reference cycle: only the garbage collector frees it
        refs.append(weakref.ref(node))
        return collect(self, now_ms)

    monkeypatch.setattr(FakeSources, "collect", collect_making_a_cycle)
    run_cluster_cycle(cluster, SLOT)
    run_cluster_cycle(cluster, SLOT + 10_000)
    assert [r() for r in refs] == [None, None]

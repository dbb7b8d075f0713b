"""The store writes a cycle idempotently and never overwrites known figures with zeros."""

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from collectors.figures import PartitionFigure, TimeTables
from collectors.outcome import CycleOutcome, SourceOutcome
from collectors.rebalance import RebalanceEvent as ObservedRebalance
from collectors.records import (
    GroupMember,
    GroupSnapshot,
    PartitionOffsets,
    Source,
    SourceError,
    SpoutFigures,
)
from collectors.timelag import time_lag
from dashboard.monitoring.models import (
    BrokerOffsets,
    Cluster,
    CollectionError,
    ConsumerGroup,
    PartitionState,
    RebalanceEvent,
    SourceHealth,
    SpoutSample,
)
from dashboard.store import raw_history
from dashboard.store.cycle import OrmCycleStore
from dashboard.store.rows import member_document, prune_history, store_cycle
from dashboard.times import ms_to_dt
from tests.raw_points import stored_points

pytestmark = pytest.mark.django_db


def figure(committed: int, latest: int, partition: int = 0, group: str = "g") -> PartitionFigure:
    return PartitionFigure(
        source=Source.KAFKA,
        group=group,
        topic="orders",
        partition=partition,
        committed=committed,
        earliest=0,
        latest=latest,
        lag=latest - committed,
        time_lag_s=1.5,
        time_lag_kind="interpolated",
        out_of_range=None,
        commit_time_ms=None,
        commit_version=None,
        owner="member-1",
        topology_id=None,
        where="",
    )


def outcome(cycle_ms: int, *figs: PartitionFigure, reachable: bool = True, **kw) -> CycleOutcome:
    return CycleOutcome(
        cluster="c",
        cycle_ms=cycle_ms,
        figures=list(figs),
        groups=[GroupSnapshot(Source.KAFKA, "g", "Stable", members=(GroupMember("member-1"),))]
        if reachable
        else [],
        offsets=[PartitionOffsets("orders", 0, 0, 100, cycle_ms)] if reachable else [],
        sources=[
            SourceOutcome(
                "kafka", reachable, cycle_ms, cycle_ms + 250, "" if reachable else "broker down"
            )
        ],
        **kw,
    )


@pytest.fixture
def cluster() -> Cluster:
    return Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")


def test_a_cycle_creates_state_and_history(cluster: Cluster) -> None:
    store_cycle(cluster, outcome(1_000_000, figure(40, 100), figure(90, 100, partition=1)))
    group = ConsumerGroup.objects.get(cluster=cluster, name="g")
    assert group.state == "Stable" and group.members[0]["member_id"] == "member-1"
    p0 = PartitionState.objects.get(group=group, partition=0)
    assert (p0.committed, p0.latest, p0.lag, p0.owner) == (40, 100, 60, "member-1")
    assert stored_points() == 2
    assert BrokerOffsets.objects.count() == 1
    health = SourceHealth.objects.get(cluster=cluster, source="kafka")
    assert health.reachable and health.last_duration_s == 0.25


def points_of(p: PartitionState) -> list[raw_history.Point]:
    return raw_history.partition_points(p.group_id, p.topic, p.partition, ms_to_dt(0))


def test_a_retried_cycle_writes_no_duplicate(cluster: Cluster) -> None:
    for _ in range(3):
        store_cycle(cluster, outcome(1_000_000, figure(40, 100)))
    assert stored_points() == 1
    assert BrokerOffsets.objects.count() == 1
    assert PartitionState.objects.count() == 1


def test_next_cycle_updates_latest_state_and_appends_history(cluster: Cluster) -> None:
    store_cycle(cluster, outcome(1_000_000, figure(40, 100)))
    store_cycle(cluster, outcome(1_010_000, figure(70, 120)))
    p0 = PartitionState.objects.get()
    assert (p0.committed, p0.lag) == (70, 50)
    assert [x.lag for x in points_of(PartitionState.objects.get())] == [60, 50]


def test_unreachable_source_keeps_last_figures_marked_stale(cluster: Cluster) -> None:
    store_cycle(cluster, outcome(1_000_000, figure(40, 100)))
    store_cycle(cluster, outcome(1_010_000, reachable=False))
    p0 = PartitionState.objects.get()
    assert (p0.committed, p0.latest, p0.lag) == (40, 100, 60)
    assert p0.stale and ConsumerGroup.objects.get().stale
    health = SourceHealth.objects.get()
    assert not health.reachable and health.last_error == "broker down"
    assert health.consecutive_failures == 1
    store_cycle(cluster, outcome(1_020_000, figure(50, 100)))
    p0.refresh_from_db()
    assert not p0.stale and p0.committed == 50
    assert SourceHealth.objects.get().consecutive_failures == 0


def test_errors_are_those_of_the_latest_cycle(cluster: Cluster) -> None:
    err = SourceError(Source.KAFKA, "group g", "GROUP_AUTHORIZATION_FAILED")
    store_cycle(cluster, outcome(1_000_000, figure(1, 2), errors=[err]))
    assert CollectionError.objects.get().where == "group g"
    store_cycle(cluster, outcome(1_010_000, figure(1, 2)))
    assert CollectionError.objects.count() == 0


def test_rebalance_events_are_stored_once(cluster: Cluster) -> None:
    event = ObservedRebalance("g", Source.KAFKA, 1_000_000, 7, "member_joined", {"member": "m2"})
    for _ in range(2):
        store_cycle(cluster, outcome(1_000_000, figure(1, 2), rebalances=[event]))
    stored = RebalanceEvent.objects.get()
    assert (stored.generation, stored.cause, stored.detail) == (
        7,
        "member_joined",
        {"member": "m2"},
    )


def test_same_group_name_in_two_clusters_stays_apart(cluster: Cluster) -> None:
    other = Cluster.objects.create(name="other", kafka_bootstrap_servers="k2:9092")
    store_cycle(cluster, outcome(1_000_000, figure(40, 100)))
    store_cycle(other, outcome(1_000_000, figure(10, 100)))
    assert sorted(PartitionState.objects.values_list("committed", flat=True)) == [10, 40]
    assert stored_points() == 2


def zk_figure(committed: int, latest: int | None, source: Source = Source.STORM) -> PartitionFigure:
    return PartitionFigure(
        source=source,
        group="spout",
        topic="orders",
        partition=0,
        committed=committed,
        earliest=0 if latest is not None else None,
        latest=latest,
        lag=None if latest is None else latest - committed,
        time_lag_s=None,
        time_lag_kind="unknown",
        out_of_range=None,
        commit_time_ms=1_000_000,
        commit_version=3,
        owner="topo",
        topology_id="topo-1",
        where="/s/spout/partition_0",
        alive=True,
        pending=7,
        failed=2,
        acked=40,
    )


def test_spout_counts_and_liveness_are_stored(cluster: Cluster) -> None:
    store_cycle(cluster, CycleOutcome(cluster="c", cycle_ms=1_000_000, figures=[zk_figure(4, 9)]))
    p = PartitionState.objects.get()
    assert (p.pending, p.failed, p.acked, p.alive) == (7, 2, 40, True)
    ((_, _, _, _, _, pending, failed, acked, _),) = points_of(p)
    assert (pending, failed, acked) == (7, 2, 40)


def test_spout_figures_are_kept_as_a_short_history(cluster: Cluster) -> None:
    """Storm UI's whole-spout figures with the task's in-flight count and cap from the push:
    one row per spout and cycle, none more for a retried cycle, pruned with the history."""
    spouts = [
        SpoutFigures("topo-1", "spout", emitted=100, acked=90, failed=2, complete_latency_ms=4.5),
        SpoutFigures("topo-1", "spout", acked=3, failed=0, pending=1, topic="orders", partition=0,
                     spout_pending=20, max_spout_pending=20),
    ]  # fmt: skip
    for cycle_ms in (1_000_000, 1_000_000, 1_010_000):  # the first one retried
        store_cycle(cluster, CycleOutcome(cluster="c", cycle_ms=cycle_ms, spouts=spouts))
    rows = list(
        SpoutSample.objects.order_by("at").values_list(
            "topology_id", "spout_id", "emitted", "acked", "failed", "complete_latency_ms",
            "pending", "max_spout_pending",
        )
    )  # fmt: skip
    assert rows == [("topo-1", "spout", 100, 90, 2, 4.5, 20, 20)] * 2
    pruned = prune_history(timedelta(seconds=5), datetime.fromtimestamp(1_012, UTC))
    # The spout row and the record of the cycle that wrote it (CollectedCycle).
    assert pruned == 2 and SpoutSample.objects.count() == 1


def test_broker_down_keeps_last_broker_figures_of_zookeeper_read_partitions(
    cluster: Cluster,
) -> None:
    """Offsets still come from ZooKeeper, but lag needs the broker: keep the last known one."""
    store_cycle(cluster, CycleOutcome(cluster="c", cycle_ms=1_000_000, figures=[zk_figure(4, 9)]))
    down = [SourceOutcome("kafka", False, 1_010_000, 1_010_100, "broker down")]
    store_cycle(
        cluster,
        CycleOutcome(cluster="c", cycle_ms=1_010_000, figures=[zk_figure(6, None)], sources=down),
    )
    p = PartitionState.objects.get()
    assert (p.committed, p.latest, p.lag, p.stale) == (6, 9, 5, True)


def test_zookeeper_down_marks_spouts_stale_too(cluster: Cluster) -> None:
    store_cycle(cluster, CycleOutcome(cluster="c", cycle_ms=1_000_000, figures=[zk_figure(4, 9)]))
    down = [SourceOutcome("zookeeper", False, 1_010_000, 1_010_100, "connection refused")]
    store_cycle(cluster, CycleOutcome(cluster="c", cycle_ms=1_010_000, sources=down))
    p = PartitionState.objects.get()
    assert (p.committed, p.lag, p.stale, p.group.stale) == (4, 5, True, True)


def test_storm_ui_down_does_not_hide_spout_offsets(cluster: Cluster) -> None:
    down = [SourceOutcome("storm", False, 1_000_000, 1_000_100, "Storm UI: refused")]
    store_cycle(
        cluster,
        CycleOutcome(cluster="c", cycle_ms=1_000_000, figures=[zk_figure(4, 9)], sources=down),
    )
    assert PartitionState.objects.get().stale is False


def test_a_member_is_stored_with_everything_the_broker_said() -> None:
    """What the group page, the APIs and the what-if read back (``None`` = not said)."""
    kip848 = GroupMember(
        "m-1", client_id="c", host="/10.0.0.1", assignment=(("t", 0),), instance_id="pod-1",
        member_epoch=7, target_assignment=(("t", 0), ("t", 1)), subscription=("t", "u"),
    )  # fmt: skip
    assert member_document(kip848) == {
        "member_id": "m-1", "instance_id": "pod-1", "client_id": "c", "host": "/10.0.0.1",
        "assignment": [["t", 0]], "target_assignment": [["t", 0], ["t", 1]],
        "member_epoch": 7, "subscription": ["t", "u"],
    }  # fmt: skip
    classic = member_document(GroupMember("m-2"))
    assert classic["subscription"] is None and classic["target_assignment"] is None


def _scraped(cycle_ms: int, *brokers, reachable: bool = True) -> CycleOutcome:
    from collectors.records import BrokerFigures

    rows = [b if isinstance(b, BrokerFigures) else BrokerFigures(**b) for b in brokers]
    kafka = SourceOutcome("kafka", True, cycle_ms, cycle_ms + 10)
    scrape = SourceOutcome("broker_metrics", reachable, cycle_ms, cycle_ms + 5,
                           "" if reachable else "refused")  # fmt: skip
    return CycleOutcome(cluster="c", cycle_ms=cycle_ms, figures=[figure(10, 15)],
                        sources=[kafka, scrape], brokers=rows)  # fmt: skip


def test_broker_purgatory_kept_per_broker_and_a_failed_scrape_loses_nothing(
    cluster: Cluster,
) -> None:
    from dashboard.monitoring.models import BrokerPurgatory

    b1 = {"broker": "b1:7071", "url": "http://b1:7071/metrics"}
    b2 = {"broker": "b2:7071", "url": "http://b2:7071/metrics"}
    store_cycle(cluster, _scraped(
        1_000_000,
        {**b1, "as_of_ms": 1_000_001, "fetch_purgatory": 4, "produce_purgatory": 0,
         "fetch_expires_per_s": 0.5},
        {**b2, "as_of_ms": 1_000_002, "fetch_purgatory": 1},
    ))  # fmt: skip
    store_cycle(cluster, _scraped(
        1_010_000,
        {**b1, "as_of_ms": 1_010_001, "error": "Connection refused"},
        {**b2, "as_of_ms": 1_010_002, "fetch_purgatory": 0},
        reachable=False,
    ))  # fmt: skip
    rows = {r.broker: r for r in BrokerPurgatory.objects.filter(cluster=cluster)}
    assert set(rows) == {"b1:7071", "b2:7071"}
    down = rows["b1:7071"]
    assert (down.fetch_purgatory, down.fetch_expires_per_s) == (4, 0.5)  # the last figures
    assert down.as_of.timestamp() == 1_000.001 and down.checked_at.timestamp() == 1_010.001
    assert down.error == "Connection refused"
    assert (rows["b2:7071"].fetch_purgatory, rows["b2:7071"].error) == (0, "")
    health = SourceHealth.objects.get(cluster=cluster, source="broker_metrics")
    assert not health.reachable and health.last_error == "refused"
    # The lag itself is not touched by a broker metrics outage.
    assert not PartitionState.objects.filter(stale=True).exists()
    assert PartitionState.objects.get().lag == 5


def test_a_broker_left_out_of_the_configuration_is_dropped(cluster: Cluster) -> None:
    from dashboard.monitoring.models import BrokerPurgatory

    b1 = {"broker": "b1:7071", "url": "http://b1:7071/metrics", "fetch_purgatory": 2}
    b2 = {"broker": "b2:7071", "url": "http://b2:7071/metrics", "fetch_purgatory": 3}
    store_cycle(cluster, _scraped(1_000_000, {**b1, "as_of_ms": 1}, {**b2, "as_of_ms": 1}))
    store_cycle(cluster, _scraped(1_010_000, {**b2, "as_of_ms": 2}))
    assert list(BrokerPurgatory.objects.values_list("broker", flat=True)) == ["b2:7071"]
    # No scrape in the cycle (no URLs configured any more): nothing left.
    store_cycle(cluster, outcome(1_020_000, figure(10, 15)))
    assert not BrokerPurgatory.objects.exists()


def test_broker_offsets_are_stored_at_their_read_time_so_another_process_times_alike(
    cluster: Cluster,
) -> None:
    """A fresh-clone run saw a stopped group's time lag fall back when a second collector took
    the cluster over: the stored points carried the slot's time, the collecting process its
    read time. Cycles read 3 s into their slot here (a loaded machine, a lease wait)."""

    slots = [1_000_000, 1_010_000, 1_020_000]
    reads = [
        [PartitionOffsets("orders", 0, 0, latest, slot + 3_000)]
        for slot, latest in zip(slots, [100, 130, 160], strict=True)
    ]
    collecting = TimeTables(60)
    for slot, offsets in zip(slots, reads, strict=True):
        collecting.observe(offsets)
        store_cycle(cluster, dataclasses.replace(outcome(slot), offsets=offsets))
    stored = [
        point[2]
        for data in BrokerOffsets.objects.order_by("at").values_list("figures", flat=True)
        for point in raw_history.broker_points(bytes(data))
    ]
    assert stored == [s + 3_000 for s in slots]

    other = TimeTables(60)
    for topic, partition, at_ms, latest in OrmCycleStore(cluster).broker_offsets_since(0):
        other.table(topic, partition).add_at(latest, at_ms)
    mine, theirs = collecting.table("orders", 0), other.table("orders", 0)
    assert theirs.points == mine.points
    now = slots[-1] + 20_000
    assert time_lag(theirs, 115, now) == time_lag(mine, 115, now)


def test_broker_offsets_are_read_back_after_a_time_only(cluster: Cluster) -> None:
    """A process catching up reads the points newer than its own, across cycles' rows, and
    leaves out offsets the broker did not give."""
    reads = {
        1_000_000: [PartitionOffsets("orders", 0, 0, 100, 1_000_400),
                    PartitionOffsets("orders", 1, 0, None, 1_000_400),
                    PartitionOffsets("clicks", 0, 0, 7, 1_000_900)],
        1_010_000: [PartitionOffsets("orders", 0, 0, 130, 1_010_200),
                    PartitionOffsets("clicks", 0, 0, 9, 1_010_100)],
    }  # fmt: skip
    for slot, offsets in reads.items():
        store_cycle(cluster, dataclasses.replace(outcome(slot), offsets=offsets))
    store = OrmCycleStore(cluster)
    assert list(store.broker_offsets_since(0)) == [
        ("orders", 0, 1_000_400, 100), ("clicks", 0, 1_000_900, 7),
        ("clicks", 0, 1_010_100, 9), ("orders", 0, 1_010_200, 130),
    ]  # fmt: skip
    assert list(store.broker_offsets_since(1_000_400)) == [
        ("clicks", 0, 1_000_900, 7), ("clicks", 0, 1_010_100, 9), ("orders", 0, 1_010_200, 130),
    ]  # fmt: skip
    assert list(store.broker_offsets_since(1_010_200)) == []

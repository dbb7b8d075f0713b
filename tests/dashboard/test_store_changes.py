"""A cycle rewrites only the partition rows whose figures changed (issue 13, item 1).

The store remembers, per cluster, the rows its last cycle wrote; the next cycle of the same
process compares and writes the difference. These tests run with real commits
(``transaction=True``): the store trusts what it remembers only once it committed. The
randomized comparison replays the same cycles against what writing every row every cycle
gives (the store before this change), read back as the pages and the API read it.
"""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime

import pytest

from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome, SourceOutcome
from collectors.records import GroupSnapshot, PartitionOffsets, Source
from dashboard.api.serializers import partition_dict
from dashboard.monitoring import store
from dashboard.monitoring.cycle_store import OrmCycleStore
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from dashboard.monitoring.store import ms_to_dt, store_cycle

pytestmark = pytest.mark.django_db(transaction=True)

FIGURES = ["committed", "earliest", "latest", "lag", "time_lag_s", "time_lag_kind", "owner"]


@pytest.fixture(autouse=True)
def _forget_written():
    store._WRITTEN.clear()
    yield
    store._WRITTEN.clear()


@pytest.fixture
def cluster() -> Cluster:
    return Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")


def figure(group: str, partition: int, committed: int, latest: int = 100) -> PartitionFigure:
    return PartitionFigure(
        source=Source.KAFKA, group=group, topic="orders", partition=partition,
        committed=committed, earliest=0, latest=latest, lag=latest - committed,
        time_lag_s=float(latest - committed), time_lag_kind="interpolated",
        out_of_range=None, commit_time_ms=None, commit_version=None, owner="m-1",
        topology_id=None, where="",
    )  # fmt: skip


def outcome(cycle_ms: int, figs: list[PartitionFigure], groups: list[str] | None = None,
            by: str = "host:1") -> CycleOutcome:  # fmt: skip
    names = sorted({f.group for f in figs}) if groups is None else groups
    return CycleOutcome(
        cluster="c", cycle_ms=cycle_ms, figures=figs,
        groups=[GroupSnapshot(Source.KAFKA, g, "Stable") for g in names],
        offsets=[PartitionOffsets("orders", p, 0, 100, cycle_ms) for p in range(8)],
        sources=[SourceOutcome("kafka", True, cycle_ms, cycle_ms + 10, "")],
        collected_by=by,
    )  # fmt: skip


def row(partition: int, group: str = "g") -> PartitionState:
    return PartitionState.objects.select_related("group").get(
        group__name=group, partition=partition
    )


def at(ms: int) -> datetime:
    return ms_to_dt(ms)


def test_an_unchanged_row_is_not_rewritten_yet_reads_as_sampled_now(cluster: Cluster) -> None:
    store_cycle(cluster, outcome(10_000, [figure("g", 0, 40), figure("g", 1, 90)]))
    store_cycle(cluster, outcome(20_000, [figure("g", 0, 40), figure("g", 1, 95)]))
    unchanged, changed = row(0), row(1)
    assert unchanged.sampled_at == at(10_000), "written again although nothing changed"
    assert changed.sampled_at == at(20_000) and changed.committed == 95
    assert unchanged.seen_at == at(20_000) and unchanged.present
    assert partition_dict(unchanged)["sampled_at"] == "1970-01-01T00:00:20Z"


def test_a_partition_that_left_is_marked_with_the_last_cycle_that_saw_it(cluster: Cluster):
    store_cycle(cluster, outcome(10_000, [figure("g", 0, 40), figure("g", 1, 90)]))
    store_cycle(cluster, outcome(20_000, [figure("g", 0, 40), figure("g", 1, 90)]))
    store_cycle(cluster, outcome(30_000, [figure("g", 0, 40)]))
    store_cycle(cluster, outcome(40_000, [figure("g", 0, 40)]))
    left = row(1)
    assert not left.present and left.sampled_at == at(20_000) and left.seen_at == at(20_000)
    assert (left.committed, left.lag) == (90, 10), "a partition that left keeps its figures"
    assert partition_dict(left)["present"] is False
    store_cycle(cluster, outcome(50_000, [figure("g", 0, 40), figure("g", 1, 90)]))
    back = row(1)
    assert back.present and back.seen_at == at(50_000)


def test_an_outage_does_not_bring_back_a_partition_that_had_left(cluster: Cluster) -> None:
    store_cycle(cluster, outcome(10_000, [figure("g", 0, 40), figure("g", 1, 90)]))
    store_cycle(cluster, outcome(20_000, [figure("g", 0, 40)]))
    last_known = OrmCycleStore(cluster).last_known(frozenset({"kafka"}))
    assert [(f.group, f.partition) for f in last_known] == [("g", 0)]


def test_a_group_absent_from_a_cycle_keeps_its_rows_present_as_of_its_last_poll(cluster):
    store_cycle(cluster, outcome(10_000, [figure("g", 0, 40), figure("h", 0, 50)]))
    store_cycle(cluster, outcome(20_000, [figure("h", 0, 50)]))
    kept = row(0, "g")
    assert kept.present and kept.seen_at == at(10_000)
    assert ConsumerGroup.objects.get(name="h").partitions_total == 1


def test_another_process_in_between_makes_the_next_cycle_write_every_row(cluster):
    store_cycle(cluster, outcome(10_000, [figure("g", 0, 40)], by="a:1"))
    store_cycle(cluster, outcome(20_000, [figure("g", 0, 40)], by="b:2"))
    assert row(0).sampled_at == at(20_000), "b did not know a's rows: it wrote them all"
    PartitionState.objects.update(committed=41)  # what only a store knowing a's rows misses
    store_cycle(cluster, outcome(30_000, [figure("g", 0, 40)], by="a:1"))
    assert row(0).committed == 40 and row(0).sampled_at == at(30_000)


def test_a_failed_cycle_leaves_nothing_remembered(cluster: Cluster) -> None:
    store_cycle(cluster, outcome(10_000, [figure("g", 0, 40)]))
    with pytest.raises(store.SupersededCycle):
        store_cycle(cluster, outcome(5_000, [figure("g", 0, 40)]))
    assert cluster.pk not in store._WRITTEN
    PartitionState.objects.update(committed=41)
    store_cycle(cluster, outcome(20_000, [figure("g", 0, 40)]))
    assert row(0).committed == 40


def test_group_totals_follow_only_the_rows_that_changed(cluster: Cluster) -> None:
    store_cycle(cluster, outcome(10_000, [figure("g", 0, 40), figure("h", 0, 50)]))
    store_cycle(cluster, outcome(20_000, [figure("g", 0, 60), figure("h", 0, 50)]))
    assert ConsumerGroup.objects.get(name="g").lag_sum == 40
    assert ConsumerGroup.objects.get(name="h").lag_sum == 50


def _reference(cycles: list[tuple[int, list[PartitionFigure], list[str]]]) -> dict:
    """What the store gave when it wrote every row every cycle: the last figures of each
    partition, and when it was last sampled; present when its group's latest cycle had it."""
    rows: dict[tuple[str, int], dict] = {}
    for cycle_ms, figs, groups in cycles:
        seen_now = {(f.group, f.partition) for f in figs}
        for key, r in rows.items():
            if key[0] in groups and key not in seen_now:
                r["present"] = False
        for f in figs:
            rows[(f.group, f.partition)] = {
                **{name: getattr(f, name) for name in FIGURES},
                "seen_at": at(cycle_ms),
                "present": True,
            }
    return rows


@pytest.mark.parametrize("seed", range(4))
def test_randomized_cycles_read_back_as_writing_every_row_did(cluster: Cluster, seed: int):
    rnd = random.Random(seed)
    state = {(g, p): rnd.randrange(100) for g in ("g1", "g2", "g3") for p in range(6)}
    cycles, process, kept = [], "host:1", 0
    for n in range(30):
        cycle_ms = 10_000 * (n + 1)
        if rnd.random() < 0.1:
            process = rnd.choice(["host:1", "host:2"])  # the cluster's lease moved
        if rnd.random() < 0.05:
            store._WRITTEN.clear()  # the collector restarted
        groups = [g for g in ("g1", "g2", "g3") if rnd.random() < 0.85]
        figs = []
        for (g, p), committed in state.items():
            if g not in groups or rnd.random() < 0.15:
                continue
            if rnd.random() < 0.3:
                state[(g, p)] = committed = min(100, committed + rnd.randrange(1, 5))
            figs.append(figure(g, p, committed))
        rnd.shuffle(figs)
        cycles.append((cycle_ms, figs, groups))
        store_cycle(cluster, outcome(cycle_ms, figs, groups, by=process))

        expected = _reference(cycles)
        stored = {
            (p.group.name, p.partition): {
                **{name: getattr(p, name) for name in FIGURES},
                "seen_at": p.seen_at,
                "present": p.present,
            }
            for p in PartitionState.objects.select_related("group")
        }
        assert stored == expected, f"seed {seed}, cycle {n}"
        kept += PartitionState.objects.filter(
            present=True, sampled_at__lt=ms_to_dt(cycle_ms), group__last_seen_at=ms_to_dt(cycle_ms)
        ).count()
        for g in ConsumerGroup.objects.all():
            mine = [r for (name, _), r in expected.items() if name == g.name]
            assert g.partitions_total == len(mine)
            assert g.lag_sum == (sum(r["lag"] for r in mine) if mine else None)
    assert kept > 30, "the cycles rewrote (nearly) every row: the comparison tested nothing"


def test_the_store_remembers_rows_as_it_wrote_them(cluster: Cluster) -> None:
    """A figure whose value compares equal but is written differently is still equal: the
    remembered rows are the written tuples, not values read back."""
    fig = dataclasses.replace(figure("g", 0, 40), commit_time_ms=1_700_000_000_123)
    store_cycle(cluster, outcome(10_000, [fig]))
    store_cycle(cluster, outcome(20_000, [fig]))
    assert row(0).sampled_at == at(10_000)
    assert row(0).last_commit_at == ms_to_dt(1_700_000_000_123)

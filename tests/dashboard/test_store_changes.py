"""A cycle rewrites only the partition rows whose figures changed.

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
from collectors.timelag import lag_seconds
from dashboard.api.serializers import partition_dict
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from dashboard.store import rows as store
from dashboard.store.cycle import OrmCycleStore
from dashboard.store.rows import store_cycle
from dashboard.times import ms_to_dt

pytestmark = pytest.mark.django_db(transaction=True)

FIGURES = ["committed", "earliest", "latest", "lag", "time_lag_s", "time_lag_kind",
           "time_lag_from_ms", "owner"]  # fmt: skip


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


def stopped(group: str, partition: int, committed: int, from_ms: float, now_ms: int,
            latest: int = 100) -> PartitionFigure:  # fmt: skip
    """A consumer stopped behind the log's end since ``from_ms``: its time lag at ``now_ms``
    as ``collectors.figures`` computes it."""
    return dataclasses.replace(
        figure(group, partition, committed, latest),
        time_lag_s=lag_seconds(now_ms, from_ms), time_lag_from_ms=from_ms,
    )  # fmt: skip


def outcome(cycle_ms: int, figs: list[PartitionFigure], groups: list[str] | None = None,
            by: str = "host:1", figures_ms: int | None = None) -> CycleOutcome:  # fmt: skip
    names = sorted({f.group for f in figs}) if groups is None else groups
    return CycleOutcome(
        cluster="c", cycle_ms=cycle_ms, figures=figs, figures_ms=figures_ms,
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


def test_a_row_whose_time_lag_alone_grew_is_aged_in_place_not_rewritten(cluster: Cluster):
    """A stopped consumer: the same figures every cycle but a time lag growing from the same
    moment. Its row reads the time lag of the latest cycle, yet was written once."""
    from_ms = 1_234.5
    for cycle_ms in (10_000, 20_000, 30_000):
        now_ms = cycle_ms + 37  # the cycle read its sources a little after its slot
        figs = [stopped("g", 0, 40, from_ms, now_ms), figure("g", 1, 90)]
        store_cycle(cluster, outcome(cycle_ms, figs, figures_ms=now_ms))
    aged = row(0)
    assert aged.time_lag_s == lag_seconds(30_037, from_ms) == 28.8025
    assert aged.sampled_at == at(10_000), "rewritten whole although only its time lag grew"
    assert aged.seen_at == at(30_000) and aged.time_lag_from_ms == from_ms
    assert ConsumerGroup.objects.get(name="g").time_lag_max_s == 28.8025
    assert row(1).time_lag_s == 10.0, "a row without a moment to count from is left alone"


def test_a_time_lag_that_does_not_follow_its_moment_is_written_as_given(cluster: Cluster):
    """The store checks the formula rather than trusting it: a figure whose time lag is not
    the one its moment gives (the moment moved, or the figures were made elsewhere) is
    written like any changed row, and a cycle without ``figures_ms`` ages nothing."""
    first = [stopped("g", p, 40, 1_000.0, 10_000) for p in (0, 1)]
    store_cycle(cluster, outcome(10_000, first, figures_ms=10_000))
    odd = dataclasses.replace(stopped("g", 0, 40, 1_000.0, 20_000), time_lag_s=5.0)
    store_cycle(cluster, outcome(20_000, [odd, stopped("g", 1, 40, 1_000.0, 20_000)],
                                 figures_ms=20_000))  # fmt: skip
    assert (row(0).time_lag_s, row(0).sampled_at) == (5.0, at(20_000))
    assert (row(1).time_lag_s, row(1).sampled_at) == (19.0, at(10_000)), "its neighbour aged"
    store_cycle(cluster, outcome(30_000, [stopped("g", 0, 40, 1_000.0, 30_000)]))
    assert (row(0).time_lag_s, row(0).sampled_at) == (29.0, at(30_000))


def test_aging_leaves_a_group_absent_from_the_cycle_alone(cluster: Cluster) -> None:
    """A group the cycle did not see keeps its last time lag, as when every row was written:
    aging touches the rows of the cycle's own groups only. (Rows kept stale, their broker
    unreadable, are never aged: such a cycle writes every row, ``_upsert_partitions``.)"""
    store_cycle(cluster, outcome(10_000, [stopped("g", 0, 40, 0.0, 10_000),
                                          stopped("h", 0, 40, 0.0, 10_000)],
                                 figures_ms=10_000))  # fmt: skip
    store_cycle(cluster, outcome(20_000, [stopped("h", 0, 40, 0.0, 20_000)], figures_ms=20_000))
    assert row(0, "g").time_lag_s == 10.0, "a group absent from the cycle was aged"
    assert row(0, "h").time_lag_s == 20.0 and row(0, "h").sampled_at == at(10_000)


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
    cycles, process, kept, aged = [], "host:1", 0, 0
    # Where a partition's growing time lag counts from, for the stopped ones (None: its time
    # lag is the lag, unchanged while the commit stands).
    moments = {key: rnd.choice([None, rnd.randrange(10_000) + 0.25]) for key in state}
    for n in range(30):
        cycle_ms = 10_000 * (n + 1)
        figures_ms = cycle_ms + rnd.randrange(500)
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
                moments[(g, p)] = rnd.choice([None, cycle_ms - rnd.randrange(1, 60_000) + 0.5])
            from_ms = moments.get((g, p))
            figs.append(
                figure(g, p, committed)
                if from_ms is None
                else stopped(g, p, committed, from_ms, figures_ms)
            )
        rnd.shuffle(figs)
        cycles.append((cycle_ms, figs, groups))
        store_cycle(cluster, outcome(cycle_ms, figs, groups, by=process, figures_ms=figures_ms))

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
            time_lags = [r["time_lag_s"] for r in mine]
            assert g.time_lag_max_s == (max(time_lags) if mine else None)
        aged += PartitionState.objects.filter(
            present=True, sampled_at__lt=ms_to_dt(cycle_ms), time_lag_from_ms__isnull=False,
            group__last_seen_at=ms_to_dt(cycle_ms),
        ).count()  # fmt: skip
    assert kept > 30, "the cycles rewrote (nearly) every row: the comparison tested nothing"
    assert aged > 10, "no stopped partition was aged in place: the aging tested nothing"


def test_the_store_remembers_rows_as_it_wrote_them(cluster: Cluster) -> None:
    """A figure whose value compares equal but is written differently is still equal: the
    remembered rows are the written tuples, not values read back."""
    fig = dataclasses.replace(figure("g", 0, 40), commit_time_ms=1_700_000_000_123)
    store_cycle(cluster, outcome(10_000, [fig]))
    store_cycle(cluster, outcome(20_000, [fig]))
    assert row(0).sampled_at == at(10_000)
    assert row(0).last_commit_at == ms_to_dt(1_700_000_000_123)

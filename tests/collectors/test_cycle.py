"""The cycle's write and the runner around it, against a fake store: no database, no services.

What the ORM store does with a cycle is tested in tests/dashboard (test_store.py,
test_cycle_runner.py); here, what the runner asks of any store and gives the sample log.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pytest

from collectors.assemble import assemble_cycle
from collectors.client_reports import ClientReport
from collectors.cluster_sources import ClusterSettings
from collectors.cycle import runner
from collectors.cycle.stale import Staleness
from collectors.cycle.store_port import BrokerOffsetPoint, StoredCycle
from collectors.cycle.write import sample_columns, sample_rows, write_cycle
from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome, SourceOutcome
from collectors.records import (
    CollectionResult,
    CommittedOffset,
    GroupMember,
    GroupSnapshot,
    PartitionOffsets,
    Source,
    SpoutFigures,
)
from collectors.sample_log.schema import conform as _conform
from tests.collectors.test_assemble import T0, kafka, memory, spout_result

SLOT = 1_800_000_000_000


class FakeStore:
    def __init__(self, last_known: Sequence[PartitionFigure] = (), fail: bool = False) -> None:
        self.known = list(last_known)
        self.fail = fail
        self.asked_last_known: list[frozenset[str]] = []
        self.written: list[tuple[CycleOutcome, Staleness]] = []
        self.offsets: list[BrokerOffsetPoint] = []
        self.asked_offsets_since: list[int] = []

    def last_cycle(self) -> StoredCycle | None:
        if not self.written:
            return None
        outcome = self.written[-1][0]
        return outcome.cycle_ms, outcome.collected_by

    def group_snapshots(self) -> list[GroupSnapshot]:
        """The groups of the newest write, each group's newest where it was absent since."""
        groups: dict[tuple[Source, str], GroupSnapshot] = {}
        for outcome, _ in self.written:
            groups.update(((g.source, g.group), g) for g in outcome.groups)
        return list(groups.values())

    def broker_offsets_since(self, since_ms: int) -> Iterator[BrokerOffsetPoint]:
        self.asked_offsets_since.append(since_ms)
        return iter([p for p in self.offsets if p[2] > since_ms])

    def recent_reports(
        self, now_ms: int, max_age_s: float
    ) -> tuple[list[ClientReport], list[SpoutFigures]]:
        return [], []

    def last_known(self, sources: frozenset[str]) -> list[PartitionFigure]:
        self.asked_last_known.append(sources)
        return self.known

    def write_cycle(self, outcome: CycleOutcome, stale: Staleness) -> None:
        if self.fail:
            raise RuntimeError("database is locked")
        self.written.append((outcome, stale))


class FakeLog:
    def __init__(self, delay_s: float = 0.0, fail: bool = False) -> None:
        self.delay_s, self.fail = delay_s, fail
        self.batches: list[tuple[str, str, pa.Table]] = []
        self.ended: list[float] = []

    def write_batch(self, cluster: str, cycle_id: str, rows: pa.Table) -> None:
        time.sleep(self.delay_s)
        self.ended.append(time.monotonic())
        if self.fail:
            raise OSError("disk full")
        self.batches.append((cluster, cycle_id, rows))


def zk_figure(group: str = "zkc", partition: int = 0) -> PartitionFigure:
    return PartitionFigure(
        source=Source.ZOOKEEPER, group=group, topic="t", partition=partition, committed=5,
        earliest=0, latest=9, lag=4, time_lag_s=2.0, time_lag_kind="interpolated",
        out_of_range=None, commit_time_ms=T0 - 1000, commit_version=3, owner="c-1",
        topology_id=None, where="",
    )  # fmt: skip


def outcome(*down: str) -> CycleOutcome:
    sources = ["kafka", "zookeeper", "storm"]
    return CycleOutcome(
        cluster="c", cycle_ms=SLOT,
        sources=[SourceOutcome(s, s not in down, SLOT, SLOT + 5) for s in sources],
    )  # fmt: skip


def test_staleness_follows_what_each_unreachable_source_hides() -> None:
    assert Staleness.of(outcome()) == Staleness()
    assert Staleness.of(outcome("kafka")) == Staleness(frozenset({"kafka"}), broker_down=True)
    assert Staleness.of(outcome("zookeeper")).hidden == {"zookeeper", "storm"}
    assert Staleness.of(outcome("storm")) == Staleness()  # spout counts only: offsets remain


def test_sample_rows_mark_broker_less_rows_stale_only_when_the_broker_was_down() -> None:
    out = assemble_cycle("c", T0, T0, [kafka(reachable=False), spout_result()], memory())
    rows = sample_rows(out)
    assert [(r["group"], r["lag"], r["stale"], r["ts_ms"]) for r in rows] == [
        ("sp", None, True, T0)
    ]
    out = assemble_cycle("c", T0, T0, [kafka(), spout_result()], memory())
    assert not any(r["stale"] for r in sample_rows(out))


def test_sample_columns_make_the_same_sample_log_batch_as_sample_rows() -> None:
    members = (GroupMember("m-1", assignment=(("t", 0),)),)
    pushed = [SpoutFigures("topo-1", "sp", acked=4, failed=0, pending=1, topic="t", partition=0)]
    for results in ([kafka(members), spout_result()], [kafka(reachable=False), spout_result()]):
        out = assemble_cycle("c", T0, T0, results, memory(), pushed_spouts=pushed)
        rows = sample_rows(out)
        assert rows
        assert _conform("c", pa.table(sample_columns(out))).equals(_conform("c", rows))


def test_the_spouts_pushed_figures_reach_the_sample_log() -> None:
    """Everything the status job reads of a spout is in its sample row: the counts, the task's
    in-flight tuples and cap (BACKPRESSURE), the smallest failed offset (POISON_MESSAGE)."""
    pushed = [
        SpoutFigures(
            "topo-1", "sp", emitted=50, acked=4, failed=2, pending=9, topic="t", partition=0,
            smallest_failed_offset=17, max_offset_behind=100, max_spout_pending=40,
            spout_pending=40,
        )
    ]  # fmt: skip
    out = assemble_cycle("c", T0, T0, [kafka(), spout_result()], memory(), pushed_spouts=pushed)
    [row] = [r for r in sample_rows(out) if r["group"] == "sp"]
    assert {k: row[k] for k in (
        "pending", "failed", "acked", "emitted", "smallest_failed_offset", "max_offset_behind",
        "max_spout_pending", "spout_pending",
    )} == {
        "pending": 9, "failed": 2, "acked": 4, "emitted": 50, "smallest_failed_offset": 17,
        "max_offset_behind": 100, "max_spout_pending": 40, "spout_pending": 40,
    }  # fmt: skip
    assert _conform("c", pa.table(sample_columns(out))).num_rows == len(sample_rows(out))
    kafka_rows = [r for r in sample_rows(out) if r["source"] == "kafka"]
    assert all(r["max_spout_pending"] is None and r["emitted"] is None for r in kafka_rows)


def test_the_hidden_sources_last_figures_are_logged_stale_and_the_store_told_once() -> None:
    store, log = FakeStore([zk_figure()]), FakeLog()
    write_cycle(store, log, outcome("zookeeper"))
    assert store.asked_last_known == [frozenset({"zookeeper", "storm"})]
    assert [stale.hidden for _, stale in store.written] == [frozenset({"zookeeper", "storm"})]
    [(cluster, cycle_id, table)] = log.batches
    assert (cluster, cycle_id) == ("c", f"c@{SLOT}")
    [row] = table.to_pylist()
    assert (row["ts_ms"], row["group"], row["lag"], row["stale"]) == (SLOT, "zkc", 4, True)
    assert (row["alive"], row["pending"]) == (None, None)  # no source told them this cycle


def test_nothing_is_read_back_when_every_source_was_reached() -> None:
    store = FakeStore([zk_figure()])
    write_cycle(store, FakeLog(), outcome())
    assert store.asked_last_known == []


def test_a_failed_database_write_is_raised_once_the_log_write_has_ended() -> None:
    store, log = FakeStore(fail=True), FakeLog(delay_s=0.2)
    stored = threading.Event()
    with pytest.raises(RuntimeError, match="locked"):
        write_cycle(store, log, outcome(), stored.set)
    raised = time.monotonic()
    assert log.ended and log.ended[0] <= raised  # no write left running behind the failure
    assert not stored.is_set()


def test_a_failed_log_write_fails_the_cycle_after_the_database_has_it() -> None:
    store, stored = FakeStore(), threading.Event()
    with pytest.raises(OSError, match="disk full"):
        write_cycle(store, FakeLog(fail=True), outcome(), stored.set)
    assert len(store.written) == 1 and stored.is_set()


class FakeSources:
    """One Kafka group, two partitions; the broker's latest offset is 100."""

    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings

    def collect(self, now_ms: int) -> list[CollectionResult]:
        return [
            CollectionResult(
                source=Source.KAFKA, started_ms=now_ms, finished_ms=now_ms + 5,
                commits=[CommittedOffset(Source.KAFKA, "g", "t", p, 40) for p in range(2)],
                offsets=[PartitionOffsets("t", p, 0, 100, now_ms) for p in range(2)],
            )
        ]  # fmt: skip

    def close(self) -> None:
        pass


@pytest.fixture
def fake_sources(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(runner, "ClusterSources", FakeSources)
    yield
    runner.forget_clusters()


@pytest.mark.usefixtures("fake_sources")
def test_a_whole_cycle_runs_against_any_store_and_catches_up_on_its_offsets() -> None:
    store, log = FakeStore(), FakeLog()
    now_ms = int(time.time() * 1000)
    # Another process stored latest offset 40 of partition 0 a minute ago: committed 40 was
    # the head then, so time lag is about a minute without this process having seen it.
    store.offsets = [("t", 0, now_ms - 60_000, 40)]
    cluster = ClusterSettings(name="fake-store", kafka_bootstrap_servers="k:9092")
    report = runner.run_cycle(cluster, store, log, poll_interval_s=10, cycle_ms=SLOT)
    assert (report.partitions, report.unreachable, len(log.batches)) == (2, [], 1)
    [(written, _)] = store.written
    lags = {f.partition: (f.lag, f.time_lag_s) for f in written.figures}
    assert lags[0][0] == 60 and 55 <= lags[0][1] <= 65

    runner.run_cycle(cluster, store, log, poll_interval_s=10, cycle_ms=SLOT + 10_000)
    first, second = store.asked_offsets_since
    assert now_ms - runner.CATCH_UP_MS <= first <= now_ms - runner.CATCH_UP_MS + 60_000
    assert second >= SLOT  # only what was stored since this process's own write


class MembershipSources:
    """One Kafka KIP-848 group whose members the test sets between cycles."""

    members: tuple[str, ...] = ("m1",)

    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings

    def collect(self, now_ms: int) -> list[CollectionResult]:
        members = MembershipSources.members
        tps = [("t", p) for p in range(4)]
        group = GroupSnapshot(
            Source.KAFKA, "g", "Stable", generation=len(members) * 10 + sum(map(len, members)),
            protocol_type="consumer", topics=("t",),
            members=tuple(
                GroupMember(m, assignment=tuple(tps[i :: len(members)]))
                for i, m in enumerate(members)
            ),
        )  # fmt: skip
        return [
            CollectionResult(
                source=Source.KAFKA, started_ms=now_ms, finished_ms=now_ms + 5, groups=[group],
                commits=[CommittedOffset(Source.KAFKA, "g", t, p, 40) for t, p in tps],
                offsets=[PartitionOffsets(t, p, 0, 100, now_ms) for t, p in tps],
                partition_counts={"t": 4},
            )
        ]  # fmt: skip

    def close(self) -> None:
        pass


def test_processes_taking_turns_report_each_rebalance_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two collector processes share one cluster's cycles through one store. Each change of
    membership is one event, whichever process sees it first, and the other process, whose
    own memory is older, neither reports it again nor misses the next one."""
    monkeypatch.setattr(runner, "ClusterSources", MembershipSources)
    store, log = FakeStore(), FakeLog()
    cluster = ClusterSettings(name="shared", kafka_bootstrap_servers="k:9092")
    memories: dict[str, dict] = {"A": {}, "B": {}}

    def cycle(process: str, n: int, *members: str) -> runner.CycleReport:
        MembershipSources.members = members
        monkeypatch.setattr(runner, "_memories", memories[process])
        monkeypatch.setattr(runner, "collector_id", lambda: process)
        return runner.run_cycle(cluster, store, log, poll_interval_s=10, cycle_ms=SLOT + n)

    turns = [
        ("A", "m1"), ("A", "m1"), ("B", "m1"),  # B's first cycle: nothing changed
        ("A", "m1", "m2"),  # m2 joins, seen by A: B's memory still has m1 alone
        ("B", "m1", "m2"),  # B must not report the join again
        ("B", "m2"),  # m1 leaves, seen by B
        ("A", "m2"),  # A's memory has m1 and m2: it must not report the departure again
        ("A", "m2", "m3"),  # A's own next cycle: no rebuild, the join reported
    ]  # fmt: skip
    reports = [cycle(p, n * 10_000, *members) for n, (p, *members) in enumerate(turns)]
    events = [
        (n, e.cause, e.generation)
        for n, (outcome, _) in enumerate(store.written)
        for e in outcome.rebalances
    ]
    assert events == [(3, "member_joined", 24), (5, "member_left", 12), (7, "member_joined", 24)]
    assert [r.groups_rebuilt for r in reports] == [
        False, False, True, True, True, False, True, False,
    ]  # fmt: skip
    assert [r.collected_by for r in reports] == [p for p, *_ in turns]


def test_each_process_without_the_rebuild_would_report_twice() -> None:
    """The same turns with no store to rebuild from: what the rebuild prevents (the
    duplicate of a join and of a departure) does happen to two plain trackers."""
    from collectors.rebalance import RebalanceTracker

    trackers = {"A": RebalanceTracker(), "B": RebalanceTracker()}
    turns = [("A", "m1"), ("B", "m1"), ("A", "m1", "m2"), ("B", "m1", "m2")]
    events = []
    for n, (process, *members) in enumerate(turns):
        MembershipSources.members = tuple(members)
        [result] = MembershipSources(ClusterSettings(name="x")).collect(SLOT + n)
        events += [(n, e.cause) for e in trackers[process].observe(result)]
    assert events == [(2, "member_joined"), (3, "member_joined")]

"""assemble_cycle: adapter results joined into one cycle's outcome (pure, no services)."""

from __future__ import annotations

import dataclasses

import pytest

from collectors.assemble import CycleMemory, assemble_cycle
from collectors.figures import TimeTables
from collectors.rebalance import MEMBER_JOINED, RebalanceTracker
from collectors.records import (
    CollectionResult,
    CommittedOffset,
    GenerationChange,
    GroupMember,
    GroupSnapshot,
    PartitionOffsets,
    RecordedDeletion,
    Source,
    SpoutFigures,
)

T0 = 1_700_000_000_000


def memory() -> CycleMemory:
    return CycleMemory(TimeTables(60), RebalanceTracker())


def kafka(
    members: tuple[GroupMember, ...] = (),
    state: str = "Stable",
    reachable: bool = True,
    latest: int = 100,
    at: int = T0,
) -> CollectionResult:
    return CollectionResult(
        source=Source.KAFKA, started_ms=at, finished_ms=at + 50, reachable=reachable,
        commits=[CommittedOffset(Source.KAFKA, "g", "t", 0, 40), CommittedOffset(Source.KAFKA, "g", "t", 1, 7)]
        if reachable else [],
        offsets=[PartitionOffsets("t", 0, 0, latest, at), PartitionOffsets("t", 1, 0, 7, at)]
        if reachable else [],
        groups=[GroupSnapshot(Source.KAFKA, "g", state, members=members, topics=("t",))]
        if reachable else [],
    )  # fmt: skip


def spout_result(reachable: bool = True) -> CollectionResult:
    return CollectionResult(
        source=Source.ZOOKEEPER, started_ms=T0, finished_ms=T0 + 20, reachable=reachable,
        commits=[CommittedOffset(Source.STORM, "sp", "t", 0, 90, owner="topo", topology_id="topo-1")]
        if reachable else [],
    )  # fmt: skip


def figures_by(outcome, source: Source) -> dict:
    return {(f.group, f.topic, f.partition): f for f in outcome.figures if f.source is source}


def test_lag_of_every_source_comes_from_one_set_of_broker_offsets() -> None:
    out = assemble_cycle("c", T0, T0, [kafka(), spout_result()], memory())
    assert figures_by(out, Source.KAFKA)[("g", "t", 0)].lag == 60
    assert figures_by(out, Source.STORM)[("sp", "t", 0)].lag == 10
    assert [s.source for s in out.sources] == ["kafka", "zookeeper"]


def test_a_member_owning_the_partition_makes_it_alive_and_names_the_owner() -> None:
    members = (GroupMember("m-1", assignment=(("t", 0),)),)
    figs = figures_by(assemble_cycle("c", T0, T0, [kafka(members)], memory()), Source.KAFKA)
    assert (figs[("g", "t", 0)].alive, figs[("g", "t", 0)].owner) == (True, "m-1")
    # Assignments are known for this group and nobody owns partition 1: not alive.
    assert figs[("g", "t", 1)].alive is False


def test_unknown_assignments_leave_liveness_unknown_and_empty_groups_dead() -> None:
    unknown = figures_by(
        assemble_cycle("c", T0, T0, [kafka((GroupMember("m-1"),))], memory()), Source.KAFKA
    )
    assert unknown[("g", "t", 0)].alive is None
    empty = figures_by(assemble_cycle("c", T0, T0, [kafka(state="Empty")], memory()), Source.KAFKA)
    assert empty[("g", "t", 0)].alive is False


def test_storm_ui_listing_decides_spout_liveness() -> None:
    listed = CollectionResult(
        source=Source.STORM, started_ms=T0, spouts=[SpoutFigures("topo-1", "kafka-spout")]
    )
    killed = CollectionResult(source=Source.STORM, started_ms=T0, spouts=[])
    down = CollectionResult(source=Source.STORM, started_ms=T0, reachable=False)
    verdicts = []
    for ui in (listed, killed, down):
        out = assemble_cycle("c", T0, T0, [kafka(), spout_result(), ui], memory())
        verdicts.append(figures_by(out, Source.STORM)[("sp", "t", 0)].alive)
    assert verdicts == [True, False, None]


def test_pushed_spout_counts_land_on_their_partition() -> None:
    pushed = [
        SpoutFigures("topo-1", "sp", acked=40, failed=3, pending=12, topic="t", partition=0),
        SpoutFigures("topo-1", "sp", acked=1, failed=0, pending=0, topic="t", partition=5),
    ]
    out = assemble_cycle("c", T0, T0, [kafka(), spout_result()], memory(), pushed_spouts=pushed)
    f = figures_by(out, Source.STORM)[("sp", "t", 0)]
    assert (f.pending, f.failed, f.acked, f.alive) == (12, 3, 40, True)
    assert len(out.spouts) == 2


# Storm UI's whole-spout figures (a real Storm 1.2.4 spout retrying a poison message), and what
# they give a spout partition without a push: the spout's counters, in flight and cap; no
# per-partition pending, smallest failed offset or offset bound.
WHOLE = dict(emitted=1057, acked=1050, failed=7, complete_latency_ms=5.75, spout_pending=0,
             max_spout_pending=200)  # fmt: skip
PUSHED = dict(acked=40, failed=3, emitted=44, pending=12, smallest_failed_offset=77,
              max_offset_behind=500, spout_pending=12, max_spout_pending=20)  # fmt: skip
FIELDS = ("alive", "acked", "failed", "emitted", "pending", "spout_pending", "max_spout_pending",
          "smallest_failed_offset", "max_offset_behind")  # fmt: skip
FROM_WHOLE = (True, 1050, 7, 1057, None, 0, 200, None, None)
FROM_PUSH = (True, 40, 3, 44, 12, 12, 20, 77, 500)
NO_COUNTS = (None,) * 8


def storm_ui(
    *spouts: SpoutFigures, reachable: bool = True, listed: dict[str, str] | None = None
) -> CollectionResult:
    """``listed``: topologies the summary listed beyond those with figures (a page failed)."""
    result = CollectionResult(Source.STORM, T0, reachable=reachable, spouts=list(spouts))
    result.topologies = dict(listed or {})
    return result


def whole(spout_id: str, topology_id: str = "topo-1", **figures: object) -> SpoutFigures:
    return SpoutFigures(topology_id, spout_id, **{**WHOLE, **figures})


@pytest.mark.parametrize(
    ("ui", "pushed", "expected"),
    [
        # The component whose id is the commit's group (SpoutConfig.id) stands for the spout.
        pytest.param(storm_ui(whole("sp"), whole("other", acked=1)), [], FROM_WHOLE, id="by id"),
        # The topology's only spout component, named otherwise, is that spout.
        pytest.param(storm_ui(whole("orders-component")), [], FROM_WHOLE, id="the only spout"),
        # Two spouts, none of that id: which one is the partition's is unknown.
        pytest.param(storm_ui(whole("a"), whole("b")), [], (True, *NO_COUNTS), id="two, no match"),
        # The spout of that id in another topology instance only: this one is not listed.
        pytest.param(storm_ui(whole("sp", "topo-0")), [], (False, *NO_COUNTS), id="another instance"),
        # The topology resubmitted: the znode names the killed instance, the UI lists the new
        # instance of the same name, which runs the spout now.
        pytest.param(storm_ui(whole("sp", "topo-2", topology_name="topo")), [], FROM_WHOLE,
                     id="resubmitted under the same name"),
        pytest.param(storm_ui(whole("sp", "other-2", topology_name="other")), [],
                     (False, *NO_COUNTS), id="another topology's instance"),
        # Listed by the summary, its page failed this cycle: running, its figures unknown.
        pytest.param(storm_ui(listed={"topo-1": "topo"}), [], (True, *NO_COUNTS),
                     id="listed, page failed"),
        pytest.param(storm_ui(listed={"topo-2": "topo"}), [], (True, *NO_COUNTS),
                     id="resubmitted, page failed"),
        # A push for the partition wins over Storm UI.
        pytest.param(storm_ui(whole("sp")), [("sp", 0)], FROM_PUSH, id="push wins"),
        # A push for another partition only: Storm UI's figure for this one.
        pytest.param(storm_ui(whole("sp")), [("sp", 5)], FROM_WHOLE, id="push of another partition"),
        # Storm UI down: liveness unknown, no counters; a push still gives its figures.
        pytest.param(storm_ui(reachable=False), [], (None, *NO_COUNTS), id="UI unreachable"),
        pytest.param(storm_ui(reachable=False), [("sp", 0)], FROM_PUSH, id="UI unreachable, push"),
        pytest.param(None, [], (None, *NO_COUNTS), id="no Storm UI"),
        # A whole-spout figure gives no per-partition figure, whatever it carries.
        pytest.param(
            storm_ui(whole("sp", pending=9, smallest_failed_offset=3, max_offset_behind=5)), [],
            FROM_WHOLE, id="no partition figures from the whole spout",
        ),
    ],
)  # fmt: skip
def test_a_spout_partition_without_a_push_takes_the_whole_spouts_figures(
    ui: CollectionResult | None, pushed: list[tuple[str, int]], expected: tuple
) -> None:
    pushes = [SpoutFigures("topo-1", sp, topic="t", partition=p, **PUSHED) for sp, p in pushed]
    results = [kafka(), spout_result()] + ([ui] if ui is not None else [])
    out = assemble_cycle("c", T0, T0, results, memory(), pushed_spouts=pushes)
    f = figures_by(out, Source.STORM)[("sp", "t", 0)]
    assert tuple(getattr(f, name) for name in FIELDS) == expected


def test_every_partition_of_the_spout_carries_the_whole_spouts_counters() -> None:
    """Storm has no per-partition counts: both partitions show the spout's, as the status job
    reads them (liveness, POISON_MESSAGE's failed rise, BACKPRESSURE's in flight)."""
    zk = spout_result()
    zk.commits.append(
        CommittedOffset(Source.STORM, "sp", "t", 1, 7, owner="topo", topology_id="topo-1")
    )
    out = assemble_cycle("c", T0, T0, [kafka(), zk, storm_ui(whole("sp"))], memory())
    figs = figures_by(out, Source.STORM)
    assert [(figs[("sp", "t", p)].failed, figs[("sp", "t", p)].pending) for p in (0, 1)] == [
        (7, None),
        (7, None),
    ]
    assert out.spouts == [whole("sp")]  # the spout's own row, once


def test_time_lag_uses_the_history_kept_between_cycles() -> None:
    mem = memory()
    assemble_cycle("c", T0, T0, [kafka(latest=40)], mem)
    out = assemble_cycle("c", T0 + 10_000, T0 + 10_000, [kafka(latest=100, at=T0 + 10_000)], mem)
    # Committed 40 was the latest offset at T0: ten seconds behind.
    assert figures_by(out, Source.KAFKA)[("g", "t", 0)].time_lag_s == 10.0


def test_rebalance_events_between_cycles() -> None:
    mem = memory()
    one = (GroupMember("m-1", assignment=(("t", 0), ("t", 1))),)
    two = (GroupMember("m-1", assignment=(("t", 0),)), GroupMember("m-2", assignment=(("t", 1),)))
    assert assemble_cycle("c", T0, T0, [kafka(one)], mem).rebalances == []
    events = assemble_cycle("c", T0 + 10_000, T0 + 10_000, [kafka(two, at=T0 + 10_000)], mem)
    assert [(e.group, e.cause) for e in events.rebalances] == [("g", MEMBER_JOINED)]


def test_errors_and_unreachable_sources_are_carried() -> None:
    out = assemble_cycle("c", T0, T0, [kafka(), spout_result(reachable=False)], memory())
    zk = next(s for s in out.sources if s.source == "zookeeper")
    assert zk.reachable is False
    assert figures_by(out, Source.STORM) == {}


def test_recorded_generation_changes_and_deletions_reach_the_timeline() -> None:
    """What ``__consumer_offsets`` recorded (a rebalance between two polls, a deletion) is in
    the cycle's events, also when the Kafka result's groups were rebuilt with the consumers'
    reports (they once were dropped there, in every cycle with Kafka groups)."""
    result = kafka((GroupMember("m-1", assignment=(("t", 0), ("t", 1))),))
    result.generation_changes = [
        GenerationChange("g", T0 - 5_000, 7, 6, (MEMBER_JOINED,), {"joined": ["m-1"]})
    ]
    result.deletions = [RecordedDeletion("gone", T0 - 1_000, "group_deleted")]
    out = assemble_cycle("c", T0, T0, [result], memory())
    recorded = [(e.group, e.cause, e.generation) for e in out.rebalances]
    assert ("g", MEMBER_JOINED, 7) in recorded
    assert ("gone", "group_deleted", None) in recorded


def storm2_kafka() -> CollectionResult:
    """A Storm 2 spout's group: Empty (it assigns its partitions itself), its commits naming
    the topology instance."""
    result = kafka(state="Empty")
    result.groups = [dataclasses.replace(result.groups[0], topology_id="topo-1")]
    return result


@pytest.mark.parametrize(
    ("ui", "expected"),
    [
        # Listed by a reachable Storm UI: alive, with the spout's figures (by the group's id,
        # else the topology's only spout).
        pytest.param(storm_ui(whole("g")), FROM_WHOLE, id="listed, by id"),
        pytest.param(storm_ui(whole("kafka-spout")), FROM_WHOLE, id="listed, the only spout"),
        # A reachable UI that does not list the topology: not alive.
        pytest.param(storm_ui(whole("g", "other-1")), (False, *NO_COUNTS), id="not listed"),
        # No UI, or one that does not answer: unknown, never "dead" for being Empty.
        pytest.param(None, (None, *NO_COUNTS), id="no Storm UI"),
        pytest.param(storm_ui(reachable=False), (None, *NO_COUNTS), id="UI unreachable"),
    ],
)  # fmt: skip
def test_a_storm2_spouts_empty_group_is_judged_by_its_topology(
    ui: CollectionResult | None, expected: tuple
) -> None:
    results = [storm2_kafka()] + ([ui] if ui is not None else [])
    out = assemble_cycle("c", T0, T0, results, memory())
    f = figures_by(out, Source.KAFKA)[("g", "t", 0)]
    assert tuple(getattr(f, name) for name in FIELDS) == expected


def test_an_ordinary_empty_group_is_still_not_alive() -> None:
    out = assemble_cycle("c", T0, T0, [kafka(state="Empty"), storm_ui(whole("g"))], memory())
    assert figures_by(out, Source.KAFKA)[("g", "t", 0)].alive is False

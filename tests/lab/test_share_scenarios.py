"""The workload's share groups (KIP-932) under each scenario, on the session's real broker:
the evidence each scenario leaves, as Lagwatch's Kafka source reads it, compared with what
Kafka's own ``kafka-share-groups.sh --describe --offsets/--members`` prints at the same moment.

"The same moment": the tool runs between two reads of the source; a start offset only rises
and, once the producers stop, a lag only falls, so the tool's figure must lie between the two
reads (equal to them when the group did not move meanwhile). Membership is compared when two
reads around the tool agree. The product's statuses for the same scenarios are
``test_share_verdicts.py``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from collectors.kafka.source import KafkaSource
from collectors.records import CommittedOffset, GroupSnapshot, ShareStateFigures
from collectors.share_state import given_up
from lab.kafka_tools import share_group_members, share_group_offsets
from lab.workload.runner import ScenarioRunner
from lab.workload.spec import Roles, ShareGroupSpec, TopicSpec, WorldSpec
from lab.workload.world import World
from tests.lab.share_records import state_records
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.lab,
    pytest.mark.share,
    pytest.mark.kafka_since("4.2", "share groups (KIP-932)"),
]

PARTITIONS = 2
Figures = dict[str, tuple[GroupSnapshot | None, dict[int, CommittedOffset]]]


def uid(kind: str) -> str:
    return f"sq-{kind}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def world(lab_services: Any) -> Iterator[tuple[World, ScenarioRunner, dict[str, str]]]:
    """A queue world of four share groups, each on a topic of its own."""
    names = {kind: uid(kind) for kind in ("healthy", "slow", "dead", "poison")}
    spec = WorldSpec(
        topics=tuple(TopicSpec(f"{n}-t", PARTITIONS, rate=10) for n in names.values()),
        share_groups=tuple(ShareGroupSpec(n, f"{n}-t", members=2) for n in names.values()),
        roles=Roles(slow_group=names["slow"], dead_group=names["dead"]),
    )
    w = World(spec, lab_services.bootstrap, lab_services.zk_hosts, keeper_interval_s=1.0)
    w.start()
    runner = ScenarioRunner(w)
    try:
        yield w, runner, names
    finally:
        runner.stop_all()
        w.stop()


def read(source: KafkaSource, groups: list[str]) -> Figures:
    """Each group's snapshot and its partitions' start offsets (with the broker's lag), as
    one collection cycle reads them."""
    result = source.collect(int(time.time() * 1000))
    found: Figures = {}
    for group in groups:
        snapshot = next((g for g in result.groups if g.group == group), None)
        commits = {c.partition: c for c in result.commits if c.group == group}
        found[group] = (snapshot, commits)
    return found


def started(figures: Figures) -> bool:
    """Every group with both members and a start offset and a lag on every partition."""
    return all(
        snap is not None
        and len(snap.members) == 2
        and len(commits) == PARTITIONS
        and all(c.reported_lag is not None for c in commits.values())
        for snap, commits in figures.values()
    )


def starts(figures: Figures, group: str) -> dict[int, int]:
    return {p: c.offset for p, c in figures[group][1].items()}


def lags(figures: Figures, group: str) -> dict[int, int]:
    return {p: c.reported_lag or 0 for p, c in figures[group][1].items()}


def test_share_scenarios_as_kafka_share_groups_sees_them(
    world: tuple[World, ScenarioRunner, dict[str, str]], kafka_bootstrap: str
) -> None:
    w, runner, names = world
    groups = list(names.values())
    with KafkaSource(kafka_bootstrap, read_offsets_topic=False) as source:
        wait_until(lambda: started(read(source, groups)), 30, "every share group fetching")

        poison = runner.start(
            "poison-message",
            {"group": names["poison"], "partition": 0, "hold_s": 4, "delivery_limit": 4},
        )["details"]
        x = poison["offset"]
        slow = runner.start("slow-consumer", {"delay_ms": 400})["details"]
        assert slow["group"] == names["slow"] and slow["max_consume_rate"] < slow["produce_rate"]
        dead = runner.start("dead-consumer", {})["details"]
        assert dead == {"group": names["dead"], "members_closed": 2}
        before = read(source, groups)

        # Poison: partition 0's start offset held at X while the members fetch it again and
        # again (4 s each time), until the group's delivery count limit archives it.
        def held() -> bool:
            return (
                w.share_groups[names["poison"]].poison_deliveries() >= 2
                and read(source, [names["poison"]])[names["poison"]][1][0].offset == x
            )

        wait_until(held, 10, f"the poison record {x} delivered again, the start offset at it")

        # What the source reads of it in __share_group_state: X come back after its
        # deliveries, the group's limit beside it.
        def redelivered() -> ShareStateFigures | None:
            state = read(source, [names["poison"]])[names["poison"]][1][0].share_state
            return state if state and state.redelivered_count else None

        state = wait_until(redelivered, 30, f"the poison record {x} come back, in the state")
        assert (state.redelivered_offset, state.delivery_limit) == (x, 4)
        assert 1 <= state.redelivered_count <= w.share_groups[names["poison"]].poison_deliveries()

        # Slow: the start offsets move, the lag grows on every partition.
        def slowed() -> bool:
            now = read(source, groups)
            s0, s1 = starts(before, names["slow"]), starts(now, names["slow"])
            l0, l1 = lags(before, names["slow"]), lags(now, names["slow"])
            return all(s1[p] > s0[p] and l1[p] > l0[p] + 20 for p in range(PARTITIONS))

        wait_until(slowed, 30, "a slow queue: start offsets moving, lag growing")

        # Dead: nobody holds a partition, the start offsets are frozen and the lag grows.
        now = read(source, groups)
        snap = now[names["dead"]][0]
        assert snap is not None and snap.members == () and snap.state == "Empty"
        assert starts(now, names["dead"]) == starts(before, names["dead"])
        assert all(
            lags(now, names["dead"])[p] > lags(before, names["dead"])[p] for p in range(PARTITIONS)
        )

        wait_until(
            lambda: read(source, groups)[names["poison"]][1][0].offset > x,
            30,
            "the poison record archived after its delivery limit",
        )
        assert w.share_groups[names["poison"]].poison_deliveries() == 4
        # What only the share-group state topic says: X delivered 4 times, then archived.
        given = wait_until(
            lambda: [
                g for r in state_records(kafka_bootstrap, names["poison"]) for g in given_up(r)
            ],
            30,
            "the archived poison record in __share_group_state",
        )
        assert sorted(set(given)) == [(x, x, 4)]
        # The source's figures say the same: X archived after 4 deliveries, the limit 4.
        state = read(source, [names["poison"]])[names["poison"]][1][0].share_state
        assert state is not None
        assert (state.archived_offset, state.archived_count, state.delivery_limit) == (x, 4, 4)
        assert state.archived == 1  # one record given up, remembered once the start passed it

        # Healthy: keeps pace, nothing piles up.
        healthy = read(source, groups)
        assert all(lag < 100 for lag in lags(healthy, names["healthy"]).values())

        # The same moment as Kafka's tool: producers stopped so every lag can only fall.
        for topic in w.spec.topics:
            w.producers.set_rate(topic.name, 0)
        for group in groups:
            compare_offsets(source, kafka_bootstrap, group)
            compare_members(source, kafka_bootstrap, group)


def compare_offsets(source: KafkaSource, bootstrap: str, group: str) -> None:
    """The tool's start offset and lag of each partition lie between two reads of the source
    around it."""
    before = read(source, [group])
    printed = share_group_offsets(bootstrap, group)
    after = read(source, [group])
    assert set(printed) == {(c.topic, p) for p, c in after[group][1].items()}, group
    for (_topic, p), (start, lag) in printed.items():
        low, high = before[group][1][p], after[group][1][p]
        assert start is not None and low.offset <= start <= high.offset, (group, p)
        assert lag is not None and low.reported_lag is not None and high.reported_lag is not None
        assert high.reported_lag <= lag <= low.reported_lag, (group, p)


def compare_members(source: KafkaSource, bootstrap: str, group: str) -> None:
    """Members (id, client id, host, assignment) as the tool lists them, at a still moment."""

    def still() -> tuple | None:
        before = read(source, [group])[group][0]
        printed = share_group_members(bootstrap, group)
        after = read(source, [group])[group][0]
        return (after, printed) if before == after else None

    snapshot, printed = wait_until(still, 30, f"a still membership of {group}")
    assert snapshot is not None
    assert {
        m.member_id: {"host": m.host, "client_id": m.client_id, "assignment": m.assignment}
        for m in snapshot.members
    } == printed

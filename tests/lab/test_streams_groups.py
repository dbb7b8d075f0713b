"""A real Kafka Streams application's streams group (KIP-1071) on the session's broker: what
the product's Kafka source reads of it, compared with what Kafka's own
``kafka-streams-groups.sh --describe --offsets/--members`` prints at the same moment.

Two instances of the lab's word count (``lab/kafka_streams/``: kafka-streams 4.4.0 with
``group.protocol=streams``; subtopology 0 reads the input topic and writes a repartition
topic, subtopology 1 reads it and counts) share one application id. "The same moment": the
applications are paused (``KafkaStreams.pause()``: the members stay in the group and commit
nothing) after records were produced for them, and the comparison is made once two reads of
the source around the tool agree.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.figures import TimeTables, partition_figures
from collectors.kafka.source import KafkaSource
from collectors.records import GroupSnapshot
from lab.kafka_streams.app import StreamsApp
from lab.kafka_tools import streams_group_members, streams_group_offsets, streams_group_state
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.lab,
    pytest.mark.streams,
    pytest.mark.kafka_since("4.2", "streams groups (KIP-1071)"),
]

PARTITIONS = 3
LINES = 60  # per partition, at first
MORE = 25  # per partition, produced while the applications are paused
# Partition figures: (topic, partition) -> (committed, log end, lag).
Offsets = dict[tuple[str, int], tuple[int, int | None, int | None]]


def produce(bootstrap: str, topic: str, per_partition: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for n in range(per_partition):
        for p in range(PARTITIONS):
            producer.produce(topic, key=f"k{n}", value=f"the quick fox {n} jumps", partition=p)
    assert producer.flush(30) == 0


@pytest.fixture
def apps(
    kafka_bootstrap: str, admin: AdminClient, tmp_path: Path
) -> Iterator[tuple[str, str, list[StreamsApp]]]:
    app_id = f"wc-{uuid.uuid4().hex[:8]}"
    lines, counts = f"{app_id}-lines", f"{app_id}-counts"
    for future in admin.create_topics(
        [NewTopic(lines, PARTITIONS, 1), NewTopic(counts, PARTITIONS, 1)]
    ).values():
        future.result(timeout=30)
    produce(kafka_bootstrap, lines, LINES)
    instances = [
        StreamsApp(kafka_bootstrap, app_id, lines, counts, tmp_path / name, client_id=name)
        for name in (f"{app_id}-a", f"{app_id}-b")
    ]
    try:
        for app in instances:
            app.start()
        yield app_id, lines, instances
    finally:
        for app in instances:
            app.stop()


def read(source: KafkaSource, group: str) -> tuple[GroupSnapshot | None, Offsets]:
    """The group's snapshot and each of its partitions' commit, log end and lag, as one
    collection cycle reads and figures them."""
    now_ms = int(time.time() * 1000)
    result = source.collect(now_ms)
    found = [g for g in result.groups if g.group == group]
    assert len(found) <= 1, f"{group} read twice: {found}"  # not also as a consumer group
    snapshot = found[0] if found else None
    commits = [c for c in result.commits if c.group == group]
    figures = partition_figures(commits, result.offsets, TimeTables(), now_ms)
    return snapshot, {(f.topic, f.partition): (f.committed, f.latest, f.lag) for f in figures}


def settled(source: KafkaSource, group: str, lines: str) -> Any:
    """Both members in a Stable group, every partition of the input and repartition topics
    committed and nothing left to read: the snapshot and figures, else None."""
    snapshot, offsets = read(source, group)
    if snapshot is None or snapshot.state != "Stable" or len(snapshot.members) != 2:
        return None
    if not all(m.tasks and m.tasks.active for m in snapshot.members):
        return None
    inputs = [offsets.get((lines, p)) for p in range(PARTITIONS)]
    if len(offsets) != 2 * PARTITIONS or any(o is None or o[2] != 0 for o in inputs):
        return None
    return snapshot, offsets


def test_a_streams_group_as_kafka_streams_groups_sees_it(
    apps: tuple[str, str, list[StreamsApp]], kafka_bootstrap: str
) -> None:
    app_id, lines, instances = apps
    repartition = f"{app_id}-counts-repartition"  # named after the state store
    with KafkaSource(kafka_bootstrap, read_offsets_topic=False) as source:
        snapshot, offsets = wait_until(
            lambda: settled(source, app_id, lines), 120, "the word count's group settled"
        )
        assert snapshot.protocol_type == "streams"
        assert snapshot.generation is not None and snapshot.assignment_epoch is not None
        subtopologies = {s.subtopology_id: s for s in snapshot.subtopologies or ()}
        assert {s: sub.source_topics for s, sub in subtopologies.items()} == {
            "0": (lines,),
            "1": (repartition,),
        }
        assert subtopologies["0"].repartition_sink_topics == (repartition,)
        assert subtopologies["1"].state_changelog_topics == (f"{app_id}-counts-changelog",)
        assert set(snapshot.topics) == {lines, repartition}
        # Every task active on exactly one member; its partitions are the member's.
        tasks = sorted(t for m in snapshot.members for t in (m.tasks.active if m.tasks else ()))
        assert tasks == sorted((s, p) for s in ("0", "1") for p in range(PARTITIONS))
        assert len({m.process_id for m in snapshot.members}) == 2

        # Paused with records waiting: the commits and lags stand still.
        for app in instances:
            app.pause()
        produce(kafka_bootstrap, lines, MORE)

        def still() -> Any:
            first = read(source, app_id)
            time.sleep(1.0)
            second = read(source, app_id)
            waiting = [second[1].get((lines, p), (0, 0, 0))[2] for p in range(PARTITIONS)]
            return second if first[1] == second[1] and all(w for w in waiting) else None

        snapshot, offsets = wait_until(still, 60, "the paused group's figures standing still")
        printed = streams_group_offsets(kafka_bootstrap, app_id)
        again = read(source, app_id)
        assert again[1] == offsets, "the figures moved while the tool ran"
        assert printed == offsets
        assert all(offsets[(lines, p)][2] == MORE for p in range(PARTITIONS))

        members = streams_group_members(kafka_bootstrap, app_id)
        assert members == {
            m.member_id: {
                "member_epoch": m.member_epoch,
                "process_id": m.process_id,
                "client_id": m.client_id,
                "active": m.tasks.active if m.tasks else (),
            }
            for m in snapshot.members
        }
        state = streams_group_state(kafka_bootstrap, app_id)
        assert state == {
            "coordinator": snapshot.coordinator,
            "assignor": snapshot.assignor,
            "state": snapshot.state,
            "group_epoch": snapshot.generation,
            "assignment_epoch": snapshot.assignment_epoch,
            "members": len(snapshot.members),
        }

        # Resumed: the commits move and the lag drains.
        for app in instances:
            app.resume()
        wait_until(lambda: settled(source, app_id, lines), 60, "the group caught up again")

        # One instance gone: the other is given every task and owns every partition.
        instances[1].stop()

        def alone() -> Any:
            snap, offsets = read(source, app_id)
            if snap is None or len(snap.members) != 1 or snap.state != "Stable":
                return None
            (member,) = snap.members
            return snap if member.tasks and len(member.tasks.active) == 2 * PARTITIONS else None

        snapshot = wait_until(alone, 90, "the remaining instance holding every task")
        (member,) = snapshot.members
        every = {(t, p) for t in (lines, repartition) for p in range(PARTITIONS)}
        assert set(member.assignment) == every

        # Every instance gone: the group stays, Empty, with its commits and no member to own
        # them; what is produced since then waits.
        instances[0].stop()
        produce(kafka_bootstrap, lines, MORE)

        def abandoned() -> Any:
            snap, offsets = read(source, app_id)
            if snap is None or snap.state != "Empty" or snap.members:
                return None
            waiting = all(offsets.get((lines, p), (0, 0, 0))[2] for p in range(PARTITIONS))
            return (snap, offsets) if waiting else None

        snapshot, offsets = wait_until(abandoned, 90, "the group Empty, its input waiting")
        assert all(offsets[(lines, p)][2] == MORE for p in range(PARTITIONS))


def test_the_labs_streams_app_service(tmp_path: Path) -> None:
    """``python -m lab up --services zookeeper,kafka,streams-app``: the lab cluster has a
    streams group of two instances, read by the product's Kafka source."""
    from lab.kafka_streams import world as streams_world
    from lab.stack import Stack

    stack = Stack(tmp_path / "stack")
    try:
        endpoints = stack.up(["zookeeper", "kafka", "streams-app"])
        with KafkaSource(endpoints["kafka"], read_offsets_topic=False) as source:

            def stable() -> Any:
                snapshot, offsets = read(source, streams_world.APPLICATION_ID)
                if snapshot is None or snapshot.state != "Stable" or len(snapshot.members) != 2:
                    return None
                return snapshot, offsets

            snapshot, offsets = wait_until(stable, 60, "the lab's streams group Stable")
        assert snapshot.protocol_type == "streams"
        assert len({m.process_id for m in snapshot.members}) == streams_world.INSTANCES
        inputs = {p for (t, p) in offsets if t == streams_world.INPUT}
        assert inputs == set(range(streams_world.PARTITIONS))
    finally:
        stack.down()

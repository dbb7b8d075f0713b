"""What a streams group's answers become (pure): ``GroupSnapshot`` of type "streams" with its
topology, each member's tasks and the partitions of its active tasks, and its committed
offsets as a consumer group's commits, owned by the member whose active task reads them."""

from __future__ import annotations

from collectors.figures import TimeTables, partition_figures
from collectors.kafka.streams_groups import streams_commits, streams_snapshot
from collectors.kafka_wire import (
    GroupOffsets,
    PartitionOffset,
    StreamsGroupDescription,
    StreamsMember,
    StreamsTasks,
    Subtopology,
)
from collectors.records import PartitionOffsets, Source
from collectors.records import StreamsTasks as RecordTasks


def _member(member_id: str, process: str, now: StreamsTasks, target: StreamsTasks) -> StreamsMember:
    return StreamsMember(
        member_id=member_id,
        member_epoch=9,
        instance_id=None,
        rack_id=None,
        client_id=f"{member_id}-StreamThread-1-consumer",
        client_host="/127.0.0.1",
        topology_epoch=0,
        process_id=process,
        user_endpoint=None,
        client_tags=(),
        task_offsets=(),
        task_end_offsets=(),
        assignment=now,
        target_assignment=target,
    )


# Subtopology 0 reads "words" and writes the repartition topic subtopology 1 reads.
DESCRIBED = StreamsGroupDescription(
    group="wordcount",
    state="Reconciling",
    group_epoch=12,
    assignment_epoch=12,
    assignor="sticky",
    members=(
        _member(
            "m1",
            "p1",
            StreamsTasks(active=(("0", 0), ("0", 1), ("1", 0)), standby=(("1", 1),)),
            StreamsTasks(active=(("0", 0), ("1", 0))),
        ),
        _member(
            "m2",
            "p2",
            StreamsTasks(warmup=(("1", 1),)),
            StreamsTasks(active=(("0", 1), ("1", 1))),
        ),
    ),  # fmt: skip
    topology_epoch=3,
    subtopologies=(
        Subtopology("0", ("words",), ("wordcount-counts-repartition",)),
        Subtopology(
            "1",
            (),
            (),
            ("wordcount-counts-changelog",),
            ("wordcount-counts-repartition",),
        ),
    ),
)

COMMITTED = GroupOffsets(
    group="wordcount",
    error_code=0,
    offsets=(
        PartitionOffset("wordcount-counts-repartition", 0, 30, None, ""),
        PartitionOffset("wordcount-counts-repartition", 1, -1, None, ""),  # no commit yet
        PartitionOffset("words", 0, 100, 4, ""),
        PartitionOffset("words", 1, 55, 4, ""),
        PartitionOffset("words", 2, 0, None, "", 3),  # UNKNOWN_TOPIC_OR_PARTITION
    ),
)


def test_snapshot_is_a_streams_group_with_its_topology_and_epochs() -> None:
    snap = streams_snapshot(DESCRIBED, COMMITTED, "Stable", "127.0.0.1:9092")
    assert (snap.protocol_type, snap.state, snap.generation, snap.assignment_epoch) == (
        "streams", "Reconciling", 12, 12,
    )  # fmt: skip
    assert (snap.assignor, snap.coordinator, snap.members_known) == (
        "sticky", "127.0.0.1:9092", True,
    )  # fmt: skip
    assert snap.topology_epoch == 3
    assert [(s.subtopology_id, s.source_topics) for s in snap.subtopologies or ()] == [
        ("0", ("words",)),
        ("1", ("wordcount-counts-repartition",)),
    ]
    assert snap.subtopologies[1].state_changelog_topics == ("wordcount-counts-changelog",)
    assert snap.topics == ("wordcount-counts-repartition", "words")


def test_a_members_assignment_is_the_partitions_of_its_active_tasks() -> None:
    m1, m2 = streams_snapshot(DESCRIBED, COMMITTED).members
    assert m1.assignment == (
        ("wordcount-counts-repartition", 0), ("words", 0), ("words", 1),
    )  # fmt: skip
    assert m1.target_assignment == (("wordcount-counts-repartition", 0), ("words", 0))
    assert m1.tasks == RecordTasks(active=(("0", 0), ("0", 1), ("1", 0)), standby=(("1", 1),))
    assert m1.target_tasks == RecordTasks(active=(("0", 0), ("1", 0)))
    assert (m1.process_id, m1.member_epoch, m1.host) == ("p1", 9, "/127.0.0.1")
    # A warm-up task processes nothing: no partition is the member's yet.
    assert m2.assignment == () and m2.tasks == RecordTasks(warmup=(("1", 1),))
    assert m2.target_assignment == (("wordcount-counts-repartition", 1), ("words", 1))


def test_commits_are_owned_by_the_active_task_and_missing_ones_left_out() -> None:
    snap = streams_snapshot(DESCRIBED, COMMITTED)
    commits = streams_commits(snap, COMMITTED)
    assert [(c.topic, c.partition, c.offset, c.owner) for c in commits] == [
        ("wordcount-counts-repartition", 0, 30, "m1"),
        ("words", 0, 100, "m1"),
        ("words", 1, 55, "m1"),
    ]
    assert all(c.source is Source.KAFKA and not c.share for c in commits)
    assert all(c.reported_lag is None for c in commits)


def test_an_uninitialised_group_has_no_topology_and_members_own_nothing() -> None:
    new = StreamsGroupDescription(
        group="wordcount",
        state="NotReady",
        group_epoch=1,
        assignment_epoch=0,
        assignor=None,
        members=(_member("m1", "p1", StreamsTasks(), StreamsTasks()),),
        topology_epoch=0,
        subtopologies=None,
    )
    snap = streams_snapshot(new, GroupOffsets("wordcount", 0, ()))
    assert (snap.state, snap.subtopologies, snap.topics) == ("NotReady", None, ())
    assert snap.members[0].assignment == ()


def test_a_failed_description_keeps_the_listed_state_and_the_commits() -> None:
    failed = StreamsGroupDescription.failed("wordcount", 15, "coordinator down")
    snap = streams_snapshot(failed, COMMITTED, "Stable")
    assert (snap.state, snap.members, snap.members_known) == ("Stable", (), False)
    assert snap.topics == ("wordcount-counts-repartition", "words")
    commits = streams_commits(snap, COMMITTED)
    assert [c.owner for c in commits] == [None, None, None]


def test_the_lag_is_log_end_minus_the_commit_as_a_consumer_groups() -> None:
    snap = streams_snapshot(DESCRIBED, COMMITTED)
    commits = streams_commits(snap, COMMITTED)
    offsets = [
        PartitionOffsets("words", 0, 0, 130, 1_000),
        PartitionOffsets("words", 1, 0, 55, 1_000),
        PartitionOffsets("wordcount-counts-repartition", 0, 10, 31, 1_000),
    ]
    figures = partition_figures(commits, offsets, TimeTables(), 1_000)
    lags = {(f.topic, f.partition): (f.lag, f.lag_upper_bound) for f in figures}
    assert lags == {
        ("words", 0): (30, False),
        ("words", 1): (0, False),
        ("wordcount-counts-repartition", 0): (1, False),
    }

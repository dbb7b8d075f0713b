"""What a share group's answers become (pure): ``GroupSnapshot`` of type "share", its
partitions' start offsets as commits with the broker's lag, and the figures' lag: the
broker's (KIP-1226) where reported, else start offset to log end marked as an upper bound."""

from __future__ import annotations

import pytest

from collectors.figures import TimeTables, partition_figures
from collectors.kafka.share_groups import share_commits, share_snapshot
from collectors.kafka_wire import (
    ShareGroupDescription,
    ShareGroupOffsets,
    ShareMember,
    SharePartitionOffset,
)
from collectors.records import CommittedOffset, PartitionOffsets, Source

DESCRIBED = ShareGroupDescription(
    group="q",
    state="Stable",
    group_epoch=7,
    assignment_epoch=6,
    assignor="simple",
    members=(
        ShareMember("m1", None, 6, "c1", "/10.0.0.1", ("jobs",), (("jobs", 0), ("jobs", 1))),
        ShareMember("m2", None, 6, "c2", "/10.0.0.2", ("jobs",), (("jobs", 0),)),
    ),
)


def _offsets(lag_reported: bool) -> ShareGroupOffsets:
    return ShareGroupOffsets(
        group="q",
        partitions=(
            SharePartitionOffset("jobs", "id", 0, 40, 0, 7 if lag_reported else None),
            SharePartitionOffset("jobs", "id", 1, 90, 0, 0 if lag_reported else None),
            SharePartitionOffset("jobs", "id", 2, None, None, None),  # not initialised
            SharePartitionOffset("jobs", "id", 3, 0, 0, None, 3, "unknown"),
        ),
        lag_reported=lag_reported,
    )


def test_snapshot_is_a_share_group_with_its_members_and_epochs() -> None:
    snap = share_snapshot(DESCRIBED, _offsets(True), "Stable", "127.0.0.1:9092")
    assert (snap.protocol_type, snap.state, snap.generation, snap.assignment_epoch) == (
        "share", "Stable", 7, 6,
    )  # fmt: skip
    assert (snap.assignor, snap.coordinator, snap.members_known) == (
        "simple", "127.0.0.1:9092", True,
    )  # fmt: skip
    assert [m.member_id for m in snap.members] == ["m1", "m2"]
    assert snap.members[0].target_assignment is None  # share members have no target
    assert snap.members[1].subscription == ("jobs",) and snap.members[1].member_epoch == 6
    assert snap.topics == ("jobs",)


def test_a_failed_description_keeps_the_listed_state_and_unknown_members() -> None:
    failed = ShareGroupDescription.failed("q", 15, "coordinator down")
    snap = share_snapshot(failed, ShareGroupOffsets.failed("q", 15, None), "Empty")
    assert (snap.state, snap.members, snap.members_known) == ("Empty", (), False)


COMMIT_CASES = [
    # (lag reported, expected (partition, start offset, reported lag, owner))
    (True, [(0, 40, 7, "m1"), (1, 90, 0, "m1")]),
    (False, [(0, 40, None, "m1"), (1, 90, None, "m1")]),
]


@pytest.mark.parametrize(("reported", "expected"), COMMIT_CASES)
def test_start_offsets_are_the_commits(reported: bool, expected: list[tuple]) -> None:
    snap = share_snapshot(DESCRIBED, _offsets(reported))
    commits = share_commits(snap, _offsets(reported))
    assert [(c.partition, c.offset, c.reported_lag, c.owner) for c in commits] == expected
    assert all(c.share and c.group == "q" and c.source is Source.KAFKA for c in commits)


def _share(offset: int, reported: int | None) -> CommittedOffset:
    return CommittedOffset(Source.KAFKA, "q", "jobs", 0, offset, share=True, reported_lag=reported)


FIGURE_CASES = [
    # (commit, log start/end, lag, upper bound, why)
    (_share(40, 7), (0, 100), 7, False, "the broker's own lag (KIP-1226)"),
    (_share(40, None), (0, 100), 60, True, "no broker lag: start offset to log end, at most"),
    (_share(100, None), (0, 100), 0, True, "at the end: 0, still a bound"),
    (_share(40, None), (None, None), None, False, "log end unknown: nothing to bound"),
    (CommittedOffset(Source.KAFKA, "g", "jobs", 0, 40), (0, 100), 60, False, "a consumer group"),
]


@pytest.mark.parametrize(("commit", "log", "lag", "bound", "why"), FIGURE_CASES)
def test_figure_lag(
    commit: CommittedOffset, log: tuple, lag: int | None, bound: bool, why: str
) -> None:
    offsets = [PartitionOffsets("jobs", 0, log[0], log[1], 1_000)] if log[1] is not None else []
    [figure] = partition_figures([commit], offsets, TimeTables(), 2_000)
    assert (figure.lag, figure.lag_upper_bound) == (lag, bound), why
    assert figure.committed == commit.offset

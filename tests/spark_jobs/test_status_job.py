"""The status job on real local Spark: samples in, the evaluator's own verdicts out.

Every scenario is a partition's samples (ten polls a minute apart unless told otherwise) plus
the window the evaluator should see for it, written out by hand here. The job must give, for
each partition, exactly what ``evaluate_partition`` gives on that window: the job derives
windows and never decides a status itself. All scenarios run in one Spark job (a module
fixture), so the whole file costs one ``applyInPandas`` round.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession

from collectors.sample_log import SampleLog
from spark_jobs.evaluator import (
    OK,
    POISON_MESSAGE,
    SOURCE_UNREACHABLE,
    SPOUT_ID_COLLISION,
    STALL,
    STOP,
    TOPOLOGY_RESTARTED,
    UNKNOWN,
    Commit,
    EvaluatorConfig,
    PartitionVerdict,
    PartitionWindow,
    SpoutSeries,
    evaluate_group,
    evaluate_partition,
)
from spark_jobs.sample_reader import empty_samples, read_samples
from spark_jobs.status import (
    GROUP_VERDICT_SCHEMA,
    PARTITION_VERDICT_SCHEMA,
    derive_commits,
    diagnosis_json,
    evaluate_status,
    partition_id,
)
from tests.spark_jobs.samples import MIN, SEC, T0, frame, sample

CONFIG = EvaluatorConfig(window=5)
NOW = T0 + 10 * MIN
POLLS = range(10)


def at(i: int) -> int:
    return T0 + i * MIN


# Scenarios: the samples, and the window the evaluator must be given ------------------------

ROWS: list[dict[str, Any]] = []
WINDOWS: dict[str, PartitionWindow] = {}
GROUPS: dict[tuple[str, str, str], list[str]] = {}


def scenario(rows: list[dict[str, Any]], window: PartitionWindow) -> None:
    ROWS.extend(rows)
    WINDOWS[window.id] = window
    cluster, source, group, *_ = window.id.split("/")
    GROUPS.setdefault((cluster, source, group), []).append(window.id)


# A Kafka consumer stuck at 1000 while messages keep arriving; nobody says whether it lives.
# AdminClient gives no commit time, so the frozen offset is one commit, seen at the first poll.
STUCK = partition_id("c1", "kafka", "gk", "t", 0)
scenario(
    [sample(at(i), 1000, group="gk", earliest=0, latest=1100 + 100 * i) for i in POLLS],
    PartitionWindow(
        STUCK,
        (Commit(1000, T0, 100, 0),),
        tuple(1100 + 100 * i for i in POLLS),
        1000,
        earliest=0,
        latest=2000,
    ),
)

# A ZooKeeper consumer that owns its partition and re-commits 500 before every poll: the znode's
# mtime and version move, so each is a commit at the same offset (Burrow's STALL).
RECOMMITTING = partition_id("c1", "zookeeper", "gz", "t", 0)
scenario(
    [
        sample(
            at(i),
            500,
            source="zookeeper",
            group="gz",
            latest=600 + 10 * i,
            alive=True,
            owner="gz_host-1",
            commit_time_ms=at(i) - 5 * SEC,
            commit_version=i + 1,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        RECOMMITTING,
        tuple(Commit(500, at(i) - 5 * SEC, 100 + 10 * i) for i in range(5, 10)),
        tuple(600 + 10 * i for i in range(5, 10)),  # since the window's first commit
        190,
        latest=690,
        alive=True,
    ),
)

# A quiet topic, read to the end long ago: lag 0, OK however old the commit.
QUIET = partition_id("c1", "kafka", "gq", "quiet", 0)
scenario(
    [sample(at(i), 300, group="gq", topic="quiet", earliest=0, latest=300) for i in POLLS],
    PartitionWindow(
        QUIET, (Commit(300, T0, 0, 0),), (300,) * 10, 0, earliest=0, latest=300, alive=None
    ),
)

# A consumer catching up until the broker became unreachable at the ninth poll.
STALE = partition_id("c1", "kafka", "gs", "t", 0)
scenario(
    [sample(at(i), 100 + 10 * i, group="gs", earliest=0, latest=120 + 10 * i) for i in range(8)]
    + [sample(at(i), 170, group="gs", stale=True) for i in (8, 9)],
    PartitionWindow(
        STALE,
        tuple(Commit(100 + 10 * i, at(i), 20, 0) for i in range(3, 8)),
        (150, 160, 170, 180, 190),
        20,  # the last known lag
        stale=True,
        stale_since_ms=at(8),
    ),
)

# A Storm spout retrying one message: the znode (mtime five minutes before the first poll) is
# not rewritten, failed counts rise, acks do not.
POISON = partition_id("c1", "storm", "spout-a", "orders", 3)
scenario(
    [
        sample(
            at(i),
            1900,
            source="storm",
            group="spout-a",
            topic="orders",
            partition=3,
            earliest=0,
            latest=2000 + 20 * i,
            commit_time_ms=T0 - 5 * MIN,
            commit_version=42,
            failed=10 + 3 * i,
            acked=5000,
            pending=50,
            topology_id="topo-1",
            owner="topology-a",
            alive=True,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        POISON,
        (Commit(1900, T0 - 5 * MIN, 100, 0),),
        tuple(2000 + 20 * i for i in POLLS),
        280,
        earliest=0,
        latest=2180,
        alive=True,
        spout=SpoutSeries((50,) * 10, tuple(10 + 3 * i for i in POLLS), (5000,) * 10),
        topology_ids=("topo-1",),
    ),
)

# Two topologies with one spout id: partition_0 of the path holds topic x at one poll and
# topic y at the next; x's topology was also redeployed halfway.
COLLIDING_X = partition_id("c1", "storm", "spout-b", "x", 0)
COLLIDING_Y = partition_id("c1", "storm", "spout-b", "y", 0)
for topic, base, polls in (("x", 700, range(0, 10, 2)), ("y", 50, range(1, 10, 2))):
    scenario(
        [
            sample(
                at(i),
                base + 10 * i,
                source="storm",
                group="spout-b",
                topic=topic,
                earliest=0,
                latest=base + 10 * i + 5,
                commit_time_ms=at(i) - SEC,
                commit_version=i,
                alive=True,
                topology_id=f"topo-{topic}" + ("2" if topic == "x" and i >= 4 else ""),
            )  # fmt: skip
            for i in polls
        ],
        PartitionWindow(
            partition_id("c1", "storm", "spout-b", topic, 0),
            tuple(Commit(base + 10 * i, at(i) - SEC, 5, 0) for i in polls),
            tuple(base + 10 * i + 5 for i in polls),
            5,
            earliest=0,
            latest=base + 10 * polls[-1] + 5,
            alive=True,
            topology_ids=("topo-x", "topo-x2") if topic == "x" else ("topo-y",),
            topics=("x", "y"),
        ),
    )

# A group of two: one partition catching up over ten commits, one quiet.
CATCHING_UP = partition_id("c1", "kafka", "gm", "t", 0)
scenario(
    [sample(at(i), 1000 + 100 * i, group="gm", earliest=0, latest=1500 + 50 * i) for i in POLLS],
    PartitionWindow(
        CATCHING_UP,
        tuple(Commit(1000 + 100 * i, at(i), 500 - 50 * i, 0) for i in range(5, 10)),
        tuple(1500 + 50 * i for i in range(5, 10)),
        50,
        earliest=0,
        latest=1950,
    ),
)
scenario(
    [sample(at(i), 10, group="gm", partition=1, earliest=0, latest=10) for i in POLLS],
    PartitionWindow(
        partition_id("c1", "kafka", "gm", "t", 1),
        (Commit(10, T0, 0, 0),),
        (10,) * 10,
        0,
        earliest=0,
        latest=10,
    ),
)

# Committed beyond the log end (the topic was recreated): ERR, and no lag can be stated.
AHEAD = partition_id("c1", "kafka", "ge", "t", 0)
scenario(
    [sample(at(i), 5000, group="ge", earliest=0, latest=4000) for i in range(3)],
    PartitionWindow(
        AHEAD, (Commit(5000, T0, -1000, 0),), (4000,) * 3, -1000, earliest=0, latest=4000
    ),
)

EXPECTED = {pid: evaluate_partition(window, CONFIG, NOW) for pid, window in WINDOWS.items()}


def _key(row: dict[str, Any]) -> str:
    return partition_id(row["cluster"], row["source"], row["group"], row["topic"], row["partition"])


@pytest.fixture(scope="module")
def verdicts(spark: SparkSession) -> tuple[dict[str, dict], dict[tuple, dict]]:
    partitions, groups = evaluate_status(frame(spark, ROWS), NOW, CONFIG)
    partitions = partitions.persist()  # the group frame reuses it instead of evaluating again
    by_partition = {_key(r.asDict()): r.asDict() for r in partitions.collect()}
    by_group = {(r["cluster"], r["source"], r["group"]): r.asDict() for r in groups.collect()}
    partitions.unpersist()
    return by_partition, by_group


# The job gives the evaluator's verdicts -------------------------------------------------------


@pytest.mark.parametrize("pid", sorted(WINDOWS))
def test_each_partition_gets_the_evaluators_verdict_on_its_window(
    verdicts: tuple[dict, dict], pid: str
) -> None:
    row = verdicts[0][pid]
    expected = EXPECTED[pid]
    assert (row["status"], row["complete"], row["lag"]) == (
        expected.status,
        expected.complete,
        expected.lag,
    )
    assert row["reason"] == expected.reason
    assert row["diagnosis"] == diagnosis_json(expected)
    assert row["evaluated_at_ms"] == NOW


def test_every_partition_is_judged_once(verdicts: tuple[dict, dict]) -> None:
    assert sorted(verdicts[0]) == sorted(WINDOWS)


def test_the_scenarios_give_the_statuses_they_stand_for(verdicts: tuple[dict, dict]) -> None:
    """Guards the scenarios themselves: a window that drifted into another rule would make
    the comparison above pass for the wrong reason."""
    partitions = verdicts[0]

    def codes(pid: str) -> list[str]:
        return [d["code"] for d in json.loads(partitions[pid]["diagnosis"])]

    assert partitions[STUCK]["status"] == STOP and partitions[STUCK]["lag"] == 1000
    assert partitions[RECOMMITTING]["status"] == STALL
    assert "alive" in partitions[RECOMMITTING]["reason"]
    assert partitions[QUIET]["status"] == OK and partitions[QUIET]["lag"] == 0
    assert partitions[STALE]["status"] == UNKNOWN and codes(STALE) == [SOURCE_UNREACHABLE]
    stale_evidence = json.loads(partitions[STALE]["diagnosis"])[0]["evidence"]
    assert stale_evidence == {"stale_since_ms": at(8), "last_known_lag": 20, "committed": 170}
    assert partitions[POISON]["status"] == STALL and codes(POISON) == [POISON_MESSAGE]
    poison = json.loads(partitions[POISON]["diagnosis"])[0]["evidence"]
    assert poison == {"offset": 1900, "committed": 1900, "failed_rise": 27}
    assert codes(COLLIDING_X)[-2:] == [TOPOLOGY_RESTARTED, SPOUT_ID_COLLISION]
    assert codes(COLLIDING_Y)[-1:] == [SPOUT_ID_COLLISION]
    assert partitions[CATCHING_UP]["status"] == OK and partitions[CATCHING_UP]["complete"] == 1.0
    assert partitions[AHEAD]["status"] == "ERR" and partitions[AHEAD]["lag"] is None


def test_group_verdicts_are_the_evaluators_over_the_partition_verdicts(
    verdicts: tuple[dict, dict],
) -> None:
    groups = verdicts[1]
    assert sorted(groups) == sorted(GROUPS)
    for key, members in GROUPS.items():
        expected = evaluate_group(key[2], [EXPECTED[pid] for pid in members])
        row = groups[key]
        assert (row["status"], row["complete"], row["total_lag"], row["partitions"]) == (
            expected.status,
            expected.complete,
            expected.total_lag,
            len(members),
        ), key
        assert row["evaluated_at_ms"] == NOW
    assert groups[("c1", "kafka", "gk")]["status"] == "ERR"  # a STOP partition
    assert groups[("c1", "kafka", "gm")] == {
        "cluster": "c1", "source": "kafka", "group": "gm", "status": OK, "complete": 0.5,
        "total_lag": 50, "partitions": 2, "evaluated_at_ms": NOW,
    }  # fmt: skip


def test_output_columns(spark: SparkSession) -> None:
    partitions, groups = evaluate_status(frame(spark, ROWS[:1]), NOW, CONFIG)
    assert partitions.schema == PARTITION_VERDICT_SCHEMA
    assert partitions.columns == [
        "cluster", "source", "group", "topic", "partition", "status", "complete",
        "diagnosis", "reason", "lag", "evaluated_at_ms",
    ]  # fmt: skip
    assert groups.schema == GROUP_VERDICT_SCHEMA


def test_no_samples_no_verdicts(spark: SparkSession) -> None:
    partitions, groups = evaluate_status(empty_samples(spark), NOW, CONFIG)
    assert partitions.count() == 0 and groups.count() == 0


def test_duplicated_samples_in_the_log_change_nothing(
    spark: SparkSession, verdicts: tuple[dict, dict], tmp_path: Any
) -> None:
    """The same samples written by two cycles (a compaction's overlap, say) and read back
    through ``read_samples`` give the very same verdicts."""
    log = SampleLog(tmp_path / "samples")
    log.write_batch("c1", "first", ROWS)
    log.write_batch("c1", "again", ROWS[::2])
    samples = read_samples(spark, log.base, T0 - 1, NOW)
    partitions, groups = evaluate_status(samples, NOW, CONFIG)
    assert {_key(r.asDict()): r.asDict() for r in partitions.collect()} == verdicts[0]


# Commits from samples (plain Python) ---------------------------------------------------------


def columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {name: [r[name] for r in rows] for name in rows[0]}


def test_a_moved_commit_version_or_time_is_a_commit_at_the_same_offset() -> None:
    rows = [
        sample(at(0), 10, commit_version=1),
        sample(at(1), 10, commit_version=1),  # nothing new
        sample(at(2), 10, commit_version=2),  # re-committed
        sample(at(3), 10, commit_version=2, commit_time_ms=at(3) - SEC),  # time now known
        sample(at(4), 10, commit_version=2, commit_time_ms=at(4) - SEC),  # mtime moved
    ]
    assert derive_commits(columns(rows)) == [
        Commit(10, at(0)),
        Commit(10, at(2)),
        Commit(10, at(4) - SEC),
    ]


def test_commit_times_are_the_sources_else_the_poll_and_never_go_back() -> None:
    rows = [
        sample(at(0), 10, latest=15, earliest=2),
        sample(at(1), 20, latest=25, commit_time_ms=at(1) - 30 * SEC),
        sample(at(2), 30, latest=35, commit_time_ms=at(1) - 40 * SEC),  # older than the last
        sample(at(3), 40, latest=45),
    ]
    assert derive_commits(columns(rows)) == [
        Commit(10, at(0), 5, 2),
        Commit(20, at(1) - 30 * SEC, 5),
        Commit(30, at(1) - 30 * SEC, 5),
        Commit(40, at(3), 5),
    ]


def test_a_verdict_without_diagnoses_serialises_to_an_empty_list() -> None:
    verdict = PartitionVerdict("x", OK, 1.0, (), "fine.", 0)
    assert diagnosis_json(verdict) == "[]"

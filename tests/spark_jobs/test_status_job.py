"""The status job on real local Spark: samples in, the evaluator's own verdicts out.

Every scenario is a partition's samples (ten polls a minute apart unless told otherwise) plus
the window the evaluator should see for it, written out by hand here. The job must derive
exactly that window and give, for each partition, exactly what ``evaluate_partition`` gives on
it: the job derives windows and never decides a status itself. The broker offsets of a window
are those polled since the sample that first saw its last commit, at most ``window`` of them
(Burrow's ring of recent broker offsets, rule 3). All scenarios run in one Spark job (a module
fixture), so the whole file costs one ``applyInArrow`` round.
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest
from pyspark.sql import SparkSession

from collectors.sample_log import SampleLog
from spark_jobs.evaluator import (
    BACKPRESSURE,
    DEAD_CONSUMER,
    OK,
    PENDING_LEAK,
    POISON_MESSAGE,
    REBALANCE_STORM,
    REBALANCING,
    SLOW_CONSUMER,
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
    diagnosis_json,
    evaluate_group_samples,
    evaluate_status,
)
from spark_jobs.windows import (
    WINDOW_COLUMNS,
    RetentionSettings,
    derive_commits,
    group_rebalances,
    partition_id,
    window_from_samples,
)
from tests.spark_jobs.samples import MIN, SEC, T0, columns, frame, sample

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
    """One partition's samples, and its window. Every scenario is polled every minute up to
    the run, so its poll times (the polls that watched the window, and the one before) are
    its last ``polls + 1`` sample times, filled in here, as is a count of no poll missing
    its owner where the newest found one; which polls those are is pinned by
    ``test_the_window_carries_the_times_of_its_polls_and_of_the_outage``."""
    ROWS.extend(rows)
    if window.alive is not False:  # nobody missing at the newest poll: a count of none
        window = dataclasses.replace(window, owner_missing_polls=0)
    if not window.poll_times_ms:
        times = sorted(r["ts_ms"] for r in rows)[-((window.polls or 0) + 1) :]
        window = dataclasses.replace(window, poll_times_ms=tuple(times))
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
        (Commit(1000, T0, 100, 0, 1100),),
        tuple(1100 + 100 * i for i in range(5, 10)),  # the last five polled since the commit
        1000,
        earliest=0,
        latest=2000,
        polls=10,
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
        tuple(
            Commit(500, at(i) - 5 * SEC, 100 + 10 * i, latest=600 + 10 * i) for i in range(5, 10)
        ),
        (690,),  # polled since the last commit
        190,
        latest=690,
        alive=True,
        rebalancing=False,  # its one partition owned at the last poll
        polls=5,
    ),
)

# A quiet topic, read to the end long ago: lag 0, OK however old the commit.
QUIET = partition_id("c1", "kafka", "gq", "quiet", 0)
scenario(
    [sample(at(i), 300, group="gq", topic="quiet", earliest=0, latest=300) for i in POLLS],
    PartitionWindow(
        QUIET,
        (Commit(300, T0, 0, 0, 300),),
        (300,) * 5,
        0,
        earliest=0,
        latest=300,
        alive=None,
        polls=10,
    ),
)

# A consumer catching up until the broker became unreachable at the ninth poll.
STALE = partition_id("c1", "kafka", "gs", "t", 0)
scenario(
    [sample(at(i), 100 + 10 * i, group="gs", earliest=0, latest=120 + 10 * i) for i in range(8)]
    + [sample(at(i), 170, group="gs", stale=True) for i in (8, 9)],
    PartitionWindow(
        STALE,
        tuple(Commit(100 + 10 * i, at(i), 20, 0, 120 + 10 * i) for i in range(3, 8)),
        (190,),  # the stale polls have no broker offsets
        20,  # the last known lag
        stale=True,
        stale_since_ms=at(8),
        polls=7,
        down_polls_ms=(at(8), at(9)),  # since 170 was reached at poll 7
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
        (Commit(1900, T0 - 5 * MIN, 100, 0, 2000),),
        tuple(2000 + 20 * i for i in range(5, 10)),
        280,
        earliest=0,
        latest=2180,
        alive=True,
        spout=SpoutSeries((50,) * 10, tuple(10 + 3 * i for i in POLLS), (5000,) * 10),
        topology_ids=("topo-1",),
        polls=10,
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
            tuple(Commit(base + 10 * i, at(i) - SEC, 5, 0, base + 10 * i + 5) for i in polls),
            (base + 10 * polls[-1] + 5,),
            5,
            earliest=0,
            latest=base + 10 * polls[-1] + 5,
            alive=True,
            topology_ids=("topo-x", "topo-x2") if topic == "x" else ("topo-y",),
            topics=("x", "y"),
            polls=5,
        ),
    )

# A group of two: one partition catching up over ten commits, one quiet.
CATCHING_UP = partition_id("c1", "kafka", "gm", "t", 0)
scenario(
    [sample(at(i), 1000 + 100 * i, group="gm", earliest=0, latest=1500 + 50 * i) for i in POLLS],
    PartitionWindow(
        CATCHING_UP,
        tuple(Commit(1000 + 100 * i, at(i), 500 - 50 * i, 0, 1500 + 50 * i) for i in range(5, 10)),
        (1950,),
        50,
        earliest=0,
        latest=1950,
        polls=5,
    ),
)
scenario(
    [sample(at(i), 10, group="gm", partition=1, earliest=0, latest=10) for i in POLLS],
    PartitionWindow(
        partition_id("c1", "kafka", "gm", "t", 1),
        (Commit(10, T0, 0, 0, 10),),
        (10,) * 5,
        0,
        earliest=0,
        latest=10,
        polls=10,
    ),
)

# Committed beyond the log end (the topic was recreated): ERR, and no lag can be stated.
# Polled up to the run, like the others (samples that end long before it are a gap in
# collection: stale, see test_a_gap_in_collection_is_stale_not_a_stall).
AHEAD = partition_id("c1", "kafka", "ge", "t", 0)
scenario(
    [sample(at(i), 5000, group="ge", earliest=0, latest=4000) for i in range(10)],
    PartitionWindow(
        AHEAD,
        (Commit(5000, T0, -1000, 0, 4000),),
        (4000,) * 5,
        -1000,
        earliest=0,
        latest=4000,
        polls=10,
    ),
)

# Shaped like the lab's poison-message run (2026-11-21): a spout commits quickly three times,
# then one message fails for ever. The znode (mtime, version) is not rewritten after 103, the
# lag climbs, failed climbs, the other messages are still acked, pending stays at 1 or 2. The
# first poll saw a commit whose mtime is later than the poll's ts_ms, as in the lab. Broker
# offsets polled before the commit at 103 (31, 78) are below it: taking them as "caught up
# lately" (rule 3's exception) kept this partition OK with lag 296 and rising.
LAB_POISON = partition_id("c1", "storm", "spout-lab", "orders", 0)
_POISON_COMMITTED = (25, 73) + (103,) * 8
_POISON_MTIME = (at(0) + 7 * SEC, at(1) - SEC) + (at(2) - 3 * SEC,) * 8
_POISON_VERSION = (2, 8) + (12,) * 8
_POISON_LATEST = (31, 78) + tuple(119 + 40 * (i - 2) for i in range(2, 10))
_POISON_PENDING = (0, 0, 0, 1, 1, 2, 1, 2, 1, 2)
_POISON_FAILED = (0, 0, 0) + tuple(93 * (i - 2) for i in range(3, 10))
_POISON_ACKED = tuple(19 + 40 * i for i in POLLS)
scenario(
    [
        sample(
            at(i),
            _POISON_COMMITTED[i],
            source="storm",
            group="spout-lab",
            topic="orders",
            earliest=0,
            latest=_POISON_LATEST[i],
            commit_time_ms=_POISON_MTIME[i],
            commit_version=_POISON_VERSION[i],
            pending=_POISON_PENDING[i],
            failed=_POISON_FAILED[i],
            acked=_POISON_ACKED[i],
            topology_id="orders-enricher-3-1",
            owner="orders-enricher",
            alive=True,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        LAB_POISON,
        (
            Commit(25, at(0) + 7 * SEC, 6, 0, 31),
            Commit(73, at(1) - SEC, 5, 0, 78),
            Commit(103, at(2) - 3 * SEC, 16, 0, 119),
        ),
        (239, 279, 319, 359, 399),  # the last five polled since 103 was first seen
        296,
        earliest=0,
        latest=399,
        alive=True,
        spout=SpoutSeries(_POISON_PENDING, _POISON_FAILED, _POISON_ACKED),
        topology_ids=("orders-enricher-3-1",),
        polls=10,
    ),
)

# Its neighbour, a healthy spout partition: a commit (mtime, version) before every poll, lag
# wobbling between 5 and 7. It stays OK.
LAB_HEALTHY = partition_id("c1", "storm", "spout-lab", "orders", 1)
_HEALTHY_LAG = tuple(5 + i % 3 for i in POLLS)
scenario(
    [
        sample(
            at(i),
            25 + 40 * i,
            source="storm",
            group="spout-lab",
            topic="orders",
            partition=1,
            earliest=0,
            latest=25 + 40 * i + _HEALTHY_LAG[i],
            commit_time_ms=at(i) - SEC,
            commit_version=i + 2,
            pending=i % 2,
            failed=0,
            acked=20 + 40 * i,
            topology_id="orders-enricher-3-1",
            owner="orders-enricher",
            alive=True,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        LAB_HEALTHY,
        tuple(
            Commit(25 + 40 * i, at(i) - SEC, _HEALTHY_LAG[i], 0, 25 + 40 * i + _HEALTHY_LAG[i])
            for i in range(5, 10)
        ),
        (25 + 40 * 9 + _HEALTHY_LAG[9],),
        _HEALTHY_LAG[9],
        earliest=0,
        latest=25 + 40 * 9 + _HEALTHY_LAG[9],
        alive=True,
        spout=SpoutSeries(
            tuple(i % 2 for i in range(5, 10)),
            (0,) * 5,
            tuple(20 + 40 * i for i in range(5, 10)),
        ),
        topology_ids=("orders-enricher-3-1",),
        polls=5,
    ),
)

# A spout task reading four partitions behind a slow bolt: its tuples in flight sit at
# max.spout.pending (40; one poll a tuple below) while this partition's own pending is a
# quarter of it, and the lag climbs because the spout emits no faster than the bolt acks. The
# first samples come from before the spout reported its cap (or from old log files): the
# latest cap the window's samples give is the one in force.
BACKPRESSURED = partition_id("c1", "storm", "spout-bp", "clicks", 0)
_BP_SPOUT_PENDING = (None, None, 40, 40, 40, 40, 40, 39, 40, 40)
_BP_CAP = (None, None, 40, 40, 40, 40, 40, 40, None, 40)
scenario(
    [
        sample(
            at(i),
            100 + 10 * i,
            source="storm",
            group="spout-bp",
            topic="clicks",
            earliest=0,
            latest=120 + 25 * i,
            commit_time_ms=at(i) - SEC,
            commit_version=i + 1,
            pending=10,
            failed=0,
            acked=100 + 10 * i,
            emitted=110 + 10 * i,
            spout_pending=_BP_SPOUT_PENDING[i],
            max_spout_pending=_BP_CAP[i],
            max_offset_behind=100_000,
            topology_id="clicks-bp-1-1",
            owner="clicks-bp",
            alive=True,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        BACKPRESSURED,
        tuple(Commit(100 + 10 * i, at(i) - SEC, 20 + 15 * i, 0, 120 + 25 * i) for i in range(5, 10)),
        (345,),
        155,
        earliest=0,
        latest=345,
        alive=True,
        spout=SpoutSeries((10,) * 5, (0,) * 5, tuple(100 + 10 * i for i in range(5, 10))),
        max_spout_pending=40,
        spout_pending=(40, 40, 39, 40, 40),
        topology_ids=("clicks-bp-1-1",),
        polls=5,
    ),
)

# The same spout figures but the bolt keeps up: in flight well below the cap, the lag flat.
# No BACKPRESSURE (and OK).
UNPRESSED = partition_id("c1", "storm", "spout-ok", "clicks", 0)
scenario(
    [
        sample(
            at(i),
            100 + 10 * i,
            source="storm",
            group="spout-ok",
            topic="clicks",
            earliest=0,
            latest=105 + 10 * i,
            commit_time_ms=at(i) - SEC,
            commit_version=i + 1,
            pending=3,
            failed=0,
            acked=100 + 10 * i,
            spout_pending=12,
            max_spout_pending=40,
            topology_id="clicks-ok-1-1",
            owner="clicks-ok",
            alive=True,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        UNPRESSED,
        tuple(Commit(100 + 10 * i, at(i) - SEC, 5, 0, 105 + 10 * i) for i in range(5, 10)),
        (195,),
        5,
        earliest=0,
        latest=195,
        alive=True,
        spout=SpoutSeries((3,) * 5, (0,) * 5, tuple(100 + 10 * i for i in range(5, 10))),
        max_spout_pending=40,
        spout_pending=(12,) * 5,
        topology_ids=("clicks-ok-1-1",),
        polls=5,
    ),
)

# A poison message the spout names: the frozen commit is at 1900 and the spout reports 1904
# as its smallest failed offset (another offset than the commit, so the test tells where the
# figure came from), only at some polls: a failed tuple leaves the failed set while it is
# re-emitted. The latest it named is the one the diagnosis and the reason give.
NAMED_POISON = partition_id("c1", "storm", "spout-a", "orders", 4)
_NAMED_FAILED = (None, 1904, None, 1904, None, 1904, None, 1904, 1904, None)
scenario(
    [
        sample(
            at(i),
            1900,
            source="storm",
            group="spout-a",
            topic="orders",
            partition=4,
            earliest=0,
            latest=2000 + 20 * i,
            commit_time_ms=T0 - 5 * MIN,
            commit_version=42,
            failed=10 + 3 * i,
            acked=5000,
            pending=50,
            smallest_failed_offset=_NAMED_FAILED[i],
            topology_id="topo-1",
            owner="topology-a",
            alive=True,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        NAMED_POISON,
        (Commit(1900, T0 - 5 * MIN, 100, 0, 2000),),
        tuple(2000 + 20 * i for i in range(5, 10)),
        280,
        earliest=0,
        latest=2180,
        alive=True,
        spout=SpoutSeries((50,) * 10, tuple(10 + 3 * i for i in POLLS), (5000,) * 10),
        smallest_failed_offset=1904,
        topology_ids=("topo-1",),
        polls=10,
    ),
)

# Shaped like the lab's pending-leak run: the spout restarted leaky after three commits (acked
# starts again from 0 and stays there), the commit froze at 141, pending climbs and every
# tuple times out, so failed follows pending up. Pending dipped 1 -> 0 before the freeze.
LAB_LEAK = partition_id("c1", "storm", "spout-leak", "clicks", 0)
_LEAK_COMMITTED = (31, 92) + (141,) * 8
_LEAK_PENDING = (1, 0, 0, 25, 75, 125, 175, 225, 275, 325)
_LEAK_FAILED = (0, 0, 0, 0, 49, 100, 150, 199, 250, 300)
_LEAK_ACKED = (24, 72, 123) + (0,) * 7
scenario(
    [
        sample(
            at(i),
            _LEAK_COMMITTED[i],
            source="storm",
            group="spout-leak",
            topic="clicks",
            earliest=0,
            latest=_LEAK_COMMITTED[min(i, 2)] + 7 + 50 * max(i - 2, 0),
            commit_time_ms=at(min(i, 2)) - SEC,
            commit_version=(2, 8, 13)[min(i, 2)],
            pending=_LEAK_PENDING[i],
            failed=_LEAK_FAILED[i],
            acked=_LEAK_ACKED[i],
            topology_id="clicks-sessionizer-2-1",
            owner="clicks-sessionizer",
            alive=True,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        LAB_LEAK,
        (
            Commit(31, at(0) - SEC, 7, 0, 38),
            Commit(92, at(1) - SEC, 7, 0, 99),
            Commit(141, at(2) - SEC, 7, 0, 148),
        ),
        (298, 348, 398, 448, 498),
        357,
        earliest=0,
        latest=498,
        alive=True,
        spout=SpoutSeries(_LEAK_PENDING, _LEAK_FAILED, _LEAK_ACKED),
        topology_ids=("clicks-sessionizer-2-1",),
        polls=10,
    ),
)

# Rebalances are not in the sample log: the job derives them from the owners. A Kafka group
# whose first partition changes hands at every poll (a member joining and leaving over and
# over, the lab's rebalance-storm), and whose second partition, owned throughout, has nobody at
# the last poll while the other is owned: it is being handed over, not dead. Before the job
# derived ``rebalancing``, the second partition was STOP with DEAD_CONSUMER (the lab's storm).
STORMY = [partition_id("c1", "kafka", "gr", "t", p) for p in (0, 1)]
_STORM_MOVES = tuple(at(i) for i in range(1, 10))
scenario(
    [
        sample(
            at(i),
            100 + 100 * i,
            group="gr",
            earliest=0,
            latest=150 + 100 * i,
            owner="m1" if i % 2 == 0 else "m2",
            alive=True,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        STORMY[0],
        tuple(Commit(100 + 100 * i, at(i), 50, 0, 150 + 100 * i) for i in range(5, 10)),
        (1050,),
        50,
        earliest=0,
        latest=1050,
        alive=True,
        rebalances_ms=_STORM_MOVES,
        rebalancing=True,
        polls=5,
    ),
)
scenario(
    [
        sample(
            at(i),
            100 + 100 * min(i, 7),
            group="gr",
            partition=1,
            earliest=0,
            latest=150 + 100 * i,
            owner="m1" if i < 9 else None,
            alive=i < 9,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        STORMY[1],
        tuple(Commit(100 + 100 * i, at(i), 50, 0, 150 + 100 * i) for i in range(3, 8)),
        (850, 950, 1050),
        250,
        earliest=0,
        latest=1050,
        alive=False,
        owner_missing_polls=1,  # the last poll only
        rebalances_ms=_STORM_MOVES,
        rebalancing=True,
        polls=7,
    ),
)

# A group whose only member left for good at the sixth poll: one change of hands, nobody owns
# anything since (not a hand-over), the consumer is dead.
LEFT = partition_id("c1", "kafka", "gd", "t", 0)
scenario(
    [
        sample(
            at(i),
            100 + 100 * min(i, 5),
            group="gd",
            earliest=0,
            latest=150 + 100 * i,
            owner="m1" if i <= 5 else None,
            alive=i <= 5,
        )  # fmt: skip
        for i in POLLS
    ],
    PartitionWindow(
        LEFT,
        tuple(Commit(100 + 100 * i, at(i), 50, 0, 150 + 100 * i) for i in range(1, 6)),
        (650, 750, 850, 950, 1050),
        450,
        earliest=0,
        latest=1050,
        alive=False,
        owner_missing_polls=4,  # the polls since it left
        rebalances_ms=(at(6),),
        polls=9,
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
    storm = [codes(pid) for pid in STORMY]
    assert storm == [[REBALANCING, REBALANCE_STORM]] * 2
    assert [partitions[pid]["status"] for pid in STORMY] == [OK, OK]
    storm_evidence = json.loads(partitions[STORMY[1]]["diagnosis"])[1]["evidence"]
    assert storm_evidence == {"rebalances": 7, "threshold": 3, "since_ms": at(3)}
    assert partitions[LEFT]["status"] == STOP and codes(LEFT) == [DEAD_CONSUMER]


def test_lab_shaped_storm_spouts(verdicts: tuple[dict, dict]) -> None:
    """The lab's poison message and pending leak are stuck, not "catching up"; a healthy
    spout committing steadily stays OK."""
    partitions = verdicts[0]
    poison = partitions[LAB_POISON]
    assert (poison["status"], poison["lag"]) == (STALL, 296)
    assert json.loads(poison["diagnosis"]) == [
        {"code": POISON_MESSAGE, "evidence": {"offset": 103, "committed": 103, "failed_rise": 651}}
    ]
    assert "stalled, not stopped" in poison["reason"]
    leak = partitions[LAB_LEAK]
    assert (leak["status"], leak["lag"]) == (STALL, 357)
    assert json.loads(leak["diagnosis"]) == [
        {"code": PENDING_LEAK, "evidence": {"committed": 141, "pending_from": 0, "pending_to": 325}}
    ]
    healthy = partitions[LAB_HEALTHY]
    assert (healthy["status"], healthy["diagnosis"]) == (OK, "[]")
    assert verdicts[1][("c1", "storm", "spout-lab")]["status"] == "ERR"  # the STALL partition


def test_backpressure_and_a_named_poison_come_out_of_the_job(verdicts: tuple[dict, dict]) -> None:
    """The spout figures the sample log carries reach the rules: BACKPRESSURE from the task's
    pending at its cap, POISON_MESSAGE naming the offset the spout reported."""
    partitions = verdicts[0]
    pressed = partitions[BACKPRESSURED]
    assert pressed["status"] == "WARN"
    found = {d["code"]: d["evidence"] for d in json.loads(pressed["diagnosis"])}
    assert list(found) == [SLOW_CONSUMER, BACKPRESSURE]
    assert found[BACKPRESSURE] == {"max_spout_pending": 40, "share_at_cap": 0.8, "samples": 5}
    unpressed = partitions[UNPRESSED]
    assert (unpressed["status"], unpressed["diagnosis"]) == (OK, "[]")
    named = partitions[NAMED_POISON]
    assert named["status"] == STALL
    assert json.loads(named["diagnosis"]) == [
        {"code": POISON_MESSAGE, "evidence": {"offset": 1904, "committed": 1900, "failed_rise": 27}}
    ]
    assert "offset 1904 keeps failing" in named["reason"]


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
        "diagnosis", "reason", "lag", "retention_left_s", "evaluated_at_ms",
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
    for dedup in (True, False):  # the reader's dedup, or only the evaluation's own
        samples = read_samples(spark, log.base, T0 - 1, NOW, dedup=dedup)
        partitions, groups = evaluate_status(samples, NOW, CONFIG)
        assert {_key(r.asDict()): r.asDict() for r in partitions.collect()} == verdicts[0]


# A group's rebalances from its owners (plain Python) ----------------------------------------

A, B = "member-a", "member-b"


@pytest.mark.parametrize(
    ("owners", "stale", "expected"),
    [
        # one partition, polls at 1, 2, 3: owner by poll
        ([[A, A, A]], [[False] * 3], ((), False)),
        ([[A, B, B]], [[False] * 3], ((2,), False)),
        ([[A, None, A]], [[False] * 3], ((2, 3), False)),  # vanished and came back
        ([[None, None, None]], [[False] * 3], ((), None)),  # owns nothing: not "partly"
        ([[A, B, A]], [[False, True, False]], ((), False)),  # a stale poll is no observation
        ([[A, A, A]], [[True] * 3], ((), None)),  # never seen fresh
        # two partitions: one unowned at the last poll is a hand-over in progress
        ([[A, A, A], [B, B, None]], [[False] * 3] * 2, ((3,), True)),
        ([[A, A, A], [B, B, B]], [[False] * 3] * 2, ((), False)),
        # the last fresh poll is the group's: a partition stale at 3 is judged at its own 2
        ([[A, A, A], [B, B, None]], [[False] * 3, [False, False, True]], ((), False)),
    ],
)
def test_group_rebalances_from_owners(owners: list, stale: list, expected: tuple) -> None:
    ts, owner, flags, runs = [], [], [], []
    for partition_owners, partition_stale in zip(owners, stale, strict=True):
        start = len(ts)
        ts += [1, 2, 3]
        owner += partition_owners
        flags += partition_stale
        runs.append((start, len(ts)))
    assert group_rebalances(ts, owner, flags, runs) == expected


def test_a_group_evaluated_with_duplicates_gives_the_same_rows() -> None:
    rows = sorted(ROWS, key=lambda r: (r["cluster"], r["source"], r["group"], r["topic"],
                                       r["partition"], r["ts_ms"]))  # fmt: skip
    group = (rows[0]["cluster"], rows[0]["source"], rows[0]["group"])
    mine = [r for r in rows if (r["cluster"], r["source"], r["group"]) == group]
    doubled = sorted(mine + mine[::3], key=lambda r: (r["topic"], r["partition"], r["ts_ms"]))
    once = evaluate_group_samples(columns(mine), CONFIG, NOW)
    assert evaluate_group_samples(columns(doubled), CONFIG, NOW) == once
    assert len(once["partition"]) == len({(r["topic"], r["partition"]) for r in mine})


# Commits from samples (plain Python) ---------------------------------------------------------


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
        Commit(10, at(0), 5, 2, 15),
        Commit(20, at(1) - 30 * SEC, 5, latest=25),
        Commit(30, at(1) - 30 * SEC, 5, latest=35),
        Commit(40, at(3), 5, latest=45),
    ]


def test_the_job_derives_exactly_the_windows_written_here() -> None:
    """Equal verdicts could hide a different window (the broker offsets rule 3 reads, say):
    the windows themselves must match."""
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for row in ROWS:
        by_partition.setdefault(_key(row), []).append(row)
    for pid, rows in by_partition.items():
        rows.sort(key=lambda r: r["ts_ms"])
        cols = {name: [r[name] for r in rows] for name in WINDOW_COLUMNS}
        expected = WINDOWS[pid]
        derived = window_from_samples(
            pid, cols, CONFIG, expected.topics, expected.rebalances_ms, expected.rebalancing
        )
        assert derived == expected, pid


@pytest.mark.parametrize(
    ("alive", "missing"),
    [
        ([True], 0),
        ([None], 0),
        ([False], 1),
        ([True, False], 1),
        ([False, False], 2),
        ([False, False, False, False], 4),
        ([False, None, False], 1),  # a stale poll saw nothing of the owner
        ([False, False, True], 0),
        ([False, True, False, False], 2),
    ],
)
def test_the_window_counts_the_newest_polls_that_missed_the_owner(
    alive: list[bool | None], missing: int
) -> None:
    rows = [sample(at(i), 10 * i, latest=10 * i + 5, alive=a) for i, a in enumerate(alive)]
    assert window_from_samples("p", columns(rows), CONFIG).owner_missing_polls == missing


def test_broker_offsets_are_the_recent_ones_polled_since_the_last_commit() -> None:
    """Polls from before the last commit sit at or below it only because the consumer went
    on to commit past them: they are not "caught up lately" (rule 3). At most ``window``."""
    rows = [
        sample(at(0), 10, latest=20),
        sample(at(1), 30, latest=40),
        sample(at(2), 50, latest=55),  # the last commit, first seen here
        *(sample(at(i), 50, latest=55 + 10 * i) for i in range(3, 10)),
    ]
    window = window_from_samples("p", columns(rows), EvaluatorConfig(window=5))
    assert window.commits[-1] == Commit(50, at(2), 5, latest=55)
    assert window.latest_offsets == (105, 115, 125, 135, 145)
    assert window_from_samples("p", columns(rows[:4]), CONFIG).latest_offsets == (55, 85)


def test_a_commit_time_later_than_the_poll_that_saw_it_still_starts_the_spout_series() -> None:
    """Commit times come from the source's clock: the series start at the sample that saw the
    window's first commit, whatever its ts_ms."""
    rows = [
        sample(at(0), 10, commit_time_ms=at(0) + 7 * SEC, pending=3, failed=0, acked=1),
        sample(at(1), 20, commit_time_ms=at(1) - SEC, pending=4, failed=0, acked=2),
    ]
    window = window_from_samples("p", columns(rows), CONFIG)
    assert window.spout == SpoutSeries((3, 4), (0, 0), (1, 2))


def test_a_verdict_without_diagnoses_serialises_to_an_empty_list() -> None:
    verdict = PartitionVerdict("x", OK, 1.0, (), "fine.", 0)
    assert diagnosis_json(verdict) == "[]"


# Window building: the spout's settings and task figures (table) ------------------------------


def _spout_rows(**series: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Four polls of a spout committing 10 more each poll, with the given columns' values."""
    n = 4
    return [
        sample(
            at(i), 10 * i, source="storm", latest=10 * i + 5, commit_time_ms=at(i),
            pending=1, failed=0, acked=i, **{k: v[i] for k, v in series.items()},
        )  # fmt: skip
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("series", "cap", "in_flight", "smallest_failed"),
    [
        # Old samples (files from before the columns): nothing known.
        ({}, None, (), None),
        # The cap: the latest value given, a poll without it says nothing.
        ({"max_spout_pending": (10, 20, 30, None)}, 30, (), None),
        ({"max_spout_pending": (None, None, None, 7)}, 7, (), None),
        # A cap of 0 is no cap (Storm's unbounded is null): not evidence of back-pressure.
        ({"max_spout_pending": (5, 5, 5, 0)}, 5, (), None),
        ({"max_spout_pending": (0, 0, 0, 0)}, None, (), None),
        # The task's in-flight series: every poll that gave it, oldest first.
        ({"spout_pending": (4, None, 6, 7)}, None, (4, 6, 7), None),
        # The smallest failed offset: the latest named, even if the last poll named none.
        ({"smallest_failed_offset": (3, 9, None, None)}, None, (), 9),
        ({"smallest_failed_offset": (3, None, None, 12)}, None, (), 12),
        ({"smallest_failed_offset": (0, None, None, None)}, None, (), 0),
    ],
)
def test_the_window_takes_the_spouts_cap_task_pending_and_failed_offset(
    series: dict[str, tuple[Any, ...]],
    cap: int | None,
    in_flight: tuple[int, ...],
    smallest_failed: int | None,
) -> None:
    window = window_from_samples("p", columns(_spout_rows(**series)), CONFIG)
    assert window.max_spout_pending == cap
    assert window.spout_pending == in_flight
    assert window.smallest_failed_offset == smallest_failed


def test_spout_figures_older_than_the_windows_first_commit_are_left_out() -> None:
    """Like the pending/failed/acked series, the spout's figures start at the sample that first
    saw the window's first commit."""
    rows = [
        sample(at(i), 10 * i, source="storm", latest=10 * i + 5, commit_time_ms=at(i),
               spout_pending=100 + i, max_spout_pending=(50 if i < 3 else None),
               smallest_failed_offset=(7 if i == 0 else None))
        for i in range(8)
    ]  # fmt: skip
    window = window_from_samples("p", columns(rows), CONFIG)  # window=5: from poll 3 on
    assert window.spout_pending == (103, 104, 105, 106, 107)
    assert window.max_spout_pending is None and window.smallest_failed_offset is None


def test_a_cluster_with_its_own_thresholds_is_judged_by_them(spark: SparkSession) -> None:
    """SPEC §2.4: thresholds are per cluster. The same samples under a second cluster name,
    which allows any lag: its partitions get the lenient verdicts, c1's the default ones."""
    lenient = dataclasses.replace(CONFIG, allowed_lag=10**12)
    copy = [{**r, "cluster": "c2"} for r in ROWS]
    partitions, _ = evaluate_status(frame(spark, ROWS + copy), NOW, CONFIG, {"c2": lenient})
    rows = [r.asDict() for r in partitions.collect()]
    assert len(rows) == 2 * len(WINDOWS)
    changed = 0
    for row in rows:
        pid = partition_id("c1", row["source"], row["group"], row["topic"], row["partition"])
        config = lenient if row["cluster"] == "c2" else CONFIG
        expected = evaluate_partition(WINDOWS[pid], config, NOW)
        assert (row["status"], row["reason"]) == (expected.status, expected.reason), pid
        changed += row["cluster"] == "c2" and row["status"] != EXPECTED[pid].status
    assert changed  # the lenient thresholds did turn some verdicts


def test_a_gap_in_collection_is_stale_not_a_stall() -> None:
    """Nothing collected for a while (the collector down, Redis down under beat; the soak,
    benchmarks/soak.py): the first run after it must not read the silence up to now as a
    consumer that stopped committing. A commit every 5 s, then no sample for 47 s."""
    poll = 5 * SEC
    rows = [
        sample(T0 + i * poll, 100 * i, latest=100 * i + 3, alive=True, owner="m-1")
        for i in range(12)
    ]
    last = rows[-1]["ts_ms"]
    fresh = evaluate_group_samples(columns(rows), CONFIG, last + poll)
    assert fresh["status"] == ["OK"]
    late = evaluate_group_samples(columns(rows), CONFIG, last + 47 * SEC)
    assert late["status"] == [UNKNOWN], late["reason"]
    assert json.loads(late["diagnosis"][0])[0]["code"] == SOURCE_UNREACHABLE
    # Decided by the evaluator from the poll times the window carries: without them the same
    # window is a STALL, what the soak saw.
    window = window_from_samples("p", {n: columns(rows)[n] for n in WINDOW_COLUMNS}, CONFIG)
    assert evaluate_partition(window, CONFIG, last + 47 * SEC).status == UNKNOWN
    blind = dataclasses.replace(window, poll_times_ms=())
    assert evaluate_partition(blind, CONFIG, last + 47 * SEC).status == "STALL"


def _outage_rows(poll: int, down: range, silent_after: int) -> list[dict[str, Any]]:
    """A commit every poll, the broker down for the polls ``down`` (stale rows, the last
    known commit), then fresh polls on which the consumer has not committed yet up to poll
    ``silent_after``."""
    rows, offset = [], 0
    for i in range(silent_after + 1):
        if i in down:
            rows.append(sample(T0 + i * poll, offset, stale=True, alive=True, owner="m-1"))
            continue
        if i < down.start:
            offset = 100 * i
        rows.append(sample(T0 + i * poll, offset, latest=100 * i + 3, alive=True, owner="m-1"))
    return rows


@pytest.mark.parametrize(
    ("silent_after", "now_after_s", "expected"),
    [
        (13, 1, UNKNOWN),  # 11 s after the outage, no commit yet: the soak's false STALL
        (14, 1, UNKNOWN),  # 16 s of fresh silence, inside the window's span (5 commits, 20 s)
        (16, 1, "STALL"),  # 26 s: silent past the grace, judged as before
        (20, 1, "STALL"),
    ],
)
def test_a_silence_that_began_in_a_source_outage_is_not_a_stall_at_once(
    silent_after: int, now_after_s: int, expected: str
) -> None:
    """The soak, benchmarks/soak.py: the broker stopped 30 s, and every consumer judged STALL
    at the first run after it came back, its last commit being from before the outage."""
    poll = 5 * SEC
    rows = _outage_rows(poll, range(6, 12), silent_after)
    now = rows[-1]["ts_ms"] + now_after_s * SEC
    verdict = evaluate_group_samples(columns(rows), CONFIG, now)
    assert verdict["status"] == [expected], verdict["reason"]
    if expected == UNKNOWN:
        assert json.loads(verdict["diagnosis"][0])[0]["code"] == SOURCE_UNREACHABLE
    # Decided by the evaluator from the outage's polls the window carries: without them,
    # every one of these windows is a STALL.
    window = window_from_samples("p", {n: columns(rows)[n] for n in WINDOW_COLUMNS}, CONFIG)
    assert window.down_polls_ms == tuple(T0 + i * poll for i in range(6, 12))
    assert evaluate_partition(window, CONFIG, now).status == expected
    blind = dataclasses.replace(window, down_polls_ms=())
    assert evaluate_partition(blind, CONFIG, now).status == "STALL"


@pytest.mark.parametrize(
    ("silent_after", "expected"),
    [(13, UNKNOWN), (14, UNKNOWN), (18, "STALL")],
)
def test_a_commit_read_only_after_the_outage_still_has_its_grace(
    silent_after: int, expected: str
) -> None:
    """The soak on PostgreSQL: a consumer committed just before the broker stopped; the
    collector read that commit only once the broker was back (its commit time before the
    outage). "No commit for" counts from the commit's time, the outage included, so the
    outage's polls are the window's from that time too: not a STALL at the first run after."""
    poll = 5 * SEC
    rows = _outage_rows(poll, range(6, 12), silent_after)
    made = T0 + 5 * poll + 4 * SEC  # the commit, a second before the first stale poll
    for i, row in enumerate(rows):  # the stale polls carry the last commit known, poll 5's
        row["commit_time_ms"] = made if i >= 12 else T0 + min(i, 5) * poll
        if i >= 12:
            row["committed"] = 600
    now = rows[-1]["ts_ms"] + SEC
    verdict = evaluate_group_samples(columns(rows), CONFIG, now)
    assert verdict["status"] == [expected], verdict["reason"]
    window = window_from_samples("p", {n: columns(rows)[n] for n in WINDOW_COLUMNS}, CONFIG)
    assert window.commits[-1].offset == 600 and window.commits[-1].timestamp_ms == made
    assert window.down_polls_ms == tuple(T0 + i * poll for i in range(6, 12))


def test_the_window_carries_the_times_of_its_polls_and_of_the_outage() -> None:
    """The job carries figures, the evaluator decides: the polls that watched the window and
    the one before (their spacing is the poll interval), and the polls since the committed
    offset was last reached that found the source down. An outage before that is none of the
    window's business: the consumer committed after it."""
    poll = 5 * SEC
    down = (2, 3, 10, 11)  # the source down twice: before the last commits, and after them
    rows = []
    for i in range(14):
        offset = 100 if i in (2, 3) else min(100 * i, 900)
        fresh = {} if i in down else {"latest": offset + 3}
        rows.append(sample(T0 + i * poll, offset, stale=i in down, **fresh))
    window = window_from_samples("p", {n: columns(rows)[n] for n in WINDOW_COLUMNS}, CONFIG)
    assert [c.offset for c in window.commits] == [500, 600, 700, 800, 900]
    assert window.polls == 9  # polls 5 to 13
    assert window.poll_times_ms == tuple(T0 + i * poll for i in range(4, 14))
    assert window.down_polls_ms == (T0 + 10 * poll, T0 + 11 * poll)  # since 900, at poll 9


def test_the_retention_forecast_comes_from_the_last_time_lag_and_the_topics_settings(
    spark: SparkSession,
) -> None:
    """The job hands the evaluator the last sample's time lag and the topic's stored settings
    (the caller's ``retention``), the cluster's horizon with its config; the evaluator
    forecasts and decides RETENTION_RISK, and the forecast's figure is a column of the run."""
    rows = [sample(at(i), 100 + 10 * i, group="gt", topic=topic, earliest=0, latest=150 + 10 * i,
                   time_lag_s=200.0 + i) for i in POLLS for topic in ("short", "week", "other")]  # fmt: skip
    retention = {("c1", "short"): RetentionSettings(300_000, "delete"),
                 ("c1", "week"): RetentionSettings(604_800_000, "delete")}  # fmt: skip
    horizon = {"c1": dataclasses.replace(CONFIG, retention_risk_s=600)}
    partitions, _ = evaluate_status(frame(spark, rows), NOW, CONFIG, horizon, retention=retention)
    by_topic = {r["topic"]: r.asDict() for r in partitions.collect()}
    assert by_topic["short"]["retention_left_s"] == 300 - 209.0
    assert [d["code"] for d in json.loads(by_topic["short"]["diagnosis"])] == ["RETENTION_RISK"]
    assert by_topic["week"]["retention_left_s"] == 604_800 - 209.0
    assert json.loads(by_topic["week"]["diagnosis"]) == []
    assert by_topic["other"]["retention_left_s"] is None  # settings never read: no forecast
    # A stale last sample: its time lag is the last known, so no forecast at all.
    stale = [*(r for r in rows if r["topic"] == "short"), sample(NOW, 190, group="gt",
                                                                 topic="short", stale=True)]  # fmt: skip
    out = evaluate_group_samples(columns(stale), horizon["c1"], NOW + SEC, retention=retention)
    assert out["retention_left_s"] == [None] and out["status"] == [UNKNOWN]


def test_commits_after_the_outage_are_judged_at_once() -> None:
    poll = 5 * SEC
    rows = _outage_rows(poll, range(6, 12), 11)
    rows += [sample(T0 + i * poll, 100 * i, latest=100 * i + 3, alive=True, owner="m-1")
             for i in range(12, 15)]  # fmt: skip
    verdict = evaluate_group_samples(columns(rows), CONFIG, rows[-1]["ts_ms"] + SEC)
    assert verdict["status"] == ["OK"], verdict["reason"]


# The group's verdict made in the partitions' call equals the separate group pass it replaced -


def _old_group_pass(rows: dict[str, list[Any]]) -> dict[str, Any]:
    """The group table as the second shuffle's pandas function computed it before (session
    16): the partitions' status, completeness and lag only, through ``evaluate_group``."""
    stripped = [
        PartitionVerdict(str(i), status, float(complete), (), "", lag)
        for i, (status, complete, lag) in enumerate(
            zip(rows["status"], rows["complete"], rows["lag"], strict=True)
        )
    ]
    judged = evaluate_group(rows["group"][0], stripped)
    return {"status": judged.status, "complete": float(judged.complete),
            "total_lag": int(judged.total_lag), "partitions": len(stripped)}  # fmt: skip


def _random_group(rng: random.Random) -> list[dict[str, Any]]:
    """A group of 1-6 partitions polled 5 s apart: consumers keeping up, slowing, stopping,
    committing past the log end, sources going stale."""
    rows = []
    for p in range(rng.randint(1, 6)):
        committed, latest = rng.randint(0, 1000), 0
        latest = committed + rng.randint(0, 50)
        speed, produce = rng.choice([0, 0, 1, 5, 20]), rng.choice([0, 1, 10])
        for i in range(rng.randint(3, 40)):
            latest += produce
            committed = min(committed + speed, latest + rng.choice([0, 0, 0, 5]))
            rows.append(sample(T0 + i * 5 * SEC, committed, partition=p, earliest=0,
                               latest=latest, owner=rng.choice(["m-1", "m-2", None]),
                               stale=rng.random() < 0.05))  # fmt: skip
    return rows


@pytest.mark.parametrize("seed", range(60))
def test_the_group_verdict_in_one_pass_equals_the_separate_group_pass(seed: int) -> None:
    rng = random.Random(seed)
    rows = sorted(_random_group(rng), key=lambda r: (r["topic"], r["partition"], r["ts_ms"]))
    now = rows[-1]["ts_ms"] + rng.choice([1, 30, 300]) * SEC

    out = evaluate_group_samples(columns(rows), CONFIG, now)

    heads = [i for i, head in enumerate(out["group_head"]) if head]
    assert heads == [0]
    old = _old_group_pass(out)
    for i in range(len(out["status"])):
        new = {name: out[f"group_{name}"][i] for name in old}
        assert new == old

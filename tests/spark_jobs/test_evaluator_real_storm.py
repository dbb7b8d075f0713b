"""A real Storm without a push, as the status job sees it: one spout reading two partitions,
whose samples carry the whole spout's Storm UI counters (the same on both partitions), its
tuples in flight (when ``topology.stats.sample.rate`` is 1.0) and its cap, and no
per-partition pending nor smallest failed offset (collectors/assemble.py).

Each case is the group's samples, ten polls a minute apart, judged by the status job's own
per-group function (``evaluate_group_samples``: windows from samples, then the evaluator):
the verdict of each partition, its diagnoses and their main evidence.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from spark_jobs.evaluator import (
    BACKPRESSURE,
    DEAD_CONSUMER,
    OK,
    POISON_MESSAGE,
    SLOW_CONSUMER,
    STALL,
    STOP,
    WARN,
    EvaluatorConfig,
)
from spark_jobs.status import evaluate_group_samples
from tests.spark_jobs.samples import MIN, SEC, T0, columns, sample

CONFIG = EvaluatorConfig(minimum_complete=0.5)  # the product's: ten commits, half to judge
POLLS = range(10)
NOW = T0 + 9 * MIN + 30 * SEC
CAP = 200  # topology.max.spout.pending, one spout task
TOPOLOGY = "orders-topo-1-1795906054"


def at(i: int) -> int:
    return T0 + i * MIN


# A partition's commits: committed offset and the poll's latest offset, per poll. The znode is
# rewritten (mtime, version) only when the committed offset moves, as storm-kafka does.
Partition = Callable[[int], tuple[int, int]]


def moving(i: int) -> tuple[int, int]:
    """Keeps pace: 40 a minute, 5 behind."""
    return 20 + 40 * i, 25 + 40 * i


def frozen_at_103(i: int) -> tuple[int, int]:
    """Two quick commits, then 103 for ever while 40 a minute arrive."""
    return (25, 73, 103)[min(i, 2)], 35 + 40 * i


def falling_behind(i: int) -> tuple[int, int]:
    """Commits 10 a minute while 25 arrive: the lag climbs by more than a batch."""
    return 100 + 10 * i, 120 + 25 * i


# The whole spout's counters at a poll: (emitted, acked, failed), or None when Storm UI does
# not list the topology (killed) and nothing came with the poll.
Counters = Callable[[int], tuple[int, int, int] | None]


def retrying_a_poison(i: int) -> tuple[int, int, int]:
    """Partition 1's messages acked (40 a minute), one message failing 93 times a minute
    from poll 3, one or two tuples in flight."""
    acked, failed = 20 + 40 * i, 93 * max(0, i - 2)
    return acked + failed + 1 + i % 2, acked, failed


def restarted_at_6(i: int) -> tuple[int, int, int]:
    """The same, the worker restarting between polls 5 and 6: the counts start again."""
    if i < 6:
        return retrying_a_poison(i)
    acked, failed = 40 * (i - 5), 93 * (i - 5)
    return acked + failed + 1, acked, failed


def healthy(i: int) -> tuple[int, int, int]:
    acked = 20 + 80 * i
    return acked + 2, acked, 0


def at_the_cap(i: int) -> tuple[int, int, int]:
    """A slow bolt: the spout emits only as the bolt acks, CAP tuples in flight throughout."""
    acked = 100 + 20 * i
    return acked + CAP, acked, 0


def killed_at_5(i: int) -> tuple[int, int, int] | None:
    return healthy(i) if i < 5 else None


def storm_samples(
    partitions: tuple[Partition, Partition], counters: Counters, exact: bool = True
) -> list[dict[str, Any]]:
    """The group's samples as assemble_cycle writes them for a spout without a push:
    ``exact`` is ``topology.stats.sample.rate`` 1.0 (in flight derived), else 0.05."""
    rows = []
    for p, commits in enumerate(partitions):
        version, last = 0, None
        for i in POLLS:
            committed, latest = commits(i)
            if committed != last:
                version, last, mtime = version + 1, committed, at(i) - SEC
            figures = counters(i)
            listed = figures is not None
            emitted, acked, failed = figures if listed else (None, None, None)
            in_flight = emitted - acked - failed if listed and exact else None
            rows.append(
                sample(
                    at(i), committed, source="storm", group="orders-spout", topic="orders",
                    partition=p, earliest=0, latest=latest, commit_time_ms=mtime,
                    commit_version=version, topology_id=TOPOLOGY, owner="orders-topo",
                    alive=listed, emitted=emitted, acked=acked, failed=failed, pending=None,
                    spout_pending=in_flight, max_spout_pending=CAP if listed else None,
                )
            )  # fmt: skip
    return rows


@dataclass(frozen=True)
class Case:
    name: str
    partitions: tuple[Partition, Partition]
    counters: Counters
    # Per partition: status, diagnosis codes, and (part of) the first one's evidence, if given.
    expected: tuple[tuple[str, list[str], dict[str, Any] | None], ...]
    exact: bool = True


POISON_103 = {"offset": 103, "committed": 103, "failed_rise": 651}
AT_CAP = {"max_spout_pending": CAP, "share_at_cap": 1.0, "samples": 10}

# fmt: off
CASES = [
    Case("partition 0 frozen while the spout's failed count rises: a poison message at 103",
         (frozen_at_103, moving), retrying_a_poison,
         ((STALL, [POISON_MESSAGE], POISON_103), (OK, [], None))),
    Case("the same with sampled counts: no in flight, the poison all the same",
         (frozen_at_103, moving), retrying_a_poison,
         ((STALL, [POISON_MESSAGE], POISON_103), (OK, [], None)), exact=False),
    Case("a worker restart in the window: the failures count from zero again",
         (frozen_at_103, moving), restarted_at_6,
         ((STALL, [POISON_MESSAGE], {**POISON_103, "failed_rise": 93 * 3 + 93 * 4}),
          (OK, [], None))),
    Case("both partitions keep pace: nothing to say",
         (moving, moving), healthy, ((OK, [], None), (OK, [], None))),
    Case("in flight at the cap in every sample: back-pressure on both partitions",
         (falling_behind, falling_behind), at_the_cap,
         ((WARN, [SLOW_CONSUMER, BACKPRESSURE], None), (WARN, [SLOW_CONSUMER, BACKPRESSURE], None))),
    Case("at the cap with sampled counts: in flight unknown, no back-pressure claimed",
         (falling_behind, falling_behind), at_the_cap,
         ((WARN, [SLOW_CONSUMER], None), (WARN, [SLOW_CONSUMER], None)), exact=False),
    Case("the topology killed: Storm UI no longer lists it, its counts from before say nothing",
         (frozen_at_103, frozen_at_103), killed_at_5,
         ((STOP, [DEAD_CONSUMER], {"source": "owner", "alive": False}),
          (STOP, [DEAD_CONSUMER], {"source": "owner", "alive": False}))),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_real_storm_spout_without_a_push(case: Case) -> None:
    rows = storm_samples(case.partitions, case.counters, case.exact)
    out = evaluate_group_samples(columns(rows), CONFIG, NOW)
    assert out is not None
    assert out["partition"] == [0, 1]
    for status, diagnosis, (want_status, want_codes, want_evidence) in zip(
        out["status"], out["diagnosis"], case.expected, strict=True
    ):
        found = {d["code"]: d["evidence"] for d in json.loads(diagnosis)}
        assert (status, list(found)) == (want_status, want_codes)
        if want_evidence is not None:
            assert want_evidence.items() <= found[want_codes[0]].items()
        if BACKPRESSURE in found:
            assert found[BACKPRESSURE] == AT_CAP

"""The reason renderer: every rule of the decide table has a sentence, and the sentence cites
the figures of the window that decided it, then the first diagnosis that adds to it.

The windows are the decide table's rows (test_decide_table.py), so each sentence here is
rendered from a decision whose facts and rule that table pins.
"""

from __future__ import annotations

from typing import Any

import pytest

from spark_jobs.evaluator import (
    BACKPRESSURE,
    DEAD_CONSUMER,
    OUT_OF_RANGE,
    PENDING_LEAK,
    POISON_MESSAGE,
    REBALANCE_STORM,
    REBALANCING,
    RETENTION_RISK,
    SKIPPED_DATA,
    SLOW_CONSUMER,
    SOURCE_UNREACHABLE,
    SPOUT_ID_COLLISION,
    TOPOLOGY_RESTARTED,
    Diagnosis,
)
from spark_jobs.evaluator.decide import RULES
from spark_jobs.evaluator.reasons import _BASES, _sentence, reason
from tests.spark_jobs.test_decide_table import CASES

BY_NAME = {c.name: c for c in CASES}

# Row of the decide table -> what its sentence must say (figures from its window).
SAYS: dict[str, tuple[str, ...]] = {
    "stale source": ("could not be reached for 240 s", "(lag 5)"),
    "stale source, events still reported": ("could not be reached;", "the group is rebalancing"),
    "stale source, no commit yet": ("could not be reached;", "(lag 0)"),
    "gap in collection": ("could not be reached for 600 s", "(lag 60)"),
    "polled lately, no gap": ("No commit for 600 s", "240 s span"),
    "gap while the source is down": ("could not be reached for 660 s",),
    "gap, no commit yet": ("could not be reached for 300 s", "(lag 0)"),
    "outage since the commit, in its grace": ("could not be reached for 60 s", "marked stale"),
    "outage, and a gap after it": ("could not be reached for 120 s",),
    "silent past the grace after an outage": ("No commit for 300 s", "240 s span"),
    "no commit yet": ("No commit in the window yet",),
    "behind earliest": ("offset 140 is below the earliest available offset 150",),
    "beyond latest": ("offset 140 is beyond the latest offset 130",),
    "beyond latest, latest unknown": ("offset 140 is beyond the latest offset:",),
    "beyond latest, window not full": ("offset 120 is beyond the latest offset 110",),
    "beyond latest at two polls": ("offset 140 is beyond the latest offset 130",),
    "beyond latest at its first poll only": (
        "offset 140 is 10 beyond the latest offset read",
        "caught up",
    ),
    "three of five commits": ("Only 3 of 5 commits", "(60% < 100% required)"),
    "three of five commits, nothing waits": ("Only 3 of 5 commits", "not enough data"),
    "three commits, five polls": ("rose by 0 across the window's 3 commits", "the 10 messages"),
    "quiet topic, old commit": ("Current lag 0", "allowed lag of 0", "3600 s old"),
    "lag within allowed, rebalancing": ("Current lag 0", "; the group is rebalancing."),
    "dead owner after a zero-lag commit": ("Nobody owns", "no commit for 120 s", "30 messages"),
    "dead spout, commit overdue": ("neither acked nor failed", "for 120 s", "20 messages"),
    "stopped, dead owner": ("Nobody owns", "no commit for 600 s and 60 messages wait"),
    "owner missing at one poll only": ("Lag was 0 (allowed 0)", "caught up recently"),
    "owner missing at two polls": ("Nobody owns", "no commit for 120 s", "the consumer is dead"),
    "stopped, owner missing at one poll": ("No commit for 600 s", "55 new messages"),
    "frozen, owner missing at one poll": ("at offset 100 with lag 10.",),
    "frozen, owner missing at three polls": ("at offset 100", "the consumer is dead"),
    "stopped after a rewind": ("No commit for 600 s", "240 s span", "with 5 messages waiting"),
    "stopped, liveness unknown": ("No commit for 600 s", "240 s span", "55 new messages"),
    "stopped, spout alive, poison": (
        "acked +10, failed +9",
        "stalled, not stopped",
        "offset 140 keeps failing (9 more failures)",
    ),
    "stopped, whole-spout counts, poison": ("acked +20, failed +9", "offset 140 keeps failing"),
    "stopped, spout alive, pending leak": ("acked +1, failed +6", "pending grew from 1 to 14"),
    "stopped, but caught up lately": ("(from 5 to 5)", "0.167/s against 0.167/s"),
    "overdue, owner alive, messages wait": (
        "No commit for 210 s, more than half the window's 240 s span and 3 of its ~60 s",
        "while 30 new messages arrived",
        "the consumer is alive (it owns the partition): stalled",
    ),
    "overdue, spout alive, poison": (
        "3 of its ~60 s commit intervals",
        "the spout is alive (acked +10, failed +9): stalled",
        "offset 140 keeps failing (9 more failures)",
    ),
    "overdue, liveness unknown": ("Lag was 0 (allowed 0) at a commit 210 s ago",),
    "overdue, caught up at a poll since": ("caught up recently",),
    "overdue, two polls since": ("caught up recently",),
    "two intervals missed, messages wait": ("at a commit 150 s ago",),
    "three intervals, under half the span": ("at a commit 240 s ago",),
    "overdue after a rewind, owner alive": ("went back from 120 to 90",),
    "rewind": ("went back from 120 to 90", "(last commit 110)"),
    "rewind recovered": ("never decreased across the window's 5 commits",),
    "rewind after a zero-lag commit": ("went back from 120 to 90",),
    "skipped data, catching up": ("from 3 to 2", "jumped from 50 to 100 past the log start 80"),
    "skipped data, resumed at the log start": (
        "jumped from 50 to the log start 80: 30 messages were deleted before they were read",
    ),
    "caught up at the first commit": ("Lag was 0 (allowed 0)", "300 s ago"),
    "frozen after a zero-lag commit": ("Lag was 0 (allowed 0) at a commit 300 s ago",),
    "frozen after a zero-lag commit, dead": ("Lag was 0 (allowed 0)", "caught up recently"),
    "frozen, dead spout, not yet overdue": ("All 5 commits", "offset 100 with lag 20", "dead"),
    "frozen, owner alive, backpressure": (
        "offset 100 with lag 10",
        "it owns the partition",
        "max.spout.pending (5) in 100% of samples",
    ),
    "frozen, spout's in flight at the cap": (
        "the spout is alive (acked +2, failed +0)",
        "max.spout.pending (5) in 100% of samples",
    ),
    "frozen, counts moved before, gone now": ("Nobody owns", "no commit for 120 s", "20 messages"),
    "frozen, liveness unknown": ("All 5 commits in the window are at offset 100 with lag 10.",),
    "frozen, owner gone in a rebalance": ("with lag 10; the group is rebalancing",),
    "lag rising within a batch, polled": ("rose by 3", "the 10 messages read between two polls"),
    "lag rising within a batch, unpolled": ("(from 1 to 4)", "0.167/s against 0.179/s"),
    "lag rising beyond a batch, polled": ("(from 1 to 40)", "0.167/s against 0.329/s"),
    "lag rising, rebalance storm": ("(from 1 to 40)", "so the lag never drains"),
    "lag rising, spout at its cap": ("never decreased", "so the lag never drains"),
    "lag going down, spout at its cap": ("Lag 14 while", "max.spout.pending (5)", "downstream"),
    "catching up": ("went down from 15 to 10",),
    "catching up, topology restarted": ("instance a-2 replaced a-1",),
    "catching up, two topics on a path": ("topics t1, t2 are written under one spout path",),
    # RETENTION_RISK never ends a sentence: the sentences are those without it.
    "retention soon, catching up": ("within the window: the consumer catches up.",),
    "retention soon, lag rising": ("(from 1 to 40)", "so the lag never drains."),
    "retention soon, topology restarted": ("catches up; a new topology instance a-2",),
    "already past retention, stalled": (
        "All 5 commits in the window are at offset 100 with lag 10.",
    ),
    "retention a week off": ("the consumer catches up.",),
    "retention soon, horizon 0 (off)": ("the consumer catches up.",),
    "retention soon, source down": ("could not be reached;", "(lag 14), marked stale."),
    "retention soon, nothing unread": ("Current lag 0 is within the allowed lag of 0.",),
    "retention soon, compacted topic": ("the consumer catches up.",),
    "share: queue drained": ("Current lag 0 is within the allowed lag of 0.",),
    "share: filling while members fetch": ("(from 5 to 17)", "so the lag never drains."),
    "share: records waiting, no member": (
        "No member holds the partition, the start offset has not moved for 120 s",
        "10 records wait: the queue has no consumer",
    ),
    "share: start offset held, members on": (
        "The start offset stayed at 100 across the window, with lag 10",
        "members hold the partition but not moving",
    ),
    "share: start offset silent, members on": (
        "The start offset has not moved for 600 s, longer than the window's 240 s span",
        "but members hold the partition: stalled, not stopped",
    ),
    "share: filling, lag an upper bound": (
        "Lag never decreased across the window's 5 moves of the start offset (from 5 to 17)",
        "(the lag is an upper bound, start offset to log end: the broker reports none)",
    ),
    "share: record redelivered, queue moving": (
        "The start offset moves with lag 5, but one record keeps failing; offset 120 has been "
        "delivered 3 times (limit 5) and keeps coming back: a poison message.",
    ),
    "share: record delivered once, come back": ("(from 5 to 5)",),
    "share: poison holds the start offset": (
        "The start offset stayed at 100 across the window",
        "; offset 120 has been delivered 3 times (limit 5) and keeps coming back",
    ),
    "share: overdue, poison redelivered": ("but members hold the partition: stalled; offset 120",),
    "share: archived in the window, drained": (
        "Current lag 0 is within the allowed lag of 0, but a record was given up; offset 117 was "
        "delivered 5 times (limit 5) and archived at the delivery count limit: a poison "
        "message given up.",
    ),
    "share: archived before the window": ("Current lag 0 is within the allowed lag of 0.",),
    "share: rejected at its first delivery": ("Current lag 0 is within the allowed lag of 0.",),
    "share: archived, caught up at the first": (
        "The start offset moves with lag 10, but a record was given up; offset 117",
    ),
    "share: archived, another redelivered": ("one record keeps failing; offset 120",),
    "share: archived, three of five moves": ("Only 3 of 5 moves of the start offset",),
    "share: archived, then no member": (
        "the queue has no consumer; offset 117 was delivered 5 times (limit 5) and archived",
    ),
    "share: archived, limit unknown": ("offset 117 was delivered 4 times and archived: a poison",),
    "not a queue: share figures unread": ("All 5 commits in the window are at offset 100",),
    "rebuilt, read as one history": ("went back from 5020 to 10",),
    "rebuilt, old commits left out": ("Only 2 of 5 commits", "100% required since the cluster"),
    "rebuilt, old skip left out": ("Only 3 of 5 commits",),
    "rebuilt, old instance left out": ("Only 2 of 5 commits",),
    "rebuilt, old polls and outage left out": ("Only 2 of 5 commits",),
    "rebuilt, no commit since": ("No commit since the cluster was rebuilt 90 s ago",),
    "rebuilt, a full window since": ("across the window's 5 commits",),
    "rebuilt, one commit, a window of polls": ("No commit for 360 s",),
    "rebuilt, first polled a poll after": ("(50% < 100% required since the cluster was rebuilt)",),
    "rebuilt, first polled two polls after": ("seen by 5 polls (50% < 100% required",),
    "rebuilt, first polled long after": ("No commit for 150 s", "stalled, not stopped"),
    "rebuilt, its one poll since": ("(20% < 100% required since the cluster was rebuilt)",),
}


def test_every_rule_of_the_table_has_a_sentence() -> None:
    assert set(_BASES) == {r.id for r in RULES}


def test_every_row_of_the_decide_table_is_rendered_here() -> None:
    assert set(SAYS) == set(BY_NAME)


@pytest.mark.parametrize("name", sorted(SAYS))
def test_the_sentence_cites_the_figures(name: str) -> None:
    row = BY_NAME[name]
    window, now, decision = row.judged()
    text = reason(decision, window, row.config, now)
    for fragment in SAYS[name]:
        assert fragment in text
    assert text[0].isupper() and text.endswith(".") and not text.endswith("..")


# Diagnosis -> the clause that ends a sentence it is the first telling diagnosis of.
HINTS: list[tuple[str, dict[str, Any], str]] = [
    (POISON_MESSAGE, {"offset": 7, "failed_rise": 3},
     "offset 7 keeps failing (3 more failures): a poison message"),
    (POISON_MESSAGE, {"offset": 9, "deliveries": 2, "limit": None, "archived": False},
     "offset 9 has been delivered 2 times and keeps coming back: a poison message"),
    (POISON_MESSAGE, {"offset": 9, "deliveries": 2, "limit": 5, "archived": True,
                      "archived_at_ms": 1},
     "offset 9 was delivered 2 times (limit 5) and archived, rejected: a poison message given up"),
    (PENDING_LEAK, {"pending_from": 2, "pending_to": 9},
     "pending grew from 2 to 9 while the commit stayed put: a pending leak"),
    (BACKPRESSURE, {"max_spout_pending": 50, "share_at_cap": 0.875},
     "pending sat at max.spout.pending (50) in 88% of samples"),
    (SLOW_CONSUMER, {"consume_per_s": 1.5, "produce_per_s": 2.0},
     "it consumes 1.5/s against 2/s produced, so the lag never drains"),
    (REBALANCING, {"rebalancing": True}, "the group is rebalancing"),
    (REBALANCE_STORM, {"rebalances": 5, "threshold": 3},
     "5 rebalances in the window (more than 3)"),
    (SKIPPED_DATA, {"from": 10, "to": 40, "earliest": 30, "skipped": 10, "deleted_by_retention": 20},
     "the commit jumped from 10 to 40 past the log start 30, skipping 10 messages"),
    (SKIPPED_DATA, {"from": 233, "to": 14, "earliest": 0, "skipped": 14, "deleted_by_retention": None},
     "the commit at 233 lay beyond the end of a re-created log and jumped to 14, skipping 14 messages"),
    (TOPOLOGY_RESTARTED, {"from": "t-1", "to": "t-2"},
     "a new topology instance t-2 replaced t-1 on the spout path"),
    (SPOUT_ID_COLLISION, {"topics": ["a", "b"]}, "topics a, b are written under one spout path"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "evidence", "clause"), HINTS)
def test_a_diagnosis_ends_the_sentence_with_its_main_figure(
    code: str, evidence: dict[str, Any], clause: str
) -> None:
    assert _sentence("Base", [Diagnosis(code, evidence)]) == f"Base; {clause}."


@pytest.mark.parametrize("code", [SOURCE_UNREACHABLE, OUT_OF_RANGE, DEAD_CONSUMER, RETENTION_RISK])
def test_a_diagnosis_the_base_already_states_adds_nothing(code: str) -> None:
    """RETENTION_RISK among them: the forecast is a figure of its own beside the status, and
    the sentence stays the one the status was given for."""
    told = Diagnosis(code, {})
    assert _sentence("Base", [told]) == "Base."
    rebalancing = Diagnosis(REBALANCING, {"rebalancing": True})
    assert _sentence("Base", [told, rebalancing]) == "Base; the group is rebalancing."

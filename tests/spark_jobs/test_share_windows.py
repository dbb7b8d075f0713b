"""A share group's partition (KIP-932) from its samples to its verdict, in plain Python: which
polls are commits, what the window carries, and the statuses and sentences that follow.

A queue commits nothing: its start offset is read at every poll, and while a member holds the
partition each poll is its re-commit of it (``spark_jobs/windows.py``). The rows below pin
that: a held start offset with members on is commits at one offset (STALL), one with nobody
holding the partition gets none (STOP once overdue), a moving one is a commit per move.
"""

from __future__ import annotations

from typing import Any

import pytest

from spark_jobs.evaluator import (
    DEAD_CONSUMER,
    OK,
    SLOW_CONSUMER,
    STALL,
    STOP,
    WARN,
    EvaluatorConfig,
    evaluate_partition,
)
from spark_jobs.windows import commit_rows, derive_commits, window_from_samples
from tests.spark_jobs.samples import MIN, T0, columns, sample

CONFIG = EvaluatorConfig(window=5)
POLL = MIN // 6  # every 10 s


def at(i: int) -> int:
    return T0 + i * POLL


def polls(spec: str, **fields: Any) -> list[dict[str, Any]]:
    """``"10:0:a 10:3:- 12:1:a"``: start offset, lag and a (held by a member) or - (nobody),
    one poll each, of a share group's partition 0."""
    rows = []
    for i, item in enumerate(spec.split()):
        offset, lag, held = item.split(":")
        rows.append(
            sample(
                at(i), int(offset), lag=int(lag), latest=int(offset) + int(lag),
                alive=held == "a", owner="m-1" if held == "a" else None, share=True,
                **fields,
            )
        )  # fmt: skip
    return rows


# (case, polls, the rows that are commits)
COMMIT_ROWS = [
    ("moving, held", "10:0:a 12:1:a 15:0:a", [0, 1, 2]),
    ("frozen, held: a re-commit every poll", "10:0:a 10:2:a 10:4:a 10:6:a", [0, 1, 2, 3]),
    ("frozen, nobody: no re-commit", "10:0:- 10:2:- 10:4:- 10:6:-", [0]),
    ("held, then nobody", "10:0:a 11:2:a 11:4:- 11:6:-", [0, 1]),
    ("nobody, but it moves", "10:0:- 11:2:- 11:4:- 12:6:-", [0, 1, 3]),
    ("nobody, then a member", "10:0:- 10:2:- 10:4:a", [0, 2]),
]


@pytest.mark.parametrize(("name", "spec", "rows"), COMMIT_ROWS, ids=[c[0] for c in COMMIT_ROWS])
def test_which_polls_of_a_queue_are_commits(name: str, spec: str, rows: list[int]) -> None:
    assert list(commit_rows(columns(polls(spec)))) == rows


def test_a_consumer_groups_polls_are_untouched() -> None:
    """The same figures without ``share``: an unchanged offset is no commit."""
    plain = [dict(r, share=None) for r in polls("10:0:a 10:2:a 10:4:a 11:6:a")]
    assert list(commit_rows(columns(plain))) == [0, 3]


def test_commit_rows_from_a_later_start_agree() -> None:
    cols = columns(polls("10:0:a 10:2:- 10:4:- 11:6:- 11:6:a"))
    assert list(commit_rows(cols, 2)) == [3, 4]
    assert [c.offset for c in derive_commits(cols)] == [10, 11, 11]


def test_the_window_says_share_and_an_upper_bound() -> None:
    rows = polls("10:0:a 12:1:a", lag_upper_bound=True)
    window = window_from_samples("p", columns(rows), CONFIG)
    assert (window.share, window.lag_upper_bound) == (True, True)
    plain = window_from_samples("p", columns([dict(r, share=None, lag_upper_bound=None)
                                               for r in rows]), CONFIG)  # fmt: skip
    assert (plain.share, plain.lag_upper_bound) == (False, False)


# (case, polls, status, codes, words of the reason)
VERDICTS = [
    ("drained queue", "10:0:a 20:0:a 30:0:a 40:0:a 50:0:a 60:0:a", OK, [],
     "Current lag 0"),
    ("poison held, members fetching", "10:0:a 20:0:a 30:1:a 30:3:a 30:5:a 30:7:a 30:9:a 30:11:a",
     STALL, [], "The start offset stayed at 30 across the window, with lag 11"),
    ("members gone", "10:0:a 20:0:a 30:1:a 30:3:- 30:5:- 30:7:- 30:9:- 30:11:- 30:13:-",
     STOP, [DEAD_CONSUMER], "No member holds the partition, the start offset has not moved"),
    ("filling while members fetch", "10:1:a 12:4:a 14:7:a 16:10:a 18:13:a 20:16:a", WARN,
     [SLOW_CONSUMER], "Lag never decreased across the window's 5 moves of the start offset"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "spec", "status", "codes", "words"), VERDICTS, ids=[c[0] for c in VERDICTS]
)
def test_a_queues_verdict_from_its_polls(
    name: str, spec: str, status: str, codes: list[str], words: str
) -> None:
    rows = polls(spec)
    window = window_from_samples("p", columns(rows), CONFIG)
    verdict = evaluate_partition(window, CONFIG, rows[-1]["ts_ms"] + POLL)
    assert verdict.status == status, verdict.reason
    assert [d.code for d in verdict.diagnosis] == codes
    assert words in verdict.reason

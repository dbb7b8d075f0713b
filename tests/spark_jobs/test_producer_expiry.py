"""PRODUCER_EXPIRY, the evaluator's one rule per topic (spark_jobs/evaluator/producer_expiry.py),
case by case: a row per producer client and topic, then how a topic's clients add up.

Per topic, not per partition: an expired record never reached the log, so no partition's
window shows it (and one that expired before the partitioner placed it has no partition)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from spark_jobs.evaluator import PRODUCER_EXPIRY
from spark_jobs.evaluator.producer_expiry import (
    expired_lately,
    expiring_topics,
    expiry_sentence,
)

WINDOW = 600_000


@dataclass(frozen=True)
class Counts:
    """A producer client's figures for a topic, as the collectors merge them."""

    topic: str
    expired: int | None
    expired_grew_at_ms: int | None


# fmt: off
CLIENT_ROWS = [
    # case                                    expired grew at  now              PRODUCER_EXPIRY
    ("no delivery counts pushed",             None,   None,    1_000,           False),
    ("counted, nothing expired",              0,      None,    1_000,           False),
    ("counted zero, a growth time kept",      0,      1_000,   1_000,           False),
    ("just grew",                             3,      1_000,   1_000,           True),
    ("grew at the window's edge",             3,      1_000,   1_000 + WINDOW,  True),
    ("grew before the window",                3,      1_000,   1_001 + WINDOW,  False),
    ("the client's clock ahead of ours",      3,      5_000,   1_000,           True),
    ("an old state with no growth time",      3,      None,    1_000,           False),
]
# fmt: on


@pytest.mark.parametrize(
    ("expired", "grew", "now", "hit"), [r[1:] for r in CLIENT_ROWS], ids=[r[0] for r in CLIENT_ROWS]
)
def test_a_client_row(expired: int | None, grew: int | None, now: int, hit: bool) -> None:
    assert expired_lately(expired, grew, now, WINDOW) is hit
    assert (expiring_topics([Counts("t", expired, grew)], now, WINDOW) != {}) is hit


# fmt: off
TOPIC_ROWS = [
    # case, the topic's clients (expired, grew at), now -> the diagnosis's figure (None: none)
    ("one client grew lately: every client's expired records count",
     [(3, 1_000), (2, None)], 2_000, 5),
    ("only old expiries", [(5, -10 * WINDOW), (1, -2 * WINDOW)], 2_000, None),
    ("no client counted any", [(None, None), (0, None)], 2_000, None),
    ("two clients grew lately", [(3, 1_000), (4, 1_500)], 2_000, 7),
]
# fmt: on


@pytest.mark.parametrize(
    ("clients", "now", "figure"), [r[1:] for r in TOPIC_ROWS], ids=[r[0] for r in TOPIC_ROWS]
)
def test_a_topic_row(clients: list[tuple[int | None, int | None]], now: int, figure) -> None:
    rows = [Counts("t", expired, grew) for expired, grew in clients]
    rows.append(Counts("other", 9, now))  # another topic's expiry stays its own
    expected = {"other": 9} | ({} if figure is None else {"t": figure})
    assert expiring_topics(rows, now, WINDOW) == dict(sorted(expected.items()))


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1, "1 record expired before reaching the broker: no consumer will ever see them"),
        (40, "40 records expired before reaching the broker: no consumer will ever see them"),
    ],
)
def test_expiry_sentence(n: int, text: str) -> None:
    assert expiry_sentence(n) == text


def test_the_code_is_the_evaluators() -> None:
    assert PRODUCER_EXPIRY == "PRODUCER_EXPIRY"

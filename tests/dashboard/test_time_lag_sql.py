"""One time-lag formula: the store's SQL (``dashboard/store/rows.py: aged_time_lag_sql``, the
UPDATE that ages a stopped consumer's time lag from ``time_lag_from_ms``) against the Python
function the collectors compute it with (``collectors.timelag.lag_seconds``), row by row.

The store writes a row whose time lag alone grew only when the Python value differs from the
one the UPDATE will give (``_only_aged`` compares them with ``==``), so the two must agree to
the last bit, not approximately. The cases run through the real UPDATE on the test database:
SQLite here, PostgreSQL with ``--database postgresql`` (scripts/test runs both).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from collectors.timelag import lag_seconds
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from dashboard.store.rows import _age_time_lags

pytestmark = pytest.mark.django_db

HOUR = 3_600_000
EPOCH = 1_800_000_000_000  # a realistic clock

# (case, now_ms, from_ms): the time lag at now_ms of a position that was the log's end at from_ms
# fmt: off
EDGES = [
    ("the same moment",                      10_000,         10_000.0),
    ("a millisecond",                        10_000,         9_999.0),
    ("just under a second",                  10_000,         9_001.0),
    ("a second",                             10_000,         9_000.0),
    ("the store test's stopped consumer",    30_037,         1_234.5),
    ("a quarter millisecond",                10_000,         9_999.75),
    ("a third of a millisecond",             10_000,         10_000 - 1 / 3),
    ("from the epoch",                       10_000,         0.0),
    ("from before the epoch",                10_000,         -2_500.5),
    ("in the future: clamped to zero",       10_000,         10_005.0),
    ("a hair in the future",                 10_000,         10_000.000001),
    ("now, at a real clock",                 EPOCH,          float(EPOCH)),
    ("a real clock, interpolated",           EPOCH + 37,     EPOCH - 61_234.567891),
    ("a real clock, a day back",             EPOCH + 999,    EPOCH - 24 * HOUR + 0.1),
    ("a real clock, a week and a fraction",  EPOCH,          EPOCH - 7 * 24 * HOUR - 1e-6),
    ("a real clock, in the future",          EPOCH,          EPOCH + 0.5),
]
# fmt: on


def _random_cases(n: int = 400) -> list[tuple[str, int, float]]:
    """Moments as the interpolation makes them (any double near the clock: ``timelag._solve``)
    and cycle times a little after their slot."""
    rng = random.Random(20240501)
    cases = []
    for i in range(n):
        now = EPOCH + rng.randrange(0, 30 * 24 * HOUR)
        back = rng.choice([rng.uniform(0, 1_000), rng.uniform(0, HOUR), rng.uniform(0, 60 * HOUR)])
        ahead = rng.random() < 0.05  # the producer's clock ahead of the collector's
        cases.append((f"random {i}", now, now + rng.uniform(0, 50) if ahead else now - back))
    return cases


CASES = EDGES + _random_cases()


def _aged_by_the_store(cases: list[tuple[str, int, float]]) -> dict[str, float | None]:
    """Each case as a stopped consumer's row (its own group, the group's cycle at ``now_ms``),
    aged by the store's UPDATE; the time lag each row then holds."""
    cluster = Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")
    old = datetime(2024, 1, 1, tzinfo=UTC)
    cycle = datetime(2024, 1, 2, tzinfo=UTC)
    by_now: dict[int, list[tuple[int, str, float]]] = {}
    for i, (name, now, from_ms) in enumerate(cases):
        by_now.setdefault(now, []).append((i, name, from_ms))
    rows: dict[int, str] = {}
    for n, (now, members) in enumerate(sorted(by_now.items())):
        group = ConsumerGroup.objects.create(
            cluster=cluster, source="kafka", name=f"g{n}", first_seen_at=old, last_seen_at=old
        )
        PartitionState.objects.bulk_create(
            PartitionState(group=group, topic="t", partition=i, time_lag_from_ms=from_ms,
                           time_lag_s=None, sampled_at=old, present=True, stale=False)
            for i, _, from_ms in members
        )  # fmt: skip
        _age_time_lags({group.id}, now, cycle)
        rows.update((i, name) for i, name, _ in members)
    return {
        rows[partition]: time_lag_s
        for partition, time_lag_s in PartitionState.objects.values_list("partition", "time_lag_s")
    }


def test_the_sql_gives_the_python_time_lag_to_the_last_bit() -> None:
    aged = _aged_by_the_store(CASES)
    assert len(aged) == len(CASES)
    wrong = {
        name: (aged[name], lag_seconds(now, from_ms))
        for name, now, from_ms in CASES
        if aged[name] != lag_seconds(now, from_ms)
    }
    assert not wrong, f"SQL and Python disagree (sql, python): {wrong}"


@pytest.mark.parametrize(("name", "now", "from_ms"), EDGES, ids=[c[0] for c in EDGES])
def test_an_edge(name: str, now: int, from_ms: float) -> None:
    """The edges one by one, each with the value it must have, so a failure names it."""
    (aged,) = _aged_by_the_store([(name, now, from_ms)]).values()
    expected = lag_seconds(now, from_ms)
    assert aged == expected
    assert expected >= 0.0 and (expected == 0.0) is (from_ms >= now)

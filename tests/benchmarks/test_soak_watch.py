"""The soak's memory figures per process life (``benchmarks/soak_watch.py``): a service a
fault restarted is judged from its own first 15 minutes, not against its previous life, and
a fault that failed before acting starts no new life."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks.soak_watch import incarnation_growth, restart_times

MIN = 60.0
SETTLE = 15 * MIN


def every_5_min(*mib: float, first_min: float = 0.0) -> list[tuple[float, float]]:
    return [((first_min + 5 * i) * MIN, m) for i, m in enumerate(mib)]


CASES = [
    # never restarted: from the reading at 15 min to the last
    ("flat", every_5_min(100, 110, 120, 120, 121, 122), [0.0], [(15.0, 120, 122, 1.7)]),
    ("growing", every_5_min(100, 100, 100, 100, 110, 120), [0.0], [(15.0, 100, 120, 20.0)]),
    # restarted at 22 min: the old life 15-20 min, the new one from 37 min
    ("restarted", every_5_min(100, 100, 100, 100, 100, 60, 80, 95, 100, 101, 102),
     [0.0, 22 * MIN], [(15.0, 100, 100, 0.0), (40.0, 100, 102, 2.0)]),
    # a new life too short to settle says nothing; the old one still counts
    ("restarted late", every_5_min(100, 100, 100, 100, 104, 60, 80), [0.0, 22 * MIN],
     [(15.0, 100, 104, 4.0)]),
    # one settled reading is not a growth
    ("one reading", every_5_min(100, 100, 100, 100), [0.0], []),
    ("no readings", [], [0.0], []),
    # restart times come in any order
    ("unsorted", every_5_min(*[100] * 12), [50 * MIN, 0.0], [(15.0, 100, 100, 0.0)]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "series", "starts", "expected"), CASES, ids=[c[0] for c in CASES])
def test_incarnation_growth(
    name: str, series: list, starts: list[float], expected: list[tuple]
) -> None:
    lives = incarnation_growth(series, starts, SETTLE)
    got = [(life["from"] / MIN, life["settled_mib"], life["end_mib"], life["growth_pct"])
           for life in lives]  # fmt: skip
    assert got == expected


RESTARTING = {"kafka": "kafka", "spark-kill": "worker", "collector-kill": "collector"}


def fault(name: str, ended: float, acted: bool = True) -> SimpleNamespace:
    return SimpleNamespace(name=name, ended=ended, acted=acted)


RESTART_CASES = [
    ("none", [], {}),
    ("one", [fault("kafka", 10.0)], {"kafka": [10.0]}),
    # a Spark kill that found no status run going killed nothing
    ("failed before acting", [fault("spark-kill", 20.0, acted=False)], {}),
    ("acted and not", [fault("spark-kill", 20.0, acted=False), fault("spark-kill", 30.0)],
     {"worker": [30.0]}),
    # faults that restart nothing (a lock, a network cut) are not lives
    ("not a restart", [fault("db-lock", 5.0), fault("collector-kill", 7.0)],
     {"collector": [7.0]}),
    ("two services", [fault("kafka", 1.0), fault("spark-kill", 2.0), fault("kafka", 3.0)],
     {"kafka": [1.0, 3.0], "worker": [2.0]}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "faults", "expected"), RESTART_CASES, ids=[c[0] for c in RESTART_CASES]
)
def test_restart_times(name: str, faults: list, expected: dict[str, list[float]]) -> None:
    assert restart_times(faults, RESTARTING) == expected

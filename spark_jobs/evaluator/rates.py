"""Produce and consume rates, lag slope and the time to drain the lag (SPEC §3).

Beside the evaluator because ``SLOW_CONSUMER`` is its only user: in ``collectors/`` it made
every Spark executor ship and import the collectors package for one function.

Rates come from the first and last samples of a window rather than a regression: the
figures are offsets (monotonic counters), so the endpoints carry all the information and a
missed poll in between changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sample:
    time_ms: int
    latest: int
    committed: int


@dataclass(frozen=True, slots=True)
class Rates:
    produce_per_s: float
    consume_per_s: float
    lag_slope_per_s: float
    eta_s: float | None  # None: never drains at current rates
    already_drained: bool


def rates(samples: list[Sample]) -> Rates | None:
    """Rates over the window; None with fewer than two samples or no elapsed time."""
    if len(samples) < 2:
        return None
    first, last = samples[0], samples[-1]
    seconds = (last.time_ms - first.time_ms) / 1000.0
    if seconds <= 0:
        return None
    produce = (last.latest - first.latest) / seconds
    consume = (last.committed - first.committed) / seconds
    lag_now = last.latest - last.committed
    slope = produce - consume
    if lag_now <= 0:
        return Rates(produce, consume, slope, 0.0, True)
    eta = lag_now / (consume - produce) if consume > produce else None
    return Rates(produce, consume, slope, eta, False)

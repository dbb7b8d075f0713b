"""Time lag: how long ago the broker's latest offset was where the consumer is now.

The method of Kafka Lag Exporter: keep, per partition, a short table of (latest offset, time)
points and read the committed offset's time off it by linear interpolation. Lag in messages
says little when rates differ by orders of magnitude between topics; lag in seconds does.

Edges, each handled explicitly (and tested):
- committed == latest offset of the newest point: lag is zero;
- committed beyond the newest point: the consumer is ahead of what we saw: zero, flagged;
- committed inside the table: interpolate between the two points around it; where the
  latest offset stayed flat, take the *last* time it had that value (the next message was
  produced after that), so a quiet topic does not look late;
- committed before the table: extrapolate along the table's overall trend and say so; a
  table that is one flat line cannot extrapolate, so the oldest point's time is returned as
  a lower bound;
- fewer than two points: no estimate.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class Point:
    offset: int
    time_ms: int


class Estimate(StrEnum):
    ZERO = "zero"
    AHEAD = "ahead"
    INTERPOLATED = "interpolated"
    EXTRAPOLATED = "extrapolated"
    LOWER_BOUND = "lower_bound"
    TOO_FEW_POINTS = "too_few_points"


class TimeAt(NamedTuple):
    """When the latest offset equalled a given offset; ``time_ms`` None when unknown.

    This and ``TimeLag`` are named tuples, made once per partition every cycle (100,000 in
    a large cluster's): a tuple is made several times faster than a frozen dataclass."""

    kind: Estimate
    time_ms: float | None = None


class OffsetTimeTable:
    """A sliding window of (latest offset, time) points for one partition.

    Points must arrive in time order with non-decreasing offsets; anything else (a late
    sample, an offset going backwards after a topic was re-created) is refused, and a reset
    is the caller's decision (``clear``).

    Stored as two ``array('q')`` columns, offsets and times (16 bytes a point, against ~90
    for a ``Point`` object in a deque): a collector holds one table per partition, up to an
    hour of points each, so 10,000 partitions with moving offsets would otherwise take
    ~300 MiB. Offsets never decrease along the table, so a lookup is a binary search.
    Offsets and times are 64-bit integers, as Kafka's are.
    """

    __slots__ = ("_offsets", "_times", "limit")

    def __init__(self, limit: int = 60, points: list[Point] | None = None) -> None:
        if limit < 2:
            raise ValueError("a time table needs room for at least two points")
        self.limit = limit
        self._offsets = array("q")
        self._times = array("q")
        for point in points or ():
            self.add(point)

    @property
    def points(self) -> list[Point]:
        return [Point(o, t) for o, t in zip(self._offsets, self._times, strict=True)]

    @property
    def last_offset(self) -> int | None:
        """The newest point's offset; None when the table is empty."""
        return self._offsets[-1] if self._offsets else None

    def __len__(self) -> int:
        return len(self._offsets)

    def clear(self) -> None:
        del self._offsets[:]
        del self._times[:]

    def add(self, point: Point) -> bool:
        """Add a point; False when it was refused (out of order, or offset went back)."""
        return self.add_at(point.offset, point.time_ms)

    def add_at(self, offset: int, time_ms: int) -> bool:
        """``add(Point(offset, time_ms))`` without making the point."""
        offsets, times = self._offsets, self._times
        n = len(offsets)
        if n:
            last = offsets[-1]
            if time_ms <= times[-1] or offset < last:
                return False
            # A flat line is kept as its two ends only, so a quiet hour costs two points and
            # does not push the useful history out of the window.
            if offset == last and n > 1 and offsets[-2] == offset:
                times[-1] = time_ms
                return True
            if n >= self.limit:  # the window slides: the oldest point goes
                del offsets[0]
                del times[0]
        offsets.append(offset)
        times.append(time_ms)
        return True

    def time_at(self, offset: int) -> TimeAt:
        offsets, times = self._offsets, self._times
        if not offsets:
            return TimeAt(Estimate.TOO_FEW_POINTS)
        last = offsets[-1]
        if offset == last:
            return TimeAt(Estimate.ZERO, float(times[-1]))
        if offset > last:
            return TimeAt(Estimate.AHEAD, float(times[-1]))
        n = len(offsets)
        if n < 2:
            return TimeAt(Estimate.TOO_FEW_POINTS)
        # The newest segment [i - 1, i] with offsets[i - 1] <= offset <= offsets[i]: as
        # offsets never decrease, i is the first index whose offset is above ``offset``
        # (there is one: offset < last). So for an offset on a flat stretch, the segment
        # leaving the stretch is taken, and with it the stretch's later time.
        i = bisect_right(offsets, offset)
        if i > 0:
            return TimeAt(
                Estimate.INTERPOLATED,
                _solve(offsets[i - 1], times[i - 1], offsets[i], times[i], offset),
            )
        first = offsets[0]
        if first == last:
            return TimeAt(Estimate.LOWER_BOUND, float(times[0]))
        return TimeAt(Estimate.EXTRAPOLATED, _solve(first, times[0], last, times[n - 1], offset))


def _solve(left_offset: int, left_ms: int, right_offset: int, right_ms: int, offset: int) -> float:
    """Time on the line through the left and right points where it reaches ``offset``."""
    dy = right_offset - left_offset
    if dy == 0:
        return float(right_ms)
    dx = right_ms - left_ms
    return right_ms - (right_offset - offset) * dx / dy


class TimeLag(NamedTuple):
    """``from_ms``: the moment the seconds count from (when the latest offset was the
    committed one), for the estimates that grow with the clock; None for the others (zero,
    ahead, unknown), whose seconds do not. A stopped consumer's ``from_ms`` stands still
    while its seconds grow, so the store can tell a row that only aged from one that changed
    (``dashboard/store/rows.py``)."""

    seconds: float | None
    kind: Estimate
    from_ms: float | None = None


def time_lag(table: OffsetTimeTable, committed: int, now_ms: int) -> TimeLag:
    """Seconds between now and the moment the latest offset was ``committed``.

    Never negative: an estimate that lands in the future (clock skew between hosts, a
    steep extrapolation) is clamped to zero rather than reported as negative lag.
    """
    at = table.time_at(committed)
    if at.kind in (Estimate.ZERO, Estimate.AHEAD):
        return TimeLag(0.0, at.kind)
    if at.time_ms is None:
        return TimeLag(None, at.kind)
    return TimeLag(lag_seconds(now_ms, at.time_ms), at.kind, at.time_ms)


def lag_seconds(now_ms: int, from_ms: float) -> float:
    """The time lag at ``now_ms`` of a consumer whose position was the log's end at
    ``from_ms``. The store's SQL repeats this formula to age many rows in one UPDATE
    (``dashboard/store/rows.py: aged_time_lag_sql``); ``tests/dashboard/test_time_lag_sql.py``
    checks the two against each other row by row."""
    return max(0.0, (now_ms - from_ms) / 1000.0)

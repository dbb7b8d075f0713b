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

from collections import deque
from dataclasses import dataclass
from enum import StrEnum


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


@dataclass(frozen=True, slots=True)
class TimeAt:
    """When the latest offset equalled a given offset; ``time_ms`` None when unknown."""

    kind: Estimate
    time_ms: float | None = None


class OffsetTimeTable:
    """A sliding window of (latest offset, time) points for one partition.

    Points must arrive in time order with non-decreasing offsets; anything else (a late
    sample, an offset going backwards after a topic was re-created) is refused, and a reset
    is the caller's decision (``clear``).
    """

    def __init__(self, limit: int = 60, points: list[Point] | None = None) -> None:
        if limit < 2:
            raise ValueError("a time table needs room for at least two points")
        self.limit = limit
        self._points: deque[Point] = deque(maxlen=limit)
        for point in points or ():
            self.add(point)

    @property
    def points(self) -> list[Point]:
        return list(self._points)

    def clear(self) -> None:
        self._points.clear()

    def add(self, point: Point) -> bool:
        """Add a point; False when it was refused (out of order, or offset went back)."""
        if self._points:
            last = self._points[-1]
            if point.time_ms <= last.time_ms or point.offset < last.offset:
                return False
            # A flat line is kept as its two ends only, so a quiet hour costs two points and
            # does not push the useful history out of the window.
            if (
                point.offset == last.offset
                and len(self._points) > 1
                and self._points[-2].offset == point.offset
            ):
                self._points[-1] = point
                return True
        self._points.append(point)
        return True

    def time_at(self, offset: int) -> TimeAt:
        points = self._points
        if not points:
            return TimeAt(Estimate.TOO_FEW_POINTS)
        last = points[-1]
        if offset == last.offset:
            return TimeAt(Estimate.ZERO, float(last.time_ms))
        if offset > last.offset:
            return TimeAt(Estimate.AHEAD, float(last.time_ms))
        if len(points) < 2:
            return TimeAt(Estimate.TOO_FEW_POINTS)
        # Newest segment first: for an offset on a flat stretch, the later time wins.
        for i in range(len(points) - 1, 0, -1):
            left, right = points[i - 1], points[i]
            if left.offset <= offset <= right.offset:
                return TimeAt(Estimate.INTERPOLATED, _solve(left, right, offset))
        first = points[0]
        if first.offset == last.offset:
            return TimeAt(Estimate.LOWER_BOUND, float(first.time_ms))
        return TimeAt(Estimate.EXTRAPOLATED, _solve(first, last, offset))


def _solve(left: Point, right: Point, offset: int) -> float:
    """Time on the line through left and right where it reaches ``offset``."""
    dy = right.offset - left.offset
    if dy == 0:
        return float(right.time_ms)
    dx = right.time_ms - left.time_ms
    return right.time_ms - (right.offset - offset) * dx / dy


@dataclass(frozen=True, slots=True)
class TimeLag:
    seconds: float | None
    kind: Estimate


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
    return TimeLag(max(0.0, (now_ms - at.time_ms) / 1000.0), at.kind)

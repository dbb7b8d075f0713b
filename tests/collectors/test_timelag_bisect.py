"""The time table's lookup by binary search: the same answers as a scan of every segment,
newest first, on the edges a bisect can get wrong (flat stretches, ends, a slid window)."""

import random

import pytest

from collectors.timelag import Estimate, OffsetTimeTable, Point, TimeAt


def table(*pairs: tuple[int, int], limit: int = 60) -> OffsetTimeTable:
    return OffsetTimeTable(limit, [Point(o, t) for o, t in pairs])


def scan(points: list[Point], offset: int) -> tuple[Estimate, float | None]:
    """The lookup as a linear scan, newest segment first: the reference for the bisect."""
    if not points:
        return Estimate.TOO_FEW_POINTS, None
    last = points[-1]
    if offset == last.offset:
        return Estimate.ZERO, float(last.time_ms)
    if offset > last.offset:
        return Estimate.AHEAD, float(last.time_ms)
    if len(points) < 2:
        return Estimate.TOO_FEW_POINTS, None
    for left, right in reversed(list(zip(points, points[1:], strict=False))):
        if left.offset <= offset <= right.offset:
            if left.offset == right.offset:
                return Estimate.INTERPOLATED, float(right.time_ms)
            dx, dy = right.time_ms - left.time_ms, right.offset - left.offset
            return Estimate.INTERPOLATED, right.time_ms - (right.offset - offset) * dx / dy
    first = points[0]
    if first.offset == last.offset:
        return Estimate.LOWER_BOUND, float(first.time_ms)
    dx, dy = last.time_ms - first.time_ms, last.offset - first.offset
    return Estimate.EXTRAPOLATED, last.time_ms - (last.offset - offset) * dx / dy


STAIRS = ((100, 1000), (100, 2000), (200, 3000), (200, 4000), (300, 5000), (300, 6000))


@pytest.mark.parametrize(
    ("pairs", "offset", "kind", "time_ms"),
    [
        # on a flat stretch: its later end, wherever the stretch is (start, middle, end)
        (STAIRS, 100, Estimate.INTERPOLATED, 2000),
        (STAIRS, 200, Estimate.INTERPOLATED, 4000),
        (STAIRS, 300, Estimate.ZERO, 6000),
        # between stretches: the segment that leaves the lower one
        (STAIRS, 150, Estimate.INTERPOLATED, 2500),
        (STAIRS, 299, Estimate.INTERPOLATED, 4990),
        (STAIRS, 101, Estimate.INTERPOLATED, 2010),
        # just below the table: extrapolated along first -> last, flat ends included
        (STAIRS, 99, Estimate.EXTRAPOLATED, 975),
        # the first point exactly, table not flat: its own time
        (((100, 1000), (200, 2000), (300, 3000)), 100, Estimate.INTERPOLATED, 1000),
        # a flat table of three points or more: still a lower bound below it
        (((100, 1000), (100, 2000), (100, 3000)), 7, Estimate.LOWER_BOUND, 1000),
        # two points: every lookup inside is the one segment
        (((0, 0), (1_000_000, 10_000)), 1, Estimate.INTERPOLATED, 0.01),
    ],
)
def test_time_at_edges_of_the_binary_search(pairs, offset, kind, time_ms) -> None:
    at = table(*pairs).time_at(offset)
    assert at.kind == kind
    assert at.time_ms == pytest.approx(time_ms)
    assert (at.kind, at.time_ms) == scan(table(*pairs).points, offset)


def test_the_flat_stretch_folded_into_two_ends_keeps_its_newest_time_for_lookups() -> None:
    t = table((100, 1000), (200, 2000))
    for time_ms in range(3000, 10_000, 1000):
        t.add(Point(200, time_ms))
    t.add(Point(300, 10_000))
    assert t.points == [Point(100, 1000), Point(200, 2000), Point(200, 9000), Point(300, 10_000)]
    assert t.time_at(200).time_ms == 9000.0
    assert t.time_at(250).time_ms == 9500.0


def test_lookups_after_the_window_slid_use_only_the_points_kept() -> None:
    t = table(*[(i * 10, i * 1000) for i in range(10)], limit=4)  # keeps offsets 60..90
    assert t.time_at(60) == TimeAt(Estimate.INTERPOLATED, 6000.0)
    assert t.time_at(75).time_ms == pytest.approx(7500.0)
    assert t.time_at(50) == TimeAt(Estimate.EXTRAPOLATED, 5000.0)


def test_lookups_after_a_clear_start_from_nothing() -> None:
    t = table((100, 1000), (200, 2000))
    t.clear()
    assert t.time_at(150).kind == Estimate.TOO_FEW_POINTS
    assert t.last_offset is None and len(t) == 0
    assert t.add_at(5, 3000) and t.add_at(7, 4000)
    assert t.points == [Point(5, 3000), Point(7, 4000)] and t.last_offset == 7


def test_random_tables_answer_as_the_scan() -> None:
    rng = random.Random(20261121)
    for _ in range(500):
        t = OffsetTimeTable(rng.choice([2, 3, 5, 60]))
        offset, time_ms = rng.randrange(100), 0
        for _ in range(rng.randrange(40)):
            offset += rng.choice([0, 0, 0, 1, 7, 100])
            time_ms += rng.choice([1, 10, 1000])
            t.add(Point(offset, time_ms))
        points = t.points
        probes = {p.offset + d for p in points for d in (-1, 0, 1)} | {-1, offset + 50}
        for probe in probes:
            at = t.time_at(probe)
            assert (at.kind, at.time_ms) == scan(points, probe), (points, probe)

"""Time lag by interpolation on the latest-offset history: every edge of the lookup table."""

import pytest

from collectors.timelag import Estimate, OffsetTimeTable, Point, lag_seconds, time_lag


def table(*pairs: tuple[int, int], limit: int = 60) -> OffsetTimeTable:
    return OffsetTimeTable(limit, [Point(o, t) for o, t in pairs])


@pytest.mark.parametrize(
    ("pairs", "offset", "kind", "time_ms"),
    [
        # empty and one-point tables cannot estimate
        ((), 5, Estimate.TOO_FEW_POINTS, None),
        (((100, 1000),), 50, Estimate.TOO_FEW_POINTS, None),
        # committed at the newest latest offset: caught up
        (((100, 1000),), 100, Estimate.ZERO, 1000),
        (((100, 1000), (200, 2000)), 200, Estimate.ZERO, 2000),
        # committed beyond what the broker said: ahead, not negative
        (((100, 1000), (200, 2000)), 250, Estimate.AHEAD, 2000),
        # exact points and midpoints
        (((100, 1000), (200, 2000)), 100, Estimate.INTERPOLATED, 1000),
        (((100, 1000), (200, 2000)), 150, Estimate.INTERPOLATED, 1500),
        (((0, 0), (100, 1000), (300, 2000)), 200, Estimate.INTERPOLATED, 1500),
        # a flat stretch: the message after it was produced after the stretch ended
        (((100, 1000), (200, 2000), (200, 5000), (300, 6000)), 200, Estimate.INTERPOLATED, 5000),
        # before the table: extrapolated along the overall trend
        (((100, 1000), (200, 2000)), 50, Estimate.EXTRAPOLATED, 500),
        (((100, 1000), (150, 1500), (200, 2000)), 0, Estimate.EXTRAPOLATED, 0),
        # a flat table cannot extrapolate: the oldest time is a lower bound
        (((100, 1000), (100, 9000)), 40, Estimate.LOWER_BOUND, 1000),
    ],
)
def test_time_at(pairs, offset, kind, time_ms) -> None:
    at = table(*pairs).time_at(offset)
    assert at.kind == kind
    assert at.time_ms == (None if time_ms is None else pytest.approx(time_ms))


def test_out_of_order_points_are_refused() -> None:
    t = table((100, 1000), (200, 2000))
    assert t.add(Point(300, 2000)) is False  # same time
    assert t.add(Point(300, 1500)) is False  # earlier time
    assert t.add(Point(150, 3000)) is False  # offset went back
    assert t.points == [Point(100, 1000), Point(200, 2000)]


def test_flat_lines_are_compressed_to_their_two_ends() -> None:
    t = table((100, 1000), (200, 2000))
    for time_ms in (3000, 4000, 5000, 6000):
        assert t.add(Point(200, time_ms))
    assert t.points == [Point(100, 1000), Point(200, 2000), Point(200, 6000)]


def test_the_window_slides_at_its_limit() -> None:
    t = table(*[(i * 10, i * 1000) for i in range(5)], limit=3)
    assert [p.offset for p in t.points] == [20, 30, 40]


def test_a_limit_below_two_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least two"):
        OffsetTimeTable(1)


def test_time_lag_seconds() -> None:
    t = table((100, 10_000), (200, 20_000))
    lag = time_lag(t, committed=150, now_ms=30_000)
    assert lag.kind == Estimate.INTERPOLATED
    assert lag.seconds == pytest.approx(15.0)


def test_time_lag_is_zero_when_caught_up_or_ahead() -> None:
    t = table((100, 10_000), (200, 20_000))
    assert time_lag(t, 200, 90_000).seconds == 0.0
    assert time_lag(t, 500, 90_000).kind == Estimate.AHEAD


def test_quiet_topic_caught_up_has_zero_time_lag_however_old() -> None:
    t = table((100, 0), (100, 3_600_000))
    assert time_lag(t, 100, 7_200_000).seconds == 0.0


def test_time_lag_grows_with_wall_clock_when_nothing_moves() -> None:
    t = table((100, 10_000), (200, 20_000))
    assert time_lag(t, 150, 40_000).seconds == pytest.approx(25.0)
    assert time_lag(t, 150, 100_000).seconds == pytest.approx(85.0)


def test_unknown_time_lag_is_none_not_zero() -> None:
    assert time_lag(table((100, 1000)), 50, 5000).seconds is None


def test_future_estimates_are_clamped_to_zero() -> None:
    t = table((100, 10_000), (200, 20_000))
    assert time_lag(t, 150, now_ms=12_000).seconds == 0.0


@pytest.mark.parametrize(
    ("points", "committed", "from_ms"),
    [
        (((100, 10_000), (200, 20_000)), 150, 15_000.0),  # interpolated
        (((100, 10_000), (200, 20_000)), 50, 5_000.0),  # extrapolated
        (((100, 10_000), (100, 20_000)), 50, 10_000.0),  # a flat table: its first point
        (((100, 10_000), (200, 20_000)), 200, None),  # caught up: zero however late
        (((100, 10_000), (200, 20_000)), 300, None),  # ahead
        (((100, 10_000),), 50, None),  # too few points: unknown
    ],
)
def test_a_growing_time_lag_names_the_moment_it_counts_from(points, committed, from_ms) -> None:
    """The store ages a stopped consumer's row from ``from_ms`` instead of rewriting it
    (``dashboard/store/rows.py``): the moment must stand still while the clock moves,
    and the seconds must be ``lag_seconds`` of it, exactly."""
    t = table(*points)
    early, late = time_lag(t, committed, 30_000), time_lag(t, committed, 90_000)
    assert early.from_ms == late.from_ms == from_ms
    if from_ms is not None:
        assert (early.seconds, late.seconds) == (lag_seconds(30_000, from_ms),
                                                 lag_seconds(90_000, from_ms))  # fmt: skip
        assert late.seconds > early.seconds
    assert lag_seconds(1_000, 5_000.0) == 0.0, "a moment in the future is no lag"

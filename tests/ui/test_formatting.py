"""How figures read (pure)."""

from datetime import UTC, datetime, timedelta

import pytest

from dashboard import formatting


@pytest.mark.parametrize("seconds, text", [
    (None, "—"), (0, "0s"), (59.4, "59s"), (60, "1m"), (95, "1m 35s"), (3600, "1h"),
    (3660, "1h 1m"), (47 * 3600, "47h"), (49 * 3600, "2d 1h"), (-5, "-5s"),
])  # fmt: skip
def test_duration(seconds, text) -> None:
    assert formatting.duration(seconds) == text


def test_number_unknown_is_not_zero() -> None:
    assert formatting.number(None) == "—"
    assert formatting.number(0) == "0"
    assert formatting.number(1234567) == "1\u202f234\u202f567"
    assert formatting.number(2.5) == "2.5"


def test_age_and_status_class() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert formatting.age(now - timedelta(seconds=90), now) == "1m 30s ago"
    assert formatting.age(None, now) == "never"
    assert formatting.status_class("STOP") == "bad"
    assert formatting.status_class("nonsense") == "unknown"
    assert formatting.percent(0.456) == "46%"


@pytest.mark.parametrize(("per_s", "text"), [
    (None, "—"), (0.0, "0.00/s"), (2.5, "2.50/s"), (-2.5, "-2.50/s"), (12.4, "12/s"),
    (12345.0, "12\u202f345/s"), (-9.999, "-10.00/s"),
])  # fmt: skip
def test_rate(per_s, text) -> None:
    assert formatting.rate(per_s) == text


@pytest.mark.parametrize(("slope", "direction", "arrow"), [
    (None, None, "—"), (0.0, "flat", "→"), (0.01, "flat", "→"), (-0.01, "flat", "→"),
    (0.5, "rising", "↑"), (-0.5, "falling", "↓"), (1 / 60, "flat", "→"),
])  # fmt: skip
def test_lag_direction_and_arrow(slope, direction, arrow) -> None:
    from dashboard.monitoring.trends import direction as direction_of

    assert direction_of(slope) == direction
    assert formatting.arrow(direction) == arrow

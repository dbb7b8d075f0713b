"""The retention forecast and RETENTION_RISK, case by case (spark_jobs/evaluator/retention.py)."""

from __future__ import annotations

import pytest

from spark_jobs.evaluator import RETENTION_RISK
from spark_jobs.evaluator.retention import (
    CAUGHT_UP,
    COMPACT,
    EXPIRING,
    INFINITE,
    TIMED,
    UNKNOWN,
    RetentionForecast,
    retention_risk,
    time_to_retention,
)

# (case, retention_ms, cleanup_policy, time_lag_s, lag, kind, seconds_left)
FORECASTS = [
    ("short retention, old backlog", 300_000, "delete", 240.0, 50, TIMED, 60.0),
    ("a week, a minute behind", 604_800_000, "delete", 60.0, 5, TIMED, 604_740.0),
    ("infinite retention", -1, "delete", 10_000.0, 50, INFINITE, None),
    ("config unknown (not read / unreadable)", None, None, 240.0, 50, UNKNOWN, None),
    ("retention known, policy unknown", 300_000, None, 240.0, 50, UNKNOWN, None),
    ("time lag unknown", 300_000, "delete", None, 50, UNKNOWN, None),
    ("time lag unknown, lag unknown", 300_000, "delete", None, None, UNKNOWN, None),
    ("already past retention", 300_000, "delete", 301.0, 50, EXPIRING, 0.0),
    ("exactly at retention", 300_000, "delete", 300.0, 50, EXPIRING, 0.0),
    ("compact only", 300_000, "compact", 240.0, 50, COMPACT, None),
    ("compact and delete", 300_000, "compact,delete", 240.0, 50, TIMED, 60.0),
    ("policy with spaces and case", 300_000, " Compact , DELETE", 240.0, 50, TIMED, 60.0),
    ("caught up: nothing to lose", 300_000, "delete", 0.0, 0, CAUGHT_UP, None),
    ("caught up though a time lag lingers", 300_000, "delete", 290.0, 0, CAUGHT_UP, None),
    ("lag unknown, time lag known", 300_000, "delete", 100.0, None, TIMED, 200.0),
    ("zero retention", 0, "delete", 0.5, 3, EXPIRING, 0.0),
]


@pytest.mark.parametrize(
    ("retention_ms", "policy", "time_lag_s", "lag", "kind", "left"),
    [case[1:] for case in FORECASTS],
    ids=[case[0] for case in FORECASTS],
)
def test_time_to_retention(retention_ms, policy, time_lag_s, lag, kind, left) -> None:
    forecast = time_to_retention(retention_ms, policy, time_lag_s, lag)
    assert forecast.kind == kind
    assert forecast.seconds_left == left


# (case, forecast, threshold_s, risk expected)
RISKS = [
    ("60 s left, threshold an hour", RetentionForecast(TIMED, 60.0, 300.0, 240.0), 3600, True),
    ("two hours left, threshold an hour",
     RetentionForecast(TIMED, 7200.0, 7300.0, 100.0), 3600, False),
    ("exactly at the threshold", RetentionForecast(TIMED, 3600.0, 4000.0, 400.0), 3600, False),
    ("just under the threshold", RetentionForecast(TIMED, 3599.9, 4000.0, 400.1), 3600, True),
    ("expiring", RetentionForecast(EXPIRING, 0.0, 300.0, 400.0), 3600, True),
    ("threshold 0 turns the diagnosis off", RetentionForecast(EXPIRING, 0.0, 300.0, 400.0), 0,
     False),
    ("infinite", RetentionForecast(INFINITE), 3600, False),
    ("unknown", RetentionForecast(UNKNOWN), 3600, False),
    ("compact", RetentionForecast(COMPACT), 3600, False),
    ("caught up", RetentionForecast(CAUGHT_UP, retention_s=300.0), 3600, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("forecast", "threshold", "expected"),
    [case[1:] for case in RISKS],
    ids=[case[0] for case in RISKS],
)
def test_retention_risk(forecast, threshold, expected) -> None:
    found = retention_risk(forecast, threshold)
    assert (found is not None) is expected
    if found is not None:
        assert found.code == RETENTION_RISK
        assert found.evidence["seconds_left"] == round(forecast.seconds_left, 1)
        assert found.evidence["threshold_s"] == threshold
        assert found.evidence["expiring"] is (forecast.kind == EXPIRING)


def test_negative_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="threshold_s"):
        retention_risk(RetentionForecast(TIMED, 1.0, 2.0, 1.0), -1)

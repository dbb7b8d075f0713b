"""The retention forecast: how long before the broker's retention deletes messages that no
consumer of the partition has read yet (issue 16), and the ``RETENTION_RISK`` diagnosis.

**What it rests on.** A topic's ``retention.ms`` and ``cleanup.policy`` (DescribeConfigs,
read by the Kafka source every few minutes and stored per topic) and the partition's time lag:
the age of the oldest unconsumed message (``collectors/timelag.py``: when the log end was at
the committed offset). The message at the committed offset becomes eligible for deletion when
it is ``retention.ms`` old, so the time left is ``retention.ms / 1000 − time_lag_s``.

**Conservative on purpose.** The broker deletes whole segments, and only once the segment's
*newest* message is past retention and the cleaner's next check (``log.retention.check.
interval.ms``) comes round, so real deletion comes later than this forecast, never earlier:
a warning that comes a little early is the side to err on.

**What it does not forecast.** Size-based retention (``retention.bytes``) needs each
partition's log size, which only DescribeLogDirs reports, and confluent-kafka 2.16's
AdminClient has no such call: ``retention.bytes`` is stored and shown, never forecast from
(docs/EVALUATOR.md). A config that could not be read is *unknown*, never a default: the source
shows the error, and no forecast is made.

Pure and table-tested (``tests/spark_jobs/test_retention.py``). ``decide`` makes the
forecast a fact of every evaluation (``Facts.retention_at_risk``) and RETENTION_RISK one of
its diagnoses, the one place they are computed: the status job hands the evaluator the time
lag and the topic's settings with the window, and the cluster's threshold with its config.
The pages and ``/metrics`` call :func:`at_risk` on the stored figure, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from spark_jobs.evaluator.types import RETENTION_RISK, Diagnosis

__all__ = [
    "COMPACT",
    "CAUGHT_UP",
    "DEFAULT_RETENTION_RISK_S",
    "EXPIRING",
    "INFINITE",
    "NO_FORECAST",
    "RetentionForecast",
    "TIMED",
    "UNKNOWN",
    "at_risk",
    "retention_risk",
    "time_to_retention",
]

DEFAULT_RETENTION_RISK_S: Final = 3600.0

# Forecast kinds.
TIMED: Final = "timed"  # seconds_left is known and positive
EXPIRING: Final = "expiring"  # the oldest unconsumed message is already past retention.ms
INFINITE: Final = "infinite"  # retention.ms = -1: time never deletes anything
COMPACT: Final = "compact"  # cleanup.policy without "delete": no time-based deletion
CAUGHT_UP: Final = "caught_up"  # nothing unconsumed: nothing to lose
UNKNOWN: Final = "unknown"  # config or time lag unknown: no forecast


@dataclass(frozen=True, slots=True)
class RetentionForecast:
    """``seconds_left`` is set for TIMED (> 0) and EXPIRING (0) only."""

    kind: str
    seconds_left: float | None = None
    retention_s: float | None = None
    time_lag_s: float | None = None


# What a window whose figures are not current gets: its time lag is the last known, and a risk
# computed from it would be a guess dressed as a finding.
NO_FORECAST: Final = RetentionForecast(UNKNOWN)


def time_to_retention(
    retention_ms: int | None,
    cleanup_policy: str | None,
    time_lag_s: float | None,
    lag: int | None,
) -> RetentionForecast:
    """Seconds before time-based retention may delete the partition's oldest unconsumed
    message. ``retention_ms``/``cleanup_policy`` None: the topic's config is unknown (not read
    yet, or unreadable); ``lag`` 0 means nothing waits, whatever the time lag says."""
    if retention_ms is None or cleanup_policy is None:
        return RetentionForecast(UNKNOWN)
    policies = {p.strip() for p in cleanup_policy.lower().split(",")}
    if "delete" not in policies:
        return RetentionForecast(COMPACT)
    if retention_ms < 0:
        return RetentionForecast(INFINITE)
    retention_s = retention_ms / 1000.0
    if lag is not None and lag <= 0:
        return RetentionForecast(CAUGHT_UP, retention_s=retention_s)
    if time_lag_s is None:
        return RetentionForecast(UNKNOWN, retention_s=retention_s)
    left = retention_s - time_lag_s
    if left <= 0:
        return RetentionForecast(EXPIRING, 0.0, retention_s, time_lag_s)
    return RetentionForecast(TIMED, left, retention_s, time_lag_s)


def at_risk(seconds_left: float | None, threshold_s: float | None) -> bool:
    """The rule itself: a forecast under the threshold (None or 0: the diagnosis is off).
    The pages and ``/metrics`` call it on the stored figure, so they agree with the
    diagnosis."""
    if threshold_s is not None and threshold_s < 0:
        raise ValueError("threshold_s must be >= 0")
    return seconds_left is not None and bool(threshold_s) and seconds_left < threshold_s


def retention_risk(forecast: RetentionForecast, threshold_s: float) -> Diagnosis | None:
    """``RETENTION_RISK`` when retention may delete unread messages within ``threshold_s``
    (already expiring included: the next segment deletion loses them); None otherwise."""
    if not at_risk(forecast.seconds_left, threshold_s):
        return None
    return Diagnosis(
        RETENTION_RISK,
        {
            "seconds_left": round(forecast.seconds_left, 1),
            "retention_s": forecast.retention_s,
            "time_lag_s": None if forecast.time_lag_s is None else round(forecast.time_lag_s, 1),
            "threshold_s": threshold_s,
            "expiring": forecast.kind == EXPIRING,
        },
    )

"""When a scheduled report is due: standard five-field cron expressions, in UTC, read by
croniter (a maintained parser: ranges, steps, lists, names, ``@daily`` and the like).

Pure (no Django). A schedule runs at most once per due time; beat looks for the **latest** due
time at or before now (:func:`latest_due`), so a beat that was down sends the most recent
report it missed once, not every one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from croniter import croniter

MIN_INTERVAL = timedelta(hours=1)  # a report is mail: at most one an hour
_CHECKED_AHEAD = 48  # due times looked at to find the shortest gap (a week of hourly, …)


class CronError(ValueError):
    """Not a schedule Lagwatch runs; the message says why."""


def validate(expression: str, now: datetime | None = None) -> str:
    """``expression`` tidied (single spaces), or CronError: five fields (minute hour
    day-of-month month day-of-week) or a nickname (``@daily``, ``@weekly``…), due at most once
    an hour (a gap shorter than :data:`MIN_INTERVAL` between two of its next due times)."""
    text = " ".join(str(expression).split())
    if not text:
        raise CronError("required, e.g. '0 6 * * *' (every day at 06:00 UTC)")
    if not text.startswith("@") and len(text.split()) != 5:
        raise CronError(
            "five fields: minute hour day-of-month month day-of-week (e.g. '0 6 * * 1')"
        )
    if not croniter.is_valid(text):
        raise CronError(f"{text!r} is not a cron expression croniter can read")
    start = now or datetime.now(UTC)
    it = croniter(text, start)
    times = [it.get_next(datetime) for _ in range(_CHECKED_AHEAD)]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    if gaps and min(gaps) < MIN_INTERVAL:
        raise CronError(f"due more often than once an hour ({min(gaps)} apart)")
    return text


def latest_due(expression: str, now: datetime) -> datetime:
    """The latest due time at or before ``now`` (aware, UTC)."""
    # croniter's get_prev is strictly before its start: start just after now, so a due time
    # equal to now (to the minute) counts.
    it = croniter(expression, now.astimezone(UTC) + timedelta(seconds=1))
    return it.get_prev(datetime).astimezone(UTC)


def next_due(expression: str, now: datetime) -> datetime:
    """The first due time after ``now`` (for the pages)."""
    return croniter(expression, now.astimezone(UTC)).get_next(datetime).astimezone(UTC)

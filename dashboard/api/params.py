"""Query-string parameters, checked: each reader returns a typed value or raises a 400
``ApiError`` naming the parameter and saying what it accepts.

Unknown parameters are refused too (``check_known``): a typo such as ``?stauts=STALL`` would
otherwise return every group and look like an answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from django.http import QueryDict
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from dashboard.api.errors import ApiError

_DURATION = re.compile(r"^\s*(\d{1,7})\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_TEXT = 255
# Every integer the API filters on (ids, offsets, lags, partitions) is a 64-bit column: a
# larger number cannot match, and the database driver refuses to bind it.
MAX_INTEGER = 2**63 - 1


def bad(name: str, message: str) -> ApiError:
    return ApiError(400, f"{name}: {message}", field=name)


def check_known(query: QueryDict, allowed: Iterable[str]) -> None:
    known = set(allowed)
    for name in query:
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise bad(name, f"unknown parameter (this endpoint takes: {listed})")


def _one(query: QueryDict, name: str) -> str | None:
    values = query.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise bad(name, "given more than once")
    return values[0]


def text(query: QueryDict, name: str, max_length: int = MAX_TEXT) -> str | None:
    value = _one(query, name)
    if value is None or value == "":
        return None
    if len(value) > max_length:
        raise bad(name, f"at most {max_length} characters")
    if "\x00" in value:
        raise bad(name, "must not contain NUL characters")
    return value


def integer(
    query: QueryDict, name: str, default: int | None = None,
    minimum: int | None = None, maximum: int | None = None,
) -> int | None:  # fmt: skip
    value = _one(query, name)
    if value is None or value == "":
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise bad(name, f"must be an integer, got {value[:40]!r}") from None
    if minimum is not None and number < minimum:
        raise bad(name, f"must be at least {minimum}, got {number}")
    limit = MAX_INTEGER if maximum is None else maximum
    if number > limit:
        raise bad(name, f"must be at most {limit}, got {value.strip()[:40]}")
    return number


def boolean(query: QueryDict, name: str, default: bool = False) -> bool:
    value = _one(query, name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise bad(name, f"must be true or false, got {value[:40]!r}")


def choices(query: QueryDict, name: str, allowed: Sequence[str]) -> list[str]:
    """A comma-separated (or repeated) list of values from ``allowed``, compared without case
    for upper-case vocabularies (statuses) and as given otherwise."""
    raw = [part.strip() for value in query.getlist(name) for part in value.split(",")]
    raw = [part for part in raw if part]
    upper = all(a == a.upper() for a in allowed)
    picked = []
    for part in raw:
        value = part.upper() if upper else part.lower()
        if value not in allowed:
            raise bad(name, f"{part[:40]!r} is not one of {', '.join(allowed)}")
        if value not in picked:
            picked.append(value)
    return picked


def choice(
    query: QueryDict, name: str, allowed: Sequence[str], default: str | None = None
) -> str | None:
    value = _one(query, name)
    if value is None or value == "":
        return default
    if value not in allowed:
        raise bad(name, f"{value[:40]!r} is not one of {', '.join(allowed)}")
    return value


def parse_duration(value: str) -> timedelta | None:
    """``90s``, ``15m``, ``6h``, ``7d``, ``2w``; None if ``value`` is not one."""
    match = _DURATION.match(value)
    if match is None:
        return None
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def moment(
    query: QueryDict, name: str, now: datetime, default: datetime | None = None
) -> datetime | None:
    """A point in time: a duration before ``now`` (``6h``) or an ISO 8601 date-time
    (``2026-11-21T10:00:00Z``; without an offset it is UTC)."""
    value = _one(query, name)
    if value is None or value == "":
        return default
    ago = parse_duration(value)
    try:
        if ago is not None:
            return now - ago
        try:
            at = parse_datetime(value.strip())
        except ValueError:
            at = None
        if at is None:
            raise bad(
                name,
                f"{value[:40]!r} is neither a duration (30m, 6h, 7d) nor an ISO 8601 date-time",
            )
        if timezone.is_naive(at):
            at = at.replace(tzinfo=UTC)
        return at.astimezone(UTC)
    except OverflowError:  # 9999999w ago; 0001-01-01T00:00:00+01:00 (year 0 in UTC)
        raise bad(name, f"{value[:40]!r} is out of range (years 1 to 9999, in UTC)") from None

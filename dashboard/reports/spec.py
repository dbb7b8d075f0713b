"""What a lag report covers, parsed from untrusted input (form, API body, command flags).

Pure module: no Django, no I/O. Every error is a :class:`SpecError` whose ``field`` names the
input field at fault, so the API can answer 400 and the command exit 2 with a useful message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

__all__ = [
    "FORMATS",
    "MAX_PATTERNS",
    "MAX_RANGE",
    "ReportSpec",
    "SpecError",
    "parse_duration",
    "parse_format",
    "parse_resolution",
    "parse_spec",
    "pattern_regex",
]

FORMATS: Final = ("csv", "json", "parquet", "xlsx")
SOURCES: Final = ("kafka", "storm", "zookeeper")
MAX_PATTERNS: Final = 100
MAX_NAME: Final = 255
MAX_RANGE: Final = timedelta(days=400)
MAX_RESOLUTION: Final = timedelta(days=7)
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION: Final = re.compile(r"([0-9]{1,7})([smhdw])")
_KNOWN_FIELDS: Final = frozenset(
    {"cluster", "group", "groups", "topic", "topics", "source", "sources", "since", "start",
     "end", "resolution", "format"}
)  # fmt: skip


class SpecError(ValueError):
    """Bad report input; ``field`` is the name of the offending input field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class ReportSpec:
    """A validated report request. Times are aware UTC; the range is ``[start, end)``.

    ``groups``/``topics`` are case-sensitive shell-style patterns (``*``, ``?``, ``[...]``);
    empty means all. ``resolution_s`` is 0 for raw samples, else the bucket length in seconds
    (buckets are aligned to the Unix epoch, so in UTC a "1d" bucket is a calendar day).
    """

    cluster: str
    start: datetime
    end: datetime
    resolution: str = "raw"
    resolution_s: int = 0
    groups: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    since: str = field(default="", compare=False)  # as given, for display only

    @property
    def start_ms(self) -> int:
        return _epoch_ms(self.start)

    @property
    def end_ms(self) -> int:
        return _epoch_ms(self.end)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form that :func:`parse_spec` turns back into an equal spec."""
        return {
            "cluster": self.cluster,
            "groups": list(self.groups),
            "topics": list(self.topics),
            "sources": list(self.sources),
            "start": self.start.isoformat().replace("+00:00", "Z"),
            "end": self.end.isoformat().replace("+00:00", "Z"),
            "resolution": self.resolution,
        }

    def describe(self) -> str:
        """One line for lists and logs (names are data: callers escape on output)."""
        scope = [self.cluster]
        if self.groups:
            scope.append("groups " + ", ".join(self.groups))
        if self.topics:
            scope.append("topics " + ", ".join(self.topics))
        if self.sources:
            scope.append("sources " + ", ".join(self.sources))
        span = f"last {self.since}" if self.since else f"{_fmt(self.start)} – {_fmt(self.end)}"
        return f"{'; '.join(scope)}; {span}; {self.resolution}"


def parse_spec(data: Mapping[str, Any], *, now: datetime | None = None) -> ReportSpec:
    """Validate report input: ``cluster``; ``groups``/``topics``/``sources`` (a string or a
    list, also ``group``/``topic``/``source``); ``since`` (``24h``) or ``start`` [``end``]
    (ISO-8601; a time without zone is UTC; ``end`` defaults to now); ``resolution`` (``raw``
    default, or ``1m``, ``5m``, ``1h``…). A ``format`` key is checked if present, not kept.
    """
    if not isinstance(data, Mapping):
        raise SpecError("body", "expected an object of report fields")
    unknown = sorted(str(k) for k in data if k not in _KNOWN_FIELDS)
    if unknown:
        raise SpecError(unknown[0], f"unknown field (known: {', '.join(sorted(_KNOWN_FIELDS))})")
    now = now or datetime.now(UTC)
    if now.tzinfo is None:
        raise ValueError("now must be an aware datetime")

    cluster = _one_string(data, "cluster")
    if not cluster:
        raise SpecError("cluster", "required")
    if len(cluster) > 100:
        raise SpecError("cluster", "longer than 100 characters")

    groups = _patterns(data, "groups", "group")
    topics = _patterns(data, "topics", "topic")
    sources = _patterns(data, "sources", "source", allowed=SOURCES)

    since_text = _one_string(data, "since")
    start_text = _one_string(data, "start")
    end_text = _one_string(data, "end")
    end = _parse_time("end", end_text) if end_text else now.astimezone(UTC)
    if since_text and start_text:
        raise SpecError("since", "give either since or start, not both")
    if since_text:
        start = end - parse_duration(since_text, "since")
    elif start_text:
        start = _parse_time("start", start_text)
    else:
        raise SpecError("since", "required: a time range as since (e.g. 24h) or start [and end]")
    if start >= end:
        raise SpecError("start" if start_text else "since", "the range is empty (start >= end)")
    if end - start > MAX_RANGE:
        raise SpecError(
            "start" if start_text else "since", f"range longer than {MAX_RANGE.days} days"
        )

    resolution_text = _one_string(data, "resolution") or "raw"
    resolution, resolution_s = parse_resolution(resolution_text)

    if "format" in data and data["format"] not in (None, ""):
        parse_format(data["format"])
    return ReportSpec(
        cluster=cluster,
        start=start,
        end=end,
        resolution=resolution,
        resolution_s=resolution_s,
        groups=groups,
        topics=topics,
        sources=sources,
        since=since_text,
    )


def parse_format(value: Any, field: str = "format") -> str:
    """``csv``, ``json``, ``parquet`` or ``xlsx`` (case-insensitive)."""
    if not isinstance(value, str) or value.strip().lower() not in FORMATS:
        raise SpecError(field, f"{_show(value)} is not one of {', '.join(FORMATS)}")
    return value.strip().lower()


def parse_duration(text: Any, field: str) -> timedelta:
    """``90m``, ``24h``, ``7d``, ``2w``, ``30s``; a positive whole number and one unit."""
    if not isinstance(text, str):
        raise SpecError(field, f"{_show(text)} is not a duration like 24h, 90m or 7d")
    match = _DURATION.fullmatch(text.strip().lower())
    if not match:
        raise SpecError(field, f"{_show(text)} is not a duration like 24h, 90m or 7d")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds <= 0:
        raise SpecError(field, "must be longer than zero")
    if seconds > MAX_RANGE.total_seconds():
        raise SpecError(field, f"longer than {MAX_RANGE.days} days")
    return timedelta(seconds=seconds)


def parse_resolution(text: Any, field: str = "resolution") -> tuple[str, int]:
    """``raw`` (every sample) or a bucket length: ``30s``, ``1m``, ``5m``, ``1h``, ``1d``…

    Returns the normalised name and the bucket length in seconds (0 for raw). Buckets up to
    a week; a bucket that does not divide a day evenly is refused so that buckets line up
    with midnight UTC.
    """
    if isinstance(text, str) and text.strip().lower() == "raw":
        return "raw", 0
    if not isinstance(text, str) or not _DURATION.fullmatch(text.strip().lower()):
        raise SpecError(field, f"{_show(text)} is not raw or a bucket like 1m, 5m, 1h, 1d")
    seconds = int(parse_duration(text, field).total_seconds())
    if seconds > MAX_RESOLUTION.total_seconds():
        raise SpecError(field, "buckets longer than 7 days are not supported")
    if seconds < 86400 and 86400 % seconds:
        raise SpecError(field, f"{text.strip()} does not divide a day evenly")
    if seconds >= 86400 and seconds % 86400:
        raise SpecError(field, "buckets longer than a day must be whole days")
    return text.strip().lower(), seconds


def pattern_regex(pattern: str) -> str:
    """An anchored RE2/Python regex for a shell-style pattern: ``*`` any run, ``?`` one
    character, ``[abc]``/``[!abc]`` a class; everything else literal (case-sensitive).
    """
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal "["
                out.append(re.escape(c))
                continue
            body = pattern[i:j]
            i = j + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
            out.append(f"[{'^' if negate else ''}{body}]")
        else:
            out.append(re.escape(c))
    return "^(?s:" + "".join(out) + ")$"


def is_pattern(text: str) -> bool:
    """Whether a scope entry uses wildcards (else it is matched as an exact name)."""
    return any(c in text for c in "*?[")


# -- helpers -------------------------------------------------------------------------------


def _values(data: Mapping[str, Any], key: str) -> list[Any]:
    if key not in data:
        return []
    getlist = getattr(data, "getlist", None)  # a Django QueryDict: repeated keys
    value = getlist(key) if callable(getlist) else data[key]
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def _one_string(data: Mapping[str, Any], key: str) -> str:
    values = _values(data, key)
    if not values:
        return ""
    if len(values) > 1:
        raise SpecError(key, "give one value")
    value = values[0]
    if isinstance(value, datetime) and key in ("start", "end"):
        return value.isoformat()
    if not isinstance(value, str):
        raise SpecError(key, f"expected a string, got {_show(value)}")
    if "\x00" in value:
        raise SpecError(key, "must not contain NUL characters")
    return value.strip()


def _patterns(
    data: Mapping[str, Any], plural: str, singular: str, allowed: tuple[str, ...] = ()
) -> tuple[str, ...]:
    found: list[str] = []
    for key in (plural, singular):
        for value in _values(data, key):
            if not isinstance(value, str):
                raise SpecError(key, f"expected names or patterns, got {_show(value)}")
            # A form field may hold several names separated by commas or new lines.
            for item in re.split(r"[,\n]", value):
                item = item.strip()
                if not item:
                    continue
                if len(item) > MAX_NAME:
                    raise SpecError(key, f"a name longer than {MAX_NAME} characters")
                if "\x00" in item:
                    raise SpecError(key, "must not contain NUL characters")
                if allowed and item not in allowed:
                    raise SpecError(key, f"{item!r} is not one of {', '.join(allowed)}")
                if item not in found:
                    found.append(item)
    if len(found) > MAX_PATTERNS:
        raise SpecError(plural, f"more than {MAX_PATTERNS} names or patterns")
    return tuple(found)


def _parse_time(field: str, text: str) -> datetime:
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise SpecError(
            field, f"{_show(text)} is not an ISO-8601 time like 2026-01-31T12:00:00Z"
        ) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    try:
        at = at.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is in year 0 in UTC
        raise SpecError(field, f"{_show(text)} is out of range in UTC") from None
    if at.year < 1971:
        raise SpecError(field, "before 1971")
    return at


def _epoch_ms(at: datetime) -> int:
    return (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def _fmt(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

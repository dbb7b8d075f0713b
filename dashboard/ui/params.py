"""Every view and filter of the pages as GET parameters, so each has a deep link.

Pure parsing: a query dict in, a frozen dataclass out, or :class:`BadParam` naming the field
(the view answers 400 with that name). Nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from urllib.parse import urlencode

from dashboard.monitoring.models import SourceKind, Status
from dashboard.status.runs import JOBS

MAX_SEARCH = 200


class BadParam(ValueError):
    """A GET parameter that cannot be honoured; ``field`` names it for the 400 answer."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# Worst first: the order of "group = worst of its partitions" and of sorting by status.
SEVERITY = {
    Status.ERR: 6,
    Status.STOP: 5,
    Status.STALL: 4,
    Status.REWIND: 3,
    Status.WARN: 2,
    Status.UNKNOWN: 1,
    Status.OK: 0,
}
STATUSES_WORST_FIRST = sorted(SEVERITY, key=SEVERITY.get, reverse=True)


@dataclass(frozen=True)
class Range:
    """A chart range; ``raw`` ranges read the raw history (``GroupSample``), the others the
    rollup history."""

    key: str
    span: timedelta
    label: str


RANGES = {
    r.key: r
    for r in (
        Range("15m", timedelta(minutes=15), "15 min"),
        Range("1h", timedelta(hours=1), "1 hour"),
        Range("6h", timedelta(hours=6), "6 hours"),
        Range("24h", timedelta(hours=24), "24 hours"),
        Range("7d", timedelta(days=7), "7 days"),
        Range("30d", timedelta(days=30), "30 days"),
    )
}
DEFAULT_RANGE = "1h"


def _values(query: Mapping[str, list[str]], name: str) -> list[str]:
    """All values of a parameter, from a QueryDict or a plain ``{name: [values]}``."""
    if hasattr(query, "getlist"):
        return query.getlist(name)
    return list(query.get(name) or [])


def _one(query: Mapping[str, list[str]], name: str) -> str | None:
    values = _values(query, name)
    if len(values) > 1:
        raise BadParam(name, "given more than once")
    return values[0] if values else None


def _choice(query: Mapping[str, list[str]], name: str, choices, default: str) -> str:
    value = _one(query, name)
    if value is None or value == "":
        return default
    if value not in choices:
        raise BadParam(name, f"must be one of {', '.join(choices)}")
    return value


def _positive_int(query: Mapping[str, list[str]], name: str, default: int, top: int) -> int:
    value = _one(query, name)
    if value is None or value == "":
        return default
    if not value.isdigit() or not 1 <= int(value) <= top:
        raise BadParam(name, f"must be a whole number from 1 to {top}")
    return int(value)


def _statuses(query: Mapping[str, list[str]], name: str) -> tuple[str, ...]:
    values = [v for v in _values(query, name) if v != ""]
    bad = [v for v in values if v not in Status.values]
    if bad:
        raise BadParam(name, f"unknown status; one of {', '.join(Status.values)}")
    return tuple(sorted(set(values), key=lambda s: -SEVERITY[Status(s)]))


def range_param(query: Mapping[str, list[str]], default: str = DEFAULT_RANGE) -> Range:
    return RANGES[_choice(query, "range", list(RANGES), default)]


# --- groups list ------------------------------------------------------------------------------

GROUP_SORTS = {
    "status": "worst status first",
    "lag": "largest lag first",
    "time_lag": "largest time lag first",
    "name": "name",
    "cluster": "cluster",
    "source": "source",
    "members": "most members first",
    "generation": "highest generation first",
}
PER_PAGE = (25, 50, 100, 200)
# Kafka's group types, and "none": not a Kafka group, or one whose type is unknown.
GROUP_TYPE_FILTERS = {
    "classic": "classic",
    "consumer": "consumer (KIP-848)",
    "share": "share (KIP-932)",
    "streams": "streams (KIP-1071)",
    "none": "none (not Kafka, or unknown)",
}


@dataclass(frozen=True)
class GroupFilter:
    q: str = ""
    statuses: tuple[str, ...] = ()
    source: str = ""
    cluster: str = ""
    group_type: str = ""  # the ``type`` parameter: a key of GROUP_TYPE_FILTERS, or "" (all)
    sort: str = "status"
    page: int = 1
    per_page: int = 50

    def query_string(self, **changes: object) -> str:
        """This view with ``changes`` applied, as a query string: deep links for sort
        headers, filter chips and pages (defaults left out to keep links short)."""
        f = replace(self, **changes)
        pairs: list[tuple[str, object]] = []
        if f.q:
            pairs.append(("q", f.q))
        pairs += [("status", s) for s in f.statuses]
        if f.source:
            pairs.append(("source", f.source))
        if f.cluster:
            pairs.append(("cluster", f.cluster))
        if f.group_type:
            pairs.append(("type", f.group_type))
        if f.sort != "status":
            pairs.append(("sort", f.sort))
        if f.per_page != 50:
            pairs.append(("per_page", f.per_page))
        if f.page != 1:
            pairs.append(("page", f.page))
        return urlencode(pairs)


def group_filter(query: Mapping[str, list[str]]) -> GroupFilter:
    q = (_one(query, "q") or "").strip()
    if len(q) > MAX_SEARCH:
        raise BadParam("q", f"at most {MAX_SEARCH} characters")
    cluster = (_one(query, "cluster") or "").strip()
    if len(cluster) > 100:
        raise BadParam("cluster", "at most 100 characters")
    per_page = _positive_int(query, "per_page", 50, max(PER_PAGE))
    if per_page not in PER_PAGE:
        raise BadParam("per_page", f"must be one of {', '.join(map(str, PER_PAGE))}")
    return GroupFilter(
        q=q,
        statuses=_statuses(query, "status"),
        source=_choice(query, "source", SourceKind.values, ""),
        cluster=cluster,
        group_type=_choice(query, "type", list(GROUP_TYPE_FILTERS), ""),
        sort=_choice(query, "sort", list(GROUP_SORTS), "status"),
        page=_positive_int(query, "page", 1, 1_000_000),
        per_page=per_page,
    )


# --- group page: its partition table ----------------------------------------------------------

PARTITION_SORTS = {
    "status": "worst status first",
    "lag": "largest lag first",
    "time_lag": "largest time lag first",
    "partition": "topic and partition",
}
PARTITIONS_PER_PAGE = 50


@dataclass(frozen=True)
class GroupView:
    range: Range
    statuses: tuple[str, ...] = ()
    topic: str = ""
    sort: str = "status"
    page: int = 1

    def query_string(self, **changes: object) -> str:
        v = replace(self, **changes)
        pairs: list[tuple[str, object]] = []
        if v.range.key != DEFAULT_RANGE:
            pairs.append(("range", v.range.key))
        pairs += [("pstatus", s) for s in v.statuses]
        if v.topic:
            pairs.append(("topic", v.topic))
        if v.sort != "status":
            pairs.append(("psort", v.sort))
        if v.page != 1:
            pairs.append(("ppage", v.page))
        return urlencode(pairs)


def group_view(query: Mapping[str, list[str]]) -> GroupView:
    topic = _one(query, "topic") or ""
    if len(topic) > 255:
        raise BadParam("topic", "at most 255 characters")
    return GroupView(
        range=range_param(query),
        statuses=_statuses(query, "pstatus"),
        topic=topic,
        sort=_choice(query, "psort", list(PARTITION_SORTS), "status"),
        page=_positive_int(query, "ppage", 1, 1_000_000),
    )


# --- sources and jobs pages -------------------------------------------------------------------


def cluster_param(query: Mapping[str, list[str]]) -> str:
    value = (_one(query, "cluster") or "").strip()
    if len(value) > 100:
        raise BadParam("cluster", "at most 100 characters")
    return value


def job_param(query: Mapping[str, list[str]]) -> str:
    return _choice(query, "job", JOBS, "")

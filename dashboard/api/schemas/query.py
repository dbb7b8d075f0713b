"""The query-string parameters of each endpoint, as schemas.

A field's type says what the view gets; its ``Reads`` says how the value is read from the
query string (the readers of ``dashboard/api/params.py``, whose 400s name the parameter and
say what it accepts, and refuse a parameter given twice); its JSON schema is what the
document shows. The accepted names are the schema's fields, so the "unknown parameter"
refusal and the document list the same ones. Reading runs after authentication, before the
view (ninja validates parameters there), as the hand-written views did.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest, QueryDict
from django.utils import timezone
from ninja import Schema
from pydantic import ValidationInfo, WithJsonSchema, model_validator

from dashboard.alerts.models import AlertState, Level, Severity
from dashboard.api import history, params, queries
from dashboard.api.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from dashboard.monitoring.models import SourceKind, Status
from dashboard.reports.models import ReportStatus
from dashboard.reports.spec import FORMATS

Reader = Callable[[QueryDict, str, datetime], Any]
DURATION_OR_TIME = (
    "A duration before now (90s, 15m, 6h, 7d, 2w) or an ISO 8601 date-time (UTC when it has no "
    "offset)."
)


@dataclass(frozen=True)
class Reads:
    """How a field is read from the query string (``reader(query, name, now)``)."""

    reader: Reader


def _param(kind: Any, reader: Reader, schema: dict, description: str | None) -> Any:
    if description:
        schema = {**schema, "description": description}
    return Annotated[kind, Reads(reader), WithJsonSchema(schema)]


def text(description: str | None = None, max_length: int = params.MAX_TEXT) -> Any:
    return _param(str | None, lambda q, n, now: params.text(q, n, max_length),
                  {"type": "string", "maxLength": max_length}, description)  # fmt: skip


def integer(minimum: int, description: str | None = None, default: int | None = None) -> Any:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum, "maximum": params.MAX_INTEGER}
    if default is not None:
        schema["default"] = default
    return _param(int | None, lambda q, n, now: params.integer(q, n, default, minimum),
                  schema, description)  # fmt: skip


def flag(description: str | None = None) -> Any:
    """true/false; absent: no filter (None), unlike an empty value, which is false."""
    return _param(bool | None, lambda q, n, now: params.boolean(q, n) if n in q else None,
                  {"type": "boolean"}, description)  # fmt: skip


def several(values: Sequence[str], description: str) -> Any:
    """A filter taking several values: repeated, or comma-separated in one."""
    return _param(
        list[str], lambda q, n, now: params.choices(q, n, tuple(values)),
        {"type": "array", "items": {"type": "string", "enum": list(values)}},
        f"{description} Several allowed: repeated, or comma-separated.",
    )  # fmt: skip


def choice(
    values: Sequence[str], default: str | None = None, description: str | None = None
) -> Any:
    schema: dict[str, Any] = {"type": "string", "enum": list(values)}
    if default is not None:
        schema["default"] = default
    return _param(str | None, lambda q, n, now: params.choice(q, n, tuple(values), default),
                  schema, description)  # fmt: skip


def moment(description: str = DURATION_OR_TIME) -> Any:
    return _param(datetime | None, lambda q, n, now: params.moment(q, n, now),
                  {"type": "string"}, description)  # fmt: skip


def request_now(request: HttpRequest) -> datetime:
    """One "now" per request: ``since=6h`` and the view's own reckoning (a history's
    resolution, its default range) must agree to the microsecond."""
    now = getattr(request, "api_now", None)
    if now is None:
        now = request.api_now = timezone.now()
    return now


class QueryParams(Schema):
    """An endpoint's parameters: its fields, read by their ``Reads`` from the request's query
    string; any other parameter is refused (a typo such as ``?stauts=STALL`` would otherwise
    return everything and look like an answer)."""

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any, info: ValidationInfo) -> Any:
        request = (info.context or {}).get("request")
        if request is None:  # built in code, not from a request
            return data
        query = request.GET
        params.check_known(query, cls.model_fields)
        now = request_now(request)
        # In the order the fields are declared, the page last (as the views read them before
        # ninja): with several faults, the same one is named.
        names = sorted(cls.model_fields, key=lambda name: PAGE_FIELDS.index(name) + 1
                       if name in PAGE_FIELDS else 0)  # fmt: skip
        return {name: cls._reader(name)(query, name, now) for name in names}

    @classmethod
    def _reader(cls, name: str) -> Reader:
        for meta in cls.model_fields[name].metadata:
            if isinstance(meta, Reads):
                return meta.reader
        raise TypeError(f"{cls.__name__}.{name} says nothing about how it is read")


PAGE_FIELDS = ("page_size", "page")


class PageQuery(QueryParams):
    page: integer(1, "Page number, from 1; a page past the last is a 400.", 1) = None
    page_size: _param(
        int | None,
        lambda q, n, now: params.integer(q, n, DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE),
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE},
        None,
    ) = None


class GroupFilters(QueryParams):
    """Which groups (``queries.filter_groups``)."""

    cluster: text("Cluster name (exact).") = None
    source: several(SourceKind.values, "Source of the group.") = None
    name: text("Group name (exact).") = None
    search: text("Substring of the group name (case-insensitive).") = None


# The group's status, or the new status of a change.
STATUS = several(Status.values, "Status (case-insensitive).")


STALE = "true: only what comes from an unreachable source."
ORDERING = "Sort key; - before it for descending."


class ClusterQuery(PageQuery):
    enabled: flag() = None


class GroupQuery(GroupFilters, PageQuery):
    status: STATUS = None
    stale: flag(STALE) = None
    ordering: choice(queries.GROUP_ORDER_CHOICES, "name", ORDERING) = None


class PartitionQuery(GroupFilters, PageQuery):
    group_id: integer(1) = None
    topic: text() = None
    partition: integer(0) = None
    status: STATUS = None
    stale: flag(STALE) = None
    min_lag: integer(0) = None
    diagnosis: text(
        "A diagnosis code (POISON_MESSAGE, ...): partitions whose diagnosis has it.", 64
    ) = None
    ordering: choice(queries.PARTITION_ORDER_CHOICES, "group", ORDERING) = None


class PartitionsMode(QueryParams):
    partitions: choice(
        queries.PARTITION_MODES,
        "non_ok",
        "Which partitions each group lists: those not OK, all, or none.",
    ) = None


class StatusQuery(GroupFilters, PartitionsMode, PageQuery):
    status: STATUS = None


class StatusChangeQuery(GroupFilters, PageQuery):
    group_id: integer(1) = None
    level: choice(("group", "partition")) = None
    topic: text() = None
    partition: integer(0) = None
    status: STATUS = None
    since: moment() = None
    until: moment() = None


class RebalanceQuery(PageQuery):
    cluster: text("Cluster name (exact).") = None
    source: several(SourceKind.values, "Source of the group.") = None
    name: text("Group name (exact).") = None
    search: text("Substring of the group name (case-insensitive).") = None
    group_id: integer(1) = None
    cause: text(
        "member_joined, member_left, subscription_changed, partitions_added, ...", 64
    ) = None
    since: moment() = None
    until: moment() = None


class HistoryQuery(QueryParams):
    since: moment() = None
    until: moment() = None
    resolution: choice(history.RESOLUTIONS, "auto") = None


class ProducerQuery(QueryParams):
    cluster: text("Cluster name (exact).") = None
    topic: text() = None


class AlertQuery(PageQuery):
    state: several(AlertState.values, "Alert state.") = None
    severity: several(Severity.values, "Severity.") = None
    level: choice(Level.values) = None
    cluster: text("Cluster name (exact).") = None
    group: text("Group name (exact).") = None
    topic: text() = None
    since: moment(f"Fired at or after. {DURATION_OR_TIME}") = None
    until: moment(f"Fired before. {DURATION_OR_TIME}") = None


class ReportQuery(PageQuery):
    status: several(ReportStatus.values, "Report status.") = None


def _as_given(q: QueryDict, n: str, now: datetime) -> Any:
    return q.get(n)


def _spec(kind: Any, schema: dict, description: str | None = None) -> Any:
    return _param(kind, _as_given, schema, description)


_PATTERN = ({"type": "string"}, "A name or shell-style pattern; repeat for several.")
_SOURCE = {"type": "string", "enum": list(SourceKind.values)}


class ExportQuery(QueryParams):
    """Documents the export's parameters; the report spec parser reads them (its messages
    name the field, and the POST body and the pages use the same parser), so nothing here
    refuses anything."""

    cluster: _spec(str, {"type": "string", "maxLength": 100}, "Cluster name.")
    group: _spec(str | None, *_PATTERN) = None
    groups: _spec(str | None, *_PATTERN) = None
    topic: _spec(str | None, *_PATTERN) = None
    topics: _spec(str | None, *_PATTERN) = None
    source: _spec(str | None, _SOURCE) = None
    sources: _spec(str | None, _SOURCE) = None
    since: _spec(str | None, {"type": "string"}, "A duration before end (24h, 90m, 7d).") = None
    start: _spec(str | None, {"type": "string", "format": "date-time"}) = None
    end: _spec(str | None, {"type": "string", "format": "date-time"}) = None
    resolution: _spec(
        str | None, {"type": "string"}, "raw (default), or a bucket: 1m, 5m, 1h, 1d ..."
    ) = None
    format: _spec(str | None, {"type": "string", "enum": list(FORMATS), "default": "csv"}) = None

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any, info: ValidationInfo) -> Any:
        request = (info.context or {}).get("request")
        if request is None:
            return data
        return {"cluster": request.GET.get("cluster", "")}

"""``/api/v1/groups/``: consumer groups (Kafka, ZooKeeper consumers, Storm spouts)."""

from __future__ import annotations

from django.db.models import F
from django.http import HttpRequest
from django.utils import timezone

from dashboard.api import params, queries
from dashboard.api.auth import api_view
from dashboard.api.pagination import PAGE_PARAMS, paginate
from dashboard.api.responses import ApiJsonResponse
from dashboard.api.serializers import group_detail_dict, group_dict
from dashboard.monitoring.spouts import group_spouts
from dashboard.whatif.document import ROW_FIELDS as WHATIF_ROW_FIELDS
from dashboard.whatif.document import whatif_document

ORDERINGS = {
    "name": ("cluster__name", "source", "name"),
    "total_lag": (F("lag_sum").asc(nulls_first=True), "name"),
    "max_time_lag_s": (F("time_lag_max").asc(nulls_first=True), "name"),
    "status": ("status_rank", "name"),
    "last_seen_at": ("last_seen_at", "name"),
}
ORDER_CHOICES = tuple(o for name in ORDERINGS for o in (name, f"-{name}"))
FILTERS = ("cluster", "source", "status", "name", "search", "stale", "ordering")


def _ordered(groups, ordering: str):
    descending = ordering.startswith("-")
    keys = ORDERINGS[ordering.lstrip("-")]
    if ordering.lstrip("-") == "status":
        groups = groups.annotate(status_rank=queries.severity())
    if not descending:
        return groups.order_by(*keys)
    flipped = []
    for key in keys[:1]:
        if isinstance(key, str):
            flipped.append(f"-{key}")
        else:
            flipped.append(key.expression.desc(nulls_last=True))
    return groups.order_by(*flipped, *keys[1:])


@api_view()
def group_list(request: HttpRequest) -> ApiJsonResponse:
    query = request.GET
    params.check_known(query, (*FILTERS, *PAGE_PARAMS))
    groups = queries.filter_groups(queries.groups_with_figures(), query)
    statuses = params.choices(query, "status", queries.STATUSES)
    if statuses:
        groups = groups.filter(status__in=statuses)
    if "stale" in query:
        groups = groups.filter(stale=params.boolean(query, "stale"))
    ordering = params.choice(query, "ordering", ORDER_CHOICES, "name")
    groups = _ordered(groups, ordering)
    body = paginate(
        request, groups, lambda g: group_dict(g, queries.figures(g)),
        prepare=queries.attach_group_trends,
    )  # fmt: skip
    return ApiJsonResponse(body)


@api_view()
def group_detail(request: HttpRequest, group_id: int) -> ApiJsonResponse:
    params.check_known(request.GET, ())
    group = queries.get_group(group_id)
    partitions = list(group.partitions.order_by("topic", "partition"))
    queries.attach_group_trends([group])
    queries.attach_partition_trends(partitions)
    body = group_detail_dict(group, queries.figures(group), partitions)
    body["spouts"] = group_spouts(group, timezone.now())
    return ApiJsonResponse(body)


@api_view()
def group_whatif(request: HttpRequest, group_id: int) -> ApiJsonResponse:
    """The what-if document ``manage.py assignment_whatif --json`` prints (docs/API.md)."""
    params.check_known(request.GET, ())
    group = queries.get_group(group_id)
    rows = group.partitions.order_by("topic", "partition").values(*WHATIF_ROW_FIELDS)
    return ApiJsonResponse(whatif_document(group, group.cluster.name, rows))

"""``/api/v1/partitions/``: every partition of every group, with its latest figures."""

from __future__ import annotations

from django.db.models import F
from django.http import HttpRequest

from dashboard.api import params, queries
from dashboard.api.auth import api_view
from dashboard.api.pagination import PAGE_PARAMS, paginate
from dashboard.api.responses import ApiJsonResponse
from dashboard.api.serializers import partition_dict
from dashboard.monitoring.models import PartitionState

ORDERINGS = {
    "group": ("group__cluster__name", "group__source", "group__name", "topic", "partition"),
    "lag": (F("lag").asc(nulls_first=True), "id"),
    "time_lag_s": (F("time_lag_s").asc(nulls_first=True), "id"),
    "status": ("status_rank", "id"),
}
ORDER_CHOICES = tuple(o for name in ORDERINGS for o in (name, f"-{name}"))
FILTERS = (
    "cluster", "source", "name", "search", "group_id", "topic", "partition", "status",
    "diagnosis", "stale", "min_lag", "ordering",
)  # fmt: skip


def _ordered(partitions, ordering: str):
    name = ordering.lstrip("-")
    keys = ORDERINGS[name]
    if name == "status":
        partitions = partitions.annotate(status_rank=queries.severity())
    if not ordering.startswith("-"):
        return partitions.order_by(*keys)
    first = keys[0]
    first = f"-{first}" if isinstance(first, str) else first.expression.desc(nulls_last=True)
    return partitions.order_by(first, *keys[1:])


@api_view()
def partition_list(request: HttpRequest) -> ApiJsonResponse:
    query = request.GET
    params.check_known(query, (*FILTERS, *PAGE_PARAMS))
    rows = queries.filter_groups(
        PartitionState.objects.select_related("group__cluster"), query, prefix="group__"
    )
    group_id = params.integer(query, "group_id", minimum=1)
    if group_id is not None:
        rows = rows.filter(group_id=group_id)
    topic = params.text(query, "topic")
    if topic is not None:
        rows = rows.filter(topic=topic)
    partition = params.integer(query, "partition", minimum=0)
    if partition is not None:
        rows = rows.filter(partition=partition)
    statuses = params.choices(query, "status", queries.STATUSES)
    if statuses:
        rows = rows.filter(status__in=statuses)
    if "stale" in query:
        rows = rows.filter(stale=params.boolean(query, "stale"))
    min_lag = params.integer(query, "min_lag", minimum=0)
    if min_lag is not None:
        rows = rows.filter(lag__gte=min_lag)
    diagnosis = params.text(query, "diagnosis", max_length=64)
    if diagnosis is not None:
        rows = queries.with_diagnosis(rows, diagnosis.upper())
    rows = _ordered(rows, params.choice(query, "ordering", ORDER_CHOICES, "group"))
    return ApiJsonResponse(
        paginate(request, rows, partition_dict, prepare=queries.attach_partition_trends)
    )


@api_view()
def partition_detail(request: HttpRequest, partition_id: int) -> ApiJsonResponse:
    params.check_known(request.GET, ())
    partition = queries.get_partition(partition_id)
    queries.attach_partition_trends([partition])
    return ApiJsonResponse(partition_dict(partition))

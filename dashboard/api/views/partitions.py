"""``/api/v1/partitions/``: every partition of every group, with its latest figures."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router

from dashboard.api import params, queries
from dashboard.api.pagination import paginate
from dashboard.api.schemas.common import answers, object_id
from dashboard.api.schemas.groups import Partition, PartitionPage
from dashboard.api.schemas.query import PartitionQuery
from dashboard.monitoring.models import PartitionState

router = Router(tags=["partitions"])
PartitionId = object_id("Partition")


@router.get("/", response=answers(PartitionPage, 400), url_name="partitions",
            operation_id="listPartitions",
            summary="Every partition of every group, with its latest figures")  # fmt: skip
def partition_list(request: HttpRequest, query: Query[PartitionQuery]) -> dict:
    rows = queries.filter_groups(
        PartitionState.objects.select_related("group__cluster"), query, prefix="group__"
    )
    rows = queries.where(rows, group_id=query.group_id, topic=query.topic,
                         partition=query.partition)  # fmt: skip
    if query.status:
        rows = rows.filter(status__in=query.status)
    rows = queries.where(rows, stale=query.stale, lag__gte=query.min_lag)
    if query.diagnosis is not None:
        rows = queries.with_diagnosis(rows, query.diagnosis.upper())
    rows = queries.ordered(rows, query.ordering, queries.PARTITION_ORDERINGS)
    return paginate(request, rows, query.page, query.page_size,
                    prepare=queries.attach_partition_trends)  # fmt: skip


@router.get("/{int:partition_id}/", response=answers(Partition, 400, 404), url_name="partition",
            operation_id="getPartition", summary="One partition")  # fmt: skip
def partition_detail(request: HttpRequest, partition_id: PartitionId) -> PartitionState:
    params.check_known(request.GET, ())
    partition = queries.get_partition(partition_id)
    queries.attach_partition_trends([partition])
    return partition

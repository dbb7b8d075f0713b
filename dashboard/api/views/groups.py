"""``/api/v1/groups/``: consumer groups (Kafka, ZooKeeper consumers, Storm spouts)."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils import timezone
from ninja import Query, Router

from dashboard.api import params, queries
from dashboard.api.pagination import paginate
from dashboard.api.schemas.common import answers, object_id
from dashboard.api.schemas.documents import WhatIf
from dashboard.api.schemas.groups import GroupDetail, GroupPage
from dashboard.api.schemas.query import GroupQuery
from dashboard.monitoring.models import ConsumerGroup
from dashboard.monitoring.spouts import group_spouts
from dashboard.whatif import group_report
from dashboard.whatif.document import ROW_FIELDS as WHATIF_ROW_FIELDS
from dashboard.whatif.document import whatif_document

router = Router(tags=["groups"])
GroupId = object_id("Group")


@router.get("/", response=answers(GroupPage, 400), url_name="groups", operation_id="listGroups",
            summary="Kafka groups, ZooKeeper-based consumers and Storm spouts")  # fmt: skip
def group_list(request: HttpRequest, query: Query[GroupQuery]) -> dict:
    groups = queries.filter_groups(queries.groups_with_figures(), query)
    if query.status:
        groups = groups.filter(status__in=query.status)
    if query.stale is not None:
        groups = groups.filter(stale=query.stale)
    groups = queries.ordered(groups, query.ordering, queries.GROUP_ORDERINGS)
    return paginate(request, groups, query.page, query.page_size,
                    prepare=queries.attach_group_trends)  # fmt: skip


def _assignment(group: ConsumerGroup, partitions: list) -> dict:
    """``balance``, ``what_if`` and ``what_if_subscriptions`` (docs/API.md): computed from the
    group and the partitions already read, no query."""
    rows = [{"topic": p.topic, "partition": p.partition, "lag": p.lag,
             "time_lag_s": p.time_lag_s, "owner": p.owner} for p in partitions]  # fmt: skip
    return group_report(group, rows)


@router.get("/{int:group_id}/", response=answers(GroupDetail, 400, 404), url_name="group",
            operation_id="getGroup",
            summary="One group, with its members and partitions")  # fmt: skip
def group_detail(request: HttpRequest, group_id: GroupId) -> ConsumerGroup:
    params.check_known(request.GET, ())
    group = queries.get_group(group_id)
    partitions = list(group.partitions.order_by("topic", "partition"))
    queries.attach_group_trends([group])
    queries.attach_partition_trends(partitions)
    group.partition_list = partitions
    group.assignment = _assignment(group, partitions)
    group.spouts = group_spouts(group, timezone.now())
    return group


@router.get(
    "/{int:group_id}/whatif/", response=answers(WhatIf, 400, 404), url_name="group-whatif",
    operation_id="groupWhatIf",
    summary="What Kafka's assignors would assign the group's members now, and the moves",
    description="The document manage.py assignment_whatif --json prints.",
)  # fmt: skip
def group_whatif(request: HttpRequest, group_id: GroupId) -> dict:
    params.check_known(request.GET, ())
    group = queries.get_group(group_id)
    rows = group.partitions.order_by("topic", "partition").values(*WHATIF_ROW_FIELDS)
    return whatif_document(group, group.cluster.name, rows)

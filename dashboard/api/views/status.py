"""``/api/v1/status/``: the current verdicts (status, diagnosis, reason, since when), and
``/api/v1/status/changes/``: how they changed."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from ninja import Query, Router

from dashboard.api import queries
from dashboard.api.pagination import paginate
from dashboard.api.schemas.common import answers
from dashboard.api.schemas.monitoring import StatusChangePage, StatusPage
from dashboard.api.schemas.query import StatusChangeQuery, StatusQuery
from dashboard.monitoring.models import (
    PartitionState,
    SparkJobOutcome,
    SparkJobRun,
    StatusChange,
)

router = Router(tags=["status"])
PARTITION_STATUS_FIELDS = ("id", "group_id", "topic", "partition", "status", "status_since",
                           "diagnosis", "reason", "complete", "lag", "time_lag_s", "stale",
                           "evaluated_at")  # fmt: skip


def _summary(groups: QuerySet, partitions: QuerySet) -> dict:
    def counts(rows: QuerySet) -> dict[str, int]:
        return dict(rows.values_list("status").annotate(n=Count("id")).order_by())

    last = (
        SparkJobRun.objects.filter(job="status")
        .exclude(outcome=SparkJobOutcome.RUNNING)
        .order_by("-started_at")
        .first()
    )
    return {
        "groups": counts(groups),
        "partitions": counts(partitions),
        "last_status_run": None if last is None else last.as_dict(),
    }


def _attach_partition_statuses(groups: list, mode: str) -> None:
    """``group.partition_statuses`` of each group of the page (one query); none with
    ``mode`` "none", when the answer leaves the key out."""
    if mode == "none":
        return
    by_group: dict[int, list] = defaultdict(list)
    if groups:
        rows = PartitionState.objects.filter(group_id__in=[g.pk for g in groups])
        if mode == "non_ok":
            rows = rows.exclude(status="OK")
        for p in rows.order_by("group_id", "topic", "partition").values(*PARTITION_STATUS_FIELDS):
            by_group[p["group_id"]].append(p)
    for g in groups:
        g.partition_statuses = by_group.get(g.pk, [])


@router.get("/", response=answers(StatusPage, 400), url_name="status", operation_id="listStatus",
            summary="The current verdicts, worst groups first", exclude_unset=True)  # fmt: skip
def status_list(request: HttpRequest, query: Query[StatusQuery]) -> dict:
    groups = queries.filter_groups(queries.groups_with_figures(), query)
    if query.status:
        groups = groups.filter(status__in=query.status)
    groups = groups.annotate(status_rank=queries.severity()).order_by(
        "-status_rank", "cluster__name", "source", "name"
    )
    summary = _summary(
        groups.model.objects.filter(pk__in=groups.values("pk")),
        PartitionState.objects.filter(group__in=groups.values("pk")),
    )

    def prepare(page: list) -> None:
        queries.attach_group_trends(page)
        _attach_partition_statuses(page, query.partitions)

    body = paginate(request, groups, query.page, query.page_size, extra={"summary": summary},
                    prepare=prepare)  # fmt: skip
    body["as_of"] = timezone.now()
    return body


@router.get("/changes/", response=answers(StatusChangePage, 400), url_name="status-changes",
            operation_id="listStatusChanges", summary="How verdicts changed, newest first",
            description="status filters the new status.")  # fmt: skip
def status_changes(request: HttpRequest, query: Query[StatusChangeQuery]) -> dict:
    changes = queries.filter_groups(
        StatusChange.objects.select_related("group__cluster"), query, prefix="group__"
    )
    changes = queries.where(changes, group_id=query.group_id, topic=query.topic,
                            partition=query.partition)  # fmt: skip
    if query.level is not None:
        changes = changes.filter(partition__isnull=query.level == "group")
    if query.status:
        changes = changes.filter(new_status__in=query.status)
    changes = queries.where(changes, at__gte=query.since, at__lt=query.until)
    return paginate(request, changes.order_by("-at", "-id"), query.page, query.page_size)

"""``/api/v1/status/``: the current verdicts (status, diagnosis, reason, since when), and
``/api/v1/status/changes/``: how they changed."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count
from django.http import HttpRequest
from django.utils import timezone

from dashboard.api import params, queries
from dashboard.api.auth import api_view
from dashboard.api.pagination import PAGE_PARAMS, paginate
from dashboard.api.responses import ApiJsonResponse
from dashboard.api.serializers import group_dict, iso, status_change_dict
from dashboard.monitoring.models import (
    PartitionState,
    SparkJobOutcome,
    SparkJobRun,
    StatusChange,
)

PARTITION_MODES = ("non_ok", "all", "none")
GROUP_FILTERS = ("cluster", "source", "status", "name", "search")


def _partition_status(p: dict) -> dict:
    return {
        "id": p["id"],
        "topic": p["topic"],
        "partition": p["partition"],
        "status": p["status"],
        "status_since": iso(p["status_since"]),
        "diagnosis": p["diagnosis"] or [],
        "reason": p["reason"],
        "complete": p["complete"],
        "lag": p["lag"],
        "time_lag_s": p["time_lag_s"],
        "stale": p["stale"],
        "evaluated_at": iso(p["evaluated_at"]),
    }


def _summary(groups, partitions) -> dict:
    def counts(rows) -> dict[str, int]:
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


@api_view()
def status_list(request: HttpRequest) -> ApiJsonResponse:
    query = request.GET
    params.check_known(query, (*GROUP_FILTERS, "partitions", *PAGE_PARAMS))
    mode = params.choice(query, "partitions", PARTITION_MODES, "non_ok")
    groups = queries.filter_groups(queries.groups_with_figures(), query)
    statuses = params.choices(query, "status", queries.STATUSES)
    if statuses:
        groups = groups.filter(status__in=statuses)
    groups = groups.annotate(status_rank=queries.severity()).order_by(
        "-status_rank", "cluster__name", "source", "name"
    )
    summary = _summary(
        groups.model.objects.filter(pk__in=groups.values("pk")),
        PartitionState.objects.filter(group__in=groups.values("pk")),
    )
    body = paginate(
        request, groups, lambda g: g, extra={"summary": summary},
        prepare=queries.attach_group_trends,
    )  # fmt: skip
    page = body["results"]
    by_group: dict[int, list] = defaultdict(list)
    if mode != "none" and page:
        rows = PartitionState.objects.filter(group_id__in=[g.pk for g in page])
        if mode == "non_ok":
            rows = rows.exclude(status="OK")
        for p in rows.order_by("group_id", "topic", "partition").values(
            "id", "group_id", "topic", "partition", "status", "status_since", "diagnosis",
            "reason", "complete", "lag", "time_lag_s", "stale", "evaluated_at",
        ):  # fmt: skip
            by_group[p["group_id"]].append(_partition_status(p))
    results = []
    for g in page:
        doc = group_dict(g, queries.figures(g))
        if mode != "none":
            doc["partition_statuses"] = by_group.get(g.pk, [])
        results.append(doc)
    body["results"] = results
    body["as_of"] = iso(timezone.now())
    return ApiJsonResponse(body)


@api_view()
def status_changes(request: HttpRequest) -> ApiJsonResponse:
    query = request.GET
    params.check_known(
        query,
        (*GROUP_FILTERS, "group_id", "level", "topic", "partition", "since", "until",
         *PAGE_PARAMS),
    )  # fmt: skip
    now = timezone.now()
    changes = queries.filter_groups(
        StatusChange.objects.select_related("group__cluster"), query, prefix="group__"
    )
    group_id = params.integer(query, "group_id", minimum=1)
    if group_id is not None:
        changes = changes.filter(group_id=group_id)
    level = params.choice(query, "level", ("group", "partition"))
    if level is not None:
        changes = changes.filter(partition__isnull=level == "group")
    topic = params.text(query, "topic")
    if topic is not None:
        changes = changes.filter(topic=topic)
    partition = params.integer(query, "partition", minimum=0)
    if partition is not None:
        changes = changes.filter(partition=partition)
    statuses = params.choices(query, "status", queries.STATUSES)
    if statuses:
        changes = changes.filter(new_status__in=statuses)
    since = params.moment(query, "since", now)
    if since is not None:
        changes = changes.filter(at__gte=since)
    until = params.moment(query, "until", now)
    if until is not None:
        changes = changes.filter(at__lt=until)
    changes = changes.order_by("-at", "-id")
    return ApiJsonResponse(paginate(request, changes, status_change_dict))

"""Querysets the API views share: groups with their partitions' current totals, the group
filters and orderings the query schemas offer (``schemas/query.py`` reads its choices here),
and the severity order of statuses.

Group totals come from the partitions' latest figures (updated every poll), not from the
status job's copy on the group row (updated every minute), so a list agrees with the
partition rows a client fetches next.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import (
    BooleanField,
    Case,
    F,
    IntegerField,
    QuerySet,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.utils import timezone

from dashboard.api.errors import not_found
from dashboard.monitoring import trends
from dashboard.monitoring.models import ConsumerGroup, PartitionState, SourceKind, Status

STATUSES = tuple(Status.values)
SOURCES = tuple(SourceKind.values)
# Worst last: what "sort by status" means to someone looking for trouble.
SEVERITY = {"OK": 0, "UNKNOWN": 1, "WARN": 2, "REWIND": 3, "STALL": 4, "STOP": 5, "ERR": 6}
# Sort keys: a name, or -name for descending; nulls come first ascending, last descending.
GROUP_ORDERINGS = {
    "name": ("cluster__name", "source", "name"),
    "total_lag": (F("lag_sum").asc(nulls_first=True), "name"),
    "max_time_lag_s": (F("time_lag_max").asc(nulls_first=True), "name"),
    "status": ("status_rank", "name"),
    "last_seen_at": ("last_seen_at", "name"),
}
PARTITION_ORDERINGS = {
    "group": ("group__cluster__name", "group__source", "group__name", "topic", "partition"),
    "lag": (F("lag").asc(nulls_first=True), "id"),
    "time_lag_s": (F("time_lag_s").asc(nulls_first=True), "id"),
    "status": ("status_rank", "id"),
}
GROUP_ORDER_CHOICES = tuple(o for name in GROUP_ORDERINGS for o in (name, f"-{name}"))
PARTITION_ORDER_CHOICES = tuple(o for name in PARTITION_ORDERINGS for o in (name, f"-{name}"))
# Which partitions /status/ lists under each group.
PARTITION_MODES = ("non_ok", "all", "none")



def where(rows: QuerySet, **lookups: Any) -> QuerySet:
    """``rows`` filtered by each lookup whose value was given (not None): the optional filters
    of a list endpoint in one line, each one an exact field lookup or ``__gte``/``__lt``."""
    given = {name: value for name, value in lookups.items() if value is not None}
    return rows.filter(**given) if given else rows

def severity(field: str = "status") -> Case:
    return Case(
        *(When(**{field: s}, then=Value(rank)) for s, rank in SEVERITY.items()),
        default=Value(-1),
        output_field=IntegerField(),
    )


def groups_with_figures(groups: QuerySet | None = None) -> QuerySet:
    groups = ConsumerGroup.objects.all() if groups is None else groups
    # The partitions' totals kept on the group's row (dashboard/monitoring/group_totals.py),
    # under the names the serializers read (``lag_sum`` is the field itself).
    return groups.select_related("cluster").annotate(
        partition_count=F("partitions_total"),
        time_lag_max=F("time_lag_max_s"),
        last_commit_max=F("last_commit_max_at"),
        retention_left_min=F("retention_left_min_s"),
    )


def attach_group_trends(groups: list[ConsumerGroup]) -> None:
    """``group.trend``: the newest rollup of each group (one query for the page)."""
    found = trends.group_trends(((g.cluster.name, g.source, g.name) for g in groups),
                                timezone.now())  # fmt: skip
    for g in groups:
        g.trend = found.get((g.cluster.name, g.source, g.name))


def attach_partition_trends(partitions: list[PartitionState]) -> None:
    """``p.trend`` and ``p.topic_config`` of each partition (two queries for the page); the
    partitions come with ``group__cluster``."""

    def key(p: PartitionState) -> tuple:
        return (p.group.cluster.name, p.group.source, p.group.name, p.topic, p.partition)

    found = trends.partition_trends((key(p) for p in partitions), timezone.now())
    configs = trends.topic_retention((p.group.cluster.name, p.topic) for p in partitions)
    for p in partitions:
        p.trend = found.get(key(p))
        p.topic_config = configs.get((p.group.cluster.name, p.topic))


def figures(group: ConsumerGroup) -> dict:
    return {
        "partitions": getattr(group, "partition_count", None),
        "total_lag": getattr(group, "lag_sum", None),
        "max_time_lag_s": getattr(group, "time_lag_max", None),
        "last_commit_at": getattr(group, "last_commit_max", None),
    }


def get_group(group_id: int) -> ConsumerGroup:
    group = groups_with_figures(ConsumerGroup.objects.filter(pk=group_id)).first()
    if group is None:
        raise not_found(f"group {group_id}")
    return group


def get_partition(partition_id: int) -> PartitionState:
    partition = (
        PartitionState.objects.select_related("group__cluster").filter(pk=partition_id).first()
    )
    if partition is None:
        raise not_found(f"partition {partition_id}")
    return partition


def with_diagnosis(partitions: QuerySet, code: str) -> QuerySet:
    """Partitions whose diagnosis list has an entry with this ``code``: exact, on the JSON's
    structure (SQLite has no JSON ``contains`` lookup, so its JSON1 functions do it)."""
    if connection.vendor == "postgresql":
        return partitions.filter(diagnosis__contains=[{"code": code}])
    table = connection.ops.quote_name(PartitionState._meta.db_table)
    column = connection.ops.quote_name(PartitionState._meta.get_field("diagnosis").column)
    has = RawSQL(
        f"EXISTS (SELECT 1 FROM json_each({table}.{column})"
        " WHERE json_extract(value, '$.code') = %s)",
        (code,),
        output_field=BooleanField(),
    )
    return partitions.alias(has_code=has).filter(has_code=True)


def ordered(rows: QuerySet, ordering: str, orderings: dict[str, tuple]) -> QuerySet:
    """``rows`` sorted by one of ``orderings`` (``-name``: descending, nulls last)."""
    name = ordering.lstrip("-")
    keys = orderings[name]
    if name == "status":
        rows = rows.annotate(status_rank=severity())
    if not ordering.startswith("-"):
        return rows.order_by(*keys)
    first = keys[0]
    first = f"-{first}" if isinstance(first, str) else first.expression.desc(nulls_last=True)
    return rows.order_by(first, *keys[1:])


def filter_groups(groups: QuerySet, query: Any, prefix: str = "") -> QuerySet:
    """``cluster``, ``source``, ``name`` (exact), ``search`` (substring), as a query schema
    read them; ``prefix`` is the path from the queried model to the group (``group__``)."""
    if query.cluster is not None:
        groups = groups.filter(**{f"{prefix}cluster__name": query.cluster})
    if query.source:
        groups = groups.filter(**{f"{prefix}source__in": query.source})
    if query.name is not None:
        groups = groups.filter(**{f"{prefix}name": query.name})
    if query.search is not None:
        groups = groups.filter(**{f"{prefix}name__icontains": query.search})
    return groups

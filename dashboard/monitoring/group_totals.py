"""Per-group totals of the partition rows, kept on the group's row.

The overview (partitions per status, lag per cluster, the top groups) and the groups list
(sorted by lag, time lag, retention, partitions) need figures of every partition; read at
every live update they were one scan of all partition rows (32 ms of SQLite at 100,000
partitions, benchmarks/RESULTS.md). They change only when a cycle is stored or a status run
applied, so those writers rewrite them, in their own transaction, with one grouped read of
the partitions they wrote; readers then aggregate a few thousand group rows, in SQL.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Count, Max, Min, Q, QuerySet, Sum

from dashboard.monitoring.bulk_sql import update_rows
from dashboard.monitoring.models import ConsumerGroup, PartitionState, Status

# ConsumerGroup's count field of each partition status.
STATUS_FIELDS: dict[str, str] = {s.value: f"partitions_{s.value.lower()}" for s in Status}
_COMMIT_FIELD = ConsumerGroup._meta.get_field("last_commit_max_at")
CHUNK = 500  # ids per query: SQLite's bound parameters are limited
FIELDS = ["partitions_total", *STATUS_FIELDS.values(), "lag_sum", "time_lag_max_s",
          "retention_left_min_s", "last_commit_max_at"]  # fmt: skip


def _prepared(row: dict) -> tuple:
    """The row's values as the database takes them (the datetime as its field writes it)."""
    values = [row[f] for f in FIELDS]
    values[-1] = _COMMIT_FIELD.get_db_prep_save(values[-1], connection)
    return tuple(values)


def refresh(groups: QuerySet[ConsumerGroup] | Iterable[int]) -> int:
    """Rewrite the totals of ``groups`` (a queryset, or ids) from their partition rows; a
    group without partitions gets zeros and no figures. Returns how many groups."""
    if isinstance(groups, QuerySet):
        chunks = [(list(groups.values_list("id", flat=True)), groups.values("id"))]
    else:
        ids = sorted(groups)
        chunks = [(c, c) for c in (ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK))]
    counts = {f: Count("id", filter=Q(status=s)) for s, f in STATUS_FIELDS.items()}
    empty = dict.fromkeys(FIELDS, None) | dict.fromkeys(FIELDS[: 1 + len(STATUS_FIELDS)], 0)
    done = 0
    for ids, where in chunks:
        totals = {
            row["group_id"]: row
            for row in PartitionState.objects.filter(group_id__in=where)
            .order_by()
            .values("group_id")
            .annotate(
                partitions_total=Count("id"),
                **counts,
                lag_sum=Sum("lag"),
                time_lag_max_s=Max("time_lag_s"),
                retention_left_min_s=Min("retention_left_s"),
                last_commit_max_at=Max("last_commit_at"),
            )
        }
        update_rows(
            ConsumerGroup,
            FIELDS,
            (_prepared(totals.get(pk, empty)) + (pk,) for pk in ids),
        )
        done += len(ids)
    return done

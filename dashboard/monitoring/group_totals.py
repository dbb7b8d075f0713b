"""Per-group totals of the partition rows, kept on the group's row.

The overview (partitions per status, lag per cluster, the top groups) and the groups list
(sorted by lag, time lag, retention, partitions) need figures of every partition; read at
every live update they were one scan of all partition rows (32 ms of SQLite at 100,000
partitions, benchmarks/RESULTS.md). They change only when a cycle is stored or a status run
applied, so those writers rewrite them, in their own transaction, with one ``UPDATE`` whose
correlated subquery reads each group's partitions by the ``(group, topic, partition)``
index; readers then aggregate a few thousand group rows, in SQL.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState, Status

# ConsumerGroup's count field of each partition status.
STATUS_FIELDS: dict[str, str] = {s.value: f"partitions_{s.value.lower()}" for s in Status}
# Each total and the aggregate of the partition column it is made of.
AGGREGATES: dict[str, tuple[str, str]] = {
    "partitions_total": ("COUNT", "id"),
    **{f: ("COUNT_STATUS", s) for s, f in STATUS_FIELDS.items()},
    "lag_sum": ("SUM", "lag"),
    "time_lag_max_s": ("MAX", "time_lag_s"),
    "retention_left_min_s": ("MIN", "retention_left_s"),
    "last_commit_max_at": ("MAX", "last_commit_at"),
}
FIELDS = list(AGGREGATES)
CHUNK = 500  # ids per statement: SQLite's bound parameters are limited


def _update_sql(where: str) -> tuple[str, list]:
    """``UPDATE … SET (totals) = (SELECT aggregates FROM partitions of the group) WHERE …``:
    row-value assignment (SQLite ≥ 3.15, PostgreSQL), one statement, no row through Python.
    A group without partitions gets zeros and NULLs (COUNT of nothing, COALESCE'd sums)."""
    quote = connection.ops.quote_name
    group, part = ConsumerGroup._meta, PartitionState._meta

    def col(meta, name: str) -> str:
        return quote(meta.get_field(name).column)

    params: list = []
    selects = []
    for how, source in AGGREGATES.values():
        if how == "COUNT_STATUS":
            status = col(part, "status")
            selects.append(f"COALESCE(SUM(CASE WHEN {status} = %s THEN 1 ELSE 0 END), 0)")
            params.append(source)
        else:
            selects.append(f"{how}({col(part, source)})")
    sql = (
        f"UPDATE {quote(group.db_table)} SET ({', '.join(col(group, f) for f in FIELDS)}) = "
        f"(SELECT {', '.join(selects)} FROM {quote(part.db_table)} "
        f"WHERE {col(part, 'group')} = {quote(group.db_table)}.{col(group, 'id')}) "
        f"WHERE {where}"
    )
    return sql, params


def _group_column(name: str) -> str:
    return connection.ops.quote_name(ConsumerGroup._meta.get_field(name).column)


def refresh_cluster(cluster: Cluster) -> None:
    """Rewrite the totals of every group of ``cluster`` (a stored cycle's groups)."""
    sql, params = _update_sql(f"{_group_column('cluster')} = %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, cluster.pk])


def refresh(group_ids: Iterable[int]) -> int:
    """Rewrite the totals of the groups ``group_ids`` (a status run's); returns how many."""
    ids = sorted(group_ids)
    with connection.cursor() as cursor:
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            sql, params = _update_sql(f"{_group_column('id')} IN ({marks})")
            cursor.execute(sql, [*params, *chunk])
    return len(ids)

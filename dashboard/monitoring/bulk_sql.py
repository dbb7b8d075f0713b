"""Many-row ``UPDATE`` in plain SQL, for the writers of whole cycles and status runs."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection, models

BATCH = 2000


def update_rows(model: type[models.Model], fields: list[str], rows: Iterable[tuple]) -> None:
    """``UPDATE … WHERE id = %s`` for many rows (each ``fields``' values, then the id) in
    batched ``executemany`` calls.

    The same reason as ``store._insert_rows``: for 10,000 partitions a minute, ``bulk_update``
    spends most of its time building ``CASE WHEN`` expressions in Python; a prepared
    statement per row costs the database a primary-key lookup each.
    """
    meta = model._meta
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(meta.get_field(f).column)} = %s" for f in fields)
    sql = f"UPDATE {quote(meta.db_table)} SET {sets} WHERE {quote(meta.pk.column)} = %s"
    batch: list[tuple] = []
    with connection.cursor() as cursor:
        for row in rows:
            batch.append(row)
            if len(batch) >= BATCH:
                cursor.executemany(sql, batch)
                batch = []
        if batch:
            cursor.executemany(sql, batch)

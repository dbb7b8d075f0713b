"""Loads a status run's results into the database (SPEC §4, §6): the thin Django side of the
status job, which itself knows nothing of Django.

**All or nothing.** The run's verdicts replace the statuses in one transaction: a reader sees
every partition and group of the run, or none of them. A run that failed never gets here, and
a load that fails midway rolls back, so the previous statuses stay.

**What is updated.** Partitions and groups present in the run get their status, complete,
evaluation time, and (partitions) diagnosis, reason and retention forecast
(``retention_left_s``), (groups) total lag. Every one of them is the evaluator's, carried as
the run gives it: nothing is decided here (RETENTION_RISK included, docs/EVALUATOR.md). A
status that differs from the one stored is a change: a ``StatusChange`` row, and
``status_since`` moves to the run's evaluation time (only changes are kept, so history costs
nothing while all is well). Those absent from the run (not sampled within the look-back: a
cluster disabled, a partition deleted) keep what they had. Verdicts of partitions the database
does not hold (pruned, or their cluster deleted) are counted and skipped: the collectors own
the rows, the status job only annotates them.

The results are Parquet files read with pyarrow, wherever they live: a local directory, or
an ``s3a://`` URL as Spark wrote it (read through pyarrow's S3 file system).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from django.conf import settings
from django.db import connection, models, transaction

from collectors.sample_log.object_store import s3_filesystem
from dashboard.monitoring import group_totals
from dashboard.monitoring.models import ConsumerGroup, PartitionState, Status, StatusChange
from dashboard.times import ms_to_dt

__all__ = ["ApplyReport", "apply_status_results", "open_results", "read_table"]

# Rows per executemany call: bounds memory and a single statement's time, not atomicity
# (every batch runs inside the one transaction).
BATCH = 2000


@dataclass(frozen=True)
class ApplyReport:
    """How many verdicts of the run were applied, and how many had no row to apply to."""

    partitions: int
    groups: int
    unmatched_partitions: int
    unmatched_groups: int
    # The status changes the run made (saved rows): what alerts are evaluated on.
    changes: list[StatusChange] = field(default_factory=list, compare=False)

    def as_dict(self) -> dict[str, int]:
        return {
            "partitions": self.partitions, "groups": self.groups,
            "unmatched_partitions": self.unmatched_partitions,
            "unmatched_groups": self.unmatched_groups,
            "changes": len(self.changes),
        }  # fmt: skip


def open_results(url: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system and path for a results URL as Spark names it.

    ``s3a://`` (Hadoop's name for the objects pyarrow calls ``s3://``) reaches the store of the
    ``LAGWATCH_S3_*`` settings with the environment's AWS credentials, like the sample log;
    ``file:`` URLs and plain paths are local.
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme == "" or len(scheme) == 1:  # a plain path (or a Windows drive letter)
        return pafs.LocalFileSystem(), url
    if scheme in ("s3a", "s3n", "s3"):
        return s3_filesystem(url, settings.LAGWATCH_S3)
    return pafs.FileSystem.from_uri(url)


def read_table(run_path: str, table: str) -> pa.Table:
    """One table of a run (every Parquet file of ``<run_path>/<table>/``; Spark's ``_SUCCESS``
    and ``.crc`` files are skipped, as pyarrow skips names starting with ``_`` or ``.``)."""
    fs, path = open_results(run_path)
    return pq.read_table(f"{path.rstrip('/')}/{table}", filesystem=fs)


def _prep(model: type[models.Model], name: str, value: Any) -> Any:
    """``value`` as the database driver takes it for ``model.name`` (JSON, datetimes)."""
    return model._meta.get_field(name).get_db_prep_value(value, connection)


def _update(model: type[models.Model], fields: list[str], rows: Iterable[tuple]) -> None:
    """``UPDATE … WHERE id = %s`` for many rows in batched ``executemany`` calls.

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


def _group_ids() -> dict[tuple[str, str, str], int]:
    return {
        (cluster, source, name): pk
        for pk, cluster, source, name in ConsumerGroup.objects.order_by().values_list(
            "id", "cluster__name", "source", "name"
        )
    }


def apply_status_results(run_path: str) -> ApplyReport:
    """Load the status run at ``run_path`` (``spark_jobs.jobs.run_status_job``'s output) into
    ``PartitionState`` and ``ConsumerGroup``, in one transaction, with a ``StatusChange`` row
    (and a new ``status_since``) for every partition and group whose status changed.

    Both tables are read before the transaction starts: a corrupt or missing file fails here
    and changes nothing.
    """
    partitions = read_table(run_path, "partitions").to_pylist()
    groups = read_table(run_path, "groups").to_pylist()

    with transaction.atomic():
        group_ids = _group_ids()
        wanted = {group_ids[k] for r in groups if (k := _group_key(r)) in group_ids}
        wanted |= {group_ids[k] for r in partitions if (k := _group_key(r)) in group_ids}
        partition_ids = {
            (group_id, topic, partition): (pk, status, since)
            for pk, group_id, topic, partition, status, since in (
                PartitionState.objects.filter(group_id__in=wanted)
                .order_by()
                .values_list("id", "group_id", "topic", "partition", "status", "status_since")
                .iterator(chunk_size=10_000)
            )
        }
        group_before = {
            pk: (status, since)
            for pk, status, since in ConsumerGroup.objects.filter(id__in=wanted)
            .order_by()
            .values_list("id", "status", "status_since")
        }
        changes: list[StatusChange] = []

        partition_rows = []
        for r in partitions:
            group_id = group_ids.get(_group_key(r))
            known = partition_ids.get((group_id, r["topic"], r["partition"]))
            if known is None:
                continue
            pk, old, since = known
            at = ms_to_dt(r["evaluated_at_ms"])
            diagnosis = json.loads(r["diagnosis"])
            left = r.get("retention_left_s")  # None in a run from before the evaluator had it
            if old != r["status"]:
                since = at
                changes.append(
                    StatusChange(
                        group_id=group_id, topic=r["topic"], partition=r["partition"], at=at,
                        old_status=old, new_status=r["status"], diagnosis=diagnosis,
                        reason=r["reason"],
                    )
                )  # fmt: skip
            partition_rows.append(
                (
                    r["status"],
                    _prep(PartitionState, "diagnosis", diagnosis),
                    r["reason"],
                    r["complete"],
                    _prep(PartitionState, "evaluated_at", at),
                    _prep(PartitionState, "status_since", since or at),
                    left,
                    pk,
                )
            )
        _update(
            PartitionState,
            ["status", "diagnosis", "reason", "complete", "evaluated_at", "status_since",
             "retention_left_s"],
            partition_rows,
        )  # fmt: skip

        group_rows = []
        for r in groups:
            pk = group_ids.get(_group_key(r))
            if pk is None:
                continue
            old, since = group_before.get(pk, (None, None))
            at = ms_to_dt(r["evaluated_at_ms"])
            if old != r["status"]:
                since = at
                changes.append(
                    StatusChange(
                        group_id=pk, topic="", partition=None, at=at,
                        old_status=old or Status.UNKNOWN, new_status=r["status"],
                    )
                )  # fmt: skip
            group_rows.append(
                (
                    r["status"],
                    r["total_lag"],
                    r["complete"],
                    _prep(ConsumerGroup, "evaluated_at", at),
                    _prep(ConsumerGroup, "status_since", since or at),
                    pk,
                )
            )
        _update(
            ConsumerGroup,
            ["status", "total_lag", "complete", "evaluated_at", "status_since"],
            group_rows,
        )
        StatusChange.objects.bulk_create(changes, batch_size=BATCH)
        group_totals.refresh(wanted)

    return ApplyReport(
        partitions=len(partition_rows),
        groups=len(group_rows),
        unmatched_partitions=len(partitions) - len(partition_rows),
        unmatched_groups=len(groups) - len(group_rows),
        changes=changes,
    )


def _group_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return (row["cluster"], row["source"], row["group"])

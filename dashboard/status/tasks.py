"""Celery tasks of the status run: thin wrappers around :func:`dashboard.status.runs.run_job`."""

from __future__ import annotations

from celery import shared_task

from dashboard.status.rollups import prune_rollups
from dashboard.status.runs import run_job

# Spark jobs (SPEC §6): queue "spark". The lock inside run_job keeps one run per job even when
# beat's next call arrives while a run is still going; that call records a skipped run.


@shared_task(name="dashboard.status.tasks.spark_status", ignore_result=True)
def spark_status(window_s: int | None = None, requested: bool = False) -> dict:
    """Status and diagnosis of every partition and group, loaded into the database: beat's
    run, or (``requested``) the one a stored cycle asked for (``dashboard.status.requests``)."""
    if requested:
        from dashboard.status.requests import run_requested

        return run_requested()
    return run_job("status", window_s).as_dict()


@shared_task(name="dashboard.status.tasks.spark_rollups", ignore_result=True)
def spark_rollups(window_s: int | None = None) -> dict:
    """Per-minute and per-hour rollups of the sample log's recent window; then the buckets
    past their resolution's retention are forgotten."""
    result = run_job("rollups", window_s).as_dict()
    result["pruned_rows"] = prune_rollups()
    return result

"""A status run after every stored cycle: the verdicts follow the collection poll by poll.

With the status job reading only the log since the previous run (``spark_jobs/state.py``), a
run fits in one poll interval, so each stored cycle asks for one (``figures_stored`` with its
cluster) instead of waiting for beat's next minute; beat's schedule stays, for the runs a gap
in collection needs when no cycle is stored (docs/SPARK_JOBS.md, "Running them").

**Requests fold into one.** A cycle stored while a requested run is queued or waiting adds
nothing (``lagwatch:spark:status:requested``, set once until that run takes the job's lock);
the run takes its "now" once the lock is held, so it reads every cycle stored until then. A
cycle stored while a run is going asks for the next, which waits for the job's lock (at most
``LAGWATCH_STATUS_EVERY_S``) rather than being skipped: runs still never overlap, and at most
one waits. Should the flag outlive a lost task, it expires after that time too.
"""

from __future__ import annotations

import logging

from django.conf import settings

log = logging.getLogger(__name__)

__all__ = ["clear_request", "connect", "request_status_run", "run_requested"]

REQUESTED_KEY = "lagwatch:spark:status:requested"


def request_status_run() -> bool:
    """Ask for a status run unless one is already asked for; returns whether this call
    queued it. Never raises: with Redis or the broker down, beat's runs go on."""
    if not settings.LAGWATCH_STATUS_AFTER_CYCLE:
        return False
    from dashboard.locks import claim_once
    from dashboard.status.tasks import spark_status

    try:
        if not claim_once(REQUESTED_KEY, ttl_s=settings.LAGWATCH_STATUS_EVERY_S):
            return False
        spark_status.apply_async(
            kwargs={"requested": True}, expires=settings.LAGWATCH_STATUS_EVERY_S
        )
    except Exception as exc:  # noqa: BLE001 - beat's schedule runs the job anyway
        log.warning("status run not requested: %s", exc)
        return False
    return True


def clear_request() -> None:
    """The requested run holds the lock (or gave up): the next stored cycle asks again."""
    from dashboard.locks import client

    try:
        client().delete(REQUESTED_KEY)
    except Exception as exc:  # noqa: BLE001 - the flag expires by itself
        log.warning("status run request flag not cleared: %s", exc)


def run_requested() -> dict:
    """The run a stored cycle asked for: it waits for a run in progress instead of being
    skipped, and clears the request once it holds the lock."""
    from dashboard.monitoring.models import SparkJobOutcome
    from dashboard.status.runs import run_job

    run = run_job("status", wait_s=settings.LAGWATCH_STATUS_EVERY_S, on_lock=clear_request)
    if run.outcome == SparkJobOutcome.SKIPPED:
        clear_request()
    return run.as_dict()


def _on_figures_stored(sender: object, **kwargs: object) -> None:
    if "cluster" in kwargs:  # a stored cycle; a Spark run announces ``run``
        request_status_run()


def connect() -> None:
    from dashboard.signals import figures_stored

    figures_stored.connect(_on_figures_stored, dispatch_uid="status.after_cycle")

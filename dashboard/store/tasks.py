"""Celery tasks of the store: collection (one cycle under the cluster's lease, and the dispatch
beat runs in its own process) and storage upkeep; thin wrappers around plain functions."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone
from kombu import Producer

from collectors.cycle.runner import collector_id, cycle_slot
from collectors.sample_log import SampleLog
from dashboard.ingest.store import prune_reports
from dashboard.locks import claim_once, lease, newest_mark, raise_mark
from dashboard.monitoring.models import Cluster, ServiceHeartbeat
from dashboard.signals import announce_figures
from dashboard.store.cycle import run_cluster_cycle
from dashboard.store.rows import SupersededCycle, prune_history

log = logging.getLogger(__name__)


@shared_task(name="dashboard.store.tasks.heartbeat", ignore_result=True)
def heartbeat() -> None:
    """Record that beat scheduled and a worker ran a task: the pipeline is alive."""
    ServiceHeartbeat.objects.update_or_create(name="celery", defaults={"at": timezone.now()})


def dispatch_due(producer: Producer | None = None) -> int:
    """Send one collection task per enabled cluster whose poll slot has started.

    Beat calls this every few seconds in its own process (``dashboard.store.beat``); the slot
    key makes a late or doubled call harmless, and ``expires`` drops a cycle that waited so
    long (Redis or the workers were down) that the next slot has begun: a stale cycle is worth
    less than the current one.
    """
    now_ms = int(time.time() * 1000)
    sent = 0
    for name, interval in Cluster.objects.filter(enabled=True).values_list(
        "name", "poll_interval_s"
    ):
        slot = cycle_slot(now_ms, interval)
        if claim_once(f"lagwatch:dispatched:{name}:{slot}", ttl_s=3 * interval):
            collect_cluster.apply_async((name, slot), expires=max(1, interval), producer=producer)
            sent += 1
    return sent


def lease_ttl_s(poll_interval_s: int) -> int:
    """How long a dead collector keeps a cluster: short, since a live one renews it."""
    return max(4, poll_interval_s // 2)


# Storing a cycle that failed (the database locked or away) is tried again this many times,
# a second apart, under the same lease: in the task, not as a countdown message, which a worker
# holding it when Redis went away could die of (kombu's restore of unacknowledged messages).
STORE_RETRIES = 3


@shared_task(name="dashboard.store.tasks.collect_cluster", ignore_result=True)
def collect_cluster(name: str, cycle_ms: int) -> dict | None:
    """One cycle; tried again with the same ``cycle_ms`` if storing failed (idempotent).

    Any number of collector workers take these (docs/ARCHITECTURE.md, "What runs
    concurrently"): the cluster's lease makes its cycles run one at a time, in whichever
    worker; under it, a slot at or below the cluster's mark (the newest slot stored) is
    skipped: stored already, or older than one that is (a redelivery after its worker died).
    A task waits for the lease while another cycle of the cluster runs, and for as long as a
    dead holder's lease takes to expire, so the next slot is collected, late, not lost; the
    waiting tasks take it in slot order (a newer slot first would mark the older one stored).
    """
    cluster = Cluster.objects.filter(name=name, enabled=True).first()
    if cluster is None:
        return None
    interval = cluster.poll_interval_s
    ttl_s = lease_ttl_s(interval)
    deadline_ms = cycle_ms + (interval + ttl_s + 1) * 1000
    wait_s = max(0.0, (deadline_ms - time.time() * 1000) / 1000)
    mark = f"lagwatch:collected:{name}"
    me = collector_id()
    with lease(f"lagwatch:collecting:{name}", ttl_s, wait_s, holder=me, order=cycle_ms) as mine:
        if not mine:
            log.warning("cluster %s: previous cycle still running, slot %d skipped", name, cycle_ms)
            return None
        newest = newest_mark(mark)
        if newest is not None and newest >= cycle_ms:
            log.info("cluster %s: slot %d skipped, slot %d is stored", name, cycle_ms, newest)
            return None
        for tries_left in range(STORE_RETRIES, -1, -1):
            try:
                report = run_cluster_cycle(cluster, cycle_ms)
                break
            except SupersededCycle as exc:
                log.warning("%s", exc)
                return None
            except (DatabaseError, OSError):
                if not tries_left:
                    raise
                log.warning("cluster %s: slot %d not stored, again in 1 s", name, cycle_ms)
                time.sleep(1)
        # Kept a while past any redelivery (Celery's ``expires`` drops older tasks anyway).
        raise_mark(mark, cycle_ms, ttl_s=max(600, 10 * interval))
        announce_figures(cluster=name)
        log.info("cluster %s: slot %d collected by %s", name, cycle_ms, me)
        return report.as_dict()


@shared_task(name="dashboard.store.tasks.maintain_storage", ignore_result=True)
def maintain_storage() -> dict:
    """Drop raw history and old client reports; compact closed hours of the sample log and
    apply its retention. (Rollups are pruned by the rollup job that writes them.)"""
    now = timezone.now()
    pruned = prune_history(timedelta(hours=settings.LAGWATCH_RAW_HISTORY_HOURS), now)
    pruned += prune_reports(now - timedelta(hours=1))
    sample_log = SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL, settings.LAGWATCH_S3)
    compacted = sample_log.compact_closed_hours(now)
    removed = sample_log.apply_retention(
        now - timedelta(days=settings.LAGWATCH_SAMPLE_RETENTION_DAYS)
    )
    return {"pruned_rows": pruned, "compacted_hours": len(compacted), "removed_hours": len(removed)}


@shared_task(name="dashboard.store.tasks.compact_sample_log", ignore_result=True)
def compact_sample_log() -> dict:
    """Compact the sample log's open hours in chunks, so the jobs that read the last hour
    every period open a few tens of files instead of one per cycle."""
    sample_log = SampleLog.from_url(settings.LAGWATCH_SAMPLE_LOG_URL, settings.LAGWATCH_S3)
    results = sample_log.compact_open_hours(timezone.now())
    return {"hours": len(results), "files_merged": sum(r.inputs for r in results)}

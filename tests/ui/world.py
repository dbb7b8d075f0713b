"""Monitoring data for the page tests, created through the models the collectors fill."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from dashboard.monitoring import group_totals
from dashboard.monitoring.models import (
    Cluster,
    ConsumerGroup,
    GroupSample,
    PartitionState,
    SourceHealth,
    SpoutSample,
)
from dashboard.store import raw_history

XSS = "<script>alert(1)</script>"


def cluster(name: str = "prod") -> Cluster:
    return Cluster.objects.create(name=name, kafka_bootstrap_servers="k:9092")


def group(c: Cluster, name: str, source: str = "kafka", status: str = "OK", **kw) -> ConsumerGroup:
    now = timezone.now()
    kw.setdefault("evaluated_at", now)
    kw.setdefault("complete", 1.0)
    return ConsumerGroup.objects.create(
        cluster=c, source=source, name=name, status=status, first_seen_at=now,
        last_seen_at=now, **kw,
    )  # fmt: skip


def partitions(
    g: ConsumerGroup, n: int, topic: str = "orders", status: str = "OK", lag: int = 5, **kw
) -> list[PartitionState]:
    now = timezone.now()
    kw.setdefault("owner", None)
    kw.setdefault("complete", 1.0)
    kw.setdefault("last_commit_at", now - timedelta(seconds=30))
    rows = [
        PartitionState(
            group=g,
            topic=topic,
            partition=i,
            committed=100 + i,
            earliest=0,
            latest=100 + i + lag,
            lag=lag,
            time_lag_s=float(i),
            status=status,
            sampled_at=now,
            evaluated_at=now,
            **{**kw, "owner": kw["owner"] or f"member-{i % 3}"},
        )  # fmt: skip
        for i in range(n)
    ]
    created = PartitionState.objects.bulk_create(rows)
    group_totals.refresh([g.id])  # as the store and the status run do
    return created


def samples(
    parts: list[PartitionState],
    points: int = 6,
    step_s: int = 10,
    now: datetime | None = None,
    pushed: bool = True,
) -> None:
    """``pushed`` False: counts without a pending of their own, as a spout's partitions carry
    their whole spout's counters from Storm UI."""
    now = now or timezone.now()
    GroupSample.objects.bulk_create(
        raw_history.group_samples(
            (p.group_id, now - timedelta(seconds=step_s * k),
             (p.topic, p.partition, p.committed - k, p.latest, (p.lag or 0) + k, float(k),
              k if pushed else None, 0, 100 - k, False))
            for p in parts
            for k in range(points)
        )
    )  # fmt: skip


def health(
    c: Cluster, source: str = "kafka", reachable: bool = True, error: str = ""
) -> SourceHealth:
    now = timezone.now()
    return SourceHealth.objects.create(
        cluster=c, source=source, reachable=reachable, last_attempt_at=now,
        last_success_at=now - (timedelta(minutes=5) if not reachable else timedelta()),
        last_error=error, last_error_at=now if error else None,
        consecutive_failures=0 if reachable else 3, last_duration_s=0.2,
    )  # fmt: skip


def spout_samples(
    c: Cluster, topology_id: str, spout_id: str, points: int = 6, step_s: int = 10,
    cap: int | None = 20,
) -> None:
    """A spout's whole figures every ``step_s``: 10 emitted and 9 acked a second, failing one
    every other poll, latency rising, in flight at ``cap``."""
    now = timezone.now()
    SpoutSample.objects.bulk_create(
        SpoutSample(
            cluster=c, topology_id=topology_id, spout_id=spout_id,
            at=now - timedelta(seconds=step_s * (points - 1 - k)),
            emitted=10 * step_s * k, acked=9 * step_s * k, failed=k // 2,
            complete_latency_ms=100.0 + k, pending=cap, max_spout_pending=cap,
        )  # fmt: skip
        for k in range(points)
    )

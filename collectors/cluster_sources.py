"""The adapters of one monitored cluster, read in parallel once per cycle. No Django.

A cycle's wall time is the slowest source's, not the sum: ZooKeeper, Kafka and the Storm UI
are read on their own threads at once. Topics that only ZooKeeper consumers or Storm spouts
read need broker offsets too; those come from one follow-up batched ListOffsets call once
ZooKeeper has said which topics they are (the Kafka cycle's own call covers group topics).

The object is long-lived (one per cluster per worker process): the adapters keep their
connections warm between cycles, which is most of what makes a cycle cheap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from collectors.kafka_source import KafkaSource
from collectors.records import CollectionResult, Source, SourceError
from collectors.storm_ui import StormUISource
from collectors.zookeeper_source import ZooKeeperSource

log = logging.getLogger(__name__)

__all__ = ["ClusterSettings", "ClusterSources"]


class _Adapter(Protocol):
    def collect(self, now_ms: int) -> CollectionResult: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ClusterSettings:
    """What the adapters need of a cluster's configuration (SPEC §2.4), as plain values."""

    name: str
    kafka_bootstrap_servers: str = ""
    kafka_config: dict[str, Any] = field(default_factory=dict)
    zk_hosts: str = ""
    storm_spout_roots: tuple[str, ...] = ()
    zk_consumers: bool = False
    storm_ui_url: str | None = None
    timeout_s: float = 10.0

    def fingerprint(self) -> tuple:
        """Equal fingerprints: the same adapters can be kept across a configuration save."""
        return (
            self.kafka_bootstrap_servers, tuple(sorted(self.kafka_config.items())),
            self.zk_hosts, self.storm_spout_roots, self.zk_consumers, self.storm_ui_url,
            self.timeout_s,
        )  # fmt: skip


class ClusterSources:
    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings
        self.kafka: KafkaSource | None = None
        self.zookeeper: ZooKeeperSource | None = None
        self.storm_ui: StormUISource | None = None
        if settings.kafka_bootstrap_servers:
            self.kafka = KafkaSource(
                settings.kafka_bootstrap_servers, settings.kafka_config, settings.timeout_s
            )
        if settings.zk_hosts and (settings.storm_spout_roots or settings.zk_consumers):
            self.zookeeper = ZooKeeperSource(
                settings.zk_hosts,
                list(settings.storm_spout_roots),
                settings.zk_consumers,
                settings.timeout_s,
            )
        if settings.storm_ui_url:
            self.storm_ui = StormUISource(settings.storm_ui_url, settings.timeout_s)
        self._pool = ThreadPoolExecutor(
            max_workers=3, thread_name_prefix=f"collect-{settings.name}"
        )

    def close(self) -> None:
        for adapter in (self.kafka, self.zookeeper):
            if adapter is not None:
                adapter.close()
        self._pool.shutdown(wait=False)

    def collect(self, now_ms: int) -> list[CollectionResult]:
        """One result per configured adapter; never raises for what a source does."""
        adapters: list[tuple[Source, Callable[[int], CollectionResult]]] = []
        if self.kafka is not None:
            adapters.append((Source.KAFKA, self.kafka.collect))
        if self.zookeeper is not None:
            adapters.append((Source.ZOOKEEPER, self.zookeeper.collect))
        if self.storm_ui is not None:
            adapters.append((Source.STORM, self.storm_ui.collect))
        futures = [
            (source, self._pool.submit(_guarded, source, fn, now_ms)) for source, fn in adapters
        ]
        results = [future.result() for _, future in futures]

        if self.kafka is not None:
            covered = {o.topic for r in results for o in r.offsets}
            others = {
                c.topic for r in results if r.source is not Source.KAFKA for c in r.commits
            } - covered
            kafka = next(r for r in results if r.source is Source.KAFKA)
            if others and kafka.reachable:
                extra = _guarded(Source.KAFKA, lambda t: self.kafka.log_offsets(others, t), now_ms)
                kafka.offsets.extend(extra.offsets)
                kafka.errors.extend(extra.errors)
                kafka.finished_ms = max(kafka.finished_ms, extra.finished_ms)
        return results


def _guarded(
    source: Source, fn: Callable[[int], CollectionResult], now_ms: int
) -> CollectionResult:
    """An adapter bug becomes a recorded error of that source, not a failed cycle."""
    try:
        return fn(now_ms)
    except Exception as exc:
        log.exception("%s adapter failed", source)
        return CollectionResult(
            source=source,
            started_ms=now_ms,
            finished_ms=int(time.time() * 1000),
            reachable=False,
            errors=[
                SourceError(source, str(source), f"collector error: {type(exc).__name__}: {exc}")
            ],
        )

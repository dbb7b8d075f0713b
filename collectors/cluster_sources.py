"""The adapters of one monitored cluster, read in parallel once per cycle. No Django.

A cycle's wall time is the slowest source's, not the sum: ZooKeeper, Kafka, the Storm UI and
the brokers' metrics endpoints (purgatory figures, ``collectors.broker_metrics``) are read on
their own threads at once. Topics that only ZooKeeper consumers or Storm spouts
read need broker offsets too (the Kafka cycle's own call covers group topics). Which topics
those are, only the ZooKeeper walk says; but they rarely change, so their ListOffsets is
issued at the start of the cycle, on the previous cycle's topics, beside the walk, and a
follow-up call after the walk reads only what that early read could not stand for:

- topics new this cycle (or every topic, in the first cycle);
- topics whose early read failed or whose partition count differs from this cycle's
  metadata: read again, so that their errors and partitions are this cycle's;
- topics with a commit beyond the early latest offset: that commit was made after the read
  (the consumer kept going meanwhile), and used as it is it would read as an ERR finding
  (committed > latest) although nothing is wrong. Read after the walk, as the Kafka adapter
  reads its own log offsets after the committed offsets, committed <= latest holds for every
  healthy partition.

So the broker offsets of spout topics are read up to a walk's length earlier than before;
their time is recorded with them (``time_ms``), as time lag needs.

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

from collectors.broker_metrics import BrokerMetricsSource
from collectors.kafka import KafkaSource
from collectors.records import CollectionResult, PartitionOffsets, Source, SourceError
from collectors.storm_ui import StormUISource
from collectors.zookeeper import ZooKeeperSource

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
    read_consumer_offsets_topic: bool = True
    zk_hosts: str = ""
    storm_spout_roots: tuple[str, ...] = ()
    zk_consumers: bool = False
    storm_ui_url: str | None = None
    broker_metrics_urls: tuple[str, ...] = ()
    timeout_s: float = 10.0
    # How often the Kafka source re-reads a topic's retention settings (topic_configs).
    topic_config_refresh_s: float = 300.0

    def fingerprint(self) -> tuple:
        """Equal fingerprints: the same adapters can be kept across a configuration save."""
        return (
            self.kafka_bootstrap_servers, tuple(sorted(self.kafka_config.items())),
            self.read_consumer_offsets_topic, self.zk_hosts, self.storm_spout_roots,
            self.zk_consumers, self.storm_ui_url, self.broker_metrics_urls, self.timeout_s,
            self.topic_config_refresh_s,
        )  # fmt: skip


class ClusterSources:
    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings
        self.kafka: KafkaSource | None = None
        self.zookeeper: ZooKeeperSource | None = None
        self.storm_ui: StormUISource | None = None
        self.broker_metrics: BrokerMetricsSource | None = None
        if settings.kafka_bootstrap_servers:
            self.kafka = KafkaSource(
                settings.kafka_bootstrap_servers,
                settings.kafka_config,
                settings.timeout_s,
                read_offsets_topic=settings.read_consumer_offsets_topic,
                # The share coordinators' topic is read under the same setting: both are
                # coordinators' internal topics read by a group-less consumer.
                read_share_state=settings.read_consumer_offsets_topic,
                topic_config_refresh_s=settings.topic_config_refresh_s,
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
        if settings.broker_metrics_urls:
            self.broker_metrics = BrokerMetricsSource(
                settings.broker_metrics_urls, settings.timeout_s
            )
        self._pool = ThreadPoolExecutor(
            max_workers=4, thread_name_prefix=f"collect-{settings.name}"
        )
        # Topics only ZooKeeper consumers or spouts read, as of the last cycle that read
        # ZooKeeper: the early ListOffsets of the next cycle.
        self._side_topics: frozenset[str] = frozenset()
        self._kafka_reachable = False  # the last cycle reached the broker

    def close(self) -> None:
        for adapter in (self.kafka, self.zookeeper, self.broker_metrics):
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
        if self.broker_metrics is not None:
            adapters.append((Source.BROKER_METRICS, self.broker_metrics.collect))
        futures = [
            (source, self._pool.submit(_guarded, source, fn, now_ms)) for source, fn in adapters
        ]
        kafka_source = self.kafka
        early_result: CollectionResult | None = None
        if kafka_source is not None and self._side_topics and self._kafka_reachable:
            # On this thread, which would only wait meanwhile: its memory is then reused by
            # the next cycles instead of piling up in another thread's malloc arena.
            topics = self._side_topics
            early_result = _guarded(
                Source.KAFKA, lambda t: kafka_source.log_offsets(topics, t), now_ms
            )
        results = [future.result() for _, future in futures]

        if kafka_source is not None:
            covered = {o.topic for r in results for o in r.offsets}
            side = [r for r in results if r.source is not Source.KAFKA]
            others = {c.topic for r in side for c in r.commits} - covered
            kafka = next(r for r in results if r.source is Source.KAFKA)
            self._kafka_reachable = kafka.reachable
            if others and kafka.reachable:
                offsets: list[PartitionOffsets] = []
                reused = _reusable(early_result, others, side, kafka)
                if early_result is not None and reused:
                    offsets = [o for o in early_result.offsets if o.topic in reused]
                    kafka.finished_ms = max(kafka.finished_ms, early_result.finished_ms)
                rest = others - reused
                if rest:
                    extra = _guarded(
                        Source.KAFKA, lambda t: kafka_source.log_offsets(rest, t), now_ms
                    )
                    offsets.extend(extra.offsets)
                    kafka.errors.extend(extra.errors)
                    kafka.finished_ms = max(kafka.finished_ms, extra.finished_ms)
                kafka.offsets.extend(offsets)
            if any(r.source is Source.ZOOKEEPER and r.reachable for r in side):
                self._side_topics = frozenset(others)
        return results


def _reusable(
    early: CollectionResult | None,
    topics: set[str],
    side: list[CollectionResult],
    kafka: CollectionResult,
) -> set[str]:
    """The topics among ``topics`` whose early log offsets stand for this cycle's (see the
    module's docstring): read without error, the partitions this cycle's metadata lists,
    and no commit beyond their latest offset."""
    if early is None or not early.reachable:
        return set()
    failed: set[str] = set()
    for error in early.errors:
        # log_offsets names a topic ("topic T") or a partition ("T/P"); anything else is
        # about the whole read, which then stands for nothing.
        if error.where.startswith("topic "):
            failed.add(error.where[len("topic ") :])
        elif "/" in error.where:
            failed.add(error.where.rsplit("/", 1)[0])
        else:
            return set()
    latest: dict[tuple[str, int], int | None] = {}
    read: dict[str, int] = {}
    for o in early.offsets:
        latest[(o.topic, o.partition)] = o.latest
        read[o.topic] = read.get(o.topic, 0) + 1
    reused = {
        t
        for t in topics
        if t not in failed and t in read and read[t] == kafka.partition_counts.get(t)
    }
    for result in side:
        for c in result.commits:
            if c.topic in reused:
                end = latest.get((c.topic, c.partition))
                if end is None or c.offset > end:
                    reused.discard(c.topic)
    return reused


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

"""The running world: producers, consumer groups, the ZooKeeper consumer and the topologies
described by a `WorldSpec`, plus the topic keeper that creates a declared topic found missing.

Scenarios act on a `World` only through its methods and parts, so a test can build a small
world and drive the same scenario code as the demo.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from lagwatch_client import IngestSender

from lab.storm.ui_api import TopologyRegistry
from lab.workload.consumer_groups import ConsumerGroup, MemberSettings
from lab.workload.params import ScenarioError
from lab.workload.producers import Producers
from lab.workload.share_groups import ShareGroup, ShareSettings
from lab.workload.spec import TopicSpec, WorldSpec
from lab.workload.topics import TopicAdmin
from lab.workload.topologies import Topologies
from lab.workload.zk_consumer import ZkGroupConsumer

log = logging.getLogger(__name__)


class World:
    def __init__(
        self,
        spec: WorldSpec,
        bootstrap: str,
        zk_hosts: str,
        *,
        run_dir: Path | None = None,
        ingest: IngestSender | None = None,
        member_settings: MemberSettings | None = None,
        spout_defaults: dict[str, Any] | None = None,
        keeper_interval_s: float = 2.0,
        registry: TopologyRegistry | None = None,
        share_settings: ShareSettings | None = None,
    ) -> None:
        self.spec = spec
        self.bootstrap = bootstrap
        self.zk_hosts = zk_hosts
        self.run_dir = run_dir
        # Where the clients push their statistics (lagwatch_client), if anywhere.
        self.ingest = ingest
        self.admin = TopicAdmin(bootstrap)
        self.producers = Producers(bootstrap, spec.topics, ingest)
        self.groups = {
            g.name: ConsumerGroup(g, bootstrap, member_settings, ingest) for g in spec.groups
        }
        # Share groups (KIP-932, queues): the scenarios aimed at a group take them by name too.
        self.share_groups = {
            g.name: ShareGroup(g, bootstrap, share_settings) for g in spec.share_groups
        }
        self.zk_consumers = {
            z.group: ZkGroupConsumer(z, bootstrap, zk_hosts) for z in spec.zk_consumers
        }
        self.topologies = Topologies(bootstrap, zk_hosts, spec.topologies, spout_defaults, registry)
        self._keeper_interval_s = keeper_interval_s
        self._stop = threading.Event()
        self._keeper = threading.Thread(target=self._keep_topics, name="topic-keeper", daemon=True)
        self._watermarks: dict[str, dict[int, int]] = {}
        self.broker_reachable = False
        self.retention_runs = 0  # log starts moved by the retention scenario
        self.topics_restored = 0  # by the keeper: declared topics it found missing
        self._started = False

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, broker_wait_s: float = 60.0) -> None:
        """Create topics, then start everything; consumers join their groups in background."""
        deadline = time.monotonic() + broker_wait_s
        while True:
            try:
                self.ensure_topics()
                break
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise
                log.warning("broker not ready (%s), retrying", exc)
                time.sleep(1)
        self.producers.start()
        for group in self.groups.values():
            group.start()
        for share_group in self.share_groups.values():
            share_group.start()
        for zk_consumer in self.zk_consumers.values():
            zk_consumer.start()
        self.topologies.start_all()
        self._keeper.start()
        self._started = True
        log.info(
            "world started: %d topics, %d groups, %d share groups, %d ZooKeeper consumers, "
            "%d topologies",
            len(self.spec.topics),
            len(self.groups),
            len(self.share_groups),
            len(self.zk_consumers),
            len(self.spec.topologies),
        )

    def stop(self) -> None:
        """Stop in reverse: consumers leave their groups, spouts stop, producers flush."""
        self._stop.set()
        self.topologies.stop_all()
        for zk_consumer in self.zk_consumers.values():
            zk_consumer.stop()
        stoppers = [
            threading.Thread(target=g.stop, name=f"stop-{g.name}")
            for g in (*self.groups.values(), *self.share_groups.values())
        ]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join(timeout=30)
        self.producers.stop()
        if self._keeper.is_alive():
            self._keeper.join(timeout=10)
        log.info("world stopped")

    def __enter__(self) -> World:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- what scenarios use --------------------------------------------------------------
    def group(self, name: str) -> ConsumerGroup | ShareGroup:
        """A consumer group or a share group by name: the scenarios aimed at a group (slow,
        dead, poison) drive both through the same methods."""
        found = self.groups.get(name) or self.share_groups.get(name)
        if found is None:
            known = ", ".join(sorted([*self.groups, *self.share_groups]))
            raise ScenarioError(f"no Kafka group {name!r}; known: {known}")
        return found

    def ensure_topics(self) -> list[str]:
        created = self.admin.ensure(self.spec.topics)
        self.broker_reachable = True
        if created and self._started:
            self.topics_restored += len(created)
            log.warning("declared topics %s were missing: created them again", created)
        return created

    def topic_spec(self, name: str) -> TopicSpec:
        try:
            return self.spec.topic(name)
        except KeyError:
            raise ScenarioError(f"no topic {name!r} in this world") from None

    def zk_consumers_on(self, topic: str) -> list[str]:
        return sorted(g for g, z in self.zk_consumers.items() if z.spec.topic == topic)

    def groups_on(self, topic: str) -> list[str]:
        return sorted(name for name, g in self.groups.items() if g.spec.topic == topic)

    def watermarks(self, topic: str) -> dict[int, tuple[int, int]]:
        """Partition -> (log start, log end) of one of the world's topics."""
        return self.admin.watermarks(topic, self.topic_spec(topic).partitions)

    def delete_records(self, topic: str, before: dict[int, int]) -> dict[int, int]:
        """Move the log start of each partition up to ``before[p]``; return the new starts."""
        self.topic_spec(topic)
        starts = self.admin.delete_records(topic, before)
        self.retention_runs += 1
        return starts

    def high_watermark(self, topic: str, partition: int) -> int:
        spec = self.topic_spec(topic)
        if not 0 <= partition < spec.partitions:
            raise ScenarioError(f"{topic} has partitions 0..{spec.partitions - 1}")
        return self.admin.high_watermarks(topic, spec.partitions)[partition]

    def reset_to_spec(self) -> dict[str, Any]:
        """Undo any drift from the description (rates, delays, members, topologies)."""
        changed: dict[str, Any] = {"rates": [], "delays": [], "members": [], "topologies": []}
        for t in self.spec.topics:
            if self.producers.set_rate(t.name, t.rate) != t.rate:
                changed["rates"].append(t.name)
        for g in (*self.groups.values(), *self.share_groups.values()):
            if g.set_delay_ms(g.spec.delay_ms) != g.spec.delay_ms:
                changed["delays"].append(g.name)
            if g.member_count() != g.spec.members:
                g.set_members(g.spec.members)
                changed["members"].append(g.name)
        changed["topologies"] = self.topologies.reset_to_spec()
        return changed

    # -- status --------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        produced = self.producers.status()
        return {
            "broker_reachable": self.broker_reachable,
            "retention_runs": self.retention_runs,
            "topics_restored": self.topics_restored,
            "topics": {
                t.name: {
                    "partitions": t.partitions,
                    **produced.get(t.name, {}),
                    "high_watermarks": self._watermarks.get(t.name, {}),
                }
                for t in self.spec.topics
            },
            "groups": {name: g.status() for name, g in self.groups.items()},
            "share_groups": {name: g.status() for name, g in self.share_groups.items()},
            "zk_consumers": {name: z.status() for name, z in self.zk_consumers.items()},
            "topologies": self.topologies.status(),
        }

    def _keep_topics(self) -> None:
        """Create declared topics found missing, cache high watermarks for the status page,
        and notice the broker going away and coming back.

        Kafka keeps its topics across a restart, so after an outage nothing is missing; a
        topic deleted by hand would otherwise leave its clients waiting for metadata that
        never comes. Consumers and producers reconnect by themselves.
        """
        while not self._stop.wait(self._keeper_interval_s):
            try:
                self.ensure_topics()
            except KafkaException as exc:
                if self.broker_reachable:
                    log.warning("broker unreachable: %s", exc)
                self.broker_reachable = False
                continue
            for t in self.spec.topics:
                try:
                    self._watermarks[t.name] = self.admin.high_watermarks(t.name, t.partitions)
                except KafkaException as exc:
                    # Reachable, but e.g. FENCED_LEADER_EPOCH right after a restart: the
                    # clients learn the new leader epoch within a metadata refresh.
                    log.debug("watermarks of %s: %s", t.name, exc)

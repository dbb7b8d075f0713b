"""Kafka source adapter: one cycle of what the brokers say about consumer groups (SPEC §2.2).

The cycle is shaped by latency, not by code convenience: every request that does not depend
on another answer is in flight at the same time, so a cycle costs about as many round trips as
the dependency chain is long, whatever the number of groups and partitions::

    ListGroups ─┬─ DescribeGroups (batches)      ─┬─ ListOffsets earliest (one batch)
    Metadata  ──┤  OffsetFetch (every group)      ├─ ListOffsets latest   (one batch)
                ├─ ConsumerGroupDescribe (KIP-848 groups: epochs) ┤
                └─ ListGroups "share", "streams" (every broker) ─┬─ ShareGroupDescribe,
                   DescribeShareGroupOffsets (share groups, KIP-932) ┤
                   StreamsGroupDescribe, OffsetFetch (streams, KIP-1071) ┘
                                                  └─ DescribeConfigs (consumed topics due
                                                     for a re-read, every few minutes each)

ListOffsets waits for the committed offsets on purpose, although starting it earlier (from
the previous cycle's topics) would shorten the cycle: a commit read *after* the high
watermark can be ahead of it (the consumer kept going meanwhile), which downstream would
report as an ERR finding (committed > latest) although nothing is wrong. Read in this order,
committed <= latest holds for every healthy partition.

The adapter knows nothing of Django; it returns the plain records of ``collectors.records``.
A failure confined to one group or one partition becomes a ``SourceError`` and the cycle goes
on; a cluster that cannot be reached gives ``reachable=False``, never an exception, within
``timeout_s``.

The package follows that chain: ``admin`` holds the AdminClient's requests, ``wire_groups`` the
coordinator requests of the wire client, ``share_groups`` and ``streams_groups`` the share and
streams groups' (listing included), ``offsets_topic`` what the ``__consumer_offsets`` reader
adds, ``to_records`` what every answer becomes, ``cycle`` the budget they share. This module is
the source object: its clients, kept across cycles, and the order of the stages.

Written for Apache Kafka 3.9 and newer (the lab runs 4.4; docs/LAB.md, "Compatibility run").
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from collectors.consumer_offsets.reader import ConsumerOffsetsReader
from collectors.identity import KAFKA_CLUSTER_ID
from collectors.kafka.admin import (
    listed_groups,
    log_offsets,
    topic_partitions,
)
from collectors.kafka.cycle import Cycle, describe_exc
from collectors.kafka.offsets_topic import apply_offsets_topic
from collectors.kafka.share_groups import read_share_groups
from collectors.kafka.share_state import DeliveryLimits, apply_share_state
from collectors.kafka.streams_groups import read_streams_groups
from collectors.kafka.to_records import commits_of, group_outcome, with_epochs
from collectors.kafka.topic_configs import DEFAULT_REFRESH_S, TopicConfigCache
from collectors.kafka.typed_groups import list_typed_groups
from collectors.kafka.wire_groups import committed_offsets, consumer_group_epochs, wire_descriptions
from collectors.kafka_wire import GroupClient
from collectors.kafka_wire.sasl import librdkafka_config
from collectors.records import CollectionResult, GroupSnapshot
from collectors.share_state import ShareStateReader

__all__ = ["KafkaSource"]

# Named as when the adapter was collectors/kafka_source.py: logging configuration and log
# queries that name them keep working.
log = logging.getLogger("collectors.kafka_source")
# librdkafka's own lines (connection failures every few tens of ms while a cluster is down):
# a separate logger, so that operators can quieten it without losing the adapter's own.
client_log = logging.getLogger(f"{log.name}.librdkafka")

# Cycles in a row with a timeout after which the AdminClient is replaced (see _note_timeouts).
_RECREATE_AFTER_TIMEOUTS = 3


class KafkaSource:
    """Reads consumer-group state, committed offsets and log offsets from one Kafka cluster.

    One AdminClient per source object, kept across cycles: its connections, coordinator
    lookups and metadata cache make every cycle after the first much cheaper.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        config: dict[str, Any] | None = None,
        timeout_s: float = 10,
        *,
        read_offsets_topic: bool = True,
        read_share_state: bool = True,
        topic_config_refresh_s: float = DEFAULT_REFRESH_S,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = float(timeout_s)
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            # librdkafka's own logs go to Python logging (served by poll()), not raw stderr.
            "logger": client_log,
            # Brokers close idle connections between cycles; that is not worth a log line.
            "log.connection.close": False,
        }
        conf.update(config or {})
        conf["bootstrap.servers"] = bootstrap_servers
        # Group requests of our own (collectors.kafka_wire): committed offsets, classic
        # groups' members and KIP-848 epochs, never the AdminClient's (see wire_groups). A
        # security setting the wire client cannot honour (GSSAPI, AWS_MSK_IAM) is this
        # source's error every cycle, naming it, and nothing is read: not a fallback to the
        # AdminClient, whose coordinator calls can abort the process and read no epochs.
        self._groups: GroupClient | None = None
        self.unsupported: str | None = None
        try:
            self._groups = GroupClient(bootstrap_servers, conf)
        except ValueError as exc:
            self.unsupported = str(exc)
        # librdkafka's clients get the same credentials (an oauth_cb where librdkafka lacks
        # the token provider, as for MSK IAM), and so the same tokens.
        mechanism = self._groups.mechanism if self._groups is not None else None
        self._conf = librdkafka_config(conf, mechanism)
        self._admin: AdminClient | None = None if self.unsupported else AdminClient(self._conf)
        # The __consumer_offsets reader (SPEC §2.2): commit times, classic generations and
        # every rebalance with its cause. Read beside the AdminClient's calls, on a thread of
        # its own; a cluster that denies the topic leaves commit times unknown, with a warning.
        self._offsets_reader: ConsumerOffsetsReader | None = None
        # And __share_group_state's, the same way (KIP-932): share groups' deliveries and
        # archived records (collectors/kafka/share_state.py).
        self._share_reader: ShareStateReader | None = None
        self._reader_pool: ThreadPoolExecutor | None = None
        reader_conf = librdkafka_config(config or {}, mechanism)
        if read_offsets_topic and self.unsupported is None:
            self._offsets_reader = ConsumerOffsetsReader(
                bootstrap_servers, reader_conf, timeout_s=self.timeout_s
            )
        if read_share_state and self.unsupported is None:
            self._share_reader = ShareStateReader(
                bootstrap_servers, reader_conf, timeout_s=self.timeout_s
            )
        if self._offsets_reader is not None or self._share_reader is not None:
            self._reader_pool = ThreadPoolExecutor(2, thread_name_prefix="internal-topics")
        self._delivery_limits = DeliveryLimits()
        self._partitions_of: dict[str, list[int]] = {}
        # Retention settings of consumed topics, re-read every few minutes (topic_configs).
        self._topic_configs = TopicConfigCache(topic_config_refresh_s)
        self._timeouts_in_a_row = 0
        self._renew_client = False  # set by a cycle that could not reach the cluster

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Release the client (its connections and threads go with the last reference)."""
        if self._admin is not None:
            self._admin.poll(0)
            self._admin = None
        if self._groups is not None:
            self._groups.close()
            self._groups = None
        if self._reader_pool is not None:
            self._reader_pool.shutdown(wait=True)
            self._reader_pool = None
        for reader in (self._offsets_reader, self._share_reader):
            if reader is not None:
                reader.close()
        self._offsets_reader = self._share_reader = None

    def __enter__(self) -> KafkaSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            raise RuntimeError("KafkaSource is closed")
        return self._admin

    def _refused(self, now_ms: int) -> CollectionResult:
        """The cycle of a cluster whose security the wire client cannot speak: unreachable
        (its partitions UNKNOWN, never a stuck consumer), with the setting named."""
        cycle = Cycle(now_ms, self.timeout_s)
        cycle.result.reachable = False
        cycle.error("cluster", f"not collected: {self.unsupported}")
        cycle.result.finished_ms = cycle.clock_ms()
        return cycle.result

    # -- the cycle -----------------------------------------------------------------------------

    def collect(self, now_ms: int) -> CollectionResult:
        """Read one cycle. Never raises for anything the cluster does or fails to do."""
        if self.unsupported is not None:
            return self._refused(now_ms)
        if self._renew_client and self._admin is not None:
            self._recreate_client("the last cycle could not reach the cluster")
        admin = self.admin
        cycle = Cycle(now_ms, self.timeout_s)
        pool, reader, shares = self._reader_pool, self._offsets_reader, self._share_reader
        reading = pool.submit(reader.poll, now_ms) if pool and reader else None
        share_reading = pool.submit(shares.poll, now_ms) if pool and shares else None
        try:
            self._collect(admin, cycle)
            if reading is not None and reader is not None:
                apply_offsets_topic(reading.result(), reader.state, cycle)
            if share_reading is not None and shares is not None:
                apply_share_state(share_reading.result(), shares.state, cycle)
                self._delivery_limits.refresh(admin, cycle)
        except Exception as exc:  # a bug or a client surprise must not kill the collector loop
            log.exception("kafka collect failed for %s", self.bootstrap_servers)
            cycle.error("cluster", f"collector error: {describe_exc(exc)}")
        finally:
            admin.poll(0)  # serve queued librdkafka log lines
        cycle.result.finished_ms = cycle.clock_ms()
        self._note_timeouts(cycle.result)
        return cycle.result

    def log_offsets(self, topics: Iterable[str], now_ms: int) -> CollectionResult:
        """Earliest and latest offsets of every partition of ``topics``, in two batched calls.

        For topics no Kafka group consumes (Storm spouts, ZooKeeper consumers): their lag and
        time lag need the same broker offsets. Partition lists come from the last cycle's
        metadata, refreshed here only for topics it did not hold.
        """
        if self.unsupported is not None:
            return self._refused(now_ms)
        admin = self.admin
        cycle = Cycle(now_ms, self.timeout_s)
        wanted = sorted(set(topics))
        try:
            missing = [t for t in wanted if t not in self._partitions_of]
            if missing:
                metadata = admin.list_topics(timeout=cycle.remaining())
                self._remember_partitions(metadata, cycle, only=set(missing))
            partitions = [(t, p) for t in wanted for p in self._partitions_of.get(t, ())]
            for topic in wanted:
                if topic not in self._partitions_of:
                    cycle.error(f"topic {topic}", "not found on the broker")
            configs = self._topic_configs.submit(
                admin,
                self._topic_configs.due(self._partitions_of.keys() & set(wanted), now_ms),
                cycle,
            )
            if partitions:
                cycle.result.offsets.extend(log_offsets(admin, partitions, cycle))
            cycle.gather(configs.values())
            cycle.result.topic_configs.extend(self._topic_configs.collect(configs, cycle))
        except KafkaException as exc:
            cycle.result.reachable = False
            cycle.error("cluster", f"unreachable: {describe_exc(exc)}")
        finally:
            admin.poll(0)
        cycle.result.finished_ms = cycle.clock_ms()
        return cycle.result

    def _note_timeouts(self, result: CollectionResult) -> None:
        """Replace the client after an outage, or after repeated timeouts.

        An AdminClient that lived through a broker restart can time out forever on group
        requests (docs/LAB.md); a fresh client reconnects cleanly. So a cycle that could not
        reach the cluster at all makes the next one start on a new client: made then, not now,
        it connects at once when the cluster is back instead of first waiting out the
        reconnect backoff it would build up during the outage, and the first cycle after the
        outage is whole. Otherwise three cycles in a row with a timeout are the signal (a
        restart no cycle saw), so one slow answer does not cost the warm client.
        """
        if not result.reachable:
            self._renew_client = True
            return
        timed_out = any("timed out" in e.error for e in result.errors)
        self._timeouts_in_a_row = self._timeouts_in_a_row + 1 if timed_out else 0
        if self._timeouts_in_a_row >= _RECREATE_AFTER_TIMEOUTS:
            self._recreate_client(f"{_RECREATE_AFTER_TIMEOUTS} cycles in a row timed out")

    def _recreate_client(self, why: str) -> None:
        log.warning("recreating the Kafka admin client for %s: %s", self.bootstrap_servers, why)
        self._admin = AdminClient(self._conf)
        self._partitions_of = {}
        self._topic_configs.forget()
        self._delivery_limits.forget()
        self._timeouts_in_a_row = 0
        self._renew_client = False

    def _remember_partitions(
        self, metadata: Any, cycle: Cycle, only: set[str] | None = None
    ) -> dict[str, list[int]]:
        partitions_of = topic_partitions(metadata, cycle, only)
        if only is None:
            self._partitions_of = partitions_of
        else:
            self._partitions_of.update(partitions_of)
        return partitions_of

    def _collect(self, admin: AdminClient, cycle: Cycle) -> None:
        result = cycle.result

        # Stage 1: group listing and topic metadata, both in flight together.
        groups_future = admin.list_consumer_groups(request_timeout=cycle.remaining())
        try:
            metadata = admin.list_topics(timeout=cycle.remaining())
        except KafkaException as exc:
            result.reachable = False
            cycle.error("cluster", f"unreachable: {describe_exc(exc)}")
            return
        partitions_of = self._remember_partitions(metadata, cycle)
        if getattr(metadata, "cluster_id", None):  # none before Kafka 0.10.1
            result.identity[KAFKA_CLUSTER_ID] = str(metadata.cluster_id)
        result.partition_counts.update((name, len(ps)) for name, ps in partitions_of.items())

        listed = listed_groups(groups_future, cycle, admin)
        # Share groups (KIP-932), which the AdminClient neither lists nor describes: through
        # the wire client, every broker the metadata names asked for its own.
        brokers = [(b.host, b.port) for b in metadata.brokers.values()]
        # Streams groups (KIP-1071) likewise; their commits are a consumer group's. One
        # listing by type for both.
        typed = list_typed_groups(self._groups, brokers, cycle)
        share_snapshots, share_commits = read_share_groups(self._groups, typed["share"], cycle)
        streams_snapshots, streams_commits = read_streams_groups(
            self._groups, typed["streams"], cycle
        )
        typed_snapshots = share_snapshots + streams_snapshots
        typed_commits = share_commits + streams_commits
        streams_ids = {s.group for s in streams_snapshots}
        group_ids = sorted(set(listed) - streams_ids) if listed is not None else []
        if not group_ids and not typed_snapshots:
            return

        # Stage 2: every group's description and committed offsets, through the wire client.
        committed: dict[str, list[TopicPartition]] = {}
        snapshots: list[GroupSnapshot] = []
        if listed is not None and group_ids:
            snapshots, committed = self._describe_groups(listed, group_ids, cycle)
        result.groups.extend(snapshots)
        result.commits.extend(commits_of(snapshots, committed))
        result.groups.extend(typed_snapshots)
        result.commits.extend(typed_commits)
        snapshots = snapshots + typed_snapshots

        # Stage 3: log start and end of every partition of every consumed topic, two batches.
        wanted: set[tuple[str, int]] = set()
        for snap in snapshots:
            for topic in snap.topics:
                wanted.update((topic, p) for p in partitions_of.get(topic, ()))
            wanted.update(tp for m in snap.members for tp in m.assignment)
        for tps in committed.values():
            wanted.update((tp.topic, tp.partition) for tp in tps)
        wanted.update((c.topic, c.partition) for c in typed_commits)
        # With them, the retention settings of the consumed topics that are due (one request).
        due = self._topic_configs.due({t for t, _ in wanted if t in partitions_of}, cycle.now_ms)
        configs = self._topic_configs.submit(admin, due, cycle)
        if wanted:
            result.offsets.extend(log_offsets(admin, sorted(wanted), cycle))
        cycle.gather(configs.values())
        result.topic_configs.extend(self._topic_configs.collect(configs, cycle))

    def _describe_groups(
        self,
        listed: dict[str, tuple[str | None, str | None]],
        group_ids: list[str],
        cycle: Cycle,
    ) -> tuple[list[GroupSnapshot], dict[str, list[TopicPartition]]]:
        """Stage 2 for the classic and KIP-848 groups: each group's snapshot and commits."""
        groups = self._groups
        if groups is None:
            raise RuntimeError("KafkaSource is closed")
        kip848 = [g for g in group_ids if listed[g][1] == "consumer"]
        offset_futures = committed_offsets(groups, group_ids, cycle)
        epochs = consumer_group_epochs(groups, kip848, cycle)
        describe_futures = wire_descriptions(groups, group_ids, listed, epochs, cycle)
        cycle.gather([*describe_futures.values(), *offset_futures.values()])

        committed: dict[str, list[TopicPartition]] = {}
        snapshots: list[GroupSnapshot] = []
        for group in group_ids:
            outcome = group_outcome(
                group, listed[group], describe_futures[group], offset_futures[group], cycle
            )
            if outcome is None:
                continue
            snapshot, tps = outcome
            if group in epochs:
                snapshot = with_epochs(snapshot, epochs[group])
            snapshots.append(snapshot)
            committed[group] = tps
        return snapshots, committed

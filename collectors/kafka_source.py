"""Kafka source adapter: one cycle of what the brokers say about consumer groups (SPEC §2.2).

The cycle is shaped by latency, not by code convenience: every request that does not depend
on another answer is in flight at the same time, so a cycle costs about as many round trips as
the dependency chain is long, whatever the number of groups and partitions::

    ListGroups ─┬─ DescribeGroups (batches)      ─┬─ ListOffsets earliest (one batch)
    Metadata  ──┤  OffsetFetch (every group)      ├─ ListOffsets latest   (one batch)
                └─ ConsumerGroupDescribe (KIP-848 groups: epochs) ┘

ListOffsets waits for the committed offsets on purpose, although starting it earlier (from
the previous cycle's topics) would shorten the cycle: a commit read *after* the high
watermark can be ahead of it (the consumer kept going meanwhile), which downstream would
report as an ERR finding (committed > latest) although nothing is wrong. Read in this order,
committed <= latest holds for every healthy partition.

The adapter knows nothing of Django; it returns the plain records of ``collectors.records``.
A failure confined to one group or one partition becomes a ``SourceError`` and the cycle goes
on; a cluster that cannot be reached gives ``reachable=False``, never an exception, within
``timeout_s``.

Written for Apache Kafka (the lab runs 4.1, docs/LAB.md). Where an answer is missing or
incomplete (a describe that failed, a Kafka-protocol broker that lists no members), the
records say "unknown" rather than guess (``members_known=False``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, OffsetSpec

from collectors.consumer_offsets.picture import GenerationChange as RecordedChange
from collectors.consumer_offsets.reader import ConsumerOffsetsReader, ReaderOutcome
from collectors.consumer_offsets.state import OffsetsTopicState
from collectors.kafka_wire import ClassicGroup, ConsumerGroupEpochs, GroupClient
from collectors.records import (
    CollectionResult,
    CommittedOffset,
    GenerationChange,
    GroupMember,
    GroupSnapshot,
    PartitionOffsets,
    Source,
    SourceError,
)

__all__ = ["DESCRIBE_BATCH", "KafkaSource", "snapshot_from_description"]

log = logging.getLogger(__name__)
# librdkafka's own lines (connection failures every few tens of ms while a cluster is down):
# a separate logger, so that operators can quieten it without losing the adapter's own.
client_log = logging.getLogger(f"{__name__}.librdkafka")

# Groups per DescribeGroups call. librdkafka already splits a call per coordinator; batching
# bounds the size of one request and answer, and every batch is in flight at once anyway.
DESCRIBE_BATCH = 50
# Cycles in a row with a timeout after which the AdminClient is replaced (see _note_timeouts).
_RECREATE_AFTER_TIMEOUTS = 3

# Coordinator answers that pass within seconds (loading __consumer_offsets after a start or a
# leader change, electing a coordinator): ListGroups is asked again after a short pause.
_TRANSIENT_GROUP_ERRORS = frozenset(
    {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE}
)
_RELIST_PAUSE_S = 0.25

# Kafka's own spelling of the states (GroupState / ConsumerGroupState in the broker), which the
# rest of Lagwatch compares against. UNKNOWN maps to None: "the source did not say".
_STATE_NAMES: dict[ConsumerGroupState, str | None] = {
    ConsumerGroupState.UNKNOWN: None,
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}

# Kafka's GroupType names (KIP-848): "classic" groups rebalance through JoinGroup/SyncGroup,
# "consumer" groups through the broker-side heartbeat protocol.
_TYPE_NAMES: dict[ConsumerGroupType, str | None] = {
    ConsumerGroupType.UNKNOWN: None,
    ConsumerGroupType.CLASSIC: "classic",
    ConsumerGroupType.CONSUMER: "consumer",
}

# States in which a group necessarily has members. A broker that describes such a group with
# none has not told us who they are; Apache Kafka always lists them.
_STATES_WITH_MEMBERS = frozenset({"Stable", "PreparingRebalance", "CompletingRebalance"})

# Answers that mean "this group no longer exists": skipped, not reported as an error, because
# a group deleted between ListGroups and the next request is a normal race, not a fault.
_GONE_STATES = frozenset({"Dead"})


def _kafka_error(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def _describe_exc(exc: BaseException | KafkaError) -> str:
    err = exc if isinstance(exc, KafkaError) else _kafka_error(exc)
    if err is not None:
        return f"{err.name()}: {err.str()}"
    return f"{type(exc).__name__}: {exc}"


def _is_transient(exc: BaseException | KafkaError) -> bool:
    err = exc if isinstance(exc, KafkaError) else _kafka_error(exc)
    return err is not None and err.code() in _TRANSIENT_GROUP_ERRORS


def _is_code(exc: BaseException, code: int) -> bool:
    err = _kafka_error(exc)
    return err is not None and err.code() == code


def _state_name(state: Any) -> str | None:
    return _STATE_NAMES.get(state) if isinstance(state, ConsumerGroupState) else None


def _type_name(group_type: Any) -> str | None:
    return _TYPE_NAMES.get(group_type) if isinstance(group_type, ConsumerGroupType) else None


def _pairs(assignment: Any) -> tuple[tuple[str, int], ...]:
    topic_partitions = assignment.topic_partitions if assignment is not None else None
    return tuple(sorted((tp.topic, tp.partition) for tp in topic_partitions or ()))


def snapshot_from_description(
    desc: ConsumerGroupDescription,
    *,
    listed_type: str | None = None,
    topics: Iterable[str] = (),
) -> GroupSnapshot:
    """Turn the AdminClient's description of one group into a ``GroupSnapshot``.

    Kept pure (no client, no I/O) so the mapping from what Apache Kafka answers can be tested
    with the client's own model objects, including answers the lab broker never gives.

    ``listed_type`` is the type ListGroups reported: preferred, because librdkafka describes a
    group through ConsumerGroupDescribe first and a broker may answer that for a classic group
    too, while ListGroups reports the group's real type.

    ``generation`` stays None here: librdkafka 2.16 exposes neither the group epoch of a
    KIP-848 group nor the generation of a classic one. ``with_epochs`` adds the former (from
    ConsumerGroupDescribe, ``collectors.kafka_wire``); the ``__consumer_offsets`` reader the
    latter.
    """
    state = _state_name(getattr(desc, "state", None))
    group_type = listed_type or _type_name(getattr(desc, "type", None))
    members = tuple(
        sorted(
            (
                GroupMember(
                    member_id=m.member_id,
                    client_id=m.client_id or None,
                    host=m.host or None,
                    assignment=_pairs(m.assignment),
                    instance_id=getattr(m, "group_instance_id", None) or None,
                    # Only KIP-848 groups have a target; a classic member's is "not said".
                    target_assignment=(
                        _pairs(getattr(m, "target_assignment", None))
                        if group_type == "consumer"
                        else None
                    ),
                )
                for m in desc.members or []
            ),
            key=lambda m: m.member_id,
        )
    )
    members_known = bool(members) or state not in _STATES_WITH_MEMBERS
    coordinator = None
    if desc.coordinator is not None and desc.coordinator.host:
        coordinator = f"{desc.coordinator.host}:{desc.coordinator.port}"
    assigned_topics = {t for m in members for t, _ in m.assignment}
    return GroupSnapshot(
        source=Source.KAFKA,
        group=desc.group_id,
        state=state,
        generation=None,
        assignor=desc.partition_assignor or None,
        coordinator=coordinator,
        protocol_type=group_type,
        members=members,
        members_known=members_known,
        topics=tuple(sorted(assigned_topics | set(topics))),
    )


def snapshot_from_classic(group: ClassicGroup, coordinator: str | None = None) -> GroupSnapshot:
    """A classic group as DescribeGroups (our wire client) says it; the assignor is the
    protocol name only for the "consumer" protocol type (Connect and others use their own).
    A member whose assignment bytes could not be decoded keeps ``()``: "unknown"."""
    members = tuple(
        sorted(
            (
                GroupMember(
                    member_id=m.member_id,
                    client_id=m.client_id or None,
                    host=m.client_host or None,
                    assignment=m.assignment or (),
                    instance_id=m.instance_id,
                )
                for m in group.members
            ),
            key=lambda m: m.member_id,
        )
    )
    return GroupSnapshot(
        source=Source.KAFKA,
        group=group.group,
        state=group.state,
        assignor=(group.protocol or None) if group.protocol_type == "consumer" else None,
        coordinator=coordinator,
        protocol_type="classic",
        members=members,
        members_known=bool(members) or group.state not in _STATES_WITH_MEMBERS,
        topics=tuple(sorted({t for m in members for t, _ in m.assignment})),
    )


def snapshot_from_epochs(
    group: ConsumerGroupEpochs, coordinator: str | None = None
) -> GroupSnapshot:
    """A KIP-848 group as ConsumerGroupDescribe says it: members with their epochs and
    target assignments, the group epoch as the generation."""
    members = tuple(
        sorted(
            (
                GroupMember(
                    member_id=m.member_id,
                    client_id=m.client_id or None,
                    host=m.client_host or None,
                    assignment=tuple(m.assignment),
                    instance_id=m.instance_id,
                    member_epoch=m.member_epoch,
                    target_assignment=tuple(m.target_assignment),
                )
                for m in group.members
            ),
            key=lambda m: m.member_id,
        )
    )
    return GroupSnapshot(
        source=Source.KAFKA,
        group=group.group,
        state=group.state,
        generation=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor=group.assignor,
        coordinator=coordinator,
        protocol_type="consumer",
        members=members,
        members_known=True,
        topics=tuple(sorted({t for m in members for t, _ in m.assignment})),
    )


def with_epochs(snapshot: GroupSnapshot, epochs: ConsumerGroupEpochs) -> GroupSnapshot:
    """A KIP-848 group's snapshot completed with what ConsumerGroupDescribe says.

    The group epoch is the group's generation (it rises with every membership or
    subscription change); the assignment epoch trails it while the broker computes a new
    target (state Assigning), and a member whose epoch or partitions differ from its target
    is still reconciling. The broker's own state wins: librdkafka reports Assigning and
    Reconciling as "unknown". Members are matched by id; a member only one answer lists keeps
    what that answer said (they were read a moment apart).
    """
    if not epochs.ok:
        return snapshot
    by_id = {m.member_id: m for m in epochs.members}
    members = []
    for member in snapshot.members:
        described = by_id.get(member.member_id)
        if described is not None:
            member = dataclasses.replace(
                member,
                member_epoch=described.member_epoch,
                instance_id=member.instance_id or described.instance_id,
                target_assignment=described.target_assignment,
            )
        members.append(member)
    return dataclasses.replace(
        snapshot,
        state=epochs.state or snapshot.state,
        generation=epochs.group_epoch,
        assignment_epoch=epochs.assignment_epoch,
        assignor=snapshot.assignor or epochs.assignor,
        members=tuple(members),
    )


def _with_commit_time(commit: CommittedOffset, state: OffsetsTopicState) -> CommittedOffset:
    """The commit's own timestamp, when the record read is the commit the AdminClient saw."""
    info = state.commits.get((commit.group, commit.topic, commit.partition))
    if info is None or info.offset != commit.offset:
        return commit
    return dataclasses.replace(commit, commit_time_ms=info.commit_timestamp_ms)


def _with_generation(snapshot: GroupSnapshot, state: OffsetsTopicState) -> GroupSnapshot:
    """A classic group's generation from its last group-metadata record."""
    info = state.groups.get(snapshot.group)
    if info is None:
        return snapshot
    return dataclasses.replace(
        snapshot, generation=info.generation, assignor=snapshot.assignor or info.protocol
    )


# The reader's causes in ``collectors.rebalance``'s names.
_RECORDED_CAUSES = {
    "members_joined": "member_joined",
    "members_left": "member_left",
    "all_members_left": "member_left",
    "assignment_changed": "assignment_changed",
    "leader_changed": "leader_changed",
    "protocol_changed": "protocol_changed",
    "same_members": "member_rejoined",
}


def _generation_change(change: RecordedChange) -> GenerationChange:
    detail: dict[str, Any] = {"members": change.members_after}
    if change.members_joined:
        detail["joined"] = list(change.members_joined)
    if change.members_left:
        detail["left"] = list(change.members_left)
    if change.leader_before != change.leader_after:
        detail["leader"] = [change.leader_before, change.leader_after]
    if change.protocol_before != change.protocol_after:
        detail["protocol"] = [change.protocol_before, change.protocol_after]
    return GenerationChange(
        group=change.group,
        time_ms=change.time_ms,
        generation=change.generation_after,
        generation_before=change.generation_before,
        causes=tuple(_RECORDED_CAUSES[c] for c in change.causes if c in _RECORDED_CAUSES),
        detail=detail,
    )


def _submit(keys: list[str], call: Callable[[list[str]], dict[str, Future]]) -> dict[str, Future]:
    """Issue one request; a refusal by the client (e.g. the empty group id "", which old
    tools commit under but the AdminClient will not query) becomes a failed future for each
    key, so it is reported for those groups only and the cycle goes on."""
    try:
        return call(keys)
    except (KafkaException, TypeError, ValueError) as exc:
        failed: Future = Future()
        failed.set_exception(exc)
        return dict.fromkeys(keys, failed)


class _Cycle:
    """The mutable bookkeeping of one ``collect`` call: deadline, clock, result."""

    def __init__(self, now_ms: int, timeout_s: float) -> None:
        self.t0 = time.monotonic()
        self.deadline = self.t0 + timeout_s
        self.now_ms = now_ms
        self.result = CollectionResult(source=Source.KAFKA, started_ms=now_ms)

    def remaining(self) -> float:
        # librdkafka rejects a zero timeout as "no timeout" in places: keep a small floor.
        return max(0.01, self.deadline - time.monotonic())

    def clock_ms(self) -> int:
        """``now_ms`` advanced by the time spent so far, so that offsets read late in a slow
        cycle carry the time they were read, which time lag interpolation needs."""
        return self.now_ms + int((time.monotonic() - self.t0) * 1000)

    def error(self, where: str, error: str) -> None:
        self.result.errors.append(SourceError(source=Source.KAFKA, where=where, error=error))

    def gather(self, futures: Iterable[Future]) -> None:
        """Wait for all futures together, bounded by what is left of the cycle's budget."""
        pending = [f for f in futures if not f.done()]
        if pending:
            wait(pending, timeout=max(0.0, self.deadline - time.monotonic()))


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
        self._conf = conf
        self._admin: AdminClient | None = AdminClient(conf)
        # Group requests of our own (collectors.kafka_wire): committed offsets (OffsetFetch,
        # see _committed_offsets) and KIP-848 epochs, which librdkafka does not expose. A
        # cluster whose security the small client does not speak (SASL) keeps the AdminClient
        # for offsets and gets a warning each cycle for the epochs.
        self._groups: GroupClient | None = None
        self._groups_unavailable: str | None = None
        try:
            self._groups = GroupClient(bootstrap_servers, conf)
        except ValueError as exc:
            self._groups_unavailable = str(exc)
        # The __consumer_offsets reader (SPEC §2.2): commit times, classic generations and
        # every rebalance with its cause. Read beside the AdminClient's calls, on a thread of
        # its own; a cluster that denies the topic keeps the AdminClient path, with a warning.
        self._offsets_reader: ConsumerOffsetsReader | None = None
        self._reader_pool: ThreadPoolExecutor | None = None
        if read_offsets_topic:
            self._offsets_reader = ConsumerOffsetsReader(
                bootstrap_servers, config, timeout_s=self.timeout_s
            )
            self._reader_pool = ThreadPoolExecutor(1, thread_name_prefix="offsets-topic")
        self._partitions_of: dict[str, list[int]] = {}
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
        if self._offsets_reader is not None:
            self._offsets_reader.close()
            self._offsets_reader = None

    def __enter__(self) -> KafkaSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            raise RuntimeError("KafkaSource is closed")
        return self._admin

    # -- the cycle -----------------------------------------------------------------------------

    def collect(self, now_ms: int) -> CollectionResult:
        """Read one cycle. Never raises for anything the cluster does or fails to do."""
        if self._renew_client and self._admin is not None:
            self._recreate_client("the last cycle could not reach the cluster")
        admin = self.admin
        cycle = _Cycle(now_ms, self.timeout_s)
        reading = None
        if self._offsets_reader is not None and self._reader_pool is not None:
            reading = self._reader_pool.submit(self._offsets_reader.poll, now_ms)
        try:
            self._collect(admin, cycle)
            if reading is not None:
                self._apply_offsets_topic(reading.result(), cycle)
        except Exception as exc:  # a bug or a client surprise must not kill the collector loop
            log.exception("kafka collect failed for %s", self.bootstrap_servers)
            cycle.error("cluster", f"collector error: {_describe_exc(exc)}")
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
        admin = self.admin
        cycle = _Cycle(now_ms, self.timeout_s)
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
            if partitions:
                cycle.result.offsets.extend(self._log_offsets(admin, partitions, cycle))
        except KafkaException as exc:
            cycle.result.reachable = False
            cycle.error("cluster", f"unreachable: {_describe_exc(exc)}")
        finally:
            admin.poll(0)
        cycle.result.finished_ms = cycle.clock_ms()
        return cycle.result

    def _note_timeouts(self, result: CollectionResult) -> None:
        """Replace the client after an outage, or after repeated timeouts.

        An AdminClient that lived through a broker restart can time out forever on group
        requests (shared/LAB.md); a fresh client reconnects cleanly. So a cycle that could not
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
        self._timeouts_in_a_row = 0
        self._renew_client = False

    def _remember_partitions(
        self, metadata: Any, cycle: _Cycle, only: set[str] | None = None
    ) -> dict[str, list[int]]:
        partitions_of: dict[str, list[int]] = {}
        for name, topic in metadata.topics.items():
            if only is not None and name not in only:
                continue
            if topic.error is not None and topic.error.code() != KafkaError.NO_ERROR:
                cycle.error(f"topic {name}", f"metadata: {topic.error.name()}")
                continue
            partitions_of[name] = sorted(topic.partitions)
        if only is None:
            self._partitions_of = partitions_of
        else:
            self._partitions_of.update(partitions_of)
        return partitions_of

    def _collect(self, admin: AdminClient, cycle: _Cycle) -> None:
        result = cycle.result

        # Stage 1: group listing and topic metadata, both in flight together.
        groups_future = admin.list_consumer_groups(request_timeout=cycle.remaining())
        try:
            metadata = admin.list_topics(timeout=cycle.remaining())
        except KafkaException as exc:
            result.reachable = False
            cycle.error("cluster", f"unreachable: {_describe_exc(exc)}")
            return
        partitions_of = self._remember_partitions(metadata, cycle)
        result.partition_counts.update((name, len(ps)) for name, ps in partitions_of.items())

        listed = self._listed_groups(groups_future, cycle, admin)
        if listed is None:
            return
        group_ids = sorted(listed)
        if not group_ids:
            return

        # Stage 2: every group's description and committed offsets. Through the wire
        # client where it speaks the cluster's security; the AdminClient's describes (all
        # batches in flight at once) only where it does not.
        describe_futures: dict[str, Future] = {}
        for i in range(0, len(group_ids) if self._groups is None else 0, DESCRIBE_BATCH):
            batch = group_ids[i : i + DESCRIBE_BATCH]
            describe_futures.update(
                _submit(
                    batch,
                    lambda b: admin.describe_consumer_groups(b, request_timeout=cycle.remaining()),
                )
            )
        # On this thread while librdkafka's describes are in flight on its own.
        offset_futures = self._committed_offsets(admin, group_ids, cycle)
        epochs = self._consumer_group_epochs(
            [g for g in group_ids if listed[g][1] == "consumer"], cycle
        )
        if self._groups is not None:
            describe_futures = self._wire_descriptions(group_ids, listed, epochs, cycle)
        cycle.gather([*describe_futures.values(), *offset_futures.values()])

        committed: dict[str, list[TopicPartition]] = {}
        snapshots: list[GroupSnapshot] = []
        for group in group_ids:
            outcome = self._group_outcome(
                group, listed[group], describe_futures[group], offset_futures[group], cycle
            )
            if outcome is None:
                continue
            snapshot, tps = outcome
            if group in epochs:
                snapshot = with_epochs(snapshot, epochs[group])
            snapshots.append(snapshot)
            committed[group] = tps
        result.groups.extend(snapshots)

        owners = {
            (snap.group, t, p): m.member_id
            for snap in snapshots
            for m in snap.members
            for t, p in m.assignment
        }
        for group, tps in committed.items():
            for tp in tps:
                result.commits.append(
                    CommittedOffset(
                        source=Source.KAFKA,
                        group=group,
                        topic=tp.topic,
                        partition=tp.partition,
                        offset=tp.offset,
                        owner=owners.get((group, tp.topic, tp.partition)),
                        where=f"group {group}",
                    )
                )

        # Stage 3: log start and end of every partition of every consumed topic, two batches.
        wanted: set[tuple[str, int]] = set()
        for snap in snapshots:
            for topic in snap.topics:
                wanted.update((topic, p) for p in partitions_of.get(topic, ()))
            wanted.update(tp for m in snap.members for tp in m.assignment)
        for tps in committed.values():
            wanted.update((tp.topic, tp.partition) for tp in tps)
        if wanted:
            result.offsets.extend(self._log_offsets(admin, sorted(wanted), cycle))

    def _apply_offsets_topic(self, outcome: ReaderOutcome, cycle: _Cycle) -> None:
        """What ``__consumer_offsets`` adds to the cycle: each Kafka commit's own timestamp
        (SPEC §4 names it the best commit time), each classic group's generation, and the
        generation changes recorded since the last cycle. A reader that cannot read the topic
        leaves the AdminClient's figures as they are and says so (a warning, not an outage:
        lag and status do not depend on it)."""
        result = cycle.result
        if not result.reachable:
            return  # the cluster is down: the adapter already says so
        result.errors.extend(outcome.errors)
        if not outcome.readable:
            cycle.error(
                "__consumer_offsets",
                "not readable: commit times and classic generations unknown (offsets and "
                "groups from the AdminClient only)",
            )
            return
        if not outcome.caught_up:
            behind = outcome.records_behind
            cycle.error(
                "__consumer_offsets",
                f"catching up: {behind if behind is not None else 'some'} records behind",
            )
        state = self._offsets_reader.state if self._offsets_reader is not None else None
        if state is None:
            return
        result.commits[:] = [_with_commit_time(c, state) for c in result.commits]
        classic = {s.group for s in result.groups if s.protocol_type == "classic"}
        result.groups[:] = [
            _with_generation(s, state) if s.group in classic else s for s in result.groups
        ]
        result.generation_changes.extend(
            _generation_change(e)
            for e in state.drain_events()
            if isinstance(e, RecordedChange) and e.group in classic
        )

    def _committed_offsets(
        self, admin: AdminClient, group_ids: list[str], cycle: _Cycle
    ) -> dict[str, Future]:
        """Every group's committed offsets, as one completed future per group.

        Through the wire client (``collectors.kafka_wire``: one batched OffsetFetch per
        coordinator), not ``AdminClient.list_consumer_group_offsets``: librdkafka 2.16
        crashes the whole process when that call meets NOT_COORDINATOR (librdkafka issue
        #5040, open), which every coordinator move (a broker restart, a rolling upgrade)
        answers, and a monitor must outlive exactly those moments. A cluster whose security
        the wire client does not speak (SASL) keeps the AdminClient call, with that risk
        (README). The futures keep ``_group_outcome`` the same for both paths.
        """
        if self._groups is None:
            return {
                group: _submit(
                    [group],
                    lambda b: admin.list_consumer_group_offsets(
                        [ConsumerGroupTopicPartitions(b[0])], request_timeout=cycle.remaining()
                    ),
                )[group]
                for group in group_ids
            }
        futures: dict[str, Future] = {}
        try:
            answers = self._groups.fetch_committed(group_ids, timeout_s=cycle.remaining())
        except (OSError, ValueError) as exc:
            for group in group_ids:
                futures[group] = Future()
                futures[group].set_exception(exc)
            return futures
        for group in group_ids:
            future: Future = Future()
            answer = answers.get(group)
            if answer is None:
                future.set_exception(TimeoutError("OffsetFetch timed out"))
            elif not answer.ok:
                reason = answer.error_message or answer.error_name
                future.set_exception(KafkaException(KafkaError(answer.error_code, reason)))
            else:
                kept = []
                for po in answer.offsets:
                    if po.error_code:
                        cycle.error(
                            f"group {group} {po.topic}/{po.partition}",
                            f"OffsetFetch: {po.error_name}",
                        )
                    else:
                        kept.append(TopicPartition(po.topic, po.partition, po.offset))
                future.set_result(ConsumerGroupTopicPartitions(group, kept))
            futures[group] = future
        return futures

    def _wire_descriptions(
        self,
        group_ids: list[str],
        listed: dict[str, tuple[str | None, str | None]],
        epochs: dict[str, ConsumerGroupEpochs],
        cycle: _Cycle,
    ) -> dict[str, Future]:
        """Every group's description through the wire client, as completed futures of
        ``GroupSnapshot``: KIP-848 groups from ConsumerGroupDescribe (already read for their
        epochs), the others from one batched DescribeGroups per coordinator. Not the
        AdminClient's describe: a connection dropped under it can abort the process inside
        librdkafka 2.16 (issue #4605), and a broker restart is exactly when a monitor must
        keep running."""
        futures: dict[str, Future] = {}
        classic = [g for g in group_ids if listed[g][1] != "consumer"]
        answers: dict[str, Any] = {}
        if classic and self._groups is not None:
            try:
                answers = self._groups.describe_classic(classic, timeout_s=cycle.remaining())
            except (OSError, ValueError) as exc:
                for group in classic:
                    futures[group] = Future()
                    futures[group].set_exception(exc)
        coordinators = getattr(self._groups, "coordinators", {})
        for group in group_ids:
            if group in futures:
                continue
            future: Future = Future()
            answer = epochs.get(group) if listed[group][1] == "consumer" else answers.get(group)
            if answer is None:
                future.set_exception(TimeoutError("DescribeGroups timed out"))
            elif not answer.ok:
                reason = answer.error_message or answer.error_name
                future.set_exception(KafkaException(KafkaError(answer.error_code, reason)))
            elif isinstance(answer, ConsumerGroupEpochs):
                future.set_result(snapshot_from_epochs(answer, coordinators.get(group)))
            else:
                future.set_result(snapshot_from_classic(answer, coordinators.get(group)))
            futures[group] = future
        return futures

    def _consumer_group_epochs(
        self, groups: list[str], cycle: _Cycle
    ) -> dict[str, ConsumerGroupEpochs]:
        """ConsumerGroupDescribe of the KIP-848 groups; a failure is a warning of the cycle
        (the groups keep everything the AdminClient says, without epochs)."""
        if not groups:
            return {}
        if self._groups is None:
            cycle.error("groups (KIP-848)", f"epochs not read: {self._groups_unavailable}")
            return {}
        try:
            answers = self._groups.describe(groups, timeout_s=cycle.remaining())
        except (OSError, ValueError) as exc:
            cycle.error("groups (KIP-848)", f"ConsumerGroupDescribe: {type(exc).__name__}: {exc}")
            return {}
        for group, answer in answers.items():
            # GROUP_ID_NOT_FOUND: deleted since ListGroups, or no longer a consumer group;
            # the AdminClient's describe says which, as for any group.
            if not answer.ok and answer.error_name != "GROUP_ID_NOT_FOUND":
                message = f": {answer.error_message}" if answer.error_message else ""
                cycle.error(
                    f"group {group}", f"ConsumerGroupDescribe: {answer.error_name}{message}"
                )
        return answers

    def _listed_groups(
        self, future: Future, cycle: _Cycle, admin: AdminClient | None = None
    ) -> dict[str, tuple[str | None, str | None]] | None:
        """Group id -> (state, type) as ListGroups gave them; None when the listing failed.

        A coordinator still loading ``__consumer_offsets`` (the first seconds after a broker
        starts or takes over a partition) answers COORDINATOR_LOAD_IN_PROGRESS for its
        groups: the listing is asked again within the cycle's budget, because a group missing
        from one cycle would read as a gap in its history, not as what it is.
        """
        while True:
            cycle.gather([future])
            if not future.done():
                cycle.error("groups", "ListGroups timed out")
                return None
            exc = future.exception()
            answer = None if exc is not None else future.result()
            transient = (
                _is_transient(exc)
                if exc is not None
                else any(_is_transient(e) for e in answer.errors or [])
            )
            if not (transient and admin is not None and cycle.remaining() > 2 * _RELIST_PAUSE_S):
                break
            time.sleep(_RELIST_PAUSE_S)
            future = admin.list_consumer_groups(request_timeout=cycle.remaining())
        if exc is not None:
            cycle.error("groups", f"ListGroups: {_describe_exc(exc)}")
            return None
        for err in answer.errors or []:
            # Partial: some broker did not answer; the groups it coordinates are missing.
            cycle.error("groups", f"ListGroups: {_describe_exc(err)}")
        return {
            g.group_id: (
                _state_name(getattr(g, "state", None)),
                _type_name(getattr(g, "type", None)),
            )
            for g in answer.valid or []
        }

    def _group_outcome(
        self,
        group: str,
        listed: tuple[str | None, str | None],
        describe_future: Future,
        offsets_future: Future,
        cycle: _Cycle,
    ) -> tuple[GroupSnapshot, list[TopicPartition]] | None:
        """One group's snapshot and committed offsets; None if the group is gone."""
        listed_state, listed_type = listed
        where = f"group {group}"

        tps: list[TopicPartition] = []
        if not offsets_future.done():
            cycle.error(where, "OffsetFetch timed out")
        elif (exc := offsets_future.exception()) is not None:
            if _is_code(exc, KafkaError.GROUP_ID_NOT_FOUND):
                return None
            cycle.error(where, f"OffsetFetch: {_describe_exc(exc)}")
        else:
            for tp in offsets_future.result().topic_partitions or []:
                if tp.error is not None and tp.error.code() != KafkaError.NO_ERROR:
                    cycle.error(f"{where} {tp.topic}/{tp.partition}", f"OffsetFetch: {tp.error}")
                elif tp.offset >= 0:  # -1001: no commit on this partition
                    tps.append(tp)
        committed_topics = {tp.topic for tp in tps}

        if not describe_future.done():
            cycle.error(where, "DescribeGroups timed out")
            desc = None
        elif (exc := describe_future.exception()) is not None:
            if _is_code(exc, KafkaError.GROUP_ID_NOT_FOUND):
                return None
            cycle.error(where, f"DescribeGroups: {_describe_exc(exc)}")
            desc = None
        else:
            desc = describe_future.result()

        if desc is None:
            # Still report the group: its commits are good evidence; membership is unknown.
            snapshot = GroupSnapshot(
                source=Source.KAFKA,
                group=group,
                state=listed_state,
                protocol_type=listed_type,
                members_known=False,
                topics=tuple(sorted(committed_topics)),
            )
        else:
            if isinstance(desc, GroupSnapshot):
                snapshot = dataclasses.replace(
                    desc,
                    protocol_type=listed_type or desc.protocol_type,
                    topics=tuple(sorted(set(desc.topics) | committed_topics)),
                )
            else:
                snapshot = snapshot_from_description(
                    desc, listed_type=listed_type, topics=committed_topics
                )
            if snapshot.state in _GONE_STATES and not tps:
                return None
        return snapshot, tps

    def _log_offsets(
        self, admin: AdminClient, partitions: Sequence[tuple[str, int]], cycle: _Cycle
    ) -> list[PartitionOffsets]:
        """Earliest and latest offset of each partition: two batched ListOffsets calls."""
        tps = [TopicPartition(t, p) for t, p in partitions]
        futures_by_kind = {
            kind: admin.list_offsets({tp: spec for tp in tps}, request_timeout=cycle.remaining())
            for kind, spec in (("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest()))
        }
        cycle.gather(f for futs in futures_by_kind.values() for f in futs.values())
        read_ms = cycle.clock_ms()

        values: dict[str, dict[tuple[str, int], int]] = {"earliest": {}, "latest": {}}
        failures: dict[tuple[str, int], list[str]] = {}
        for kind, futs in futures_by_kind.items():
            for tp, fut in futs.items():
                key = (tp.topic, tp.partition)
                if not fut.done():
                    failures.setdefault(key, []).append(f"ListOffsets {kind}: timed out")
                elif (exc := fut.exception()) is not None:
                    failures.setdefault(key, []).append(f"ListOffsets {kind}: {_describe_exc(exc)}")
                else:
                    values[kind][key] = fut.result().offset
        for (topic, partition), messages in sorted(failures.items()):
            cycle.error(f"{topic}/{partition}", "; ".join(messages))

        out = []
        for key in partitions:
            earliest = values["earliest"].get(key)
            latest = values["latest"].get(key)
            if earliest is None and latest is None:
                continue
            out.append(
                PartitionOffsets(
                    topic=key[0],
                    partition=key[1],
                    earliest=earliest,
                    latest=latest,
                    time_ms=read_ms,
                )
            )
        return out

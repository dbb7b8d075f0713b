"""Faults the lab can switch on and off at run time, and what Lagwatch should show for each.

A scenario is a class with a `name`, a docstring written for the person watching the
dashboard (what they will see and which status/diagnosis SPEC §4 expects), its declared
parameters, and `start(world, **params)` / `stop(world)`. Targets default to the world's
`Roles`, so the same code drives the demo world and the small worlds of the tests.
`SCENARIOS` at the bottom is the one table the control endpoint serves.
"""

from __future__ import annotations

import abc
import inspect
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar

from lab.workload.params import Param, ScenarioError

if TYPE_CHECKING:
    from lab.workload.world import World

log = logging.getLogger(__name__)


def _target(value: str | None, role: str | None, what: str) -> str:
    name = value or role
    if not name:
        raise ScenarioError(f"this world has no default {what}: pass it as a parameter")
    return name


class Scenario(abc.ABC):
    name: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    #: Starting it stops every other scenario; starting any other one ends it.
    exclusive: ClassVar[bool] = False
    #: Started with the world and never stopped: it documents a standing condition.
    always_on: ClassVar[bool] = False

    @abc.abstractmethod
    def start(self, world: World, **params: Any) -> dict[str, Any]:
        """Bring the fault about; returns what was done, for the control endpoint's answer."""

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        """Undo what start did; scenarios whose effect is permanent document so."""

    def running(self) -> bool:
        """False once a scenario with a natural end (an outage drill) has ended."""
        return True

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {
            "name": cls.name,
            "doc": inspect.cleandoc(cls.__doc__ or ""),
            "params": [p.describe() for p in cls.params],
            "exclusive": cls.exclusive,
            "always_on": cls.always_on,
        }


class Healthy(Scenario):
    """Everything back to normal: stops every other scenario and resets rates, processing
    delays, member counts and topologies to the world's description; held readers are
    released and poison cleared as their scenarios stop. Every Kafka group, the ZooKeeper
    consumer and every spout then shows OK in Lagwatch once its window has filled again (the
    quiet topic stays OK throughout). Records deleted by `retention` or given up on by the
    producers during a broker outage stay lost; a `topology-restart` keeps its new topology
    id."""

    name = "healthy"
    exclusive = True

    def start(self, world: World, **params: Any) -> dict[str, Any]:
        return world.reset_to_spec()


class SlowConsumer(Scenario):
    """Slows the processing of every member of a Kafka group (default `orders-processor`;
    any group of either protocol, e.g. `shipments-tracker` for KIP-848) below the produce
    rate. The group keeps committing, but lag grows on every partition: Lagwatch shows WARN
    (lag never decreased over the window) with diagnosis SLOW_CONSUMER, consume rate <
    produce rate and an ETA of "never". By default the delay is chosen so the group consumes
    at half the produce rate. The protocol makes no difference: the members stay, only their
    pace changes."""

    name = "slow-consumer"
    params = (
        Param("group", str, "Kafka group to slow down (default: the world's slow group)"),
        Param(
            "delay_ms",
            float,
            "processing time per message (default: half the produce rate)",
            minimum=0,
        ),
    )

    def start(self, world: World, group: str | None = None, delay_ms: float | None = None) -> dict:
        g = world.group(_target(group, world.spec.roles.slow_group, "slow group"))
        if delay_ms is None:
            rate = world.producers.rate(g.spec.topic)
            if rate <= 0:
                raise ScenarioError(f"nothing is produced to {g.spec.topic}: pass delay_ms")
            delay_ms = 2000.0 * g.spec.members / rate
        self._group = g
        self._previous = g.set_delay_ms(delay_ms)
        consume_rate = g.member_count() * 1000.0 / delay_ms if delay_ms else None
        return {
            "group": g.name,
            "delay_ms": delay_ms,
            "produce_rate": world.producers.rate(g.spec.topic),
            "max_consume_rate": consume_rate,
        }

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._group.set_delay_ms(self._previous)


class DeadConsumer(Scenario):
    """Closes every member of a Kafka group (default `payments-ledger`; any group of either
    protocol, e.g. `invoices-auditor` for KIP-848) while its producer keeps writing. The
    members leave at once (a classic LeaveGroup, or a KIP-848 heartbeat leaving the group)
    and the broker describes the group as Empty. Committed offsets freeze, high watermarks
    keep growing and nobody owns the partitions: Lagwatch shows STOP with diagnosis
    DEAD_CONSUMER once the time since the last commit exceeds the window's span. Stop brings
    the members back; they resume from the committed offsets and the lag drains."""

    name = "dead-consumer"
    params = (Param("group", str, "Kafka group to kill (default: the world's dead group)"),)

    def start(self, world: World, group: str | None = None) -> dict:
        g = world.group(_target(group, world.spec.roles.dead_group, "dead group"))
        self._group = g
        closed = g.member_count()
        g.set_members(0)
        return {"group": g.name, "members_closed": closed}

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._group.set_members(self._group.spec.members)


class PoisonMessage(Scenario):
    """Makes one message of one partition fail every time it is processed, like a record
    the code cannot parse; by default in the Storm spout of `orders-enricher`, partition 0,
    or with `group` in a Kafka group of either protocol. By default the poison is the
    partition's high watermark when the scenario starts, X, i.e. the next message produced.
    The spout keeps re-emitting and failing it, so the partition's committed offset in
    ZooKeeper stays at X (the znode is no longer rewritten, its mtime ages) while the failed
    count rises: Lagwatch shows STALL (not STOP: the spout is alive) with diagnosis
    POISON_MESSAGE(X). A Kafka group's member retries the record (seeks back to it) every
    half second instead of skipping it, so the partition's committed offset stays at X
    while its owner stays in the group: Lagwatch shows STALL once the silence exceeds the
    window's span (no POISON_MESSAGE: a group reports no failed count to tell it by).
    Other partitions keep moving."""

    name = "poison-message"
    params = (
        Param("topology", str, "topology whose spout gets the poison (default: world's)"),
        Param("group", str, "Kafka group whose members get the poison instead of a spout"),
        Param("partition", int, "partition of the poison message", default=0, minimum=0),
        Param("offset", int, "offset of the poison message (default: next produced)", minimum=0),
    )

    def start(
        self,
        world: World,
        topology: str | None = None,
        group: str | None = None,
        partition: int = 0,
        offset: int | None = None,
    ) -> dict:
        if topology and group:
            raise ScenarioError("pass either topology or group, not both")
        if group:
            g = world.group(group)
            # Also checks the partition. The next message to be produced is certainly not
            # processed yet, so it will fail.
            high = world.high_watermark(g.spec.topic, partition)
            offset = high if offset is None else offset
            g.set_poison(partition, offset)
            self._undo = g.clear_poison
            return {"group": g.name, "partition": partition, "offset": offset}
        name = _target(topology, world.spec.roles.poison_topology, "poison topology")
        if offset is None:
            # The next message to be produced: certainly not fetched yet, so it will fail.
            offset = world.high_watermark(world.topologies.spec(name).topic, partition)
        world.topologies.set_poison(name, partition, offset)
        self._undo = lambda: world.topologies.clear_poison(name)
        return {"topology": name, "partition": partition, "offset": offset}

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._undo()


class PendingLeak(Scenario):
    """Restarts a spout (default `clicks-sessionizer`, same topology id) as if a bolt that
    never acks had been deployed, with a small maxOffsetBehind and a large fetch: every
    tuple times out, and a failure more than maxOffsetBehind behind the emitted offset is
    silently never retried, so it stays in `_pending` forever. The spout keeps fetching and
    emitting; `pending` grows without bound and the committed offset in ZooKeeper freezes at
    the oldest pending offset. Lagwatch shows STALL with diagnosis PENDING_LEAK (pending
    climbing while the commit is frozen). Failures that are not far enough behind are
    retried instead (and, with nothing ever acked, end in "Too many tuple failures" worker
    restarts), hence the small maxOffsetBehind. Stop restarts the spout with its normal
    settings; it resumes from the frozen offset, replaying what was never acked."""

    name = "pending-leak"
    params = (
        Param("topology", str, "topology to restart leaky (default: the world's)"),
        Param("max_offset_behind", int, "SpoutConfig.maxOffsetBehind", default=2, minimum=0),
        Param("fetch_max_messages", int, "messages per fetch", default=500, minimum=1),
        Param("fail_share", float, "share of tuples failed", default=0.0, minimum=0, maximum=1),
        Param("timeout_share", float, "share never acked", default=1.0, minimum=0, maximum=1),
        Param(
            "message_timeout_s",
            float,
            "topology.message.timeout.secs",
            default=5.0,
            minimum=0.1,
        ),
    )

    def start(
        self,
        world: World,
        topology: str | None = None,
        max_offset_behind: int = 2,
        fetch_max_messages: int = 500,
        fail_share: float = 0.0,
        timeout_share: float = 1.0,
        message_timeout_s: float = 5.0,
    ) -> dict:
        if fail_share + timeout_share > 1:
            raise ScenarioError("fail_share + timeout_share must be <= 1")
        self._topology = _target(topology, world.spec.roles.leak_topology, "leak topology")
        topology_id = world.topologies.restart(
            self._topology,
            max_offset_behind=max_offset_behind,
            fetch_max_messages=fetch_max_messages,
            message_timeout_s=message_timeout_s,
            fail_share=fail_share,
            timeout_share=timeout_share,
        )
        return {"topology": self._topology, "topology_id": topology_id}

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        world.topologies.restart(self._topology, reset=True)


class Backpressure(Scenario):
    """Restarts a spout (default `audit-spout` of `audit-archiver`, same topology id) behind
    a slow bolt: `process_ms` per tuple on one executor, slower than the topic is produced,
    with `topology.max.spout.pending` set to `max_spout_pending`. The bolt acks every tuple,
    just late: the spout's tuples in flight sit at the cap, so `nextTuple` is not called
    until an ack frees a slot, the spout emits only as fast as the bolt acks, and the lag
    climbs on every partition while the committed offsets keep moving. Fetches are small
    (`fetch_max_messages`, 1): KafkaSpout keeps emitting from one partition while its last
    fetch has messages left, so with large fetches a throttled spout serves its partitions
    in turns of a whole fetch each, and the others' commits stand still meanwhile (STALL,
    then catching up, in turn); small fetches spread the throttled pace evenly. The spout pushes its
    in-flight count and its cap (docs/INGEST.md): Lagwatch shows WARN (lag rising) with
    diagnoses SLOW_CONSUMER and BACKPRESSURE (pending at max.spout.pending in most of the
    window's samples). The other spouts, not at their cap, show no BACKPRESSURE. Stop
    restarts the spout with its normal settings; the backlog drains."""

    name = "backpressure"
    params = (
        Param("topology", str, "topology whose bolt slows down (default: the world's)"),
        Param("process_ms", float, "the bolt's time per tuple", default=500.0, minimum=1),
        Param("max_spout_pending", int, "topology.max.spout.pending", default=20, minimum=1),
        Param("fetch_max_messages", int, "messages per fetch", default=1, minimum=1),
    )

    def start(
        self,
        world: World,
        topology: str | None = None,
        process_ms: float = 500.0,
        max_spout_pending: int = 20,
        fetch_max_messages: int = 1,
    ) -> dict:
        name = _target(topology, world.spec.roles.backpressure_topology, "backpressure topology")
        rate = world.producers.rate(world.topologies.spec(name).topic)
        # A tuple waits for the ones ahead of it: past the message timeout it would fail, and
        # the spout would show failures, not back-pressure.
        wait_s = max_spout_pending * process_ms / 1000.0
        if wait_s >= 30.0:
            raise ScenarioError(
                f"max_spout_pending x process_ms = {wait_s:.0f} s: tuples would time out (30 s)"
            )
        self._topology = name
        topology_id = world.topologies.restart(
            name,
            process_ms=process_ms,
            max_spout_pending=max_spout_pending,
            fetch_max_messages=fetch_max_messages,
        )
        return {
            "topology": name,
            "topology_id": topology_id,
            "max_spout_pending": max_spout_pending,
            "max_ack_rate": 1000.0 / process_ms,
            "produce_rate": rate,
        }

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        world.topologies.restart(self._topology, reset=True)


class RebalanceStorm(Scenario):
    """A member of a Kafka group (default `clicks-aggregator`; any group of either protocol,
    e.g. `shipments-tracker` for KIP-848) joins, then leaves, then joins again, every
    `period_s` seconds, as a crash-looping pod would. Each change is a rebalance: with the
    classic protocol the members revoke and rejoin (all partitions with the eager assignors,
    only the moving ones with cooperative-sticky) and commits pause meanwhile; with KIP-848
    the broker bumps the group epoch and moves only the partitions that change owner, the
    others never stop. Lagwatch shows REBALANCE_STORM (more than K rebalances in the window;
    REBALANCING during one), a busy rebalance timeline (members joining and leaving,
    assignments moving) and, through the pushed librdkafka statistics, a rising
    `rebalance_cnt`. Stop restores the described member count."""

    name = "rebalance-storm"
    params = (
        Param("group", str, "Kafka group to churn (default: the world's storm group)"),
        Param("period_s", float, "seconds between membership changes", default=8.0, minimum=0.5),
    )

    def start(self, world: World, group: str | None = None, period_s: float = 8.0) -> dict:
        self._group = world.group(_target(group, world.spec.roles.storm_group, "storm group"))
        self._stop = threading.Event()
        self.changes = 0
        self._thread = threading.Thread(
            target=self._churn, args=(period_s,), name="rebalance-storm", daemon=True
        )
        self._thread.start()
        return {"group": self._group.name, "period_s": period_s}

    def _churn(self, period_s: float) -> None:
        base = self._group.spec.members
        while not self._stop.wait(period_s):
            if self._group.member_count() > base:
                self._group.remove_member()
            else:
                self._group.add_member()
            self.changes += 1

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._stop.set()
        self._thread.join(timeout=30)
        self._group.set_members(self._group.spec.members)


class Retention(Scenario):
    """Retention deletes data that readers of a topic (default `audit`) had not read yet.
    The Kafka groups and ZooKeeper consumers reading the topic are held (they stay members,
    owning their partitions, but fetch and commit nothing) and its Storm spouts are stopped
    (a worker down); `burst` records are written, then DeleteRecords moves each partition's
    log start to the middle of what was written since, past every held reader's committed
    offset. The spouts start again at once (same topology id): their stored offset is out of
    range, and with useStartOffsetTimeIfOffsetOutOfRange they jump to the latest offset,
    skipping what the log still holds: Lagwatch shows SKIPPED_DATA with that count. The held
    readers' committed offsets stay below the log start for as long as the scenario runs:
    Lagwatch shows ERR with OUT_OF_RANGE. Stop releases them: their fetch is answered
    OFFSET_OUT_OF_RANGE, they reset to the log start (auto.offset.reset=earliest) and
    commit from there. The deleted records are gone for good."""

    name = "retention"
    params = (
        Param("topic", str, "topic whose log start moves (default: the world's retention topic)"),
        Param(
            "burst",
            int,
            "records written while the readers are held (at least 2 a partition); the older "
            "half of each partition's share is deleted with everything before it",
            default=30,
            minimum=1,
        ),
    )

    def start(self, world: World, topic: str | None = None, burst: int = 30) -> dict:
        name = _target(topic, world.spec.roles.retention_topic, "retention topic")
        partitions = world.topic_spec(name).partitions
        if burst < 2 * partitions:
            raise ScenarioError(
                f"burst must be at least {2 * partitions} for {name}: two records a partition, "
                "one deleted before the readers' offsets are reached, one left to skip"
            )
        groups = [world.group(g) for g in world.groups_on(name)]
        legacy = [world.zk_consumers[z] for z in world.zk_consumers_on(name)]
        spouts = world.topologies.on_topic(name)
        self._release = [*groups, *legacy]
        # Readers first: from here on nothing of theirs is committed past the log end as it
        # is now, so the deletion below certainly passes every committed offset.
        for reader in self._release:
            reader.hold()
        for topology in spouts:
            world.topologies.stop(topology)
        ends = {p: hi for p, (_lo, hi) in world.watermarks(name).items()}
        world.producers.produce_now(name, burst)
        after = {p: hi for p, (_lo, hi) in world.watermarks(name).items()}
        before = {p: ends[p] + (after[p] - ends[p] + 1) // 2 for p in after}
        starts = world.delete_records(name, before)
        restarted = {t: world.topologies.start_described(t) for t in spouts}
        return {
            "topic": name,
            "burst": burst,
            "log_start": starts,
            "log_end": after,
            "held": sorted(g.name for g in groups) + sorted(z.spec.group for z in legacy),
            "restarted": restarted,
        }

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        for reader in self._release:
            reader.release()


class RetentionRisk(Scenario):
    """A consumer falls so far behind that retention is about to delete what it has not
    read. The topic of a Kafka group (default `invoices-auditor` on `invoices`, a topic of its
    own) gets a short `retention.ms` (default 3 minutes, IncrementalAlterConfigs) and the group
    is held (members stay, fetch and commit nothing) while its producer keeps writing. The
    time lag grows by a second a second; the Kafka source reads the new `retention.ms` within
    its refresh interval (5 minutes; at once for a topic it never read), and once less than
    the cluster's `retention_risk_s` is left (the lab sets 120 s) every partition of the
    group carries RETENTION_RISK with the seconds left, on the partition page, in
    `/api/v1` and in `/metrics` (`lagwatch_partition_retention_seconds_left`). Nothing is
    deleted while it runs: the broker deletes whole segments and the lab's active segments
    never roll in minutes. Stop puts the broker's default retention back and releases the
    group, which drains its lag; the forecast then goes back to a week."""

    name = "retention-risk"
    params = (
        Param("group", str, "Kafka group to hold (default: the world's retention-risk group)"),
        Param(
            "retention_ms",
            int,
            "retention.ms given to the group's topic while the scenario runs",
            default=180_000,
            minimum=60_000,
        ),
    )

    def start(self, world: World, group: str | None = None, retention_ms: int = 180_000) -> dict:
        g = world.group(_target(group, world.spec.roles.retention_risk_group,
                                "retention-risk group"))  # fmt: skip
        topic = g.spec.topic
        previous, default = world.admin.retention_ms(topic)
        self._group, self._topic = g, topic
        self._previous = None if default else previous
        world.admin.set_retention_ms(topic, retention_ms)
        g.hold()
        return {"group": g.name, "topic": topic, "retention_ms": retention_ms,
                "previous_retention_ms": previous}  # fmt: skip

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        world.admin.set_retention_ms(self._topic, self._previous)
        self._group.release()


class TopologyRestart(Scenario):
    """Kills a topology (default `orders-enricher`) and submits it again: a new topology
    instance id, same spout id. The spout's znodes then carry the new `topology.id`; with
    `force_from_start` the new instance ignores the stored offsets and starts from the
    earliest offset (a rewind), otherwise it continues from them. Lagwatch shows the event
    with diagnosis TOPOLOGY_RESTARTED on that spout path (and REWIND with force_from_start).
    The restart is an event: stop only ends the scenario, the new instance keeps running."""

    name = "topology-restart"
    params = (
        Param("topology", str, "topology to restart (default: the world's)"),
        Param("force_from_start", bool, "SpoutConfig.forceFromStart", default=False),
    )

    def start(
        self, world: World, topology: str | None = None, force_from_start: bool = False
    ) -> dict:
        name = _target(topology, world.spec.roles.restart_topology, "restart topology")
        old = world.topologies.topology_id(name)
        settings = {"force_from_start": True} if force_from_start else {}
        new = world.topologies.restart(name, new_id=True, **settings)
        return {"topology": name, "old_topology_id": old, "new_topology_id": new}


class SpoutIdCollision(Scenario):
    """Submits a second topology that reuses a running topology's spout id (default
    `orders-spout` of `orders-enricher`) under the same zkRoot, but reads another topic
    (default `payments`). Both spouts commit to `<zkRoot>/<spoutId>/partition_N` for the
    partitions the topics share, so the stored `topic` (and offset) alternates between the
    two. Lagwatch shows diagnosis SPOUT_ID_COLLISION on that path, and offsets that jump
    back and forth (REWIND). Stop kills the second topology; the path then settles."""

    name = "spout-id-collision"
    params = (
        Param("topology", str, "topology whose spout id is reused (default: the world's)"),
        Param("topic", str, "topic the second topology reads (default: the world's)"),
    )

    def start(self, world: World, topology: str | None = None, topic: str | None = None) -> dict:
        victim = _target(topology, world.spec.roles.collision_topology, "collision topology")
        other_topic = _target(topic, world.spec.roles.collision_topic, "collision topic")
        self._name = world.topologies.start_collider(victim, other_topic)
        return {"topology": self._name, "reuses_spout_of": victim, "topic": other_topic}

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        world.topologies.remove(self._name)


class QuietTopic(Scenario):
    """Always on. Nothing is ever produced to the quiet topic (default `quiet`); its
    consumer group (`quiet-reader`) committed the start offset once and never again. Lag is
    0 however old the last commit: Lagwatch must show OK, never STOP (Burrow would call it
    stopped). Starting it again re-checks the condition and forces the topic's rate to 0."""

    name = "quiet-topic"
    always_on = True
    params = (
        Param("topic", str, "the quiet topic (default: the world's)"),
        Param("group", str, "its consumer group (default: the world's)"),
    )

    def start(self, world: World, topic: str | None = None, group: str | None = None) -> dict:
        name = topic or world.spec.roles.quiet_topic
        if name is None:
            return {"topic": None}
        world.producers.set_rate(name, 0)
        return {"topic": name, "group": group or world.spec.roles.quiet_group}


class FetchPurgatory(Scenario):
    """Starts `consumers` (default 3) plain consumers of the quiet topic (default `quiet`)
    with `fetch.min.bytes` 1 MiB and `fetch.wait.max.ms` 30000 (DOMAIN §5). Nothing is
    produced there, so each fetch they send waits in the broker's fetch purgatory until it
    expires 30 s later, and the next one takes its place at once. Lagwatch shows it on the
    cluster page (`/clusters/lab/`, Brokers: the fetch purgatory up by `consumers` over what
    the world's other clients keep parked for up to 500 ms each), in
    `/api/v1/clusters/lab/` (`brokers[].fetch_purgatory`), in `/metrics`
    (`lagwatch_broker_purgatory_size{operation="fetch"}`) and in `lagwatch_status --json`
    (`brokers`), with fetch expirations at about `consumers`/30 per second once two cycles
    have been scraped. No group status changes: the consumers are assigned their partitions
    by hand (no group membership) and never commit. Stop closes them: the fetch purgatory
    goes back where it was once their last fetches expire (within 30 s; Kafka's own
    `PurgatorySize`, shown as "watched" in the API, keeps completed fetches until its next
    purge)."""

    name = "fetch-purgatory"
    params = (
        Param("consumers", int, "how many waiting consumers", default=3, minimum=1),
        Param("topic", str, "the quiet topic (default: the world's)"),
    )
    MIN_BYTES = 1024 * 1024
    MAX_WAIT_MS = 30_000

    def start(self, world: World, consumers: int = 3, topic: str | None = None) -> dict:
        from confluent_kafka import OFFSET_END, Consumer, TopicPartition

        from lab.workload.clients import base_config

        name = _target(topic, world.spec.roles.quiet_topic, "quiet topic")
        partitions = world.topic_spec(name).partitions
        self._stop = threading.Event()
        self._clients: list[Consumer] = []
        for i in range(consumers):
            conf = {
                **base_config(world.bootstrap, f"fetch-purgatory-{i}"),
                "group.id": f"lagwatch-lab-fetch-purgatory-{i}",
                "enable.auto.commit": False,
                "fetch.min.bytes": self.MIN_BYTES,
                "fetch.wait.max.ms": self.MAX_WAIT_MS,
                # librdkafka refuses a socket timeout below the fetch wait.
                "socket.timeout.ms": self.MAX_WAIT_MS + 30_000,
            }
            client = Consumer(conf)
            client.assign([TopicPartition(name, p, OFFSET_END) for p in range(partitions)])
            self._clients.append(client)
        self._thread = threading.Thread(target=self._poll, name="fetch-purgatory", daemon=True)
        self._thread.start()
        return {"topic": name, "consumers": consumers, "fetch.min.bytes": self.MIN_BYTES,
                "fetch.wait.max.ms": self.MAX_WAIT_MS}  # fmt: skip

    def _poll(self) -> None:
        # poll() only hands over messages: librdkafka's fetcher thread keeps one fetch
        # outstanding per broker whatever the poll rate; polling keeps the clients serviced.
        while not self._stop.is_set():
            for client in self._clients:
                client.poll(0.1)

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._stop.set()
        self._thread.join(timeout=30)
        for client in self._clients:
            client.close()
        self._clients = []


class SourceOutage(Scenario):
    """Stops ZooKeeper or the broker for `seconds`, then starts it again on the same port
    (through the lab stack). During the outage Lagwatch must show SOURCE_UNREACHABLE for
    what that source feeds, keep the last known figures marked stale, and fire no stuck
    alert. The workload rides through: clients reconnect, ZooKeeper members register again.
    Both keep their data: after a broker outage the topics, their records and the groups'
    committed offsets are all there, Kafka groups of both protocols carry on from their
    committed offsets, spouts and the ZooKeeper consumer from theirs; only records the
    producers gave up on during the outage (after 30 s) are missing."""

    name = "source-outage"
    params = (
        Param(
            "service",
            str,
            "service to stop",
            required=True,
            choices=("zookeeper", "kafka"),
        ),
        Param("seconds", float, "outage length", default=30.0, minimum=0),
    )

    def start(self, world: World, service: str = "kafka", seconds: float = 30.0) -> dict:
        if world.run_dir is None:
            raise ScenarioError("the workload was started without --run-dir: no stack to drive")
        from lab.stack import Stack, StackError  # only this scenario needs the stack

        self._service = service
        self._cancel = threading.Event()
        self._done = threading.Event()
        self.restarted_at: float | None = None
        try:
            self._stack = Stack.load(world.run_dir)
            self._stack.stop_service(service)
        except StackError as exc:
            raise ScenarioError(f"cannot stop {service}: {exc}") from exc
        self.stopped_at = time.time()
        log.info("source-outage: %s stopped for %.0fs", service, seconds)
        self._thread = threading.Thread(
            target=self._restart_after, args=(seconds,), name="source-outage", daemon=True
        )
        self._thread.start()
        return {"service": service, "seconds": seconds, "stopped_at": self.stopped_at}

    def _restart_after(self, seconds: float) -> None:
        self._cancel.wait(seconds)
        try:
            self._stack.start_service(self._service)
            self.restarted_at = time.time()
            log.info("source-outage: %s started again", self._service)
        except Exception:  # noqa: BLE001 - a drill must not kill the workload
            log.exception("source-outage: restarting %s failed", self._service)
        finally:
            self._done.set()

    def running(self) -> bool:
        return not self._done.is_set()

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._cancel.set()
        self._thread.join(timeout=60)


class ProducerExpiry(Scenario):
    """Pauses the broker (SIGSTOP, then SIGCONT: lab only) longer than a small
    `delivery.timeout.ms` while a short-lived producer of its own (`lab-expiry-producer`)
    writes `count` records to `topic`, so every one of them expires before the broker
    acknowledges it. The producer counts its delivery reports with docs/INGEST.md's snippet
    and pushes them with its statistics: Lagwatch shows "N records expired before reaching the
    broker: no consumer will ever see them" on the producers page and on the topic's groups,
    the diagnosis PRODUCER_EXPIRY on the topic, and the count in the API and /metrics; lag
    alone shows nothing (the records never reached the log). The result states the records
    produced during the pause and the `_MSG_TIMED_OUT` reports the producer saw. Pausing the
    broker stalls every client of the stack for the pause: run it where that does no harm."""

    name = "producer-expiry"
    params = (
        Param("topic", str, "topic to write (default: the world's expiry topic)"),
        Param("count", int, "records produced while the broker is paused", default=50, minimum=1),
        Param("timeout_ms", int, "delivery.timeout.ms", default=3000, minimum=1000),
    )
    CLIENT_ID = "lab-expiry-producer"
    WARMUP = 20  # delivered before the pause: the producer knows the topic's leader
    AFTER = 10  # delivered after it: the broker is back

    def start(
        self, world: World, topic: str | None = None, count: int = 50, timeout_ms: int = 3000
    ) -> dict:
        if world.run_dir is None:
            raise ScenarioError("the workload was started without --run-dir: no broker to pause")
        from lab.stack import Stack, StackError  # only the outage scenarios need the stack

        name = _target(topic, world.spec.roles.expiry_topic, "expiry topic")
        partitions = world.spec.topic(name).partitions
        run = _ExpiryRun(world, name, partitions, timeout_ms)
        try:
            run.produce(self.WARMUP)
            if run.flush(60) or run.delivered < self.WARMUP:
                raise ScenarioError(f"the warm-up records were not delivered: {run.summary()}")
            stack = Stack.load(world.run_dir)
            paused_at = time.monotonic()
            stack.pause_service("kafka")
            try:
                run.produce(count)
                # Every record produced during the pause gets its delivery report: an expiry.
                run.wait_reports(self.WARMUP + count, timeout_s=timeout_ms / 1000 * 5 + 30)
            finally:
                stack.pause_service("kafka", paused=False)
            paused_s = time.monotonic() - paused_at
            run.produce(self.AFTER)
            run.flush(120)
            run.push_final(timeout_s=30)
        except StackError as exc:
            raise ScenarioError(f"cannot pause the broker: {exc}") from exc
        finally:
            run.close()
        log.info("producer-expiry: %s", run.summary())
        return {
            "topic": name,
            "client_id": self.CLIENT_ID,
            "timeout_ms": timeout_ms,
            "paused_s": round(paused_s, 1),
            "produced_during_pause": count,
            **run.summary(),
        }

    def running(self) -> bool:
        return False  # done when start returns: the expired records stay counted


class _ExpiryRun:
    """The producer-expiry scenario's own producer: its delivery reports counted twice, by the
    snippet that pushes them (``DeliveryCounts``) and here, so the test compares the ingest's
    figure with what the producer saw."""

    def __init__(self, world: World, topic: str, partitions: int, timeout_ms: int) -> None:
        from confluent_kafka import KafkaError, Producer

        from lab.workload.clients import base_config
        from lab.workload.delivery_counts import DeliveryCounts

        self._timed_out_code = KafkaError._MSG_TIMED_OUT
        self.topic = topic
        self.partitions = partitions
        self.deliveries = DeliveryCounts()
        self.reports = self.delivered = self.timed_out = self.failed_other = 0
        self.sent = 0
        self._pushed_after: int | None = None
        self._stats_seen = 0
        self._lock = threading.Lock()
        sink = world.stats_sink
        conf = base_config(world.bootstrap, ProducerExpiry.CLIENT_ID)
        conf.update(
            {
                "message.timeout.ms": timeout_ms,  # librdkafka's name for delivery.timeout.ms
                "linger.ms": 5,
                "statistics.interval.ms": 1000,
            }
        )
        if sink is not None:
            conf["stats_cb"] = lambda stats: self._stats(sink, stats)
        self.pushing = sink is not None
        self._producer = Producer(conf)

    def _stats(self, sink: Any, stats: str) -> None:
        sink(self.deliveries.attach(stats))
        with self._lock:
            self._stats_seen += 1

    def _report(self, err: Any, msg: Any) -> None:
        self.deliveries.on_delivery(err, msg)
        with self._lock:
            self.reports += 1
            if err is None:
                self.delivered += 1
            elif err.code() == self._timed_out_code:
                self.timed_out += 1
            else:
                self.failed_other += 1

    def produce(self, count: int) -> None:
        for _ in range(count):
            value = f'{{"seq": {self.sent}, "ts_ms": {int(time.time() * 1000)}}}'.encode()
            self._producer.produce(
                self.topic, value=value, partition=self.sent % self.partitions,
                on_delivery=self._report,
            )  # fmt: skip
            self.sent += 1
        self._producer.poll(0)

    def flush(self, timeout_s: float) -> int:
        return self._producer.flush(timeout_s)

    def wait_reports(self, total: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.reports < total:
            if time.monotonic() > deadline:
                raise ScenarioError(f"delivery reports missing after {timeout_s:.0f}s: "
                                    f"{self.summary()}")  # fmt: skip
            self._producer.poll(0.2)

    def push_final(self, timeout_s: float) -> None:
        """Poll until librdkafka has handed over two statistics documents after the last
        delivery report (the first may have been cut before it), each pushed with the counts."""
        if not self.pushing:
            return
        with self._lock:
            wanted = self._stats_seen + 2
        deadline = time.monotonic() + timeout_s
        while self._stats_seen < wanted and time.monotonic() < deadline:
            self._producer.poll(0.2)

    def summary(self) -> dict[str, int]:
        with self._lock:
            return {
                "sent": self.sent,
                "delivered": self.delivered,
                "timed_out": self.timed_out,
                "failed_other": self.failed_other,
            }

    def close(self) -> None:
        self._producer.flush(5)


SCENARIOS: dict[str, type[Scenario]] = {
    cls.name: cls
    for cls in (
        Healthy,
        SlowConsumer,
        DeadConsumer,
        PoisonMessage,
        PendingLeak,
        Backpressure,
        RebalanceStorm,
        Retention,
        RetentionRisk,
        TopologyRestart,
        SpoutIdCollision,
        QuietTopic,
        FetchPurgatory,
        SourceOutage,
        ProducerExpiry,
    )
}

"""Faults of Kafka and ZooKeeper consumers: healthy, slow, dead, a poison message, a
rebalance storm, a quiet topic."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from lab.workload.params import Param, ScenarioError
from lab.workload.scenarios.base import Scenario, target

if TYPE_CHECKING:
    from lab.workload.world import World


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
    pace changes. A share group (KIP-932) slows the same way: its start offset keeps moving,
    its lag (the records not yet acknowledged) grows, and Lagwatch shows WARN."""

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
        g = world.group(target(group, world.spec.roles.slow_group, "slow group"))
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
    the members back; they resume from the committed offsets and the lag drains. A share
    group's members leave alike: its start offset freezes with nobody holding a partition,
    and Lagwatch shows STOP with DEAD_CONSUMER."""

    name = "dead-consumer"
    params = (Param("group", str, "Kafka group to kill (default: the world's dead group)"),)

    def start(self, world: World, group: str | None = None) -> dict:
        g = world.group(target(group, world.spec.roles.dead_group, "dead group"))
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
    Other partitions keep moving. A share group's members (KIP-932) work on the record
    `hold_s` seconds at each delivery, then acknowledge it with `ack`: `release` (delivered
    again, the partition's start offset held at X, until the group's delivery count limit,
    `delivery_limit` if given, archives it: STALL while held) or `reject` (archived at
    once); either way the record ends archived in the share-group state."""

    name = "poison-message"
    params = (
        Param("topology", str, "topology whose spout gets the poison (default: world's)"),
        Param("group", str, "Kafka group whose members get the poison instead of a spout"),
        Param("partition", int, "partition of the poison message", default=0, minimum=0),
        Param("offset", int, "offset of the poison message (default: next produced)", minimum=0),
        Param("ack", str, "a share group's answer to it", default="release",
              choices=("release", "reject")),
        Param("hold_s", float, "a share group's time on it per delivery", default=0.0,
              minimum=0, maximum=25),
        Param("delivery_limit", int, "a share group's share.delivery.count.limit",
              minimum=2, maximum=10),
    )  # fmt: skip

    def start(
        self,
        world: World,
        topology: str | None = None,
        group: str | None = None,
        partition: int = 0,
        offset: int | None = None,
        ack: str = "release",
        hold_s: float = 0.0,
        delivery_limit: int | None = None,
    ) -> dict:
        if topology and group:
            raise ScenarioError("pass either topology or group, not both")
        if group:
            g = world.group(group)
            # Also checks the partition. The next message to be produced is certainly not
            # processed yet, so it will fail.
            high = world.high_watermark(g.spec.topic, partition)
            offset = high if offset is None else offset
            if group in world.share_groups:
                share = world.share_groups[group]
                if delivery_limit is not None:
                    share.set_config("share.delivery.count.limit", str(delivery_limit))
                share.set_poison(partition, offset, ack=ack, hold_s=hold_s)
                self._undo = share.clear_poison
                return {"group": group, "partition": partition, "offset": offset, "ack": ack,
                        "hold_s": hold_s, "delivery_limit": delivery_limit}  # fmt: skip
            g.set_poison(partition, offset)
            self._undo = g.clear_poison
            return {"group": g.name, "partition": partition, "offset": offset}
        name = target(topology, world.spec.roles.poison_topology, "poison topology")
        if offset is None:
            # The next message to be produced: certainly not fetched yet, so it will fail.
            offset = world.high_watermark(world.topologies.spec(name).topic, partition)
        world.topologies.set_poison(name, partition, offset)
        self._undo = lambda: world.topologies.clear_poison(name)
        return {"topology": name, "partition": partition, "offset": offset}

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        self._undo()


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
        self._group = world.group(target(group, world.spec.roles.storm_group, "storm group"))
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

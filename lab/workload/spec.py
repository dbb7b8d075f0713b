"""Declarative description of a simulated world: what exists, not how it runs.

Kept apart from the runtime (`world.py`) so that the demo world reads like a table and tests
can describe a small world of their own with unique names and the same classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

# Kafka runs two group protocols side by side (Kafka 4). With the classic one the group's
# leader, a client, computes the assignment with a client-side assignor; with KIP-848's
# consumer protocol the broker computes it with a server-side assignor, and librdkafka refuses
# the client-side settings (partition.assignment.strategy, session.timeout.ms,
# heartbeat.interval.ms) for such groups. Which assignor names are valid depends on the
# protocol.
CLASSIC = "classic"
CONSUMER = "consumer"
ASSIGNORS: dict[str, tuple[str, ...]] = {
    CLASSIC: ("range", "roundrobin", "cooperative-sticky"),
    CONSUMER: ("uniform", "range"),
}


@dataclass(frozen=True)
class TopicSpec:
    """A topic and the rate its producer writes to it (messages/s over all partitions)."""

    name: str
    partitions: int
    rate: float = 0.0


@dataclass(frozen=True)
class GroupSpec:
    """A Kafka consumer group: `members` threads, each a real confluent-kafka consumer.

    `protocol` is librdkafka's `group.protocol`: "classic" (JoinGroup/SyncGroup, the
    assignor is the client's `partition.assignment.strategy`) or "consumer" (KIP-848, the
    assignor is the broker's, named by `group.remote.assignor`).
    """

    name: str
    topic: str
    members: int
    assignor: str = "range"
    delay_ms: float = 0.0
    protocol: str = CLASSIC

    def __post_init__(self) -> None:
        if self.protocol not in ASSIGNORS:
            raise ValueError(f"protocol must be one of {tuple(ASSIGNORS)}, not {self.protocol!r}")
        valid = ASSIGNORS[self.protocol]
        if self.assignor not in valid:
            raise ValueError(
                f"assignor of a {self.protocol!r} group must be one of {valid}, "
                f"not {self.assignor!r}"
            )


@dataclass(frozen=True)
class ShareGroupSpec:
    """A Kafka share group (KIP-932, a queue): `members` threads, each a real share consumer
    acknowledging every record itself (``lab/workload/share_groups.py``)."""

    name: str
    topic: str
    members: int
    delay_ms: float = 0.0


@dataclass(frozen=True)
class ZkConsumerSpec:
    """A pre-0.9 high-level consumer that keeps membership and offsets in ZooKeeper."""

    group: str
    topic: str
    commit_interval_s: float = 1.0


@dataclass(frozen=True)
class TopologySpec:
    """A Storm topology with one KafkaSpout; `spout` holds extra SpoutConfig settings."""

    name: str
    spout_id: str
    topic: str
    zk_root: str = "/kafka-spout"
    spout: dict[str, object] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Roles:
    """Which part of the world each scenario acts on by default (a scenario param overrides).

    Naming the targets here, instead of hard-coding demo names in the scenarios, lets a test
    build a small world with uuid names and run the very same scenario code against it.
    """

    slow_group: str | None = None
    dead_group: str | None = None
    storm_group: str | None = None
    poison_topology: str | None = None
    leak_topology: str | None = None
    backpressure_topology: str | None = None
    restart_topology: str | None = None
    collision_topology: str | None = None
    collision_topic: str | None = None
    retention_topic: str | None = None
    retention_risk_group: str | None = None
    quiet_topic: str | None = None
    quiet_group: str | None = None
    expiry_topic: str | None = None


@dataclass(frozen=True)
class WorldSpec:
    topics: tuple[TopicSpec, ...] = ()
    groups: tuple[GroupSpec, ...] = ()
    zk_consumers: tuple[ZkConsumerSpec, ...] = ()
    topologies: tuple[TopologySpec, ...] = ()
    roles: Roles = Roles()
    share_groups: tuple[ShareGroupSpec, ...] = ()

    def topic(self, name: str) -> TopicSpec:
        for spec in self.topics:
            if spec.name == name:
                return spec
        raise KeyError(f"no topic {name!r} in this world")

    def topology(self, name: str) -> TopologySpec:
        for spec in self.topologies:
            if spec.name == name:
                return spec
        raise KeyError(f"no topology {name!r} in this world")

    def prefixed(self, prefix: str) -> WorldSpec:
        """The same world with every name prefixed, so two workloads can share one stack."""
        if not prefix:
            return self

        def p(name: str | None) -> str | None:
            return None if name is None else prefix + name

        roles = Roles(**{k: p(v) for k, v in vars(self.roles).items()})
        return WorldSpec(
            topics=tuple(replace(t, name=prefix + t.name) for t in self.topics),
            groups=tuple(
                replace(g, name=prefix + g.name, topic=prefix + g.topic) for g in self.groups
            ),
            zk_consumers=tuple(
                replace(z, group=prefix + z.group, topic=prefix + z.topic)
                for z in self.zk_consumers
            ),
            topologies=tuple(
                replace(
                    t,
                    name=prefix + t.name,
                    spout_id=prefix + t.spout_id,
                    topic=prefix + t.topic,
                    zk_root=f"/{prefix}{t.zk_root.lstrip('/')}",
                )
                for t in self.topologies
            ),
            roles=roles,
            share_groups=tuple(
                replace(g, name=prefix + g.name, topic=prefix + g.topic) for g in self.share_groups
            ),
        )

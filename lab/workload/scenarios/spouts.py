"""Faults of the simulated Storm spouts: a pending leak, back-pressure, a resubmitted
topology, two spouts sharing an id."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab.workload.params import Param, ScenarioError
from lab.workload.scenarios.base import Scenario, target

if TYPE_CHECKING:
    from lab.workload.world import World


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
        self._topology = target(topology, world.spec.roles.leak_topology, "leak topology")
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
        name = target(topology, world.spec.roles.backpressure_topology, "backpressure topology")
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
        name = target(topology, world.spec.roles.restart_topology, "restart topology")
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
        victim = target(topology, world.spec.roles.collision_topology, "collision topology")
        other_topic = target(topic, world.spec.roles.collision_topic, "collision topic")
        self._name = world.topologies.start_collider(victim, other_topic)
        return {"topology": self._name, "reuses_spout_of": victim, "topic": other_topic}

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        world.topologies.remove(self._name)

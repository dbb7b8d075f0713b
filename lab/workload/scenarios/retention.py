"""Retention faults: retention deleting unread records, and the forecast before it does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab.workload.params import Param, ScenarioError
from lab.workload.scenarios.base import Scenario, target

if TYPE_CHECKING:
    from lab.workload.world import World


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
        name = target(topic, world.spec.roles.retention_topic, "retention topic")
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
        g = world.group(target(group, world.spec.roles.retention_risk_group,
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

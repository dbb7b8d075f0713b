"""Every scenario started and stopped on a small world, its effect read back from the real
ZooKeeper and broker: the evidence Lagwatch's rules will be judged on.

Worlds use uuid names and short timings (spouts commit every 0.5 s, consumers every 0.3 s);
waits poll with deadlines.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from lab.workload.consumer_groups import MemberSettings
from lab.workload.probes import (
    committed_offsets,
    listed_groups,
    spout_znode,
    wait_until,
    zk_consumer_offsets,
)
from lab.workload.runner import ScenarioRunner
from lab.workload.spec import (
    GroupSpec,
    Roles,
    TopicSpec,
    TopologySpec,
    WorldSpec,
    ZkConsumerSpec,
)
from lab.workload.world import World

pytestmark = pytest.mark.lab

FAST_MEMBERS = MemberSettings(statistics_interval_ms=1000, commit_interval_s=0.3)
FAST_SPOUTS = {"state_update_interval_ms": 500}


def uid(kind: str) -> str:
    return f"sc-{kind}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def run_world(lab_services: Any) -> Iterator[Any]:
    """Start a world (and its scenario runner) on the session stack; stop both afterwards."""
    started: list[tuple[World, ScenarioRunner]] = []

    def run(spec: WorldSpec) -> tuple[World, ScenarioRunner]:
        world = World(
            spec,
            lab_services.bootstrap,
            lab_services.zk_hosts,
            run_dir=lab_services.run_dir,
            member_settings=FAST_MEMBERS,
            spout_defaults=FAST_SPOUTS,
            keeper_interval_s=1.0,
        )
        world.start()
        runner = ScenarioRunner(world)
        started.append((world, runner))
        return world, runner

    yield run
    for world, runner in reversed(started):
        runner.stop_all()
        world.stop()


def lags(world: World, admin: AdminClient, group: str, topic: str, n: int) -> dict[int, int]:
    high = world.admin.high_watermarks(topic, n)
    committed = committed_offsets(admin, group)
    return {p: high[p] - committed.get((topic, p), 0) for p in range(n)}


def wait_committed(admin: AdminClient, group: str, topic: str, n: int) -> dict[int, int]:
    def probe() -> dict[int, int] | None:
        try:
            c = committed_offsets(admin, group)
        except KafkaException:  # the broker may still be coming back from an outage
            return None
        got = {p: c[(topic, p)] for p in range(n) if (topic, p) in c}
        return got if len(got) == n and all(o > 0 for o in got.values()) else None

    return wait_until(probe, 30, f"{group} committing on all partitions")


def znode_path(spec: TopologySpec, partition: int) -> str:
    return f"{spec.zk_root}/{spec.spout_id}/partition_{partition}"


def znode_offset(zk: KazooClient, spec: TopologySpec, partition: int) -> int | None:
    node = spout_znode(zk, znode_path(spec, partition))
    return node[0]["offset"] if node else None


def test_slow_consumer_lets_lag_grow_while_commits_continue(
    run_world: Any, admin: AdminClient
) -> None:
    topic, group = uid("t"), uid("g")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 2, rate=20),),
            groups=(GroupSpec(group, topic, members=2),),
            roles=Roles(slow_group=group),
        )
    )
    wait_committed(admin, group, topic, 2)
    started = runner.start("slow-consumer", {"delay_ms": 500})
    assert started["details"]["max_consume_rate"] == 4.0 < started["details"]["produce_rate"]
    time.sleep(1.5)  # let the members' in-flight work drain into the new pace
    lag0, committed0 = lags(world, admin, group, topic, 2), committed_offsets(admin, group)
    time.sleep(4)
    lag1, committed1 = lags(world, admin, group, topic, 2), committed_offsets(admin, group)
    assert all(lag1[p] > lag0[p] + 10 for p in range(2)), (lag0, lag1)  # WARN: lag grows
    assert all(committed1[k] > committed0[k] for k in committed0), "still making progress"

    runner.stop("slow-consumer")
    assert world.groups[group].delay_ms == 0
    wait_until(
        lambda: all(v < 10 for v in lags(world, admin, group, topic, 2).values()),
        20,
        "lag drained after stop",
    )


def test_dead_consumer_freezes_commits_while_high_watermarks_grow(
    run_world: Any, admin: AdminClient
) -> None:
    topic, group = uid("t"), uid("g")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 2, rate=20),),
            groups=(GroupSpec(group, topic, members=2, assignor="roundrobin"),),
            roles=Roles(dead_group=group),
        )
    )
    wait_committed(admin, group, topic, 2)
    details = runner.start("dead-consumer", {})["details"]
    assert details == {"group": group, "members_closed": 2}
    assert world.groups[group].member_count() == 0
    frozen, high0 = committed_offsets(admin, group), world.admin.high_watermarks(topic, 2)
    time.sleep(3)
    assert committed_offsets(admin, group) == frozen
    high1 = world.admin.high_watermarks(topic, 2)
    assert all(high1[p] >= high0[p] + 10 for p in range(2)), "producers keep going"

    runner.stop("dead-consumer")
    assert world.groups[group].member_count() == 2
    wait_until(
        lambda: all(committed_offsets(admin, group)[k] > frozen[k] for k in frozen),
        30,
        "commits resume",
    )


def test_poison_message_pins_the_spout_offset(run_world: Any, zk: KazooClient) -> None:
    topic = uid("t")
    spout = TopologySpec(uid("topo"), uid("spout"), topic, zk_root=f"/{uid('root')}")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 2, rate=20),),
            topologies=(spout,),
            roles=Roles(poison_topology=spout.name),
        )
    )
    wait_until(lambda: znode_offset(zk, spout, 0), 30, "first spout commit")
    x = runner.start("poison-message", {"partition": 0})["details"]["offset"]
    wait_until(lambda: znode_offset(zk, spout, 0) == x, 20, f"offset pinned at {x}")
    _, stat0 = spout_znode(zk, znode_path(spout, 0))
    other0 = znode_offset(zk, spout, 1)
    failed0 = world.topologies.status()[spout.name]["partitions"][0]["failed"]
    time.sleep(3)
    node, stat1 = spout_znode(zk, znode_path(spout, 0))
    assert node["offset"] == x and stat1.mtime == stat0.mtime, "not rewritten: mtime ages"
    assert world.admin.high_watermarks(topic, 2)[0] > x + 10, "data keeps arriving"
    assert world.topologies.status()[spout.name]["partitions"][0]["failed"] > failed0 + 2
    assert znode_offset(zk, spout, 1) > other0, "other partitions move on"

    runner.stop("poison-message")
    wait_until(lambda: znode_offset(zk, spout, 0) > x, 20, "offset moves past X after stop")


def test_pending_leak_grows_pending_and_freezes_the_commit(run_world: Any, zk: KazooClient) -> None:
    topic = uid("t")
    spout = TopologySpec(uid("topo"), uid("spout"), topic, zk_root=f"/{uid('root')}")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 2, rate=20),),
            topologies=(spout,),
            roles=Roles(leak_topology=spout.name),
        )
    )
    wait_until(lambda: znode_offset(zk, spout, 0), 30, "first spout commit")
    topology_id = world.topologies.topology_id(spout.name)
    runner.start("pending-leak", {"message_timeout_s": 1.0})
    assert world.topologies.topology_id(spout.name) == topology_id, "a worker restart"

    def partition0() -> dict:
        return world.topologies.status()[spout.name].get("partitions", {}).get(0, {})

    wait_until(lambda: partition0().get("ignored_failures"), 20, "failures given up on")
    frozen, pending0 = znode_offset(zk, spout, 0), partition0()["pending"]
    time.sleep(3)
    assert znode_offset(zk, spout, 0) == frozen, "commit frozen"
    assert partition0()["pending"] > pending0 + 10, "pending keeps growing"
    assert world.topologies.status()[spout.name]["acked"] == 0

    runner.stop("pending-leak")
    assert world.topologies.status()[spout.name]["overrides"] == {}
    wait_until(lambda: znode_offset(zk, spout, 0) > frozen, 20, "commits resume after stop")


def test_rebalance_storm_churns_membership(run_world: Any) -> None:
    topic, group = uid("t"), uid("g")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 4, rate=20),),
            groups=(GroupSpec(group, topic, members=2, assignor="cooperative-sticky"),),
            roles=Roles(storm_group=group),
        )
    )
    g = world.groups[group]
    first = g.members()[0]
    wait_until(lambda: first.assignment(), 30, "first assignment")
    changes0, rebalances0 = g.member_changes, first.rebalances
    runner.start("rebalance-storm", {"period_s": 1.5})
    wait_until(lambda: g.member_count() == 3, 10, "a member joins")
    wait_until(lambda: g.member_count() == 2, 10, "and leaves again")
    wait_until(lambda: g.member_changes >= changes0 + 3, 10, "and joins again")
    wait_until(lambda: first.rebalances > rebalances0, 20, "survivors see rebalances")

    runner.stop("rebalance-storm")
    assert g.member_count() == 2
    ids = [m.client_id for m in g.members()]
    assert all(m.alive for m in g.members()) and len(set(ids)) == 2


def test_retention_leaves_zk_offsets_beyond_the_log_end_and_the_spout_jumps(
    run_world: Any, zk: KazooClient
) -> None:
    topic, legacy = uid("t"), uid("legacy")
    spout = TopologySpec(
        uid("topo"),
        uid("spout"),
        topic,
        zk_root=f"/{uid('root')}",
        spout={"use_start_offset_time_if_offset_out_of_range": True},
    )
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 2, rate=20),),
            zk_consumers=(ZkConsumerSpec(legacy, topic, commit_interval_s=0.3),),
            topologies=(spout,),
            roles=Roles(retention_topic=topic),
        )
    )
    wait_until(
        lambda: (
            all((znode_offset(zk, spout, p) or 0) > 30 for p in range(2))
            and all(o > 30 for o in zk_consumer_offsets(zk, legacy, topic).values())
        ),
        40,
        "spout and ZooKeeper consumer past offset 30",
    )
    before = {p: znode_offset(zk, spout, p) for p in range(2)}
    world.producers.set_rate(topic, 0)  # keep the new log short while we look
    details = runner.start("retention", {"burst": 6})["details"]
    assert details["restarted"].keys() == {spout.name, legacy}
    high = world.admin.high_watermarks(topic, 2)
    assert high == {0: 3, 1: 3}, "a fresh log holding only the burst"
    stored = zk_consumer_offsets(zk, legacy, topic)
    assert all(stored[p] > high[p] for p in range(2)), "ERR: committed beyond the log end"

    # The spout finds its offset out of range and jumps to the latest offset, skipping the
    # burst it never read.
    wait_until(lambda: all(znode_offset(zk, spout, p) == 3 for p in range(2)), 20, "spout jumped")
    parts = world.topologies.status()[spout.name]["partitions"]
    assert all(parts[p]["out_of_range_jumps"] == 1 for p in range(2))
    assert all(parts[p]["skipped_messages"] == 3 for p in range(2))
    assert all(znode_offset(zk, spout, p) < before[p] for p in range(2))
    runner.stop("retention")
    assert zk_consumer_offsets(zk, legacy, topic) == stored, "the legacy consumer waits"


def test_topology_restart_writes_a_new_topology_id(run_world: Any, zk: KazooClient) -> None:
    topic = uid("t")
    spout = TopologySpec(uid("topo"), uid("spout"), topic, zk_root=f"/{uid('root')}")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 2, rate=20),),
            topologies=(spout,),
            roles=Roles(restart_topology=spout.name),
        )
    )
    wait_until(lambda: znode_offset(zk, spout, 0), 30, "first spout commit")
    old_id = spout_znode(zk, znode_path(spout, 0))[0]["topology"]["id"]
    details = runner.start("topology-restart", {})["details"]
    assert details["old_topology_id"] == old_id != details["new_topology_id"]
    offset0 = znode_offset(zk, spout, 0)
    node = wait_until(
        lambda: (
            (n := spout_znode(zk, znode_path(spout, 0)))
            and n[0]["topology"]["id"] == details["new_topology_id"]
            and n[0]
        ),
        20,
        "new topology id in the znode",
    )
    assert node["offset"] >= offset0, "continues from the stored offset"
    assert node["topology"]["name"] == spout.name

    # Resubmitted with forceFromStart, the new instance ignores the stored offset and reads
    # the partition again from the earliest offset (a rewind): within 3 s it acks the whole
    # partition, which continuing from the stored offset (10 msg/s) could not.
    high = wait_until(
        lambda: (h := world.admin.high_watermarks(topic, 2)[0]) >= 60 and h, 20, "60 messages"
    )
    runner.start("topology-restart", {"force_from_start": True})
    newest = world.topologies.topology_id(spout.name)
    assert newest != details["new_topology_id"]
    wait_until(
        lambda: (
            world.topologies.status()[spout.name].get("partitions", {}).get(0, {}).get("acked", 0)
            >= high
        ),
        3,
        "every message of the partition replayed by the forced instance",
    )
    wait_until(
        lambda: spout_znode(zk, znode_path(spout, 0))[0]["topology"]["id"] == newest,
        20,
        "the forced instance's id in the znode",
    )
    runner.stop("topology-restart")
    assert world.topologies.spout(spout.name).running, "the new instance keeps running"


def test_spout_id_collision_alternates_topics_under_one_path(
    run_world: Any, zk: KazooClient
) -> None:
    orders, payments = uid("orders"), uid("payments")
    spout = TopologySpec(f"{orders}-enricher", uid("spout"), orders, zk_root=f"/{uid('root')}")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(orders, 2, rate=20), TopicSpec(payments, 2, rate=20)),
            topologies=(spout,),
            roles=Roles(collision_topology=spout.name, collision_topic=payments),
        )
    )
    wait_until(lambda: znode_offset(zk, spout, 0), 30, "first spout commit")
    details = runner.start("spout-id-collision", {})["details"]
    assert details["topology"] == f"{payments}-enricher"
    assert world.topologies.spec(details["topology"]).spout_id == spout.spout_id

    seen: list[str] = []
    zk.DataWatch(
        znode_path(spout, 0),
        lambda data, _stat: data is not None and seen.append(json_topic(data)),
    )

    def switches() -> int:
        return sum(1 for a, b in zip(seen, seen[1:], strict=False) if a != b)

    wait_until(lambda: switches() >= 3, 20, "the topic in one path alternating")
    assert set(seen) == {orders, payments}

    runner.stop("spout-id-collision")
    assert details["topology"] not in {s.topology_name for s in world.topologies.spouts()}
    assert world.topologies.names() == [spout.name]
    wait_until(lambda: seen[-1] == orders, 10, "path settles on the survivor")
    count = len(seen)
    time.sleep(2)
    assert set(seen[count:]) <= {orders}


def json_topic(data: bytes) -> str:
    return json.loads(data)["topic"]


def test_healthy_stops_every_other_scenario(run_world: Any) -> None:
    topic, slow, dead = uid("t"), uid("slow"), uid("dead")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 2, rate=10),),
            groups=(GroupSpec(slow, topic, 1), GroupSpec(dead, topic, 1)),
            roles=Roles(slow_group=slow, dead_group=dead, quiet_topic=None),
        )
    )
    runner.start_always_on()
    runner.start("slow-consumer", {"delay_ms": 100})
    runner.start("dead-consumer", {})
    world.producers.set_rate(topic, 3)  # drift by hand, outside any scenario
    assert {a["name"] for a in runner.active()} == {"quiet-topic", "slow-consumer", "dead-consumer"}

    changed = runner.start("healthy", {})["details"]
    assert {a["name"] for a in runner.active()} == {"quiet-topic", "healthy"}
    assert changed["rates"] == [topic]
    assert world.producers.rate(topic) == 10
    assert world.groups[slow].delay_ms == 0
    assert world.groups[dead].member_count() == 1

    runner.start("slow-consumer", {"delay_ms": 100})
    assert {a["name"] for a in runner.active()} == {"quiet-topic", "slow-consumer"}
    runner.stop("slow-consumer")


def test_quiet_topic_consumer_commits_its_start_offset_once(
    run_world: Any, admin: AdminClient
) -> None:
    quiet, group = uid("quiet"), uid("quiet-reader")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(quiet, 2, rate=0),),
            groups=(GroupSpec(group, quiet, 1),),
            roles=Roles(quiet_topic=quiet, quiet_group=group),
        )
    )
    runner.start_always_on()
    assert [a["name"] for a in runner.active()] == ["quiet-topic"]
    wait_until(lambda: group in listed_groups(admin), 30, "quiet group listed by the broker")
    assert committed_offsets(admin, group) == {(quiet, 0): 0, (quiet, 1): 0}
    assert world.admin.high_watermarks(quiet, 2) == {0: 0, 1: 0}, "lag 0: OK"

    world.producers.set_rate(quiet, 5)
    runner.start("quiet-topic", {})  # re-asserting the condition forces the rate back to 0
    assert world.producers.rate(quiet) == 0
    runner.stop("quiet-topic")


def _refuses(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return True
    return False


def test_source_outage_of_the_broker_and_recovery(
    run_world: Any, admin: AdminClient, lab_services: Any
) -> None:
    topic, group = uid("t"), uid("g")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 2, rate=20),),
            groups=(GroupSpec(group, topic, 1),),
        )
    )
    wait_committed(admin, group, topic, 2)
    runner.start("source-outage", {"service": "kafka", "seconds": 1})
    assert _refuses(lab_services.bootstrap), "broker down right after start"
    wait_until(lambda: not runner.active()[0]["running"], 40, "broker restarted")
    assert lab_services.stack.status()["services"]["kafka"]["state"] == "running"
    # Tansu restarted empty: the keeper re-created the topic, producing and consuming resume.
    wait_until(
        lambda: sum(world.admin.high_watermarks(topic, 2).values()) > 10, 30, "producing again"
    )
    assert world.topics_restored == 1 and world.broker_reachable
    # A fresh client: librdkafka's group-coordinator requests from an AdminClient that
    # lived through the restart time out for good (seen with Tansu; not the workload's doing).
    wait_committed(AdminClient({"bootstrap.servers": lab_services.bootstrap}), group, topic, 2)
    runner.stop("source-outage")


def test_source_outage_of_zookeeper_and_recovery(
    run_world: Any, zk: KazooClient, lab_services: Any
) -> None:
    topic, legacy = uid("t"), uid("legacy")
    world, runner = run_world(
        WorldSpec(
            topics=(TopicSpec(topic, 1, rate=20),),
            zk_consumers=(ZkConsumerSpec(legacy, topic, commit_interval_s=0.3),),
        )
    )
    wait_until(lambda: zk_consumer_offsets(zk, legacy, topic).get(0, 0) > 5, 30, "committing")
    runner.start("source-outage", {"service": "zookeeper", "seconds": 2})
    assert _refuses(lab_services.zk_hosts), "ZooKeeper down right after start"
    consumed = world.zk_consumers[legacy].consumed
    wait_until(lambda: not runner.active()[0]["running"], 30, "ZooKeeper restarted")
    assert world.zk_consumers[legacy].consumed > consumed, "consumed through the outage"
    after = wait_until(
        lambda: zk.connected and zk_consumer_offsets(zk, legacy, topic).get(0), 30, "offsets"
    )
    wait_until(
        lambda: zk_consumer_offsets(zk, legacy, topic)[0] > after, 20, "offsets written again"
    )
    ids = f"/consumers/{legacy}/ids"
    assert zk.get_children(ids) == [world.zk_consumers[legacy].consumer_id]
    runner.stop("source-outage")

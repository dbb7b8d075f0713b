"""Faults through whole collection cycles and the database, against the real lab services.

The adapters have their own fault tests (tests/collectors); these stage the same faults
under ``run_cluster_cycle`` and check what reaches the store, the status document and the Parquet
sample log. Each test runs a good cycle first, injects the fault, runs a cycle, then recovers
and runs one more. Every time, the cycle must return; the error must be recorded with where
it happened; nothing stored before may be lost or zeroed (partitions an unreachable source
hides keep their last figures, marked stale, and get stale rows in the sample log); and the
first cycle after recovery must be fresh and correct.

Cycles run with explicit, increasing slots. The clusters poll every 3 s, which is also each
source's deadline, so a dead source costs a cycle at most that.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings
from kazoo.client import KazooClient

from collectors.cycle.runner import CycleReport, _memories, cycle_slot, forget_clusters
from collectors.storm_znode import MAX_ZNODE_BYTES
from dashboard.monitoring.models import (
    Cluster,
    CollectionError,
    ConsumerGroup,
    PartitionState,
    SourceHealth,
)
from dashboard.store.cycle import run_cluster_cycle, source_timeout_s
from dashboard.times import ms_to_dt
from lab.services import SERVICES
from lab.stack import Stack
from tests.collectors.test_kafka_source import alter_offsets, create_topic, produce
from tests.collectors.test_zookeeper_source import FlakyRelay, spout_data
from tests.conftest import LabServices
from tests.dashboard.collection_world import (
    Figures,
    World,
    figures,
    logged_rows,
    make_cluster,
    rows,
    status,
    status_json,
)
from tests.waiting import wait_for

pytestmark = [pytest.mark.lab, pytest.mark.django_db(transaction=True)]

INTERVAL_S = 3
LOG_KEY = ("ts_ms", "source", "group", "topic", "partition")
# The world's figures: a World as created, or (source, group) -> (topic, partition) -> figures.
Expected = World | dict[tuple[str, str], dict[tuple[str, int], Figures]]


# --- fixtures and helpers ------------------------------------------------------------------


@pytest.fixture
def sample_log_url(settings, tmp_path: Path) -> str:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    return settings.LAGWATCH_SAMPLE_LOG_URL


@pytest.fixture
def fast_cluster(
    world: World, zk_hosts: str, kafka_bootstrap: str, sample_log_url: str
) -> Iterator[Cluster]:
    yield make_cluster(world, zk_hosts, kafka_bootstrap, INTERVAL_S)
    forget_clusters()


@pytest.fixture
def services(lab_services: LabServices, world: World) -> Iterator[LabServices]:
    """The session's services, restarted if a test left one stopped *before* the world is
    cleaned up (the conftest's own restore runs after every other teardown)."""
    yield lab_services
    lab_services.restore()


@pytest.fixture
def slots() -> Iterator[int]:
    """Explicit, increasing cycle slots (the cycles' idempotency keys)."""
    return itertools.count(cycle_slot(int(time.time() * 1000), INTERVAL_S), INTERVAL_S * 1000)


def _expected(world: Expected) -> dict[tuple[str, str], dict[tuple[str, int], Figures]]:
    return world.expected() if isinstance(world, World) else world


def cycle(cluster: Cluster, slots: Iterator[int]) -> tuple[int, CycleReport]:
    slot = next(slots)
    return slot, run_cluster_cycle(cluster, slot)


def states(cluster: Cluster, source: str, group: str) -> dict[tuple[str, int], PartitionState]:
    return {
        (p.topic, p.partition): p
        for p in PartitionState.objects.select_related("group").filter(
            group__cluster=cluster, group__source=source, group__name=group
        )
    }


def errors(cluster: Cluster, *about: str) -> dict[str, list[tuple[str, str]]]:
    """where -> [(source, error)] of the stored collection errors naming any of ``about``."""
    found: dict[str, list[tuple[str, str]]] = {}
    for e in CollectionError.objects.filter(cluster=cluster).order_by("where", "error"):
        if any(text in e.where for text in about):
            found.setdefault(e.where, []).append((e.source, e.error))
    return found


def health(cluster: Cluster, source: str) -> SourceHealth:
    return SourceHealth.objects.get(cluster=cluster, source=source)


def assert_shown(doc: dict, world: Expected, sources: set[str], *, stale: bool) -> None:
    """The world's figures exactly (as created, or as given), for the groups of ``sources``."""
    for (source, group), expected in _expected(world).items():
        if source in sources:
            assert figures(doc, source, group) == expected, (source, group)
            assert {r["stale"] for r in rows(doc, source, group).values()} == {stale}, (
                source, group,
            )  # fmt: skip
            (shown,) = [g for g in doc["groups"] if (g["source"], g["group"]) == (source, group)]
            assert shown["stale"] is stale, (source, group)


def assert_sampled_at(cluster: Cluster, world: Expected, sources: set[str], slot: int) -> None:
    for source, group in _expected(world):
        if source in sources:
            stored = states(cluster, source, group)
            assert stored, (source, group)
            for key, state in stored.items():
                # The row itself is rewritten only when a figure changed.
                assert state.present and state.seen_at == ms_to_dt(slot), (source, group, key)


def log_of(url: str, cluster: Cluster) -> dict[tuple, dict[str, Any]]:
    """The sample log keyed by (ts_ms, source, group, topic, partition); no key twice."""
    logged = logged_rows(url, cluster)
    keyed = {tuple(r[k] for k in LOG_KEY): r for r in logged}
    assert len(keyed) == len(logged), "a sample was logged twice"
    return keyed


def logged_figures(log: dict[tuple, dict], slot: int, source: str, group: str) -> dict:
    return {
        (topic, partition): (r["committed"], r["latest"], r["lag"], r["stale"])
        for (ts, src, grp, topic, partition), r in log.items()
        if (ts, src, grp) == (slot, source, group)
    }


def assert_logged(log: dict, slot: int, world: Expected, sources: set[str], *, stale: bool) -> None:
    for (source, group), expected in _expected(world).items():
        if source in sources:
            assert logged_figures(log, slot, source, group) == {
                key: (*values, stale) for key, values in expected.items()
            }, (slot, source, group)


def ensure_connected(zk: KazooClient) -> None:
    """The test's own client after its server came back (it reconnects in the background)."""
    wait_for(lambda: zk.connected, timeout=30)


# --- 1. bad znodes beside good ones --------------------------------------------------------


def test_bad_znodes_are_errors_with_their_paths_and_the_good_ones_are_stored(
    fast_cluster: Cluster, world: World, zk: KazooClient, admin: AdminClient,
    kafka_bootstrap: str, sample_log_url: str, slots: Iterator[int],
) -> None:  # fmt: skip
    root = world.root
    # A spout path holding two topics: two topologies sharing one spoutConfig.id (DOMAIN.md §1).
    other_topic = create_topic(admin, 2)
    produce(kafka_bootstrap, other_topic, {1: 4})
    orders, payments = ("orders-topo-1-1", "orders-topo"), ("payments-topo-2-2", "payments-topo")
    zk.create(f"{root}/shared/partition_0", spout_data(world.topic, 0, 1, orders), makepath=True)
    zk.create(f"{root}/shared/partition_1", spout_data(other_topic, 1, 2, payments))
    # Non-ASCII spout id, topology and ZooKeeper consumer group. Kafka topic names are ASCII
    # (letters, digits, '.', '_', '-'): the topic uses the odd ones it allows.
    wide_topic = f"_orders.{world.tag}__events-v2.1"
    admin.create_topics([NewTopic(wide_topic, 2, 1)])[wide_topic].result(10)
    produce(kafka_bootstrap, wide_topic, {0: 3, 1: 2})
    wide_spout, wide_topology = "spöut-заказы-κ", ("топология-1-1700000000", "топология")
    zk.create(f"{root}/{wide_spout}/partition_0", spout_data(wide_topic, 0, 1, wide_topology),
              makepath=True)  # fmt: skip
    wide_group = f"группа-{world.tag}"
    world.also_remove(f"/consumers/{wide_group}")
    zk.create(f"/consumers/{wide_group}/offsets/{wide_topic}/0", b"2", makepath=True)
    # A spout that is good now and goes bad later: what was stored of it must stay.
    turns_bad = f"{root}/turns-bad/partition_0"
    zk.create(turns_bad, spout_data(world.topic, 0, 3, world.topology), makepath=True)

    extra = {
        ("storm", "shared"): {(world.topic, 0): (1, 5, 4), (other_topic, 1): (2, 4, 2)},
        ("storm", wide_spout): {(wide_topic, 0): (1, 3, 2)},
        ("zookeeper", wide_group): {(wide_topic, 0): (2, 3, 1)},
        ("storm", "turns-bad"): {(world.topic, 0): (3, 5, 2)},
    }

    def assert_extra(doc: dict, keys) -> None:
        for source, group in keys:
            assert figures(doc, source, group) == extra[(source, group)], (source, group)
            assert all(r["stale"] is False for r in rows(doc, source, group).values())

    first_slot, first = cycle(fast_cluster, slots)
    assert first.unreachable == []
    doc = status(fast_cluster)
    assert_shown(doc, world, {"kafka", "storm", "zookeeper"}, stale=False)
    assert_extra(doc, extra)
    assert errors(fast_cluster, world.tag, root) == {}

    # The faults: not JSON, a missing field, a wrong type, a negative offset (spout nodes);
    # a negative and a non-decimal offset, a registration that is not JSON (ZooKeeper consumer).
    good = json.loads(spout_data(world.topic, 0, 5, world.topology))
    bad_spouts = {
        f"{root}/not-json/partition_0": (b"offset=5",
                                         "not JSON: Expecting value: line 1 column 1 (char 0)"),
        f"{root}/no-topic/partition_0": (json.dumps({k: v for k, v in good.items() if k != "topic"}),
                                         "missing field topic"),
        f"{root}/text-offset/partition_0": (json.dumps({**good, "offset": "12"}),
                                            "field offset must be an integer, got string"),
        f"{root}/negative/partition_0": (json.dumps({**good, "offset": -5}),
                                         "field offset=-5 is negative"),
    }  # fmt: skip
    for path, (data, _) in bad_spouts.items():
        zk.create(path, data if isinstance(data, bytes) else data.encode(), makepath=True)
    zk.set(turns_bad, b'{"offset": 9')
    consumers = f"/consumers/{world.zk_group}"
    bad_offsets = {
        f"{consumers}/offsets/{world.topic}/0": (b"-5", "offset -5 is negative"),
        f"/consumers/{wide_group}/offsets/{wide_topic}/1":
            (b"5.0", "offset is not a decimal integer: '5.0'"),
    }  # fmt: skip
    for path, (data, _) in bad_offsets.items():
        zk.create(path, data, makepath=True)
    bad_registration = f"{consumers}/ids/{world.zk_group}_host-2"
    zk.create(bad_registration, b"{not json")

    bad_slot, bad = cycle(fast_cluster, slots)

    assert bad.unreachable == []
    assert errors(fast_cluster, world.tag, root) == {
        **{path: [("storm", reason)] for path, (_, reason) in bad_spouts.items()},
        turns_bad: [("storm", "not JSON: Expecting ',' delimiter: line 1 column 13 (char 12)")],
        **{path: [("zookeeper", reason)] for path, (_, reason) in bad_offsets.items()},
        bad_registration: [("zookeeper", "not JSON: Expecting property name enclosed in double "
                                         "quotes: line 1 column 2 (char 1)")],
    }  # fmt: skip
    assert health(fast_cluster, "zookeeper").reachable is True
    shown = status_json(fast_cluster)
    for name in (wide_spout, wide_topic, wide_group, wide_topology[1]):
        assert name in shown  # printed as is, not \u-escaped
    doc = json.loads(shown)
    assert_shown(doc, world, {"kafka", "storm", "zookeeper"}, stale=False)
    assert_extra(doc, extra)
    (wide,) = [g for g in doc["groups"] if g["group"] == wide_spout]
    assert (wide["source"], wide["owner"], wide["topology_id"]) == ("storm", *wide_topology[::-1])
    assert {e["where"] for e in doc["errors"]} >= {*bad_spouts, turns_bad, *bad_offsets}
    # Nothing of the bad nodes was stored; the spout gone bad keeps its last figures.
    assert not ConsumerGroup.objects.filter(
        cluster=fast_cluster, name__in=["not-json", "no-topic", "text-offset", "negative"]
    ).exists()
    assert set(states(fast_cluster, "zookeeper", world.zk_group)) == {(world.topic, 1)}
    kept = states(fast_cluster, "storm", "turns-bad")[(world.topic, 0)]
    assert (kept.committed, kept.latest, kept.lag, kept.sampled_at) == (
        3,
        5,
        2,
        ms_to_dt(first_slot),
    )
    assert kept.last_commit_at is not None
    log = log_of(sample_log_url, fast_cluster)
    assert logged_figures(log, bad_slot, "storm", "shared") == {
        key: (*values, False) for key, values in extra[("storm", "shared")].items()
    }
    assert {
        (r["topic"], r["topology_id"])
        for k, r in log.items()
        if k[:3] == (bad_slot, "storm", "shared")
    } == {(world.topic, orders[0]), (other_topic, payments[0])}  # the collision stays visible
    assert logged_figures(log, bad_slot, "storm", wide_spout) == {(wide_topic, 0): (1, 3, 2, False)}
    assert logged_figures(log, bad_slot, "storm", "turns-bad") == {}
    assert {k[2] for k in log if k[0] == bad_slot} >= {world.group, world.spout, world.zk_group}

    # Recovery: every bad node rewritten as its writer should have.
    for path in bad_spouts:
        zk.set(path, spout_data(world.topic, 0, 5, world.topology))
    zk.set(turns_bad, spout_data(world.topic, 0, 4, world.topology))
    for path in bad_offsets:
        zk.set(path, b"0")
    zk.set(bad_registration, b'{"version":1,"subscription":{"t":1},"pattern":"static"}')

    good_slot, recovered = cycle(fast_cluster, slots)

    assert recovered.unreachable == []
    assert errors(fast_cluster, world.tag, root) == {}
    doc = status(fast_cluster)
    assert doc["errors"] == [e for e in doc["errors"] if world.tag not in e["where"]]
    assert_shown(doc, world, {"kafka", "storm"}, stale=False)
    for path in bad_spouts:
        assert figures(doc, "storm", path.split("/")[-2]) == {(world.topic, 0): (5, 5, 0)}
    assert figures(doc, "storm", "turns-bad") == {(world.topic, 0): (4, 5, 1)}
    assert figures(doc, "zookeeper", world.zk_group) == {
        (world.topic, 0): (0, 5, 5),
        (world.topic, 1): (1, 3, 2),
    }
    assert figures(doc, "zookeeper", wide_group) == {
        (wide_topic, 0): (2, 3, 1),
        (wide_topic, 1): (0, 2, 2),
    }
    assert states(fast_cluster, "storm", "turns-bad")[(world.topic, 0)].sampled_at == ms_to_dt(
        good_slot
    )
    log_of(sample_log_url, fast_cluster)


@pytest.fixture
def roomy_zookeeper(tmp_path: Path) -> Iterator[str]:
    """A ZooKeeper of its own that accepts nodes over 1 MiB (jute.maxbuffer raised to 4 MiB):
    the session's server, at ZooKeeper's default, cannot even be sent one."""
    spec = SERVICES["zookeeper"]

    def argv(ctx, _default=spec.argv) -> list[str]:
        java, *rest = _default(ctx)
        return [java, "-Djute.maxbuffer=4194304", *rest]

    stack = Stack(tmp_path / "roomy-zk", specs={"zookeeper": dataclasses.replace(spec, argv=argv)})
    try:
        yield stack.up(["zookeeper"])["zookeeper"]
    finally:
        stack.down()


def test_a_znode_over_one_mib_is_an_error_and_its_last_figures_stay(
    roomy_zookeeper: str, admin: AdminClient, kafka_bootstrap: str, sample_log_url: str,
    slots: Iterator[int],
) -> None:  # fmt: skip
    topic = create_topic(admin, 2)
    produce(kafka_bootstrap, topic, {0: 5, 1: 3})
    writer = KazooClient(hosts=roomy_zookeeper)
    writer.start(timeout=15)
    try:
        small, big = "/spouts/s/partition_0", "/spouts/s/partition_1"
        writer.create(small, spout_data(topic, 0, 4), makepath=True)
        writer.create(big, spout_data(topic, 1, 1))
        cluster = Cluster.objects.create(
            name="roomy", poll_interval_s=INTERVAL_S, kafka_bootstrap_servers=kafka_bootstrap,
            zk_hosts=roomy_zookeeper, storm_spout_roots=["/spouts"],
        )  # fmt: skip
        first_slot, first = cycle(cluster, slots)
        assert first.unreachable == []
        assert figures(status(cluster), "storm", "s") == {
            (topic, 0): (4, 5, 1),
            (topic, 1): (1, 3, 2),
        }

        huge = spout_data(topic, 1, 2) + b" " * (MAX_ZNODE_BYTES + 100_000)
        writer.set(big, huge)  # valid JSON, only too big

        over_slot, over = cycle(cluster, slots)

        assert over.unreachable == []
        assert errors(cluster, "/spouts") == {
            big: [("storm", f"data is {len(huge)} bytes, over the {MAX_ZNODE_BYTES}-byte limit")]
        }
        assert figures(status(cluster), "storm", "s") == {
            (topic, 0): (4, 5, 1),
            (topic, 1): (1, 3, 2),
        }
        kept = states(cluster, "storm", "s")[(topic, 1)]
        assert kept.sampled_at == ms_to_dt(first_slot)
        assert logged_figures(log_of(sample_log_url, cluster), over_slot, "storm", "s") == {
            (topic, 0): (4, 5, 1, False)
        }

        writer.set(big, spout_data(topic, 1, 3))
        _, back = cycle(cluster, slots)
        assert back.unreachable == [] and errors(cluster, "/spouts") == {}
        assert figures(status(cluster), "storm", "s") == {
            (topic, 0): (4, 5, 1),
            (topic, 1): (3, 3, 0),
        }
        log_of(sample_log_url, cluster)
    finally:
        writer.stop()
        writer.close()
        forget_clusters()


# --- 2. a Kafka group deleted ----------------------------------------------------------------


def test_a_kafka_group_deleted_between_cycles_keeps_its_last_state(
    fast_cluster: Cluster, world: World, admin: AdminClient, slots: Iterator[int]
) -> None:
    other = f"grp2-{world.tag}"
    alter_offsets(admin, other, {(world.topic, 0): 1})
    first_slot, _ = cycle(fast_cluster, slots)

    admin.delete_consumer_groups([world.group])[world.group].result(10)
    alter_offsets(admin, other, {(world.topic, 0): 4})
    slot, report = cycle(fast_cluster, slots)

    assert report.unreachable == []
    doc = status(fast_cluster)
    assert figures(doc, "kafka", other) == {(world.topic, 0): (4, 5, 1)}
    assert states(fast_cluster, "kafka", other)[(world.topic, 0)].sampled_at == ms_to_dt(slot)
    assert_shown(doc, world, {"kafka", "storm", "zookeeper"}, stale=False)
    assert_sampled_at(fast_cluster, world, {"kafka"}, first_slot)  # not rewritten
    assert errors(fast_cluster, world.tag) == {}

    # Nothing commits under the deleted group again, so the cycle after it is the recovery:
    # the others move on, the deleted one still shows with its last figures.
    alter_offsets(admin, other, {(world.topic, 0): 5})
    slot, report = cycle(fast_cluster, slots)
    assert report.unreachable == []
    doc = status(fast_cluster)
    assert figures(doc, "kafka", other) == {(world.topic, 0): (5, 5, 0)}
    assert_shown(doc, world, {"kafka", "storm", "zookeeper"}, stale=False)
    assert_sampled_at(fast_cluster, world, {"kafka"}, first_slot)
    assert_sampled_at(fast_cluster, world, {"storm", "zookeeper"}, slot)


def test_a_kafka_group_deleted_mid_cycle_keeps_its_last_state(
    fast_cluster: Cluster, world: World, admin: AdminClient, sample_log_url: str,
    slots: Iterator[int], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    other = f"grp2-{world.tag}"
    alter_offsets(admin, other, {(world.topic, 0): 1})
    first_slot, _ = cycle(fast_cluster, slots)
    kafka = _memories[fast_cluster.name].sources.kafka
    fetch = kafka._groups.fetch_committed

    def delete_then_fetch(groups: list[str], **kwargs: Any):
        # Listed already; deleted now, before its OffsetFetch and DescribeGroups go out.
        if world.group in groups:
            admin.delete_consumer_groups([world.group])[world.group].result(10)
        return fetch(groups, **kwargs)

    monkeypatch.setattr(kafka._groups, "fetch_committed", delete_then_fetch)
    alter_offsets(admin, other, {(world.topic, 0): 4})
    slot, report = cycle(fast_cluster, slots)
    monkeypatch.undo()

    assert report.unreachable == []
    doc = status(fast_cluster)
    assert figures(doc, "kafka", other) == {(world.topic, 0): (4, 5, 1)}
    assert_shown(doc, world, {"kafka", "storm", "zookeeper"}, stale=False)
    assert_sampled_at(fast_cluster, world, {"kafka"}, first_slot)
    assert_sampled_at(fast_cluster, world, {"storm", "zookeeper"}, slot)
    assert errors(fast_cluster, world.tag) == {}
    assert logged_figures(log_of(sample_log_url, fast_cluster), slot, "kafka", world.group) == {}

    slot, report = cycle(fast_cluster, slots)  # the group is not listed any more
    assert report.unreachable == []
    assert_shown(status(fast_cluster), world, {"kafka"}, stale=False)
    assert figures(status(fast_cluster), "kafka", other) == {(world.topic, 0): (4, 5, 1)}


# --- 3., 4. ZooKeeper stopped; its session expired ----------------------------------------


def assert_zookeeper_outage(
    cluster: Cluster, world: World, slot: int, report: CycleReport, where: str, url: str
) -> str:
    """What a cycle without ZooKeeper must leave; returns the error recorded."""
    assert report.unreachable == ["zookeeper"]
    ((source, error),) = errors(cluster, where)[where]
    assert source == "zookeeper" and error
    assert list(errors(cluster, where)) == [where]
    zk_health = health(cluster, "zookeeper")
    assert (zk_health.reachable, zk_health.last_error, zk_health.consecutive_failures) == (
        False, error, 1,
    )  # fmt: skip
    assert zk_health.last_error_at == ms_to_dt(slot) and health(cluster, "kafka").reachable
    doc = status(cluster)
    assert_shown(doc, world, {"storm", "zookeeper"}, stale=True)  # last figures, stale
    assert_shown(doc, world, {"kafka"}, stale=False)
    assert_sampled_at(cluster, world, {"kafka"}, slot)
    log = log_of(url, cluster)
    assert_logged(log, slot, world, {"storm", "zookeeper"}, stale=True)
    assert_logged(log, slot, world, {"kafka"}, stale=False)
    return error


def assert_all_fresh(
    cluster: Cluster, world: World, slot: int, report: CycleReport, now: Expected | None = None
) -> None:
    """The first cycle after recovery: every figure fresh and exact, no error left."""
    assert report.unreachable == []
    assert errors(cluster, world.tag, world.root, cluster.zk_hosts, "cluster") == {}
    assert all(h.reachable and h.consecutive_failures == 0
               for h in SourceHealth.objects.filter(cluster=cluster))  # fmt: skip
    now = now or world
    assert_shown(status(cluster), now, {"kafka", "storm", "zookeeper"}, stale=False)
    assert_sampled_at(cluster, now, {"kafka", "storm", "zookeeper"}, slot)


def test_zookeeper_stopped_then_restarted(
    fast_cluster: Cluster, world: World, zk: KazooClient, services: LabServices,
    zk_hosts: str, sample_log_url: str, slots: Iterator[int],
) -> None:  # fmt: skip
    first_slot, first = cycle(fast_cluster, slots)
    assert first.unreachable == []

    services.stop("zookeeper")
    slot, report = cycle(fast_cluster, slots)

    error = assert_zookeeper_outage(fast_cluster, world, slot, report, zk_hosts, sample_log_url)
    # The source's deadline: its share of the cluster's poll interval (dashboard.store.cycle).
    deadline = source_timeout_s(fast_cluster.poll_interval_s, settings.LAGWATCH_SOURCE_TIMEOUT_S)
    assert error.startswith((f"cannot connect to ZooKeeper within {deadline:g} s",
                             "session lost mid-cycle",
                             f"no reply from ZooKeeper within {deadline:g} s")), error  # fmt: skip
    assert_sampled_at(fast_cluster, world, {"storm", "zookeeper"}, first_slot)

    services.start("zookeeper")
    ensure_connected(zk)
    zk.set(world.spout_path, world.spout_node(5))  # moved on: the next cycle must show it
    slot, report = cycle(fast_cluster, slots)

    now = {**world.expected(), ("storm", world.spout): {(world.topic, 0): (5, 5, 0)}}
    assert_all_fresh(fast_cluster, world, slot, report, now)
    assert_logged(log_of(sample_log_url, fast_cluster), slot, now, {"kafka", "storm", "zookeeper"},
                  stale=False)  # fmt: skip


@pytest.fixture
def relay(zk_hosts: str) -> Iterator[FlakyRelay]:
    proxy = FlakyRelay(zk_hosts)
    yield proxy
    proxy.close()


def expire_session(client: KazooClient, zk_hosts: str, relay: FlakyRelay) -> None:
    """Expire ``client``'s session on the server: a second client takes the session over
    (the server drops the first one's connection) and closes it. The relay refuses the first
    client meanwhile, or its reconnection would take the session back before the close."""
    relay.refuse = True
    try:
        twin = KazooClient(hosts=zk_hosts, client_id=client.client_id)
        twin.start(timeout=10)
        twin.stop()
        twin.close()
    finally:
        relay.refuse = False


def test_zookeeper_session_expired_mid_cycle_then_between_cycles(
    world: World, relay: FlakyRelay, zk_hosts: str, kafka_bootstrap: str, sample_log_url: str,
    slots: Iterator[int], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    cluster = make_cluster(world, relay.hosts, kafka_bootstrap, INTERVAL_S)
    try:
        _, first = cycle(cluster, slots)
        assert first.unreachable == []
        client = _memories[cluster.name].sources.zookeeper._client
        read = client.get_async
        expired = []

        def expire_then_get(path: str, watch=None):
            if path == world.spout_path and not expired:  # the walk is at the partition nodes
                expire_session(client, zk_hosts, relay)
                expired.append(path)
            return read(path, watch)

        monkeypatch.setattr(client, "get_async", expire_then_get)
        slot, report = cycle(cluster, slots)

        assert expired
        error = assert_zookeeper_outage(cluster, world, slot, report, relay.hosts, sample_log_url)
        assert error.startswith(f"session lost mid-cycle at {world.spout_path}: ")
        assert "SessionExpired" in error or "ConnectionLoss" in error

        slot, report = cycle(cluster, slots)
        assert_all_fresh(cluster, world, slot, report)

        # Expired between two cycles: the next one reads through a new session. It starts once
        # the collector's client has seen its connection go (kazoo's thread, a moment after
        # the server dropped it): a cycle in between reads on the old connection and loses it
        # mid-cycle, the case above (a fresh-clone run at load 16 started it 10 ms too early).
        client = _memories[cluster.name].sources.zookeeper._client
        noticed = threading.Event()
        client.add_listener(lambda state: noticed.set())
        expire_session(client, zk_hosts, relay)
        assert noticed.wait(60), "the collector's kazoo client never saw its session end"
        slot, report = cycle(cluster, slots)
        assert_all_fresh(cluster, world, slot, report)
        log_of(sample_log_url, cluster)
    finally:
        forget_clusters()


# --- 5. the broker stopped -------------------------------------------------------------------


def test_broker_stopped_then_restarted_with_its_data(
    fast_cluster: Cluster, world: World, zk: KazooClient, admin: AdminClient,
    services: LabServices, kafka_bootstrap: str, sample_log_url: str, slots: Iterator[int],
) -> None:  # fmt: skip
    first_slot, first = cycle(fast_cluster, slots)
    assert first.unreachable == []

    services.stop("kafka")
    # The consumers reading from ZooKeeper commit on: their commits stay fresh.
    zk.set(world.spout_path, world.spout_node(5))
    zk.set(world.zk_offset_path, b"2")
    slot, report = cycle(fast_cluster, slots)

    assert report.unreachable == ["kafka"]
    ((source, error),) = errors(fast_cluster, "cluster")["cluster"]
    assert source == "kafka" and error.startswith("unreachable: ")
    assert (
        not CollectionError.objects.filter(cluster=fast_cluster, source="kafka")
        .exclude(where="cluster")
        .exists()
    )
    kafka_health = health(fast_cluster, "kafka")
    assert (kafka_health.reachable, kafka_health.last_error, kafka_health.consecutive_failures) == (
        False, error, 1,
    )  # fmt: skip
    assert health(fast_cluster, "zookeeper").reachable is True
    doc = status(fast_cluster)
    assert_shown(doc, world, {"kafka"}, stale=True)
    assert_sampled_at(fast_cluster, world, {"kafka"}, first_slot)
    # Fresh commits, the last known broker figures (latest, lag), stale.
    spout = rows(doc, "storm", world.spout)[(world.topic, 0)]
    assert (spout["committed"], spout["latest"], spout["lag"], spout["stale"]) == (5, 5, 1, True)
    zk_row = rows(doc, "zookeeper", world.zk_group)[(world.topic, 1)]
    assert (zk_row["committed"], zk_row["latest"], zk_row["lag"], zk_row["stale"]) == (
        2,
        3,
        2,
        True,
    )
    assert_sampled_at(fast_cluster, world, {"storm", "zookeeper"}, slot)
    log = log_of(sample_log_url, fast_cluster)
    assert_logged(log, slot, world, {"kafka"}, stale=True)
    assert logged_figures(log, slot, "storm", world.spout) == {
        (world.topic, 0): (5, None, None, True)
    }
    assert logged_figures(log, slot, "zookeeper", world.zk_group) == {
        (world.topic, 1): (2, None, None, True)
    }

    # The broker comes back with its data (topics, commits), as Kafka does; the world moves on.
    services.start("kafka")
    # A fresh client for the test's own writes: one that lived through the restart can time
    # out on group requests (docs/LAB.md). The collector's client is the one under test.
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    assert world.topic in admin.list_topics(timeout=10).topics
    produce(kafka_bootstrap, world.topic, {0: 1, 1: 1})

    def committed_once_loaded() -> bool:
        # Until the coordinator has loaded __consumer_offsets, it answers
        # COORDINATOR_LOAD_IN_PROGRESS (a restart's normal first seconds).
        try:
            alter_offsets(admin, world.group, {(world.topic, 0): 4, (world.topic, 1): 4})
        except KafkaException:
            return False
        return True

    wait_for(committed_once_loaded, 60, "the group coordinator loaded after the restart")
    slot, report = cycle(fast_cluster, slots)

    now = {
        ("kafka", world.group): {(world.topic, 0): (4, 6, 2), (world.topic, 1): (4, 4, 0)},
        ("storm", world.spout): {(world.topic, 0): (5, 6, 1)},
        ("zookeeper", world.zk_group): {(world.topic, 1): (2, 4, 2)},
    }
    assert_all_fresh(fast_cluster, world, slot, report, now)
    assert health(fast_cluster, "kafka").last_success_at == ms_to_dt(slot)
    assert_logged(log_of(sample_log_url, fast_cluster), slot, now, {"kafka", "storm", "zookeeper"},
                  stale=False)  # fmt: skip

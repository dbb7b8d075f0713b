"""The ZooKeeper adapter against a real ZooKeeper server (the session's lab fixture).

Each test writes under its own uuid-named root or consumer group, so tests sharing the
server cannot see each other's nodes. Failures (connection cut mid-cycle, a server that stops
answering, a refused or absent server) are staged with a small TCP relay in front of the
server, so the shared server itself is never stopped.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.security import make_digest_acl

from collectors import storm_znode
from collectors.identity import changes, znode_mark, znode_mark_key
from collectors.records import CommittedOffset, GroupMember, GroupSnapshot, Source, SourceError
from collectors.storm_znode import BadZnode
from collectors.zookeeper import (
    ZooKeeperSource,
    parse_consumer_offset,
    parse_consumer_registration,
)
from collectors.zookeeper.batched_reads import PollHandler

# --- pure parsers of the ZooKeeper-consumer nodes (no server needed) ------------------------

OFFSET_PATH = "/consumers/g/offsets/orders/0"


@pytest.mark.parametrize(
    ("data", "offset"),
    [(b"0", 0), (b"42", 42), (b" 77\n", 77), (b"9223372036854775807", 2**63 - 1)],
)
def test_consumer_offset_text(data: bytes, offset: int) -> None:
    assert parse_consumer_offset(OFFSET_PATH, data) == offset


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "node has no data"),
        (b"", "node has no data"),
        (b"abc", "offset is not a decimal integer: 'abc'"),
        (b"1_000", "offset is not a decimal integer: '1_000'"),
        (b"+5", "offset is not a decimal integer: '+5'"),
        (b"4.0", "offset is not a decimal integer: '4.0'"),
        (b"1 2", "offset is not a decimal integer: '1 2'"),
        (b"0x10", "offset is not a decimal integer: '0x10'"),
        (b'{"offset": 1}', "offset is not a decimal integer: '{\"offset\": 1}'"),
        ("٣".encode(), "offset is not ASCII decimal text"),  # int() would accept it
        (b"\xff", "offset is not ASCII decimal text"),
        (b"-5", "offset -5 is negative"),
        (b"-0000000000000000001", "offset -1 is negative"),
        (b"9223372036854775808", "offset 9223372036854775808 is beyond Kafka's int64 range"),
        (b"12345678901234567890123", "offset is not a decimal integer: '12345678901234567890123'"),
        (b"1" * (storm_znode.MAX_ZNODE_BYTES + 1), "over the 1048576-byte limit"),
    ],
)
def test_bad_consumer_offset_text(data: bytes | None, reason: str) -> None:
    with pytest.raises(BadZnode) as caught:
        parse_consumer_offset(OFFSET_PATH, data)
    assert caught.value.where == OFFSET_PATH
    assert reason in caught.value.reason


def registration(subscription: Any, pattern: str | None = "static") -> bytes:
    node: dict[str, Any] = {"version": 1, "subscription": subscription, "timestamp": "1"}
    if pattern is not None:
        node["pattern"] = pattern
    return json.dumps(node, ensure_ascii=False).encode()


@pytest.mark.parametrize(
    ("data", "topics"),
    [
        (registration({"orders": 2}), ("orders",)),
        (registration({"orders": 1, "clicks": 3}), ("clicks", "orders")),
        (registration({"заказы": 1}), ("заказы",)),
        (registration({"orders": 1}, pattern=None), ("orders",)),  # old nodes: static
        (registration({"orders.*": 1}, pattern="white_list"), ()),  # keys are patterns
        (registration({"internal.*": 1}, pattern="black_list"), ()),
        (registration({}), ()),
    ],
)
def test_consumer_registration(data: bytes, topics: tuple[str, ...]) -> None:
    assert parse_consumer_registration("/consumers/g/ids/c1", data) == topics


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "node has no data"),
        (b"{not json", "not JSON"),
        (b"\xff", "not UTF-8"),
        (b"[1]", "registration is not a JSON object"),
        (b'{"version": 1}', "field subscription is missing or not an object"),
        (registration(["orders"]), "field subscription is missing or not an object"),
        (registration({"orders": True}), "subscription['orders'] is not a positive thread count"),
        (registration({"orders": 0}), "subscription['orders'] is not a positive thread count"),
        (registration({"orders": "1"}), "subscription['orders'] is not a positive thread count"),
        (registration({"": 1}), "subscription has an empty topic"),
        (registration({"o": 1}, pattern="regex"), "field pattern 'regex' is not static/"),
    ],
)
def test_bad_consumer_registration(data: bytes, reason: str) -> None:
    with pytest.raises(BadZnode) as caught:
        parse_consumer_registration("/consumers/g/ids/c1", data)
    assert caught.value.reason.startswith(reason)


# --- fixtures for the real server ---------------------------------------------------------


@pytest.fixture(scope="module")
def zk(zk_hosts: str) -> Iterator[KazooClient]:
    """A writer client, standing for Storm topologies and consumers."""
    client = KazooClient(hosts=zk_hosts, timeout=10)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def root(zk: KazooClient) -> Iterator[str]:
    path = f"/lagwatch-test/{uuid.uuid4().hex}"
    zk.ensure_path(path)
    yield path
    zk.delete(path, recursive=True)


@pytest.fixture
def groups(zk: KazooClient) -> Iterator[Callable[[str], str]]:
    """Unique ZooKeeper-consumer group names (the layout fixes their parent: /consumers)."""
    made: list[str] = []

    def new(label: str) -> str:
        made.append(f"{label}-{uuid.uuid4().hex[:12]}")
        return made[-1]

    yield new
    for name in made:
        with contextlib.suppress(NoNodeError):
            zk.delete(f"/consumers/{name}", recursive=True)


@pytest.fixture
def make_source(zk_hosts: str) -> Iterator[Callable[..., ZooKeeperSource]]:
    made: list[ZooKeeperSource] = []

    def new(
        spout_roots: list[str],
        zk_consumers: bool = False,
        timeout_s: float = 10,
        hosts: str | None = None,
    ) -> ZooKeeperSource:
        made.append(ZooKeeperSource(hosts or zk_hosts, spout_roots, zk_consumers, timeout_s))
        return made[-1]

    yield new
    for source in made:
        source.close()


def spout_data(
    topic: str,
    partition: int,
    offset: int,
    topology: tuple[str, str] = ("orders-topo-7-1700000000", "orders-topo"),
    broker: tuple[str, int] = ("kafka-2.example", 9092),
) -> bytes:
    return json.dumps(
        {
            "topology": {"id": topology[0], "name": topology[1]},
            "offset": offset,
            "partition": partition,
            "broker": {"host": broker[0], "port": broker[1]},
            "topic": topic,
        },
        ensure_ascii=False,
    ).encode()


def stat_of(zk: KazooClient, path: str) -> Any:
    return zk.get(path)[1]


def create_spouts(zk: KazooClient, root: str, spouts: int, partitions: int) -> None:
    pending = [zk.create_async(f"{root}/spout-{s}") for s in range(spouts)]
    for reply in pending:
        reply.get(timeout=30)
    pending = [
        zk.create_async(f"{root}/spout-{s}/partition_{p}", spout_data(f"topic-{s}", p, 1000 + p))
        for s in range(spouts)
        for p in range(partitions)
    ]
    for reply in pending:
        reply.get(timeout=30)


def errors_by_where(errors: list[SourceError]) -> dict[str, str]:
    return {error.where: error.error for error in errors}


# --- Storm spout commits ------------------------------------------------------------------


@pytest.mark.lab
def test_spout_commits_are_the_exact_records(zk, root, make_source) -> None:
    zk.create(f"{root}/orders-spout")
    for p in range(3):
        zk.create(f"{root}/orders-spout/partition_{p}", spout_data("orders", p, 100 + p))
    zk.set(f"{root}/orders-spout/partition_1", spout_data("orders", 1, 150))
    audit = ("audit-topo-3-1700000001", "audit-topo")
    zk.create(
        f"{root}/audit-spout/partition_0",
        spout_data("audit", 0, 7, topology=audit, broker=("kafka-1", 9093)),
        makepath=True,
    )
    source = make_source([root])

    result = source.collect(now_ms=1_700_000_000_000)

    def expected(spout: str, p: int, topic: str, offset: int, topo=None, broker=None):
        stat = stat_of(zk, f"{root}/{spout}/partition_{p}")
        topo = topo or ("orders-topo-7-1700000000", "orders-topo")
        return CommittedOffset(
            source=Source.STORM,
            group=spout,
            topic=topic,
            partition=p,
            offset=offset,
            commit_time_ms=stat.mtime,
            commit_version=stat.version,
            owner=topo[1],
            topology_id=topo[0],
            broker=broker or "kafka-2.example:9092",
            where=f"{root}/{spout}/partition_{p}",
        )

    assert result.reachable is True
    assert result.source is Source.ZOOKEEPER
    assert result.errors == [] and result.groups == []
    assert result.started_ms == 1_700_000_000_000 <= result.finished_ms
    assert result.commits == [
        expected("audit-spout", 0, "audit", 7, audit, "kafka-1:9093"),
        expected("orders-spout", 0, "orders", 100),
        expected("orders-spout", 1, "orders", 150),
        expected("orders-spout", 2, "orders", 102),
    ]
    assert [c.commit_version for c in result.commits] == [0, 0, 1, 0]

    # Each commit (a data write) bumps the version; mtime follows the last write.
    before = result.commits[1]
    time.sleep(0.01)
    zk.set(f"{root}/orders-spout/partition_0", spout_data("orders", 0, 120))
    zk.set(f"{root}/orders-spout/partition_0", spout_data("orders", 0, 130))
    after = source.collect(now_ms=1_700_000_060_000).commits[1]
    assert after.where == before.where
    assert after.offset == 130
    assert after.commit_version == before.commit_version + 2 == 2
    assert after.commit_time_ms == stat_of(zk, before.where).mtime > before.commit_time_ms


@pytest.mark.lab
def test_commits_come_in_a_stable_numeric_order(zk, root, make_source) -> None:
    for spout in ("b", "a"):
        for p in (11, 2, 10, 0, 1):
            zk.create(f"{root}/{spout}/partition_{p}", spout_data("t", p, p), makepath=True)
    other = f"{root}-other"
    zk.create(f"{other}/c/partition_0", spout_data("t", 0, 0), makepath=True)
    try:
        commits = make_source([other, root]).collect(0).commits
    finally:
        zk.delete(other, recursive=True)
    assert [(c.where.rsplit("/", 2)[-2], c.partition) for c in commits] == [
        ("c", 0),
        *[("a", p) for p in (0, 1, 2, 10, 11)],
        *[("b", p) for p in (0, 1, 2, 10, 11)],
    ]


@pytest.mark.lab
def test_non_ascii_spout_ids_topics_and_roots(zk, root, make_source) -> None:
    spout_root = f"{root}/корень"
    path = f"{spout_root}/spöut-заказы-κ/partition_2"
    topology = ("топология-1-1700000000", "топология")
    zk.create(path, spout_data("заказы.événements", 2, 9, topology=topology), makepath=True)

    (commit,) = make_source([spout_root]).collect(0).commits

    assert (commit.group, commit.topic, commit.owner, commit.topology_id, commit.where) == (
        "spöut-заказы-κ",
        "заказы.événements",
        "топология",
        "топология-1-1700000000",
        path,
    )


@pytest.mark.lab
def test_two_topics_under_one_spout_path_are_both_kept(zk, root, make_source) -> None:
    """Two topologies sharing a spoutConfig.id collide on one path (DOMAIN.md §1)."""
    orders = ("orders-topo-1-1", "orders-topo")
    payments = ("payments-topo-2-2", "payments-topo")
    zk.create(f"{root}/shared/partition_0", spout_data("orders", 0, 10, orders), makepath=True)
    zk.create(f"{root}/shared/partition_1", spout_data("payments", 1, 20, payments))
    source = make_source([root])

    commits = source.collect(0).commits

    assert [(c.group, c.partition, c.topic, c.topology_id) for c in commits] == [
        ("shared", 0, "orders", "orders-topo-1-1"),
        ("shared", 1, "payments", "payments-topo-2-2"),
    ]
    # The other topology then overwrites partition_0 with its own topic: the record follows.
    zk.set(f"{root}/shared/partition_0", spout_data("payments", 0, 3, payments))
    first = source.collect(0).commits[0]
    assert (first.topic, first.offset, first.owner, first.commit_version) == (
        "payments",
        3,
        "payments-topo",
        1,
    )


@pytest.mark.lab
def test_bad_spout_nodes_are_errors_and_the_cycle_goes_on(zk, root, make_source) -> None:
    spout = f"{root}/s"
    zk.create(f"{spout}/partition_0", spout_data("orders", 0, 5), makepath=True)
    good = json.loads(spout_data("orders", 0, 5))
    bad = {
        "partition_1": b"offset=5",
        "partition_2": json.dumps({k: v for k, v in good.items() if k != "topic"}).encode(),
        "partition_3": json.dumps({**good, "partition": 3, "offset": True}).encode(),
        "partition_4": json.dumps({**good, "partition": 4, "offset": -5}).encode(),
        "partition_5": spout_data("orders", 7, 5),
        "partition_6": b"",
        "partition_7": b"\xff\xfe{}",
        "partition_8": b"[1, 2]",
        "partition_9": json.dumps({**good, "partition": 9, "broker": {"host": "k"}}).encode(),
        "leader": b"whatever",
    }
    for name, data in bad.items():
        zk.create(f"{spout}/{name}", data)
    zk.create(f"{root}/t/partition_0", spout_data("other", 0, 6), makepath=True)

    result = make_source([root]).collect(0)

    assert result.reachable is True
    assert [c.where for c in result.commits] == [f"{spout}/partition_0", f"{root}/t/partition_0"]
    assert all(e.source is Source.STORM for e in result.errors)
    assert errors_by_where(result.errors) == {
        f"{spout}/partition_1": "not JSON: Expecting value: line 1 column 1 (char 0)",
        f"{spout}/partition_2": "missing field topic",
        f"{spout}/partition_3": "field offset must be an integer, got boolean",
        f"{spout}/partition_4": "field offset=-5 is negative",
        f"{spout}/partition_5": "field partition=7 disagrees with node name 'partition_5'",
        f"{spout}/partition_6": "node has no data",
        f"{spout}/partition_7": "not UTF-8: byte 0: invalid start byte",
        f"{spout}/partition_8": "JSON top level is array, not an object",
        f"{spout}/partition_9": "missing field broker.port",
        f"{spout}/leader": "node name 'leader' is not partition_<N>",
    }


@pytest.mark.lab
def test_a_node_the_collector_may_not_read_is_an_error(zk, root, make_source) -> None:
    secret = f"{root}/s/partition_1"
    zk.create(f"{root}/s/partition_0", spout_data("orders", 0, 1), makepath=True)
    zk.create(secret, spout_data("orders", 1, 1), acl=[make_digest_acl("u", "p", all=True)])
    try:
        result = make_source([root]).collect(0)
    finally:
        zk.delete(secret)  # needs only the parent's permission
    assert [c.partition for c in result.commits] == [0]
    assert result.errors == [SourceError(Source.STORM, secret, "not allowed to read (ACL)")]


@pytest.mark.lab
def test_big_nodes(zk, root, make_source, monkeypatch) -> None:
    """ZooKeeper's default jute.maxbuffer (1 MiB less 1 byte, packet overhead included) makes
    the server drop a client writing more than ~1 MiB, so a node over the parser's 1 MiB limit
    cannot be written to the lab server. What is checked here: a near-limit node is read whole
    and parsed, and the size guard is wired through the adapter (with a lowered limit); the
    exact 1 MiB boundary is covered by test_storm_znode.py.
    """
    body = spout_data("orders", 0, 42)
    near_limit = body + b" " * (1_000_000 - len(body))
    zk.create(f"{root}/s/partition_0", near_limit, makepath=True)
    zk.create(f"{root}/s/partition_1", spout_data("orders", 1, 43) + b" " * 5000)
    source = make_source([root])

    result = source.collect(0)
    assert [(c.partition, c.offset) for c in result.commits] == [(0, 42), (1, 43)]
    assert result.errors == []

    monkeypatch.setattr(storm_znode, "MAX_ZNODE_BYTES", 4096)
    result = source.collect(0)
    assert result.commits == []
    size = len(spout_data("orders", 1, 43)) + 5000
    assert errors_by_where(result.errors) == {
        f"{root}/s/partition_0": "data is 1000000 bytes, over the 4096-byte limit",
        f"{root}/s/partition_1": f"data is {size} bytes, over the 4096-byte limit",
    }


@pytest.mark.lab
def test_a_missing_spout_root_is_an_error_for_that_root_only(zk, root, make_source) -> None:
    zk.create(f"{root}/s/partition_0", spout_data("orders", 0, 5), makepath=True)
    missing = f"{root}/no-such-root"

    result = make_source([missing, root + "/"]).collect(0)

    assert result.reachable is True
    assert result.errors == [SourceError(Source.STORM, missing, "spout root does not exist")]
    assert [c.where for c in result.commits] == [f"{root}/s/partition_0"]


@pytest.mark.lab
def test_nodes_and_spouts_deleted_between_listing_and_read_are_skipped(
    zk, root, make_source, monkeypatch
) -> None:
    for p in range(3):
        zk.create(f"{root}/s/partition_{p}", spout_data("orders", p, p), makepath=True)
    zk.create(f"{root}/gone/partition_0", spout_data("orders", 0, 0), makepath=True)
    source = make_source([root])
    assert len(source.collect(0).commits) == 4
    client = source._client  # the adapter's own session: delete right before it reads
    real_get, real_ls = client.get_async, client.get_children_async

    def get_async(path, watch=None):
        if path == f"{root}/s/partition_1":
            zk.delete(path)
        return real_get(path, watch)

    def get_children_async(path, watch=None, include_data=False):
        if path == f"{root}/gone":
            zk.delete(path, recursive=True)
        return real_ls(path, watch, include_data)

    monkeypatch.setattr(client, "get_async", get_async)
    monkeypatch.setattr(client, "get_children_async", get_children_async)

    result = source.collect(0)

    assert result.reachable is True and result.errors == []
    assert [c.where for c in result.commits] == [f"{root}/s/partition_0", f"{root}/s/partition_2"]


# --- ZooKeeper-based Kafka consumers ------------------------------------------------------


def ids_cversion(zk: KazooClient, group: str) -> int:
    return zk.get_children(f"/consumers/{group}/ids", include_data=True)[1].cversion


def group_of(result, name: str) -> GroupSnapshot:
    (snapshot,) = [g for g in result.groups if g.group == name]
    return snapshot


def commits_of(result, name: str) -> list[CommittedOffset]:
    return [c for c in result.commits if c.group == name]


@pytest.mark.lab
def test_zookeeper_consumer_group_as_members_come_and_go(zk, zk_hosts, groups, make_source) -> None:
    g = groups("orders-reader")
    base = f"/consumers/{g}"
    zk.ensure_path(f"{base}/ids")
    zk.ensure_path(f"{base}/owners/orders")
    zk.create(f"{base}/offsets/orders/0", b"42", makepath=True)
    zk.create(f"{base}/offsets/orders/1", b"17")
    zk.create(f"{base}/offsets/audit/0", b"5", makepath=True)
    source = make_source([], zk_consumers=True)
    cv0 = ids_cversion(zk, g)

    def offset(topic: str, p: int, value: int, owner: str | None) -> CommittedOffset:
        path = f"{base}/offsets/{topic}/{p}"
        stat = stat_of(zk, path)
        return CommittedOffset(
            source=Source.ZOOKEEPER,
            group=g,
            topic=topic,
            partition=p,
            offset=value,
            commit_time_ms=stat.mtime,
            commit_version=stat.version,
            owner=owner,
            where=path,
        )

    # No member yet: an empty group.
    result = source.collect(0)
    assert result.reachable is True and result.errors == []
    assert group_of(result, g) == GroupSnapshot(
        source=Source.ZOOKEEPER,
        group=g,
        state="Empty",
        generation=cv0,
        members=(),
        members_known=True,
        topics=("audit", "orders"),
    )
    assert commits_of(result, g) == [
        offset("audit", 0, 5, None),
        offset("orders", 0, 42, None),
        offset("orders", 1, 17, None),
    ]

    members: list[KazooClient] = []
    try:
        # c1 joins and owns both partitions of orders, one thread each (ephemeral nodes).
        m1 = KazooClient(hosts=zk_hosts)
        m1.start(timeout=30)
        members.append(m1)
        m1.create(f"{base}/ids/c1", registration({"orders": 2}), ephemeral=True)
        m1.create(f"{base}/owners/orders/0", b"c1-0", ephemeral=True)
        m1.create(f"{base}/owners/orders/1", b"c1-1", ephemeral=True)
        result = source.collect(0)
        snapshot = group_of(result, g)
        assert (snapshot.state, snapshot.generation) == ("Stable", cv0 + 1)
        assert snapshot.members == (GroupMember("c1", assignment=(("orders", 0), ("orders", 1))),)
        assert commits_of(result, g) == [
            offset("audit", 0, 5, None),
            offset("orders", 0, 42, "c1-0"),
            offset("orders", 1, 17, "c1-1"),
        ]

        # c2 joins (subscribing to clicks too); partition 1 moves to it; it commits 18.
        m2 = KazooClient(hosts=zk_hosts)
        m2.start(timeout=30)
        members.append(m2)
        m2.create(f"{base}/ids/c2", registration({"orders": 1, "clicks": 1}), ephemeral=True)
        m1.delete(f"{base}/owners/orders/1")
        m2.create(f"{base}/owners/orders/1", b"c2-0", ephemeral=True)
        m2.set(f"{base}/offsets/orders/1", b"18")
        result = source.collect(0)
        snapshot = group_of(result, g)
        assert (snapshot.state, snapshot.generation) == ("Stable", cv0 + 2)
        assert snapshot.generation == ids_cversion(zk, g)
        assert snapshot.members == (
            GroupMember("c1", assignment=(("orders", 0),)),
            GroupMember("c2", assignment=(("orders", 1),)),
        )
        assert snapshot.topics == ("audit", "clicks", "orders")
        (moved,) = [c for c in commits_of(result, g) if c.where.endswith("orders/1")]
        assert moved == offset("orders", 1, 18, "c2-0")
        assert moved.commit_version == 1

        # c1's session ends: its id and owner nodes vanish with it.
        m1.stop()
        result = source.collect(0)
        snapshot = group_of(result, g)
        assert (snapshot.state, snapshot.generation) == ("Stable", cv0 + 3)
        assert snapshot.members == (GroupMember("c2", assignment=(("orders", 1),)),)
        assert [c.owner for c in commits_of(result, g)] == [None, None, "c2-0"]

        m2.stop()
        snapshot = group_of(source.collect(0), g)
        assert (snapshot.state, snapshot.generation, snapshot.members) == ("Empty", cv0 + 4, ())
    finally:
        for member in members:
            member.stop()
            member.close()


@pytest.mark.lab
def test_a_group_without_ids_node_has_unknown_state(zk, groups, make_source) -> None:
    g = groups("exported")
    zk.create(f"/consumers/{g}/offsets/orders/3", b"99", makepath=True)

    result = make_source([], zk_consumers=True).collect(0)

    assert group_of(result, g) == GroupSnapshot(
        source=Source.ZOOKEEPER,
        group=g,
        state=None,
        generation=None,
        members=(),
        members_known=False,
        topics=("orders",),
    )
    assert [(c.partition, c.offset) for c in commits_of(result, g)] == [(3, 99)]


@pytest.mark.lab
def test_bad_zookeeper_consumer_nodes(zk, groups, make_source) -> None:
    g = groups("broken")
    base = f"/consumers/{g}"
    for name, data in {
        "0": b"abc",
        "1": b"-5",
        "2": b"",
        "3": b"1_000",
        "4": b" 77\n",
        "x": b"1",
        "05": b"1",
    }.items():
        zk.create(f"{base}/offsets/t/{name}", data, makepath=True)
    zk.create(f"{base}/ids/bad", b"{not json", makepath=True)
    zk.create(f"{base}/owners/t/4", b"", makepath=True)

    result = make_source([], zk_consumers=True).collect(0)

    assert result.reachable is True
    assert [(c.partition, c.offset, c.owner) for c in commits_of(result, g)] == [(4, 77, None)]
    assert group_of(result, g).members == (GroupMember("bad"),)
    mine = [e for e in result.errors if e.where.startswith(base + "/")]
    assert all(e.source is Source.ZOOKEEPER for e in mine)
    assert errors_by_where(mine) == {
        f"{base}/offsets/t/0": "offset is not a decimal integer: 'abc'",
        f"{base}/offsets/t/1": "offset -5 is negative",
        f"{base}/offsets/t/2": "node has no data",
        f"{base}/offsets/t/3": "offset is not a decimal integer: '1_000'",
        f"{base}/offsets/t/x": "partition node name is not a number",
        f"{base}/offsets/t/05": "partition node name is not a number",
        f"{base}/ids/bad": "not JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
        f"{base}/owners/t/4": "owner is not a consumer thread id",
    }


@pytest.mark.lab
def test_a_group_deleted_mid_cycle_is_skipped(zk, groups, make_source, monkeypatch) -> None:
    kept, gone = groups("kept"), groups("gone")
    for g in (kept, gone):
        zk.create(f"/consumers/{g}/offsets/orders/0", b"1", makepath=True)
        zk.create(f"/consumers/{g}/offsets/orders/1", b"2")
        zk.ensure_path(f"/consumers/{g}/ids")
    source = make_source([], zk_consumers=True)
    assert {kept, gone} <= {s.group for s in source.collect(0).groups}
    client = source._client
    real_ls, real_get = client.get_children_async, client.get_async

    def get_children_async(path, watch=None, include_data=False):
        if path == f"/consumers/{gone}/offsets":  # the group goes right after being listed
            zk.delete(f"/consumers/{gone}", recursive=True)
        return real_ls(path, watch, include_data)

    def get_async(path, watch=None):
        if path == f"/consumers/{kept}/offsets/orders/1":  # one offset node goes too
            zk.delete(path)
        return real_get(path, watch)

    monkeypatch.setattr(client, "get_children_async", get_children_async)
    monkeypatch.setattr(client, "get_async", get_async)

    result = source.collect(0)

    assert result.reachable is True
    assert [e for e in result.errors if kept in e.where or gone in e.where] == []
    assert gone not in {s.group for s in result.groups}
    assert [c.where for c in result.commits if c.group in (kept, gone)] == [
        f"/consumers/{kept}/offsets/orders/0"
    ]
    assert group_of(result, kept).state == "Empty"


@pytest.mark.lab
def test_both_kinds_in_one_cycle(zk, root, groups, make_source) -> None:
    g = groups("both")
    zk.create(f"{root}/s/partition_0", spout_data("orders", 0, 5), makepath=True)
    zk.create(f"/consumers/{g}/offsets/orders/0", b"6", makepath=True)

    result = make_source([root], zk_consumers=True).collect(0)

    mine = [c for c in result.commits if c.group in ("s", g)]
    assert [(c.source, c.group, c.offset) for c in mine] == [
        (Source.STORM, "s", 5),
        (Source.ZOOKEEPER, g, 6),
    ]


# --- an unreachable or failing server ------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.lab
def test_unreachable_zookeeper_is_reported_quickly_without_raising(make_source) -> None:
    hosts = f"127.0.0.1:{free_port()}"  # nothing listens there
    source = make_source(["/storm"], zk_consumers=True, timeout_s=1, hosts=hosts)
    for _ in range(2):  # and again: no state left behind that would raise
        started = time.monotonic()
        result = source.collect(now_ms=5000)
        elapsed = time.monotonic() - started
        assert result.reachable is False
        assert result.commits == [] and result.groups == []
        (error,) = result.errors
        assert (error.source, error.where) == (Source.ZOOKEEPER, hosts)
        assert error.error.startswith("cannot connect to ZooKeeper within 1 s")
        assert elapsed < 2.5
        assert result.started_ms == 5000 and 5000 + 900 <= result.finished_ms <= 5000 + 2500


def test_a_malformed_host_string_is_a_source_error_not_an_exception() -> None:
    source = ZooKeeperSource("127.0.0.1:notaport", ["/storm"], True, timeout_s=1)
    try:
        result = source.collect(0)
    finally:
        source.close()
    assert result.reachable is False
    assert result.errors[0].error.startswith("cannot connect to ZooKeeper")


class FlakyRelay:
    """A TCP relay in front of ZooKeeper that a test can cut, stall or make refuse."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._server = socket.create_server(("127.0.0.1", 0))
        self.hosts = f"127.0.0.1:{self._server.getsockname()[1]}"
        self.refuse = False
        self.stall = threading.Event()  # set: hold back the server's replies
        self.cut_after: int | None = None  # cut every connection once this many reply bytes
        self.cuts = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._server.accept()
            except OSError:
                return
            if self.refuse:
                downstream.close()
                continue
            upstream = socket.create_connection(self._target)
            with self._lock:
                self._open += [downstream, upstream]
            threading.Thread(
                target=self._pump, args=(downstream, upstream, False), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(upstream, downstream, True), daemon=True
            ).start()

    def _pump(self, src: socket.socket, dst: socket.socket, replies: bool) -> None:
        try:
            while data := src.recv(65536):
                if replies:
                    while self.stall.is_set():
                        time.sleep(0.01)
                    with self._lock:
                        if self.cut_after is not None:
                            if len(data) >= self.cut_after:
                                self.cut_after = None
                                self.cuts += 1
                                break
                            self.cut_after -= len(data)
                dst.sendall(data)
        except OSError:
            pass
        self._shut(src, dst)

    def _shut(self, *socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def drop_all(self) -> None:
        with self._lock:
            socks, self._open = self._open, []
        self._shut(*socks)

    def close(self) -> None:
        self.stall.clear()
        self._server.close()
        self.drop_all()


@pytest.fixture
def relay(zk_hosts: str) -> Iterator[FlakyRelay]:
    proxy = FlakyRelay(zk_hosts)
    yield proxy
    proxy.close()


@pytest.mark.lab
def test_session_lost_mid_cycle_then_recovered(zk, root, relay, make_source) -> None:
    create_spouts(zk, root, spouts=30, partitions=10)  # ~90 kB of replies per cycle
    source = make_source([root], timeout_s=5, hosts=relay.hosts)
    first = source.collect(0)
    assert first.reachable is True and len(first.commits) == 300

    relay.cut_after = 20_000  # well into the partition reads
    started = time.monotonic()
    lost = source.collect(0)
    assert time.monotonic() - started < 5
    assert relay.cuts == 1
    assert lost.reachable is False
    assert lost.commits == [] and lost.groups == []  # a half-read tree is not reported
    (error,) = lost.errors
    assert (error.source, error.where) == (Source.ZOOKEEPER, relay.hosts)
    assert error.error.startswith(f"session lost mid-cycle at {root}/spout-")
    assert "/partition_" in error.error and "ConnectionLoss" in error.error

    again = source.collect(0)
    assert again.reachable is True and again.errors == []
    assert again.commits == first.commits


@pytest.mark.lab
def test_server_gone_between_cycles_then_back(zk, root, relay, make_source) -> None:
    create_spouts(zk, root, spouts=2, partitions=2)
    source = make_source([root], timeout_s=2, hosts=relay.hosts)
    first = source.collect(0)
    assert first.reachable is True and len(first.commits) == 4

    relay.refuse = True
    relay.drop_all()
    started = time.monotonic()
    down = source.collect(0)
    assert time.monotonic() - started < 3.5
    assert down.reachable is False and down.commits == []
    (error,) = down.errors
    assert error.where == relay.hosts
    # Depending on whether kazoo noticed the drop before the cycle started:
    assert error.error.startswith(("cannot connect to ZooKeeper", "session lost mid-cycle"))

    relay.refuse = False
    back = source.collect(0)
    assert back.reachable is True and back.commits == first.commits


@pytest.mark.lab
def test_a_server_that_stops_answering_is_bounded_by_the_timeout(
    zk, root, relay, make_source
) -> None:
    create_spouts(zk, root, spouts=2, partitions=2)
    source = make_source([root], timeout_s=1, hosts=relay.hosts)
    assert source.collect(0).reachable is True

    relay.stall.set()
    started = time.monotonic()
    stalled = source.collect(0)
    elapsed = time.monotonic() - started
    relay.stall.clear()

    assert 0.9 <= elapsed < 2.0
    assert stalled.reachable is False and stalled.commits == []
    (error,) = stalled.errors
    assert error.error.startswith("no reply from ZooKeeper within 1 s")
    assert source.collect(0).reachable is True


@pytest.mark.lab
def test_close_then_collect_reconnects(zk, root, make_source) -> None:
    zk.create(f"{root}/s/partition_0", spout_data("orders", 0, 5), makepath=True)
    source = make_source([root])
    assert len(source.collect(0).commits) == 1
    source.close()
    source.close()  # idempotent
    assert source._client is None
    assert len(source.collect(0).commits) == 1
    assert source._client is not None and source._client.connected


# --- the poll-based select the adapter gives kazoo -----------------------------------------


def test_poll_select_follows_kazoos_select_contract() -> None:
    select_ = PollHandler().select
    a, b = socket.socketpair()
    try:
        # Nothing to read: times out empty; a fresh socket is writable.
        started = time.monotonic()
        assert select_([a], [], [], 0.05) == ([], [], [])
        assert time.monotonic() - started >= 0.04
        assert select_([], [a], [], 0) == ([], [a], [])
        b.sendall(b"x")
        assert select_([a, b], [], [], 1) == ([a], [], [])
        # Readable and writable at once is reported as readable only, like kazoo's own.
        assert select_([a], [a], [], 1) == ([a, a], [], [])
        # Plain descriptors work as well as socket objects.
        assert select_([a.fileno()], [], [], 1) == ([a.fileno()], [], [])
        a.recv(1)
        # A hung-up peer makes the socket readable, so that recv() reports the end.
        b.close()
        assert select_([a], [], [], 1) == ([a], [], [])
        assert a.recv(1) == b""
        with pytest.raises(ValueError):
            select_([a], [], [], -1)
    finally:
        a.close()
        b.close()
    with pytest.raises(TypeError):
        select_([a], [], [], 0)  # closed: fileno() is -1, as kazoo's own select refuses


# --- identity ---------------------------------------------------------------------------------


def test_each_watched_roots_creation_is_a_mark(
    zk: KazooClient, root: str, make_source: Callable[..., ZooKeeperSource]
) -> None:
    """The roots' ``czxid`` and ``ctime``: the same from any session, new when a root is made
    again (as by a wiped ensemble's spouts); a missing root gives none."""
    missing = f"{root}-absent"
    result = make_source([root, missing]).collect(now_ms=0)
    stat = stat_of(zk, root)
    assert result.identity == {znode_mark_key(root): znode_mark(stat.czxid, stat.ctime)}
    assert make_source([root]).collect(now_ms=0).identity == result.identity  # another session
    zk.delete(root, recursive=True)
    zk.ensure_path(root)
    again = make_source([root]).collect(now_ms=0).identity
    assert changes(result.identity, again)  # recreated: czxid moved on

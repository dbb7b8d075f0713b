"""The workload's parts against the real ZooKeeper and the real Apache Kafka broker.

Each test builds a small world with uuid names (the session stack is shared) from the same
classes as the demo world, and checks what Lagwatch will read: groups (both group protocols),
their members, assignments and committed offsets through the AdminClient, the ZooKeeper
consumer's znodes, the pushed librdkafka statistics, the control endpoint, and the real
`python -m lab.workload` process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType, KafkaException
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription
from kazoo.client import KazooClient
from lagwatch_client import IngestSender

from lab.workload import control
from lab.workload.consumer_groups import ConsumerGroup, MemberSettings, group_settings
from lab.workload.demo import DEMO_WORLD
from lab.workload.probes import (
    committed_offsets,
    listed_groups,
    spout_znode,
    zk_consumer_offsets,
)
from lab.workload.runner import ScenarioRunner
from lab.workload.scenarios import SCENARIOS
from lab.workload.server import ControlServer
from lab.workload.spec import (
    CLASSIC,
    CONSUMER,
    GroupSpec,
    Roles,
    TopicSpec,
    WorldSpec,
    ZkConsumerSpec,
)
from lab.workload.topics import TopicAdmin
from lab.workload.world import World
from lab.workload.zk_consumer import ZkGroupConsumer
from tests.waiting import wait_until

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
FAST = MemberSettings(statistics_interval_ms=1000, commit_interval_s=0.3)


def uid(kind: str) -> str:
    return f"wl-{kind}-{uuid.uuid4().hex[:8]}"


def describe(admin: AdminClient, group: str) -> ConsumerGroupDescription:
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result()


def broker_assignment(admin: AdminClient, group: str) -> dict[str, list[int]]:
    """client.id -> partitions, as the broker describes the group's members."""
    return {
        m.client_id: sorted(tp.partition for tp in m.assignment.topic_partitions)
        for m in describe(admin, group).members
    }


# (protocol, assignor) of every kind of group the lab runs.
KINDS = [
    (CLASSIC, "range"),
    (CLASSIC, "roundrobin"),
    (CLASSIC, "cooperative-sticky"),
    (CONSUMER, "uniform"),
    (CONSUMER, "range"),
]


def test_groups_of_both_protocols_and_each_assignor_commit_and_the_broker_describes_them(
    kafka_bootstrap: str, admin: AdminClient
) -> None:
    topic = uid("t")
    groups = {kind: uid(f"{kind[0]}-{kind[1]}") for kind in KINDS}
    spec = WorldSpec(
        topics=(TopicSpec(topic, partitions=4, rate=40),),
        groups=tuple(
            GroupSpec(g, topic, members=2, assignor=a, protocol=p) for (p, a), g in groups.items()
        ),
    )
    with World(spec, kafka_bootstrap, "unused:1", member_settings=FAST) as world:

        def assignments(group: str) -> dict[str, list[int]] | None:
            """client.id -> partitions, once the members' own view and the broker's agree
            and cover the topic."""
            mine = {m.client_id: m.assignment() for m in world.groups[group].members()}
            if not all(mine.values()) or sum(map(len, mine.values())) != 4:
                return None
            return mine if broker_assignment(admin, group) == mine else None

        got_by_client = {
            g: wait_until(lambda g=g: assignments(g), 60, f"{g} assigned") for g in groups.values()
        }
        got = {kind: sorted(got_by_client[g].values()) for kind, g in groups.items()}
        # The assignor configured is the one in force: range deals contiguous ranges (on the
        # client with the classic protocol, on the broker with KIP-848's), round-robin
        # alternates; cooperative-sticky and uniform only promise balance.
        assert got[(CLASSIC, "range")] == [[0, 1], [2, 3]]
        assert got[(CONSUMER, "range")] == [[0, 1], [2, 3]]
        assert got[(CLASSIC, "roundrobin")] == [[0, 2], [1, 3]]
        for kind in ((CLASSIC, "cooperative-sticky"), (CONSUMER, "uniform")):
            assert sorted(map(len, got[kind])) == [2, 2]
            assert sorted(sum(got[kind], [])) == [0, 1, 2, 3]

        for (protocol, assignor), group in groups.items():
            desc = describe(admin, group)
            assert desc.type == (
                ConsumerGroupType.CONSUMER if protocol == CONSUMER else ConsumerGroupType.CLASSIC
            )
            assert desc.state == ConsumerGroupState.STABLE
            assert desc.partition_assignor == assignor
            assert {m.host for m in desc.members} == {"/127.0.0.1"}
            if protocol == CONSUMER:  # KIP-848: the broker's target, reached by every member
                for m in desc.members:
                    target = sorted(tp.partition for tp in m.target_assignment.topic_partitions)
                    assert target == got_by_client[group][m.client_id]

        wait_until(lambda: set(groups.values()) <= listed_groups(admin), 20, "groups listed")
        for group in groups.values():
            first = wait_until(
                lambda g=group: (
                    (c := committed_offsets(admin, g))
                    and len(c) == 4
                    and all(o > 0 for o in c.values())
                    and c
                ),
                20,
                f"{group} committed on every partition",
            )
            high = world.admin.high_watermarks(topic, 4)
            assert all(first[(topic, p)] <= high[p] for p in range(4))
            wait_until(
                lambda g=group, f=first: all(committed_offsets(admin, g)[k] > f[k] for k in f),
                20,
                f"{group} commits advance",
            )


def test_a_consumer_protocol_member_names_only_the_brokers_assignor() -> None:
    settings = MemberSettings()
    modern = group_settings(GroupSpec("g", "t", 1, "uniform", protocol=CONSUMER), settings)
    assert modern == {
        "group.id": "g",
        "group.protocol": "consumer",
        "group.remote.assignor": "uniform",
    }
    classic = group_settings(GroupSpec("g", "t", 1, "roundrobin"), settings)
    assert classic["group.protocol"] == "classic"
    assert classic["partition.assignment.strategy"] == "roundrobin"
    assert classic["session.timeout.ms"] == settings.session_timeout_ms
    # Why: librdkafka refuses the classic settings in a consumer-protocol client.
    for refused in ("partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"):
        with pytest.raises(KafkaException, match="not supported for `group.protocol=consumer`"):
            Consumer({**modern, "bootstrap.servers": "127.0.0.1:1", refused: classic[refused]})
    with pytest.raises(ValueError, match="must be one of"):
        GroupSpec("g", "t", 1, "roundrobin", protocol=CONSUMER)
    with pytest.raises(ValueError, match="must be one of"):
        GroupSpec("g", "t", 1, "uniform")
    with pytest.raises(ValueError, match="protocol must be one of"):
        GroupSpec("g", "t", 1, protocol="share")


def test_high_watermarks_count_records(kafka_bootstrap: str) -> None:
    topic = uid("hw")
    spec = WorldSpec(topics=(TopicSpec(topic, partitions=3, rate=0),))
    with World(spec, kafka_bootstrap, "unused:1") as world:
        assert world.admin.existing()[topic] == 3, "created with its declared partition count"
        world.producers.produce_now(topic, 60)
        # Kafka's high watermark moves per record, however the producer batched them.
        assert world.admin.high_watermarks(topic, 3) == {0: 20, 1: 20, 2: 20}

        time.sleep(1.0)  # an observation window, not a wait: rate 0 produces nothing in it
        assert sum(world.admin.high_watermarks(topic, 3).values()) == 60, "rate 0 produced"
        assert world.producers.set_rate(topic, 30) == 0
        wait_until(
            lambda: sum(world.admin.high_watermarks(topic, 3).values()) >= 80,
            10,
            "producing at the new rate",
        )
        assert world.producers.status()[topic]["failed"] == 0


@pytest.mark.parametrize("protocol", [CLASSIC, CONSUMER])
def test_members_can_be_added_and_removed_at_runtime(
    kafka_bootstrap: str, admin: AdminClient, protocol: str
) -> None:
    topic, group = uid("t"), uid("g")
    TopicAdmin(kafka_bootstrap).ensure([TopicSpec(topic, 4)])
    spec = GroupSpec(group, topic, members=1, assignor="range", protocol=protocol)
    g = ConsumerGroup(spec, kafka_bootstrap, FAST)
    g.start()
    try:
        first = g.members()[0]
        wait_until(lambda: first.assignment() == [0, 1, 2, 3], 30, "single member owns all")
        new_id = g.add_member()
        assert g.member_count() == 2
        second = g.members()[1]
        assert second.client_id == new_id
        wait_until(
            lambda: (
                sorted(first.assignment() + second.assignment()) == [0, 1, 2, 3]
                and len(second.assignment()) == 2
            ),
            30,
            "rebalanced over two members",
        )
        wait_until(
            lambda: (
                broker_assignment(admin, group)
                == {first.client_id: first.assignment(), new_id: second.assignment()}
            ),
            30,
            "the broker describes both members and their partitions",
        )
        assert g.remove_member() == new_id
        assert not second.alive
        wait_until(lambda: first.assignment() == [0, 1, 2, 3], 30, "survivor owns all again")
        wait_until(
            lambda: broker_assignment(admin, group) == {first.client_id: [0, 1, 2, 3]},
            30,
            "the broker forgot the member that left",
        )
        assert first.rebalances >= 2
    finally:
        g.stop()
    assert g.member_count() == 0
    # Every member left at once; the group is empty, not waiting for a departed leader.
    wait_until(
        lambda: (d := describe(admin, group)).state == ConsumerGroupState.EMPTY and not d.members,
        30,
        "the group empty once its last member closed",
    )


class _IngestStub:
    """Records POSTs like Lagwatch's ingest endpoint would receive them."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str | None, dict[str, Any]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                stub.received.append(
                    (self.path, self.headers.get("Authorization"), json.loads(body))
                )
                self.send_response(202)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/api/v1/ingest"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_librdkafka_statistics_are_pushed_and_a_dead_endpoint_does_not_stall_consumers(
    kafka_bootstrap: str,
) -> None:
    topic = uid("t")
    stub = _IngestStub()
    good = IngestSender(stub.url, "s3cret", flush_interval_s=0.2)
    dead = IngestSender(
        f"http://127.0.0.1:{_free_port()}/api/v1/ingest", "x", timeout_s=1, backoff_s=0.2,
        max_backoff_s=0.5, flush_interval_s=0.2,
    )  # fmt: skip
    spec_ok, spec_dead = GroupSpec(uid("g"), topic, 1), GroupSpec(uid("g"), topic, 1)
    spec = WorldSpec(topics=(TopicSpec(topic, 2, rate=20),))
    try:
        with World(spec, kafka_bootstrap, "unused:1", ingest=good):
            groups = [
                ConsumerGroup(spec_ok, kafka_bootstrap, FAST, good),
                ConsumerGroup(spec_dead, kafka_bootstrap, FAST, dead),
            ]
            for g in groups:
                g.start()
            try:
                doc = wait_until(
                    lambda: next(
                        (
                            d
                            for _p, _a, d in stub.received
                            if d.get("cgrp", {}).get("assignment_size") == 2
                            and topic in d.get("topics", {})
                        ),
                        None,
                    ),
                    30,
                    "a statistics document with the assignment and the topic",
                )
                path = next(p for p, _a, d in stub.received if d is doc)
                assert path == f"/api/v1/ingest/librdkafka?group={spec_ok.name}"
                assert {a for _p, a, _d in stub.received} == {"Bearer s3cret"}
                assert doc["type"] == "consumer"
                assert doc["client_id"] == f"{spec_ok.name}-1"
                partitions = doc["topics"][topic]["partitions"]
                assert {"0", "1"} <= set(partitions), "per-partition figures for the product"
                producer_doc = wait_until(
                    lambda: next(
                        (d for _p, _a, d in stub.received if d.get("type") == "producer"), None
                    ),
                    30,
                    "the producer's statistics",
                )
                assert topic in producer_doc["topics"]
                path = next(p for p, _a, d in stub.received if d is producer_doc)
                assert path == "/api/v1/ingest/librdkafka", "a producer belongs to no group"
                # The member behind the unreachable endpoint keeps consuming regardless.
                member = groups[1].members()[0]
                before = member.consumed
                wait_until(lambda: dead.status()["retries"] >= 2, 20, "a dead endpoint failing")
                wait_until(lambda: member.consumed > before + 20, 20, "consuming meanwhile")
            finally:
                for g in groups:
                    g.stop()
    finally:
        for sender in (good, dead):
            sender.close(timeout_s=1)
        stub.close()
    assert good.status()["retries"] == 0 and good.status()["posted"] >= 1


def test_zookeeper_consumer_registers_owns_and_commits_like_kafkas_zk_consumer(
    kafka_bootstrap: str, zk_hosts: str, zk: KazooClient
) -> None:
    topic, group = uid("t"), uid("legacy")
    admin = TopicAdmin(kafka_bootstrap)
    admin.ensure([TopicSpec(topic, 3)])
    spec = WorldSpec(topics=(TopicSpec(topic, 3, rate=30),))
    with World(spec, kafka_bootstrap, zk_hosts):
        consumer = ZkGroupConsumer(
            ZkConsumerSpec(group, topic, commit_interval_s=0.3), kafka_bootstrap, zk_hosts
        )
        consumer.start()
        try:
            ids = f"/consumers/{group}/ids"
            wait_until(lambda: zk.exists(ids) and zk.get_children(ids), 20, "ids registration")
            (member,) = zk.get_children(ids)
            assert member == consumer.consumer_id
            assert member.startswith(f"{group}_")
            raw, stat = zk.get(f"{ids}/{member}")
            registration = json.loads(raw)
            assert registration["version"] == 1
            assert registration["subscription"] == {topic: 1}
            assert registration["pattern"] == "static"
            assert registration["timestamp"].isdigit()
            assert abs(int(registration["timestamp"]) / 1000 - time.time()) < 60
            assert stat.ephemeralOwner != 0

            owners = f"/consumers/{group}/owners/{topic}"
            # The ids node is written first, then the owners path and one owner node per
            # partition (CI runs read the owners between the second and the third, and before
            # the path existed).
            wait_until(
                lambda: zk.exists(owners) and sorted(zk.get_children(owners)) == ["0", "1", "2"],
                20,
                "owner nodes",
            )
            for p in range(3):
                value, ostat = zk.get(f"{owners}/{p}")
                assert value.decode() == f"{member}-0"
                assert ostat.ephemeralOwner != 0

            first = wait_until(
                lambda: (o := zk_consumer_offsets(zk, group, topic)) and len(o) == 3 and o,
                20,
                "offsets for every partition",
            )
            wait_until(
                lambda: all(zk_consumer_offsets(zk, group, topic)[p] > first[p] for p in range(3)),
                20,
                "offsets advancing",
            )
            high = admin.high_watermarks(topic, 3)
            now = zk_consumer_offsets(zk, group, topic)
            assert all(now[p] <= high[p] for p in range(3))
            _, ofs_stat = zk.get(f"/consumers/{group}/offsets/{topic}/0")
            assert ofs_stat.ephemeralOwner == 0, "offsets are persistent"
        finally:
            consumer.stop()
    # The session closed: membership and ownership vanish, progress stays.
    wait_until(
        lambda: (
            zk.get_children(f"/consumers/{group}/ids") == []
            and zk.get_children(f"/consumers/{group}/owners/{topic}") == []
        ),
        30,
        "the ephemeral nodes gone with the session",
    )
    assert len(zk_consumer_offsets(zk, group, topic)) == 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def control_world(kafka_bootstrap: str) -> Iterator[tuple[str, World]]:
    """One small world behind a control endpoint, shared: the requests below leave no trace."""
    topic, group = uid("t"), uid("g")
    spec = WorldSpec(
        topics=(TopicSpec(topic, 2, rate=10),),
        groups=(GroupSpec(group, topic, 1),),
        roles=Roles(slow_group=group),
    )
    with World(spec, kafka_bootstrap, "unused:1", member_settings=FAST) as world:
        runner = ScenarioRunner(world)
        server = ControlServer(runner, 0)
        server.start()
        try:
            yield server.url, world
        finally:
            server.stop()
            runner.stop_all()


def test_control_endpoint_lists_starts_and_stops_scenarios(
    control_world: tuple[str, World],
) -> None:
    url, world = control_world
    (group,) = world.groups
    catalogue = control.list_scenarios(url)
    assert [s["name"] for s in catalogue] == list(SCENARIOS)
    assert all(len(s["doc"]) > 100 for s in catalogue), "each scenario documents itself"
    status = control.workload_status(url)
    assert set(status["topics"]) == {t.name for t in world.spec.topics}
    assert status["scenarios"] == []

    started = control.start_scenario(url, "slow-consumer", delay_ms=250)
    assert started["details"]["group"] == group
    assert world.groups[group].delay_ms == 250
    active = control.workload_status(url)["scenarios"]
    assert [a["name"] for a in active] == ["slow-consumer"]
    assert active[0]["params"] == {"group": None, "delay_ms": 250.0}

    assert control.stop_scenario(url, "slow-consumer") == {"name": "slow-consumer", "stopped": True}
    assert world.groups[group].delay_ms == 0
    assert control.stop_scenario(url, "slow-consumer")["stopped"] is False


@pytest.mark.parametrize(
    ("name", "params", "status", "message"),
    [
        ("no-such-scenario", {}, 404, "no scenario named"),
        ("slow-consumer", {"delay": 5}, 400, "unknown parameter"),
        ("slow-consumer", {"delay_ms": "slow"}, 400, "must be float"),
        ("slow-consumer", {"delay_ms": -1}, 400, "must be >= 0"),
        ("slow-consumer", {"group": "nope"}, 400, "no Kafka group"),
        ("source-outage", {}, 400, "'service' is required"),
        ("source-outage", {"service": "redis"}, 400, "must be one of"),
        ("source-outage", {"service": "kafka"}, 400, "without --run-dir"),
        ("poison-message", {}, 400, "no default poison topology"),
    ],
)
def test_control_endpoint_refuses_bad_requests(
    control_world: tuple[str, World], name: str, params: dict, status: int, message: str
) -> None:
    url, world = control_world
    with pytest.raises(control.ControlError) as err:
        control.start_scenario(url, name, **params)
    assert err.value.status == status
    assert message in str(err.value)
    assert control.workload_status(url)["scenarios"] == []


def test_control_endpoint_raw_http_errors(control_world: tuple[str, World]) -> None:
    url, _world = control_world
    cases = [
        ("GET", "/lab/nothing", None, 404),
        ("GET", "/lab/scenarios/healthy/start", None, 405),
        ("POST", "/lab/scenarios/healthy/start", b"{not json", 400),
        ("POST", "/lab/scenarios/healthy/start", b"[1, 2]", 400),
        ("POST", "/lab/scenarios/nope/stop", b"", 404),
    ]
    for method, path, body, expected in cases:
        req = urllib.request.Request(url + path, data=body, method=method)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == expected, (method, path)
        assert "error" in json.loads(err.value.read())
    with pytest.raises(control.ControlError, match="not reachable") as err:
        control.workload_status(f"http://127.0.0.1:{_free_port()}", timeout=2)
    assert err.value.status is None


def test_workload_process_runs_the_demo_world_and_shuts_down_cleanly(
    lab_services: Any, admin: AdminClient, zk: KazooClient
) -> None:
    prefix = f"wl{uuid.uuid4().hex[:6]}-"
    world = DEMO_WORLD.prefixed(prefix)
    control_port, ui_port = _free_port(), _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lab.workload",
            "--bootstrap",
            lab_services.bootstrap,
            "--zk",
            lab_services.zk_hosts,
            "--control-port",
            str(control_port),
            "--storm-ui-port",
            str(ui_port),
            "--run-dir",
            str(lab_services.run_dir),
            "--prefix",
            prefix,
        ],  # fmt: skip
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{control_port}"
    try:

        def status() -> dict | None:
            try:
                return control.workload_status(url, timeout=2)
            except control.ControlError:
                assert proc.poll() is None, "workload exited early"
                return None

        wait_until(status, 60, "control endpoint")
        groups = {g.name for g in world.groups}
        wait_until(lambda: groups <= listed_groups(admin), 40, "every Kafka group listed")
        modern = {g.name: g for g in world.groups if g.protocol == CONSUMER}
        assert len(modern) >= 2, "the demo runs KIP-848 groups beside the classic ones"
        for name, spec in modern.items():
            desc = wait_until(
                lambda n=name, s=spec: (
                    (d := describe(admin, n)).state == ConsumerGroupState.STABLE
                    and len(d.members) == s.members
                    and d
                ),
                60,
                f"{name} stable with all its members",
            )
            assert desc.type == ConsumerGroupType.CONSUMER
            assert desc.partition_assignor == spec.assignor
        quiet = wait_until(
            lambda: (c := committed_offsets(admin, prefix + "quiet-reader")) and len(c) == 2 and c,
            30,
            "the quiet reader's start offsets",
        )
        assert quiet == {(prefix + "quiet", 0): 0, (prefix + "quiet", 1): 0}

        legacy = f"/consumers/{prefix}legacy-audit/ids"
        wait_until(lambda: zk.exists(legacy) and zk.get_children(legacy), 20, "legacy member")
        for t in world.topologies:
            path = f"{t.zk_root}/{t.spout_id}/partition_0"
            data, _ = wait_until(lambda p=path: spout_znode(zk, p), 30, path)
            assert data["topic"] == t.topic and data["topology"]["name"] == t.name
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/api/v1/topology/summary") as r:
            names = {t["name"] for t in json.load(r)["topologies"]}
        assert names == {t.name for t in world.topologies}
        assert [s["name"] for s in status()["scenarios"]] == ["quiet-topic"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out.decode()[-3000:]
    assert b"bye" in out
    assert zk.get_children(legacy) == [], "the ZooKeeper consumer's session was closed"

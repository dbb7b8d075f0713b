"""The lab stack against real processes: ZooKeeper, Apache Kafka, redis-server, Django and Celery.

Each test owns its run directory (these tests stop, kill and restart services), apart from
the module's shared ZooKeeper + broker + Redis stack used by the non-destructive checks.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from dashboard.monitoring.config_file import parse_config
from lab import ports, procs
from lab.services import REPO, SERVICES, ServiceSpec, four_letter_word
from lab.stack import ServiceStartError, Stack, StackError
from tests.conftest import LabServices
from tests.waiting import wait_for

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def stack3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("stack3"))
    stack.up(["zookeeper", "kafka", "redis"])
    try:
        yield stack
    finally:
        stack.down()


@pytest.fixture
def unrelated_sleep() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not ours, in a session of its own just like the lab's services."""
    # Outlives any test (killed below): a 60-s sleep ended under load before the test did.
    proc = subprocess.Popen(["sleep", "3600"], start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _kazoo(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=5)
    client.start(timeout=10)
    return client


def _recorded(run_dir: Path) -> dict[str, dict]:
    state = json.loads((run_dir / "stack.json").read_text())
    return {entry["name"]: entry for entry in state["services"]}


def _assert_gone(entries: dict[str, dict]) -> None:
    for name, entry in entries.items():
        if entry["reused"]:
            continue
        assert not procs.is_running(entry["pid"], entry["start_ticks"]), name
        assert procs.group_members(entry["pgid"]) == [], name
        for port in entry["ports"].values():
            assert not ports.accepts_connections(port), (name, port)
            assert ports.is_free(port, reuse_addr=True), (name, port)


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and procs.pid_alive(int(entry)):
            found.append(int(entry))
    return found


def test_up_starts_real_services_that_answer(stack3: Stack) -> None:
    endpoints = stack3.endpoints()
    assert set(endpoints) == {"zookeeper", "kafka", "kafka_metrics", "redis"}
    # The broker runs with the Prometheus JMX exporter agent, which serves its purgatory.
    with urllib.request.urlopen(endpoints["kafka_metrics"], timeout=30) as answer:
        exported = answer.read().decode()
    assert 'kafka_server_purgatory_delayed_operations{operation="Fetch"}' in exported

    zk = _kazoo(endpoints["zookeeper"])
    try:
        path = f"/lab-test/{uuid.uuid4().hex}"
        zk.create(path, b"hello", makepath=True)
        assert zk.get(path)[0] == b"hello"
    finally:
        zk.stop()
        zk.close()

    admin = AdminClient({"bootstrap.servers": endpoints["kafka"]})
    topic = f"lab-test-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(timeout=10)
    assert topic in admin.list_topics(timeout=10).topics

    client = redis.Redis.from_url(endpoints["redis"])
    assert client.ping() is True
    client.close()

    report = stack3.status()
    recorded = _recorded(stack3.run_dir)
    for name in ("zookeeper", "kafka", "redis"):
        svc = report["services"][name]
        assert svc["state"] == "running"
        assert svc["pid"] == recorded[name]["pid"] == recorded[name]["pgid"]
        assert svc["uptime_s"] >= 0
        assert Path(svc["log"]) == stack3.run_dir / "logs" / f"{name}.log"
        assert procs.owns_listener(svc["pid"], svc["port"])
    assert report["services"]["redis"]["endpoint"] == endpoints["redis"]

    clusters_text = (stack3.run_dir / "clusters.yaml").read_text()
    (imported,) = parse_config(clusters_text)  # the product's own importer accepts it
    assert (imported.name, imported.kafka_bootstrap_servers, imported.zk_hosts) == (
        "lab",
        endpoints["kafka"],
        endpoints["zookeeper"],
    )
    clusters = yaml.safe_load(clusters_text)
    assert clusters == {
        "clusters": [
            {
                "name": "lab",
                "poll_interval_s": 10,
                "kafka": {
                    "bootstrap_servers": endpoints["kafka"],
                    "config": {},
                    "read_consumer_offsets_topic": True,
                },
                "zookeeper": {
                    "hosts": endpoints["zookeeper"],
                    "storm_spout_roots": ["/kafka-spout"],
                    "zk_consumers": True,
                },
                "storm_ui_url": None,
                "broker_metrics_urls": [endpoints["kafka_metrics"]],
                "retention_risk_s": 120,
            }
        ]
    }


def test_status_from_the_command_line(stack3: Stack) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "lab", "status", "--json", "--run-dir", str(stack3.run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    report = json.loads(out)
    assert {n: s["state"] for n, s in report["services"].items()} == {
        "zookeeper": "running",
        "kafka": "running",
        "redis": "running",
    }


def test_zookeeper_restarts_on_its_port_with_its_data(stack3: Stack) -> None:
    hosts = stack3.endpoints()["zookeeper"]
    old_pid = stack3.status()["services"]["zookeeper"]["pid"]
    path = f"/lab-test/{uuid.uuid4().hex}"
    zk = _kazoo(hosts)
    zk.create(path, b"survives", makepath=True)
    zk.stop()
    zk.close()

    stack3.stop_service("zookeeper")
    stopped = stack3.status()["services"]["zookeeper"]
    assert stopped["state"] == "stopped"
    assert stopped["pid"] is None
    assert not procs.group_members(old_pid)
    assert not ports.accepts_connections(int(hosts.rsplit(":", 1)[1]))

    stack3.start_service("zookeeper")
    running = stack3.status()["services"]["zookeeper"]
    assert running["state"] == "running"
    assert running["pid"] != old_pid
    assert stack3.endpoints()["zookeeper"] == hosts
    zk = _kazoo(hosts)
    try:
        assert zk.get(path)[0] == b"survives"
    finally:
        zk.stop()
        zk.close()


def test_a_new_up_starts_zookeeper_empty_like_the_broker(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    path = f"/lab-test/{uuid.uuid4().hex}"
    zk = _kazoo(stack.up(["zookeeper"])["zookeeper"])
    zk.create(path, b"from the previous stack", makepath=True)
    zk.stop()
    zk.close()
    stack.down()

    zk = _kazoo(stack.up(["zookeeper"])["zookeeper"])
    try:
        assert zk.exists(path) is None
    finally:
        zk.stop()
        zk.close()
        stack.down()


def _committed(bootstrap: str, group: str, tp: TopicPartition) -> int | None:
    """Through a consumer, not the AdminClient: librdkafka 2.16's AdminClient crashes the
    process when OffsetFetch answers NOT_COORDINATOR, as a broker just restarted may."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return consumer.committed([tp], timeout=5)[0].offset
    except KafkaException:
        return None
    finally:
        consumer.close()


def test_broker_restarts_on_its_port_with_its_data_and_refuses_a_taken_port(
    stack3: Stack,
) -> None:
    bootstrap = stack3.endpoints()["kafka"]
    port = int(bootstrap.rsplit(":", 1)[1])
    topic, group = f"lab-test-{uuid.uuid4().hex[:8]}", f"lab-test-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(timeout=10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        producer.produce(topic, value=b"kept", partition=i % 2)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
    consumer.close()

    stack3.stop_service("kafka")
    assert stack3.status()["services"]["kafka"]["state"] == "stopped"
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", port))
    squatter.listen(1)
    try:
        with pytest.raises(
            ServiceStartError, match=rf"kafka failed to start: port {port} is taken"
        ):
            stack3.start_service("kafka")
        assert stack3.status()["services"]["kafka"]["state"] == "stopped"
    finally:
        squatter.close()

    stack3.start_service("kafka")
    assert stack3.endpoints()["kafka"] == bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert admin.list_topics(timeout=10).brokers
    assert procs.owns_listener(stack3.status()["services"]["kafka"]["pid"], port)
    # A broker restart keeps topics, records and committed offsets, as Kafka does.
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 2
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{group}-probe"})
    try:
        marks = [probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in (0, 1)]
    finally:
        probe.close()
    assert marks == [(0, 3), (0, 2)]
    assert wait_for(lambda: _committed(bootstrap, group, TopicPartition(topic, 0)), 60) == 2


def test_up_twice_is_refused_and_leaves_the_stack_alone(stack3: Stack) -> None:
    before = stack3.status()["services"]
    with pytest.raises(StackError, match="already running"):
        Stack(stack3.run_dir).up(["redis"])
    after = stack3.status()["services"]
    assert {n: (s["state"], s["pid"]) for n, s in after.items()} == {
        n: (s["state"], s["pid"]) for n, s in before.items()
    }


def test_down_from_another_process_stops_only_ours(
    tmp_path: Path, unrelated_sleep: subprocess.Popen[bytes]
) -> None:
    Stack(tmp_path).up(["zookeeper", "kafka", "redis"])
    entries = _recorded(tmp_path)
    kafka = AdminClient({"bootstrap.servers": Stack(tmp_path).endpoints()["kafka"]})
    assert kafka.list_topics(timeout=10).brokers  # stopped with a client connected

    result = subprocess.run(
        [sys.executable, "-m", "lab", "down", "--run-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "zookeeper" in result.stdout and "kafka" in result.stdout

    _assert_gone(entries)
    assert unrelated_sleep.poll() is None
    assert not (tmp_path / "stack.json").exists()
    assert Stack(tmp_path).status()["services"] == {}


def test_foreground_up_tears_down_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "up", "--foreground", "--services", "redis"]
        + ["--run-dir", str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "running in the foreground" in line:
                break
        assert Stack.load(tmp_path).status()["services"]["redis"]["state"] == "running", lines
        entries = _recorded(tmp_path)
        proc.send_signal(signal.SIGTERM)
        # communicate() drains the output while waiting: the teardown's log lines must never
        # block on a full pipe. A wide deadline: on a loaded machine stopping takes a while.
        rest, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, lines + [rest]
    finally:
        proc.kill()
        proc.wait()
    _assert_gone(entries)
    assert not (tmp_path / "stack.json").exists()


def test_a_stale_record_reads_dead_and_a_new_up_clears_it(
    tmp_path: Path, unrelated_sleep: subprocess.Popen[bytes], caplog: pytest.LogCaptureFixture
) -> None:
    Stack(tmp_path).up(["redis"])
    first = _recorded(tmp_path)["redis"]
    os.kill(first["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while procs.is_running(first["pid"], first["start_ticks"]) and time.monotonic() < deadline:
        time.sleep(0.05)

    loaded = Stack.load(tmp_path)
    assert loaded.status()["services"]["redis"]["state"] == "dead"

    with caplog.at_level(logging.WARNING, logger="lab"):
        loaded.up(["redis"])
    assert "redis died" in caplog.text
    second = _recorded(tmp_path)["redis"]
    assert second["pid"] != first["pid"]
    assert Stack.load(tmp_path).status()["services"]["redis"]["state"] == "running"

    assert Stack.load(tmp_path).down() == {"redis": "stopped"}
    _assert_gone({"redis": second})
    assert unrelated_sleep.poll() is None


def test_down_leaves_a_recycled_pid_alone(
    tmp_path: Path, unrelated_sleep: subprocess.Popen[bytes]
) -> None:
    """A record whose pid now names another process (pid reuse) must not get it signalled."""
    stat = procs.read_stat(unrelated_sleep.pid)
    assert stat is not None
    record = {
        "name": "redis",
        "ports": {"redis": 1},
        "log": str(tmp_path / "logs" / "redis.log"),
        "argv": ["redis-server"],
        "pid": unrelated_sleep.pid,
        "pgid": unrelated_sleep.pid,
        "start_ticks": stat.start_ticks - 1,
        "started_at": time.time(),
        "reused": False,
    }
    state = {"version": 1, "boot_id": procs.boot_id(), "services": [record]}
    (tmp_path / "stack.json").write_text(json.dumps(state))

    stack = Stack.load(tmp_path)
    assert stack.status()["services"]["redis"]["state"] == "dead"
    assert stack.down() == {"redis": "not ours"}
    time.sleep(0.2)
    assert unrelated_sleep.poll() is None


def test_a_reused_redis_is_recorded_and_left_running(tmp_path: Path) -> None:
    (port,) = ports.pick_free_ports(1)
    theirs = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        url = f"redis://127.0.0.1:{port}/3"
        deadline = time.monotonic() + 10
        while not ports.accepts_connections(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        stack = Stack(tmp_path, redis_url=url)
        assert stack.up(["redis"]) == {"redis": url}
        svc = stack.status()["services"]["redis"]
        assert (svc["state"], svc["reused"], svc["port"], svc["pid"]) == (
            "running",
            True,
            port,
            None,
        )
        assert stack.down() == {"redis": "left running (reused)"}
        assert redis.Redis.from_url(url).ping() is True
    finally:
        theirs.terminate()
        theirs.wait(10)


def test_a_service_that_dies_names_itself_and_its_log_and_undoes_the_rest(tmp_path: Path) -> None:
    broken = ServiceSpec(
        name="broken",
        ports=("broken",),
        argv=lambda ctx: [
            sys.executable,
            "-c",
            "import sys; print('cannot open the frobnicator', flush=True); sys.exit(3)",
        ],
        ready=lambda ctx, log: True,
    )
    stack = Stack(tmp_path, specs={**SERVICES, "broken": broken})
    with pytest.raises(ServiceStartError) as caught:
        stack.up(["zookeeper", "broken"])

    message = str(caught.value)
    log_path = tmp_path / "logs" / "broken.log"
    assert caught.value.service == "broken"
    assert "broken failed to start: exited with code 3 before it was ready" in message
    assert str(log_path) in message
    assert "cannot open the frobnicator" in message
    # ZooKeeper had started first; a failed up stops it again and forgets the stack.
    assert "binding to port" in (tmp_path / "logs" / "zookeeper.log").read_text()
    assert _processes_mentioning(str(tmp_path)) == []
    assert not (tmp_path / "stack.json").exists()


def test_a_service_that_never_listens_times_out_with_the_reason(tmp_path: Path) -> None:
    silent = ServiceSpec(
        name="silent",
        ports=("silent",),
        argv=lambda ctx: [sys.executable, "-c", "import time; time.sleep(30)", str(ctx.run_dir)],
        ready=lambda ctx, log: True,
        ready_timeout_s=1.0,
    )
    stack = Stack(tmp_path, specs={"silent": silent})
    expected = r"silent failed to start: not ready after 1 s \(last check: not listening on port"
    with pytest.raises(ServiceStartError, match=expected):
        stack.up()
    assert _processes_mentioning(str(tmp_path)) == []
    assert not (tmp_path / "stack.json").exists()


def test_full_stack_serves_the_dashboard_and_runs_celery(tmp_path: Path) -> None:
    assert (REPO / "manage.py").exists(), "the Django project must exist for the full stack"
    stack = Stack(tmp_path)
    try:
        endpoints = stack.up(["zookeeper", "kafka", "redis", "web", "worker", "beat"])
        entries = _recorded(tmp_path)

        with urllib.request.urlopen(endpoints["web"] + "health/", timeout=10) as response:
            assert response.status == 200
            assert json.loads(response.read())["ok"] is True
        assert (tmp_path / "data" / "lagwatch.sqlite3").exists()
        # What the demo tells its user to paste in another terminal (without it,
        # manage.py read an empty database there), used exactly as a shell would.
        exports = subprocess.run(
            [sys.executable, "-m", "lab", "env", "--run-dir", str(tmp_path)],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
        ).stdout.strip()  # fmt: skip
        assert f"LAGWATCH_DATA_DIR={tmp_path / 'data'}" in exports
        assert f"REDIS_URL={endpoints['redis']}" in exports
        assert "INGEST_TOKEN" not in exports
        bare = {k: v for k, v in os.environ.items() if not k.startswith(("LAGWATCH_", "REDIS_"))}
        exported = subprocess.run(
            ["bash", "-c", f'{exports} && exec "$0" manage.py lagwatch_config export',
             sys.executable],
            cwd=REPO, env=bare, capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        (lab,) = parse_config(exported)  # the web server's start imported the lab cluster
        assert (lab.name, lab.kafka_bootstrap_servers, lab.zk_hosts) == (
            "lab",
            endpoints["kafka"],
            endpoints["zookeeper"],
        )

        from celery import Celery

        # Not the current app: shared tasks of later tests would resolve to it (its broker
        # is this stack's Redis, gone after the test) instead of the project's.
        probe = Celery(broker=endpoints["redis"], set_as_current=False)
        replies = probe.control.ping(timeout=5)
        assert any(name.startswith("lagwatch-lab@") for reply in replies for name in reply), replies
        assert "beat: Starting" in (tmp_path / "logs" / "beat.log").read_text()

        report = stack.status()["services"]
        assert {n: s["state"] for n, s in report.items()} == dict.fromkeys(
            ["zookeeper", "kafka", "redis", "web", "worker", "beat"], "running"
        )
    finally:
        stack.down()
    _assert_gone(entries)


def test_session_fixtures_point_at_live_services(
    lab_services: LabServices, zk_hosts: str, kafka_bootstrap: str
) -> None:
    assert (zk_hosts, kafka_bootstrap) == (lab_services.zk_hosts, lab_services.bootstrap)
    assert four_letter_word(zk_hosts, "ruok") == "imok"
    assert AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10).brokers
    assert (lab_services.run_dir / "stack.json").exists()


def test_session_fixture_restores_a_stopped_service_on_its_port(
    lab_services: LabServices,
) -> None:
    lab_services.stop("kafka")
    assert not ports.accepts_connections(int(lab_services.bootstrap.rsplit(":", 1)[1]))
    lab_services.restore()
    assert (
        AdminClient({"bootstrap.servers": lab_services.bootstrap}).list_topics(timeout=10).brokers
    )
    assert lab_services.stack.status()["services"]["kafka"]["state"] == "running"


def test_workload_drives_an_outage_through_the_stack(tmp_path: Path) -> None:
    """The workload's source-outage scenario stops and restarts the broker from its own
    process, through ``Stack.load``; the broker comes back on the same port."""
    stack = Stack(tmp_path)
    try:
        endpoints = stack.up(["workload"])
        assert set(endpoints) == {"zookeeper", "kafka", "kafka_metrics", "control", "storm_ui"}
        clusters = parse_config((tmp_path / "clusters.yaml").read_text())
        assert clusters[0].storm_ui_url == endpoints["storm_ui"]

        listed = subprocess.run(
            [sys.executable, "-m", "lab", "scenario", "list", "--run-dir", str(tmp_path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        assert "source-outage" in {scenario["name"] for scenario in json.loads(listed)}

        old_pid = stack.status()["services"]["kafka"]["pid"]
        started = subprocess.run(
            [sys.executable, "-m", "lab", "scenario", "start", "source-outage"]
            + ["--param", "service=kafka", "--param", "seconds=1", "--run-dir", str(tmp_path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 60
        kafka = stack.status()["services"]["kafka"]
        while kafka["pid"] in (None, old_pid) and time.monotonic() < deadline:
            time.sleep(0.5)
            kafka = stack.status()["services"]["kafka"]
        assert kafka["state"] == "running"
        assert kafka["pid"] != old_pid
        assert stack.endpoints()["kafka"] == endpoints["kafka"]
        entries = _recorded(tmp_path)
    finally:
        stack.down()
    _assert_gone(entries)

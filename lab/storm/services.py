"""The lab's real-Storm services: ``kafka-legacy`` (Apache Kafka 3.9, the broker storm-kafka
1.x can read) and ``storm`` (Nimbus, a supervisor and its workers, the UI, the topologies and
their faults: ``lab/storm/world.py``). Both are optional: ``python -m lab up --services
...,storm`` (or ``scripts/demo``) starts them; ``lab/services.py`` lists them in its table.

The Kafka 3.9 broker runs in ZooKeeper mode under the chroot ``/kafka-legacy`` of the lab's
ZooKeeper, as Storm 1.x users' clusters did: storm-kafka's ``ZkHosts`` finds the brokers and
partition leaders there (``/brokers/...``), where a KRaft cluster has nothing.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from lab.services import LOG4J2, ONE_BROKER_SETTINGS, Context, ServiceSpec, java
from lab.storm import dist
from lab.storm.world import KAFKA_CHROOT, READY_LINE, ZK_ROOT

# The product's cluster for the real Storm: its spouts read the Kafka 3.9 broker, so their lag
# is measured against that broker's logs, a cluster of its own beside the lab's.
STORM_CLUSTER = "storm"

# Ports of the storm service, in the order the stack records them (the first is checked to be
# the service's own: the UI, a JVM in the service's process group).
STORM_PORTS = (
    "real_storm_ui",
    "real_storm_nimbus",
    "real_storm_control",
    *(f"real_storm_slot_{n}" for n in range(1, 6)),
)
LEGACY_SETTINGS = {"broker.id": "0", **ONE_BROKER_SETTINGS}


def _legacy_dir(ctx: Context) -> Path:
    return ctx.run_dir / "kafka-legacy"


def legacy_properties(ctx: Context) -> str:
    settings = {
        **LEGACY_SETTINGS,
        "zookeeper.connect": ctx.addr("zookeeper") + KAFKA_CHROOT,
        "listeners": f"PLAINTEXT://{ctx.addr('kafka_legacy')}",
        "advertised.listeners": f"PLAINTEXT://{ctx.addr('kafka_legacy')}",
        "log.dirs": str(_legacy_dir(ctx) / "data"),
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _legacy_reset(ctx: Context) -> None:
    shutil.rmtree(_legacy_dir(ctx) / "data", ignore_errors=True)


def _legacy_prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    folder = _legacy_dir(ctx)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "server.properties").write_text(legacy_properties(ctx))
    (folder / "log4j2.properties").write_text(LOG4J2)


def _legacy_argv(ctx: Context) -> list[str]:
    from lab.kafka_dist import installed_libs

    folder = _legacy_dir(ctx)
    return [java(), "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={folder / 'log4j2.properties'}",
            "-cp", f"{installed_libs(dist.kafka_broker_version())}/*", "kafka.Kafka",
            str(folder / "server.properties")]  # fmt: skip


def _legacy_ready(ctx: Context, log: str) -> bool:
    if not re.search(r"KafkaServer id=\d+\] started", log):
        return False
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": ctx.addr("kafka_legacy"), "socket.timeout.ms": 2000})
    return bool(admin.list_topics(timeout=2).brokers)


def _storm_reset(ctx: Context) -> None:
    """A new stack's Storm starts with no topologies: its local state goes (its ZooKeeper
    state went with the lab's ZooKeeper data)."""
    shutil.rmtree(ctx.run_dir / "storm", ignore_errors=True)


def _storm_argv(ctx: Context) -> list[str]:
    dist.installed()  # a clear error before anything starts when the cache is not filled
    slots = ",".join(str(ctx.ports[p]) for p in STORM_PORTS if "_slot_" in p)
    return [ctx.python, "-m", "lab.storm.world", "--run-dir", str(ctx.run_dir / "storm"),
            "--zookeeper", ctx.addr("zookeeper"), "--kafka", ctx.addr("kafka_legacy"),
            "--ui-port", str(ctx.ports["real_storm_ui"]),
            "--nimbus-port", str(ctx.ports["real_storm_nimbus"]),
            "--slot-ports", slots,
            "--control-port", str(ctx.ports["real_storm_control"])]  # fmt: skip


def _storm_ready(ctx: Context, log: str) -> bool:
    if "Traceback" in log:
        raise RuntimeError(log[log.index("Traceback") :][-1500:])
    return READY_LINE in log


# The two services, placed in ``lab/stack.py``'s table after the lab's broker.
STORM_SERVICES = (
    ServiceSpec(
        name="kafka-legacy",
        ports=("kafka_legacy",),
        requires=("zookeeper",),
        reset=_legacy_reset,
        prepare=_legacy_prepare,
        argv=_legacy_argv,
        ready=_legacy_ready,
        endpoints=lambda ctx: {"kafka_legacy": ctx.addr("kafka_legacy")},
        ready_timeout_s=90.0,
        stop_grace_s=30.0,
        optional=True,
    ),
    ServiceSpec(
        name="storm",
        ports=STORM_PORTS,
        requires=("zookeeper", "kafka-legacy"),
        reset=_storm_reset,
        argv=_storm_argv,
        ready=_storm_ready,
        endpoints=lambda ctx: {
            "real_storm_ui": ctx.url("real_storm_ui"),
            "real_storm_control": ctx.url("real_storm_control"),
        },
        ready_timeout_s=300.0,
        stop_grace_s=30.0,
        optional=True,
    ),
)


def storm_cluster_yaml(ctx: Context, poll_interval_s: int) -> list[str]:
    """The real Storm's cluster in the product's import format (``lab/stack.py`` writes it
    beside the lab cluster): the Kafka 3.9 broker, the spouts' zkRoot, the real Storm UI."""
    return [
        f"  - name: {STORM_CLUSTER}",
        f"    poll_interval_s: {poll_interval_s}",
        f"    kafka: {{bootstrap_servers: {json.dumps(ctx.addr('kafka_legacy'))}, config: {{}}}}",
        f"    zookeeper: {{hosts: {json.dumps(ctx.addr('zookeeper'))}, "
        f"storm_spout_roots: [{json.dumps(ZK_ROOT)}], zk_consumers: false}}",
        f"    storm_ui_url: {json.dumps(ctx.url('real_storm_ui'))}",
    ]

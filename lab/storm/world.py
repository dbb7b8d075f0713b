"""The lab's real Storm world: topics on the Kafka 3.9 broker, topologies reading them, faults.

``python -m lab.storm.world`` is the lab's ``storm`` service (``lab/storm/services.py``): it
starts the cluster (``lab/storm/cluster.py``), creates the topics, submits one topology per
topic, produces a steady stream to each, and serves the same control protocol as the
simulated workload (``lab/workload/server.py``: ``GET /lab/status``, ``/lab/scenarios``,
``POST /lab/scenarios/<name>/start|stop``), so ``lab.workload.control`` drives both.

Every fault is made by Storm itself (docs/SCENARIOS.md, "Real Storm"): a record the bolt
always fails, a slow bolt behind a small ``topology.max.spout.pending``, a worker JVM killed,
a topology killed or resubmitted, retention deleting records a deactivated spout had not read.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lab.storm.cluster import StormCluster, StormPorts, send_signal, wait
from lab.workload.params import ScenarioError
from lab.workload.runner import UnknownScenarioError
from lab.workload.server import ControlServer

log = logging.getLogger("lab.storm")

ZK_ROOT = "/storm-spouts"
KAFKA_CHROOT = "/kafka-legacy"
PARTITIONS = 2
RATE_PER_S = 4  # records a second per topic
READY_LINE = "storm world: ready"
# What Storm 1.x's executor logs when a deactivated topology's spout stops.
SPOUT_DEACTIVATED = "Deactivating spout"


@dataclass(frozen=True)
class TopologySpec:
    name: str
    spout_id: str
    topic: str
    max_pending: int = 1000


TOPOLOGIES = (
    TopologySpec("payments-ledger", "payments-spout", "payments"),
    # The back-pressure target: a small cap, so a slow bolt holds the spout at it.
    TopologySpec("audit-archiver", "audit-spout", "audit", max_pending=20),
    TopologySpec("clicks-sessionizer", "clicks-spout", "clicks"),
    TopologySpec("orders-enricher", "orders-spout", "orders"),
)
BY_NAME = {t.name: t for t in TOPOLOGIES}


class StormWorld:
    def __init__(self, run_dir: Path, zookeeper: str, kafka: str, ports: StormPorts) -> None:
        self.run_dir = run_dir
        self.zookeeper = zookeeper
        self.kafka = kafka
        self.cluster = StormCluster(run_dir, zookeeper, ports)
        self.control_dir = run_dir / "control"
        self.admin = AdminClient({"bootstrap.servers": kafka})
        self.producer = Producer({"bootstrap.servers": kafka, "linger.ms": 5})
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._active: dict[str, dict[str, Any]] = {}
        self._produced = 0

    # -- set-up -------------------------------------------------------------------------------
    def start(self) -> None:
        started = time.monotonic()
        self.cluster.start()
        wait(self.cluster.ready, 120, "Nimbus and a supervisor (the UI's cluster summary)")
        log.info("storm daemons ready in %.1f s", time.monotonic() - started)
        self._create_topics()
        self.control_dir.mkdir(parents=True, exist_ok=True)
        for spec in TOPOLOGIES:
            self._write_control(spec.name, {})
            self.submit(spec.name)
        threading.Thread(target=self._produce_forever, name="producer", daemon=True).start()
        wait(
            lambda: len(self.cluster.topologies()) == len(TOPOLOGIES), 120, "every topology listed"
        )
        log.info("topologies submitted in %.1f s", time.monotonic() - started)

    def _create_topics(self) -> None:
        existing = set(self.admin.list_topics(timeout=10).topics)
        new = [NewTopic(t.topic, PARTITIONS, 1) for t in TOPOLOGIES if t.topic not in existing]
        for future in self.admin.create_topics(new).values() if new else ():
            future.result(timeout=30)

    def _produce_forever(self) -> None:
        period = 1.0 / RATE_PER_S
        n = 0
        while not self._stop.wait(period):
            for spec in TOPOLOGIES:
                self.producer.produce(spec.topic, value=f"{spec.topic}-{n}".encode(),
                                      partition=n % PARTITIONS)  # fmt: skip
            n += 1
            self._produced = n
            self.producer.poll(0)

    def stop(self) -> None:
        self._stop.set()
        self.producer.flush(5)
        self.cluster.stop()

    # -- topologies ---------------------------------------------------------------------------
    def _control_file(self, name: str) -> Path:
        return self.control_dir / f"{name}.properties"

    def _write_control(self, name: str, settings: dict[str, Any]) -> None:
        path = self._control_file(name)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(f"{k}={str(v).lower()}\n" for k, v in settings.items()))
        tmp.replace(path)  # a bolt never reads half a file

    def submit(self, name: str) -> str:
        spec = BY_NAME[name]
        args = [
            "--name", spec.name, "--topic", spec.topic, "--zk-root", ZK_ROOT,
            "--spout-id", spec.spout_id, "--kafka-zk", self.zookeeper + KAFKA_CHROOT,
            "--control", str(self._control_file(name)), "--max-pending", str(spec.max_pending),
        ]  # fmt: skip
        # Nimbus forgets a killed topology's name a moment after the UI stops listing it, and
        # refuses the name until then (AlreadyAliveException): submitted again until it takes.
        wait(lambda: self.cluster.submit(args), 60, f"{name} submitted")
        listed = wait(lambda: self.cluster.topologies().get(name), 60, f"{name} listed")
        return str(listed["id"])

    def topology_id(self, name: str) -> str | None:
        found = self.cluster.topologies().get(name)
        return str(found["id"]) if found else None

    def kill(self, name: str) -> None:
        self.cluster.kill(name)
        wait(lambda: name not in self.cluster.topologies(), 60, f"{name} gone")

    # -- the control protocol (lab/workload/server.py's runner) --------------------------------
    def status(self) -> dict[str, Any]:
        try:
            topologies = {n: t.get("id") for n, t in self.cluster.topologies().items()}
        except OSError as exc:  # the UI down, or Nimbus (nimbus-down): say so, keep serving
            topologies = {"unknown": str(exc)}
        return {
            "topologies": topologies,
            "produced_per_topic": self._produced,
            "dead_daemons": self.cluster.dead_daemons(),
        }

    def catalogue(self) -> list[dict[str, Any]]:
        return [{"name": name, "doc": (fn.__doc__ or "").strip(), "active": name in self._active}
                for name, fn in _SCENARIOS.items()]  # fmt: skip

    def active(self) -> dict[str, Any]:
        return dict(self._active)

    def start_scenario(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        if name not in _SCENARIOS:
            raise UnknownScenarioError(f"unknown scenario {name!r}; known: {', '.join(_SCENARIOS)}")
        with self._lock:
            details = _SCENARIOS[name](self, **_params(name, params))
            self._active[name] = details
        log.info("scenario %s started: %s", name, details)
        return {"name": name, "details": details}

    def stop_scenario(self, name: str) -> dict[str, Any]:
        with self._lock:
            details = self._active.pop(name, None)
            if details is not None and name in _STOPS:
                _STOPS[name](self, details)
        return {"name": name, "stopped": details is not None}


def _params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    # A scenario's parameters are its function's keyword arguments (after the world).
    allowed = set(inspect.signature(_SCENARIOS[name]).parameters) - {"w"}
    unknown = set(params) - allowed
    if unknown:
        raise ScenarioError(
            f"{name}: unknown parameter(s) {sorted(unknown)}; known: {sorted(allowed)}"
        )
    if "topology" in params and params["topology"] not in BY_NAME:
        raise ScenarioError(f"{name}: no topology {params['topology']!r}; known: {sorted(BY_NAME)}")
    return params


# --- scenarios ---------------------------------------------------------------------------------


def poison_message(
    w: StormWorld, topology: str = "payments-ledger", partition: int = 0
) -> dict[str, Any]:
    """One record of one partition fails every time the bolt sees it: the spout retries it
    for ever and its partition's commit stays on it (stop: the bolt acks it)."""
    spec = BY_NAME[topology]
    offsets: list[int] = []

    def delivered(err: Any, msg: Any) -> None:
        offsets.append(-1 if err else msg.offset())

    w.producer.produce(spec.topic, value=b"POISON", partition=partition, on_delivery=delivered)
    w.producer.flush(10)
    if not offsets or offsets[0] < 0:
        raise RuntimeError("the poison record was not delivered")
    return {"topology": topology, "spout_id": spec.spout_id, "topic": spec.topic,
            "partition": partition, "offset": offsets[0]}  # fmt: skip


def _stop_poison(w: StormWorld, details: dict[str, Any]) -> None:
    w._write_control(details["topology"], {"ack_poison": True})


def backpressure(
    w: StormWorld, topology: str = "audit-archiver", process_ms: int = 400
) -> dict[str, Any]:
    """The bolt takes ``process_ms`` a tuple, slower than the records arrive: the spout's
    tuples in flight sit at ``topology.max.spout.pending`` (stop: the bolt is fast again)."""
    w._write_control(topology, {"sleep_ms": process_ms})
    spec = BY_NAME[topology]
    return {"topology": topology, "spout_id": spec.spout_id,
            "max_spout_pending": spec.max_pending, "process_ms": process_ms}  # fmt: skip


def _stop_backpressure(w: StormWorld, details: dict[str, Any]) -> None:
    w._write_control(details["topology"], {})


def worker_restart(w: StormWorld, topology: str = "clicks-sessionizer") -> dict[str, Any]:
    """The topology's worker JVM is killed (SIGKILL); the supervisor starts a new one, same
    topology id, its counters from zero, its spout from the offsets in ZooKeeper."""
    topology_id = w.topology_id(topology)
    pids = w.cluster.worker_pids(topology_id)
    if not pids:
        raise RuntimeError(f"no worker of {topology} ({topology_id}) found")
    for pid in pids:
        send_signal(pid, signal.SIGKILL)
    return {"topology": topology, "topology_id": topology_id, "killed": pids}


def topology_restart(w: StormWorld, topology: str = "clicks-sessionizer") -> dict[str, Any]:
    """The topology is killed and submitted again: a new topology id, the same spout id, so
    the spout resumes from its stored offsets."""
    before = w.topology_id(topology)
    w.kill(topology)
    after = w.submit(topology)
    return {"topology": topology, "from": before, "to": after}


def dead_topology(w: StormWorld, topology: str = "orders-enricher") -> dict[str, Any]:
    """The topology is killed; its spout's znodes stay as they were (stop: submitted again)."""
    before = w.topology_id(topology)
    w.kill(topology)
    return {"topology": topology, "killed": before}


def _stop_dead(w: StormWorld, details: dict[str, Any]) -> None:
    if w.topology_id(details["topology"]) is None:
        w.submit(details["topology"])


def retention(w: StormWorld, topology: str = "orders-enricher", burst: int = 40) -> dict[str, Any]:
    """The topology is deactivated (its spout stops emitting and committing), ``burst``
    records are written, then DeleteRecords moves each partition's log start into the middle
    of them, past the spout's stored offset; the topology is activated again and its spout
    meets OFFSET_OUT_OF_RANGE."""
    spec = BY_NAME[topology]
    topology_id = w.topology_id(topology)
    deactivated = w.cluster.worker_log(topology_id).count(SPOUT_DEACTIVATED)
    w.cluster.deactivate(topology)
    # The spout stops (and commits) when its executor logs it, not when the command returns.
    wait(lambda: w.cluster.worker_log(topology_id).count(SPOUT_DEACTIVATED) > deactivated,
         60, f"{topology}'s spout deactivated")  # fmt: skip
    for i in range(burst):
        w.producer.produce(spec.topic, value=f"burst-{i}".encode(), partition=i % PARTITIONS)
    w.producer.flush(10)
    marks = {}
    targets = []
    for p in range(PARTITIONS):
        high = _high_watermark(w.kafka, spec.topic, p)
        start = high - burst // PARTITIONS // 2
        marks[p] = {"log_start": start, "log_end": high}
        targets.append(TopicPartition(spec.topic, p, start))
    for future in w.admin.delete_records(targets).values():
        future.result(timeout=30)
    w.cluster.activate(topology)
    return {"topology": topology, "spout_id": spec.spout_id, "partitions": marks}


def _high_watermark(kafka: str, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "lab-storm-watermarks",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1])
    finally:
        consumer.close()


def nimbus_down(w: StormWorld) -> dict[str, Any]:
    """Nimbus is stopped: the workers go on (their spouts keep committing), and the UI, which
    asks Nimbus for everything, answers HTTP 500 ``NimbusLeaderNotFoundException`` to every
    call (stop: Nimbus started again, same port and state)."""
    w.cluster.stop_daemon("nimbus")
    return {"stopped": "nimbus"}


def _stop_nimbus_down(w: StormWorld, details: dict[str, Any]) -> None:
    w.cluster.start_daemon("nimbus")
    wait(w.cluster.ready, 120, "Nimbus back (the UI's cluster summary)")


_SCENARIOS = {
    "poison-message": poison_message,
    "backpressure": backpressure,
    "worker-restart": worker_restart,
    "topology-restart": topology_restart,
    "dead-topology": dead_topology,
    "retention": retention,
    "nimbus-down": nimbus_down,
}
_STOPS = {
    "poison-message": _stop_poison,
    "backpressure": _stop_backpressure,
    "dead-topology": _stop_dead,
    "nimbus-down": _stop_nimbus_down,
}


class _Runner:
    """The shape ``lab.workload.server.ControlServer`` serves."""

    def __init__(self, world: StormWorld) -> None:
        self.world = world

    def catalogue(self) -> list[dict[str, Any]]:
        return self.world.catalogue()

    def active(self) -> dict[str, Any]:
        return self.world.active()

    def start(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.world.start_scenario(name, params)

    def stop(self, name: str) -> dict[str, Any]:
        return self.world.stop_scenario(name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--kafka", required=True, help="the Kafka 3.9 broker the spouts read")
    parser.add_argument("--ui-port", type=int, required=True)
    parser.add_argument("--nimbus-port", type=int, required=True)
    parser.add_argument("--slot-ports", required=True, help="comma-separated worker ports")
    parser.add_argument("--control-port", type=int, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    ports = StormPorts(args.ui_port, args.nimbus_port,
                       tuple(int(p) for p in args.slot_ports.split(",")))  # fmt: skip
    world = StormWorld(args.run_dir, args.zookeeper, args.kafka, ports)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    server = ControlServer(_Runner(world), args.control_port)  # type: ignore[arg-type]
    try:
        world.start()
        server.start()
        log.info(READY_LINE)
        while not stopping.wait(5):
            dead = world.cluster.dead_daemons()
            if dead:
                log.error("storm daemon(s) exited: %s (logs in %s)", dead, world.cluster.log_dir)
                break
    finally:
        server.stop()
        world.stop()


if __name__ == "__main__":
    main()

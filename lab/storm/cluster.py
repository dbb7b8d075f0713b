"""A real Apache Storm 1.2.4 cluster on this machine: Nimbus, one supervisor and the UI.

Each daemon is its own JVM, started as Storm's ``bin/storm`` would start it (``storm.home``
the cache folder of ``lab/storm/dist.py``, the lab's ``storm.yaml`` in ``conf/`` under the run
dir), on the Java 11 runtime ``dist`` fetched (why not 17: ``lab/storm/dist.py``). The
supervisor launches the topologies' workers as separate JVMs, as in production; they inherit
the process group, so stopping the lab's ``storm`` service stops them too. What differs from
a production cluster is in docs/LAB.md ("Apache Storm").

Topology commands are Storm's own: a topology is submitted with ``StormSubmitter`` (the lab
topology's ``main``), killed, activated and deactivated with ``org.apache.storm.command.*``,
the classes behind ``storm kill|activate|deactivate``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.storm import dist

LOOPBACK = "127.0.0.1"
# Small JVMs on the serial collector and the C1 JIT: a 2-core machine runs four of them beside
# the broker, ZooKeeper and the product.
_DAEMON_JAVA_OPTS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
_WORKER_CHILDOPTS = "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
DAEMONS = {
    "nimbus": "org.apache.storm.daemon.nimbus",
    "supervisor": "org.apache.storm.daemon.supervisor.Supervisor",
    "ui": "org.apache.storm.ui.core",
}


@dataclass(frozen=True)
class StormPorts:
    ui: int
    nimbus: int
    slots: tuple[int, ...]


class StormError(RuntimeError):
    """A Storm command failed; the message carries its output's tail."""


# Storm's daemons and workers log through log4j2, configured from ``storm.log4j2.conf.dir``
# (``cluster.xml`` for the daemons, ``worker.xml`` for the workers); the Maven artifacts carry
# no such files (a Storm release's ``log4j2/`` folder has them), so the lab writes small ones:
# each process's own file under ``storm.log.dir``, as a release's do.
_LOG4J2_XML = """<?xml version="1.0" encoding="UTF-8"?>
<configuration monitorInterval="60" shutdownHook="disable">
  <appenders>
    <File name="A1" fileName="{path}">
      <PatternLayout pattern="%d{{yyyy-MM-dd HH:mm:ss.SSS}} %c{{1.}} %t [%p] %msg%n"/>
    </File>
  </appenders>
  <loggers>
    <root level="info"><appender-ref ref="A1"/></root>
  </loggers>
</configuration>
"""
_DAEMON_LOG = "${sys:storm.log.dir}/${sys:logfile.name}"
_WORKER_LOG = "${sys:workers.artifacts}/${sys:storm.id}/${sys:worker.port}/${sys:logfile.name}"


def storm_yaml(run_dir: Path, zookeeper: str, ports: StormPorts) -> str:
    """The lab's ``storm.yaml``: Storm's state under ``/storm`` in the lab's ZooKeeper, every
    daemon on loopback, workers on the given slot ports. The timeouts are Storm's defaults."""
    zk_host, zk_port = zookeeper.rsplit(":", 1)
    conf = {
        "storm.zookeeper.servers": [zk_host],
        "storm.zookeeper.port": int(zk_port),
        "storm.zookeeper.root": "/storm",
        "storm.local.dir": str(run_dir / "local"),
        "storm.local.hostname": LOOPBACK,
        "storm.log4j2.conf.dir": str(run_dir / "log4j2"),
        "nimbus.seeds": [LOOPBACK],
        "nimbus.thrift.port": ports.nimbus,
        "ui.host": LOOPBACK,
        "ui.port": ports.ui,
        "supervisor.slots.ports": list(ports.slots),
        # Storm's default names Java 8 GC-logging flags that Java 9+ refuses to start with.
        "worker.childopts": _WORKER_CHILDOPTS,
        "worker.heap.memory.mb": 256,
    }
    # JSON is YAML: every value above reads back as written.
    return "".join(f"{key}: {json.dumps(value)}\n" for key, value in conf.items())


class StormCluster:
    """The daemons of one lab Storm under ``run_dir`` and the commands run against them."""

    def __init__(self, run_dir: Path, zookeeper: str, ports: StormPorts) -> None:
        self.run_dir = run_dir
        self.zookeeper = zookeeper
        self.ports = ports
        self.home = dist.installed()
        self.conf_dir = run_dir / "conf"
        self.log_dir = run_dir / "logs"
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._stopped: set[str] = set()

    @property
    def ui_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.ui}"

    def _env(self) -> dict[str, str]:
        # The supervisor starts workers with $JAVA_HOME/bin/java: the same Java 11.
        return {
            **os.environ,
            "JAVA_HOME": str(dist.java_home()),
            "STORM_CONF_DIR": str(self.conf_dir),
        }

    def _java(self, *extra_cp: Path) -> list[str]:
        class_path = ":".join([f"{dist.lib_dir()}/*", str(self.conf_dir), *map(str, extra_cp)])
        return [str(dist.java()), *_DAEMON_JAVA_OPTS, f"-Dstorm.home={self.home}",
                f"-Dstorm.log.dir={self.log_dir}",
                f"-Dlog4j.configurationFile={self.run_dir / 'log4j2' / 'cluster.xml'}",
                "-cp", class_path]  # fmt: skip

    def start(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "storm.yaml").write_text(
            storm_yaml(self.run_dir, self.zookeeper, self.ports)
        )
        log4j2 = self.run_dir / "log4j2"
        log4j2.mkdir(exist_ok=True)
        (log4j2 / "cluster.xml").write_text(_LOG4J2_XML.format(path=_DAEMON_LOG))
        (log4j2 / "worker.xml").write_text(_LOG4J2_XML.format(path=_WORKER_LOG))
        for name in DAEMONS:
            self.start_daemon(name)

    def start_daemon(self, name: str) -> None:
        out = open(self.log_dir / f"{name}.out", "ab")  # noqa: SIM115 - the child keeps it
        self._procs[name] = subprocess.Popen(
            [*self._java(), f"-Dlogfile.name={name}.log", DAEMONS[name]],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=self._env(), cwd=self.run_dir,
        )  # fmt: skip
        out.close()
        self._stopped.discard(name)

    def stop_daemon(self, name: str, grace_s: float = 10.0) -> None:
        """Stop one daemon on purpose (an outage): not reported as dead."""
        self._stopped.add(name)
        proc = self._procs[name]
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def dead_daemons(self) -> list[str]:
        """Daemons that exited without being stopped on purpose."""
        return [
            name
            for name, proc in self._procs.items()
            if proc.poll() is not None and name not in self._stopped
        ]

    def stop(self, grace_s: float = 10.0) -> None:
        """Workers first (the supervisor would restart them), then the daemons."""
        for pid in self.worker_pids():
            send_signal(pid, signal.SIGTERM)
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + grace_s
        for proc in self._procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
        for pid in self.worker_pids():
            send_signal(pid, signal.SIGKILL)

    # -- the UI's REST API ------------------------------------------------------------------
    def api(self, path: str, timeout: float = 10.0) -> Any:
        with urllib.request.urlopen(self.ui_url + path, timeout=timeout) as response:
            return json.loads(response.read())

    def ready(self) -> bool:
        """Nimbus leads (the UI reaches it) and the supervisor offers its slots."""
        try:
            summary = self.api("/api/v1/cluster/summary", timeout=3)
        except (OSError, ValueError):
            return False
        return summary.get("supervisors", 0) >= 1 and summary.get("slotsTotal", 0) >= 1

    def topologies(self) -> dict[str, dict[str, Any]]:
        """The running topologies by name, as the UI lists them."""
        return {t["name"]: t for t in self.api("/api/v1/topology/summary")["topologies"]}

    # -- topology commands ------------------------------------------------------------------
    def _command(self, main: str, *args: str, extra_cp: tuple[Path, ...] = (),
                 java_opts: tuple[str, ...] = (), timeout: float = 120.0) -> None:  # fmt: skip
        done = subprocess.run(
            [*self._java(*extra_cp), *java_opts, main, *args],
            stdin=subprocess.DEVNULL, capture_output=True, env=self._env(), timeout=timeout,
            cwd=self.run_dir,
        )  # fmt: skip
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).decode(errors="replace")[-2000:]
            raise StormError(f"{main} {' '.join(args)} exited {done.returncode}: {tail}")

    def submit(self, args: list[str]) -> bool:
        """``storm jar lab-topology.jar LabTopology ARGS``: StormSubmitter uploads the jar.
        False when Nimbus still holds a topology of that name (AlreadyAliveException)."""
        jar = dist.topology_jar()
        try:
            self._command("LabTopology", *args, extra_cp=(jar,), java_opts=(f"-Dstorm.jar={jar}",))
        except StormError as exc:
            if "AlreadyAliveException" in str(exc):
                return False
            raise
        return True

    def kill(self, name: str, wait_s: int = 0) -> None:
        self._command("org.apache.storm.command.kill_topology", name, "-w", str(wait_s))

    def activate(self, name: str) -> None:
        self._command("org.apache.storm.command.activate", name)

    def deactivate(self, name: str) -> None:
        self._command("org.apache.storm.command.deactivate", name)

    def worker_log(self, topology_id: str) -> str:
        """What the topology instance's workers logged (every port's ``worker.log``)."""
        folder = self.log_dir / "workers-artifacts" / topology_id
        return "".join(p.read_text(errors="replace") for p in sorted(folder.glob("*/worker.log")))

    def worker_pids(self, topology_id: str | None = None) -> list[int]:
        """The worker JVMs (of one topology instance, or all): found by their command line,
        which names the topology id (``-Dstorm.id``) and Storm's worker class."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"org.apache.storm.daemon.worker" not in argv:
                continue
            if f"-Dstorm.home={self.home}".encode() not in argv:
                continue
            if topology_id is None or f"-Dstorm.id={topology_id}".encode() in argv:
                found.append(int(entry.name))
        return found


def send_signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own: as good
        os.kill(pid, sig)


def wait(predicate: Any, timeout_s: float, what: str, every: float = 0.5) -> Any:
    """The first truthy ``predicate()``; a StormError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = predicate()
        except (OSError, ValueError, urllib.error.URLError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise StormError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(every)

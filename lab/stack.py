"""The lab's local stack: start real services on free ports, record them, stop exactly those.

``<run_dir>/stack.json`` is the only source of truth, re-read by every operation, so that
``python -m lab down`` in another shell (or a test's second ``Stack.load``) acts on what an
earlier ``up`` started. It is written atomically and under a lock on ``<run_dir>/stack.lock``.
A record holds the pid *and* its start time: a pid alone may name an unrelated process by the
time we come to stop it.

**Why one module of some 690 lines**: the record, the locking around it and the operations
that read and write it (up, down, status, stop, kill, pause and start one service) must agree
on one format and one lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lab import ports, procs
from lab.kafka_streams.services import STREAMS_APP_SERVICES
from lab.object_store import OBJECT_STORE_SERVICES
from lab.oidc_issuer import OIDC_SERVICES
from lab.postgres import POSTGRES_SERVICES
from lab.secured_kafka import SECURED_SERVICES
from lab.services import (
    LAB_CLUSTER,
    REPO,
    SERVICES,
    Context,
    ServiceSpec,
    broker_metrics_url,
    django_env,
    private_redis_url,
    redis_ping,
)
from lab.spark_cluster import SPARK_SERVICES
from lab.storm.services import STORM_SERVICES, storm_cluster_yaml
from lab.storm2.services import STORM2_SERVICES
from lab.toxiproxy import TOXIPROXY_SERVICES, source_addr

log = logging.getLogger("lab")

# Every service ``up`` knows: the optional PostgreSQL server, Spark cluster, OIDC issuer,
# Toxiproxy and object store first (they need nothing; started only when named: ``optional``).
# The real Storm (its Kafka 3.9 broker and the Storm daemons, optional too) and the secured
# broker (lab/secured_kafka.py, optional) right after the lab's own broker: sources first.
ALL_SERVICES: dict[str, ServiceSpec] = {
    **{s.name: s for s in (*POSTGRES_SERVICES, *SPARK_SERVICES, *OIDC_SERVICES)},
    **{s.name: s for s in (*TOXIPROXY_SERVICES, *OBJECT_STORE_SERVICES)},
    **{name: spec for name, spec in SERVICES.items() if name in ("zookeeper", "kafka")},
    **{s.name: s for s in STORM_SERVICES},
    **{s.name: s for s in (*STORM2_SERVICES, *STREAMS_APP_SERVICES)},
    **{s.name: s for s in SECURED_SERVICES},
    **SERVICES,
}

STATE_VERSION = 1
# What the production mode always adds: the database docker-compose.yml runs.
PRODUCTION_REQUIRES = ("postgres",)
_READY_POLL_S = 0.2
_DEFAULT_STOP_GRACE_S = 10.0


class StackError(RuntimeError):
    """The stack cannot do what was asked (already running, nothing recorded, unknown name)."""


class ServiceStartError(StackError):
    """A service did not come up; the message names it and carries its log's tail."""

    def __init__(self, service: str, reason: str, log_path: Path | None = None) -> None:
        self.service = service
        self.log_path = log_path
        message = f"{service} failed to start: {reason}"
        if log_path is not None:
            message += f"\nlog: {log_path} (last lines):\n{procs.tail(log_path)}"
        super().__init__(message)


@dataclass
class ServiceRecord:
    """One service as stack.json records it. ``pid`` is None while stopped or when reused."""

    name: str
    ports: dict[str, int]
    log: str
    argv: list[str] = field(default_factory=list)
    pid: int | None = None
    pgid: int | None = None
    start_ticks: int | None = None
    started_at: float | None = None
    reused: bool = False

    @property
    def port(self) -> int | None:
        return next(iter(self.ports.values()), None)


def default_run_dir() -> Path:
    return Path(os.environ.get("LAGWATCH_LAB_DIR") or REPO / "var" / "lab")


class Stack:
    """A set of lab services under one run directory.

    ``specs`` defaults to the lab's service table; its order is the start order.
    ``redis_url`` forces reuse of an existing Redis instead of starting a private one.
    """

    def __init__(
        self,
        run_dir: Path | str,
        *,
        redis_url: str | None = None,
        python: str = sys.executable,
        specs: Mapping[str, ServiceSpec] | None = None,
    ) -> None:
        self.run_dir = Path(run_dir).resolve()
        self.python = python
        self.specs: dict[str, ServiceSpec] = dict(specs if specs is not None else ALL_SERVICES)
        self._forced_redis_url = redis_url

    @classmethod
    def load(cls, run_dir: Path | str, **kwargs: Any) -> Stack:
        """The stack an earlier ``up`` (maybe in another process) recorded in ``run_dir``."""
        stack = cls(run_dir, **kwargs)
        if not stack.state_path.exists():
            raise StackError(f"no lab stack is recorded in {stack.run_dir}")
        return stack

    @property
    def state_path(self) -> Path:
        return self.run_dir / "stack.json"

    @property
    def clusters_path(self) -> Path:
        return self.run_dir / "clusters.yaml"

    # --- public operations --------------------------------------------------------------------

    def up(
        self, services: Sequence[str] | None = None, *, production: bool = False
    ) -> dict[str, str]:
        """Start ``services`` (default: all but the optional ones) plus what they require;
        return the endpoints.

        ``production`` runs the product as docker-compose.yml would (docs/LAB.md, "Production
        mode"): production settings, gunicorn, and PostgreSQL, which it adds to the services.

        Returns only once every service answers its readiness check. If one fails, the ones
        already started are stopped again, so a failed ``up`` leaves nothing behind.
        """
        if production:
            default = [name for name, spec in self.specs.items() if not spec.optional]
            services = [*(default if services is None else services), *PRODUCTION_REQUIRES]
        names = self._resolve(services)
        with self._locked():
            previous = self._read_state()
            if previous is not None:
                self._clear_stale(previous)
            state: dict[str, Any] = {
                "version": STATE_VERSION,
                "id": uuid.uuid4().hex,
                "run_dir": str(self.run_dir),
                "boot_id": procs.boot_id(),
                "production": production,
                "services": [],
            }
            try:
                self._start_all(state, names)
                self._write_state(state)
            except BaseException:
                self._stop_records(state)
                self._clean_up(state)
                self.state_path.unlink(missing_ok=True)
                raise
            return self._endpoints(state)

    def down(self, *, only_id: str | None = None) -> dict[str, str]:
        """Stop every recorded service, last started first; return what happened to each.

        A reused Redis is left running. The record is removed once all of ours are gone.
        ``only_id`` makes it a no-op unless the record is still that of the ``up`` that
        returned the id: a foreground ``up`` must not tear down a newer stack in its run dir.
        """
        with self._locked():
            state = self._read_state()
            if state is None or (only_id is not None and state.get("id") != only_id):
                return {}
            outcomes = self._stop_records(state)
            self._clean_up(state)
            self.state_path.unlink(missing_ok=True)
        return outcomes

    def _clean_up(self, state: dict[str, Any]) -> None:
        """What a service keeps outside the run directory goes with the stack (``cleanup``)."""
        ctx = self._context(state)
        for record in _records(state):
            spec = self.specs.get(record.name)
            if spec is not None and spec.cleanup is not None and not record.reused:
                spec.cleanup(ctx)

    def status(self) -> dict[str, Any]:
        """Each recorded service's state (running, stopped, dead), pid, port and uptime."""
        state = self._read_state()
        if state is None:
            return {
                "run_dir": str(self.run_dir),
                "production": False,
                "services": {},
                "endpoints": {},
            }
        ctx = self._context(state)
        now = time.time()
        services = {}
        for record in _records(state):
            current = self._state_of(record, state)
            spec = self.specs.get(record.name)
            endpoints = spec.endpoints(ctx) if spec is not None else {}
            services[record.name] = {
                "state": current,
                "pid": record.pid if current == "running" else None,
                "port": record.port,
                "endpoint": next(iter(endpoints.values()), ""),
                "uptime_s": (
                    round(now - record.started_at, 1)
                    if current == "running" and record.started_at
                    else None
                ),
                "log": record.log,
                "reused": record.reused,
            }
        return {
            "run_dir": str(self.run_dir),
            "production": bool(state.get("production", False)),
            "services": services,
            "endpoints": self._endpoints(state),
        }

    def recorded_id(self) -> str | None:
        """Identifies the ``up`` that wrote the current record (None when there is none)."""
        state = self._read_state()
        return state.get("id") if state is not None else None

    def endpoints(self) -> dict[str, str]:
        """Addresses by role: zookeeper, kafka, redis, web, storm_ui, control (those present)."""
        state = self._read_state()
        return self._endpoints(state) if state is not None else {}

    def django_env(self) -> dict[str, str]:
        """The environment the stack's own product processes run with (its database, Redis,
        ingest token): for running ``manage.py`` against this stack from outside it."""
        state = self._read_state()
        if state is None:
            raise StackError(f"no lab stack is recorded in {self.run_dir}")
        return django_env(self._context(state), direct=True)

    def stop_service(self, name: str) -> str:
        """Stop one service, keeping its port reserved in the record for ``start_service``."""
        with self._locked():
            state, record = self._find(name)
            if record.reused:
                raise StackError(f"{name} is reused, not started by the lab: not stopping it")
            outcome = self._stop_record(record, state)
            self._mark_stopped(state, record)
        log.info("%s stopped (%s)", name, outcome)
        return outcome

    def kill_service(self, name: str) -> str:
        """SIGKILL one service's whole process group at once: a crash (the OOM killer, a lost
        machine), which no handler sees and no cleanup follows, unlike ``stop_service``. Lab
        only (the sharded collectors' test kills a collector mid-run). ``start_service``
        starts it again on the same port(s)."""
        with self._locked():
            state, record = self._find(name)
            if record.reused:
                raise StackError(f"{name} is reused, not started by the lab: not killing it")
            if record.pid is None or record.start_ticks is None:
                raise StackError(f"{name} is not running")
            outcome = procs.terminate_group(
                record.pid, record.start_ticks, grace_s=0.0, stop_signal=signal.SIGKILL
            )
            self._mark_stopped(state, record)
        log.info("%s killed (%s)", name, outcome)
        return outcome

    def pause_service(self, name: str, paused: bool = True) -> int:
        """SIGSTOP (``paused``) or SIGCONT one running service's process group: a broker
        that holds its connections open and answers nothing, which a stop cannot give (the
        producer-expiry scenario). Lab only. Returns the process group signalled."""
        with self._locked():
            state, record = self._find(name)
            if record.reused:
                raise StackError(f"{name} is reused, not started by the lab: not pausing it")
            if self._state_of(record, state) != "running" or record.pgid is None:
                raise StackError(f"{name} is not running")
            pgid = record.pgid
        os.killpg(pgid, signal.SIGSTOP if paused else signal.SIGCONT)
        log.info("%s %s (process group %d)", name, "paused" if paused else "resumed", pgid)
        return pgid

    def start_service(self, name: str, *, fresh: bool = False) -> None:
        """Start a stopped (or dead) service again on the same port(s); ``fresh``: from empty
        storage, as ``up`` starts it (its ``reset``): a broker restarted empty under the same
        cluster name gets a new cluster id, a ZooKeeper loses every znode."""
        with self._locked():
            state, record = self._find(name)
            if record.reused:
                raise StackError(f"{name} is reused, not started by the lab: nothing to start")
            if self._state_of(record, state) == "running":
                raise StackError(f"{name} is already running (pid {record.pid})")
            spec = self._spec(name)
            for port in record.ports.values():
                if ports.accepts_connections(port) or not ports.is_free(port, reuse_addr=True):
                    raise ServiceStartError(
                        name, f"port {port} is taken by another process", Path(record.log)
                    )
            try:
                self._launch(spec, record, state, fresh=fresh)
            except BaseException:
                self._stop_record(record, state)
                self._mark_stopped(state, record)
                raise

    # --- starting -----------------------------------------------------------------------------

    def _resolve(self, services: Sequence[str] | None) -> list[str]:
        """The requested services plus their requirements, in the table's start order."""
        wanted = set(
            services
            if services is not None
            else (name for name, spec in self.specs.items() if not spec.optional)
        )
        unknown = wanted - self.specs.keys()
        if unknown:
            raise StackError(
                f"unknown service(s) {', '.join(sorted(unknown))}; known: {', '.join(self.specs)}"
            )
        pending = list(wanted)
        while pending:
            for required in self.specs[pending.pop()].requires:
                if required not in wanted:
                    wanted.add(required)
                    pending.append(required)
        return [name for name in self.specs if name in wanted]

    def _start_all(self, state: dict[str, Any], names: list[str]) -> None:
        """Record every service with its ports first, so each one's context knows all the
        stack's addresses (the workload is told where the web server will be), then start them
        in order."""
        redis_url = self._reusable_redis() if "redis" in names else None
        needed = [
            port_name
            for name in names
            if not (name == "redis" and redis_url)
            for port_name in self.specs[name].ports
        ]
        chosen = dict(zip(needed, ports.pick_free_ports(len(needed)), strict=True))
        logs = self.run_dir / "logs"
        records = []
        for name in names:
            if name == "redis" and redis_url:
                port = urlparse(redis_url).port or 6379
                records.append(ServiceRecord(name=name, ports={"redis": port}, log="", reused=True))
                log.info("redis: reusing %s (down leaves it running)", redis_url)
                continue
            ports_of = {p: chosen[p] for p in self.specs[name].ports}
            records.append(ServiceRecord(name=name, ports=ports_of, log=str(logs / f"{name}.log")))
        state["redis_url"] = redis_url or (
            private_redis_url(chosen["redis"]) if "redis" in chosen else None
        )
        state["services"] = [asdict(record) for record in records]
        self._write_state(state)
        ctx = self._context(state)
        if "zookeeper" in ctx.ports and ctx.ports.keys() & {"kafka", "real_storm_ui"}:
            self.clusters_path.write_text(clusters_yaml(ctx))  # the web server imports it
        else:
            self.clusters_path.unlink(missing_ok=True)  # old ports: must not be imported
        for record in records:
            if not record.reused:
                self._launch(self.specs[record.name], record, state, fresh=True)

    def _reusable_redis(self) -> str | None:
        """The URL of an existing Redis to reuse, or None to start a private one."""
        forced = self._forced_redis_url
        if forced:
            if not _answers(forced):
                raise ServiceStartError("redis", f"nothing answers PING at {forced}")
            return forced
        if shutil.which("redis-server"):
            return None
        fallback = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
        if _answers(fallback):
            return fallback
        raise ServiceStartError(
            "redis",
            f"redis-server is not installed (apt-get install -y redis-server) and nothing answers "
            f"PING at {fallback}; install it or pass --redis-url",
        )

    def _launch(
        self, spec: ServiceSpec, record: ServiceRecord, state: dict[str, Any], *, fresh: bool
    ) -> None:
        """Spawn one service, record it at once (so a crash of ours leaves it findable by
        ``down``), then wait for it to be ready. ``fresh`` for ``up``, not for a restart."""
        ctx = self._context(state)
        started = time.monotonic()
        log_path = Path(record.log)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if fresh and spec.reset is not None:
                spec.reset(ctx)
            env = spec.env(ctx)
            if spec.prepare is not None:
                spec.prepare(ctx, env, log_path)
            argv = spec.argv(ctx)
        except subprocess.CalledProcessError as exc:
            cmd = " ".join(map(str, exc.cmd))
            raise ServiceStartError(
                spec.name, f"`{cmd}` exited with code {exc.returncode}", log_path
            ) from exc
        except (OSError, ValueError, ImportError, subprocess.SubprocessError) as exc:
            raise ServiceStartError(spec.name, f"{type(exc).__name__}: {exc}") from exc
        offset = log_path.stat().st_size if log_path.exists() else 0
        proc = procs.spawn(argv, env=env, log_path=log_path, cwd=ctx.repo)
        stat = procs.read_stat(proc.pid)
        record.argv = list(argv)
        record.pid = proc.pid
        record.pgid = stat.pgid if stat else proc.pid
        record.start_ticks = stat.start_ticks if stat else None
        record.started_at = time.time()
        self._put(state, record)
        self._write_state(state)
        self._await_ready(spec, ctx, proc, log_path, offset)
        log.info(
            "%s ready in %.1f s (pid %d%s; log %s)",
            spec.name,
            time.monotonic() - started,
            proc.pid,
            "".join(f", {p} {n}" for p, n in record.ports.items()),
            log_path,
        )

    def _await_ready(
        self,
        spec: ServiceSpec,
        ctx: Context,
        proc: subprocess.Popen[bytes],
        log_path: Path,
        offset: int,
    ) -> None:
        deadline = time.monotonic() + spec.ready_timeout_s
        last = "no answer yet"
        while True:
            code = proc.poll()
            if code is not None:
                raise ServiceStartError(
                    spec.name, f"exited with code {code} before it was ready", log_path
                )
            try:
                problem = self._not_ready_because(spec, ctx, proc.pid, log_path, offset)
            except Exception as exc:  # noqa: BLE001 - any failure of a check means "not yet"
                problem = f"{type(exc).__name__}: {exc}"
            if problem is None:
                return
            last = problem
            if time.monotonic() >= deadline:
                raise ServiceStartError(
                    spec.name,
                    f"not ready after {spec.ready_timeout_s:.0f} s (last check: {last})",
                    log_path,
                )
            time.sleep(_READY_POLL_S)

    @staticmethod
    def _not_ready_because(
        spec: ServiceSpec, ctx: Context, pid: int, log_path: Path, offset: int
    ) -> str | None:
        """None when ready, else why not. The port must be held by our process first, or the
        protocol check could be answered by some other server that won the port."""
        if spec.ports:
            port = ctx.ports[spec.ports[0]]
            if not procs.owns_listener(pid, port):
                if ports.accepts_connections(port):
                    return f"port {port} is answered by another process"
                return f"not listening on port {port} yet"
        with open(log_path, "rb") as handle:
            handle.seek(offset)
            text = handle.read().decode(errors="replace")
        return None if spec.ready(ctx, text) else "readiness check said no"

    # --- stopping -----------------------------------------------------------------------------

    def _stop_records(self, state: dict[str, Any]) -> dict[str, str]:
        outcomes = {}
        for record in reversed(_records(state)):
            outcomes[record.name] = self._stop_record(record, state)
            if outcomes[record.name] in ("stopped", "killed"):
                log.info("%s %s", record.name, outcomes[record.name])
        return outcomes

    def _stop_record(self, record: ServiceRecord, state: dict[str, Any]) -> str:
        if record.reused:
            return "left running (reused)"
        if record.pid is None or record.start_ticks is None:
            return "already stopped"
        if state.get("boot_id") != procs.boot_id():
            return "gone"
        spec = self.specs.get(record.name)
        if spec is None:
            return procs.terminate_group(
                record.pid, record.start_ticks, grace_s=_DEFAULT_STOP_GRACE_S
            )
        return procs.terminate_group(
            record.pid, record.start_ticks, grace_s=spec.stop_grace_s, stop_signal=spec.stop_signal
        )

    def _clear_stale(self, state: dict[str, Any]) -> None:
        """Refuse while anything recorded still runs; otherwise drop the dead record."""
        running = [
            f"{r.name} (pid {r.pid})"
            for r in _records(state)
            if not r.reused and self._state_of(r, state) == "running"
        ]
        if running:
            raise StackError(
                f"a lab stack is already running in {self.run_dir}: {', '.join(running)}. "
                f"Stop it first: python -m lab down --run-dir {self.run_dir}"
            )
        dead = [r.name for r in _records(state) if self._state_of(r, state) == "dead"]
        log.warning(
            "clearing the previous record in %s: %s",
            self.state_path,
            f"{', '.join(dead)} died" if dead else "everything was stopped",
        )
        self._stop_records(state)  # a dead leader may have left children in its group
        self._clean_up(state)
        self.state_path.unlink(missing_ok=True)

    # --- state --------------------------------------------------------------------------------

    def _state_of(self, record: ServiceRecord, state: dict[str, Any]) -> str:
        if record.reused:
            return "running" if _answers(state.get("redis_url") or "") else "dead"
        if record.pid is None or record.start_ticks is None:
            return "stopped"
        if state.get("boot_id") == procs.boot_id() and procs.is_running(
            record.pid, record.start_ticks
        ):
            return "running"
        return "dead"

    def _context(self, state: dict[str, Any]) -> Context:
        merged: dict[str, int] = {}
        for record in _records(state):
            if not record.reused:
                merged.update(record.ports)
        return Context(
            run_dir=self.run_dir,
            ports=merged,
            redis_url=state.get("redis_url"),
            python=self.python,
            production=bool(state.get("production", False)),
        )

    def _endpoints(self, state: dict[str, Any]) -> dict[str, str]:
        ctx = self._context(state)
        endpoints: dict[str, str] = {}
        for record in _records(state):
            spec = self.specs.get(record.name)
            if spec is not None:
                endpoints.update(spec.endpoints(ctx))
        return endpoints

    def _spec(self, name: str) -> ServiceSpec:
        try:
            return self.specs[name]
        except KeyError:
            raise StackError(f"no description of service {name!r} in this stack") from None

    def _find(self, name: str) -> tuple[dict[str, Any], ServiceRecord]:
        state = self._read_state()
        if state is None:
            raise StackError(f"no lab stack is recorded in {self.run_dir}")
        for record in _records(state):
            if record.name == name:
                return state, record
        raise StackError(f"{name} is not part of the stack in {self.run_dir}")

    def _mark_stopped(self, state: dict[str, Any], record: ServiceRecord) -> None:
        record.pid = record.pgid = record.start_ticks = record.started_at = None
        self._put(state, record)
        self._write_state(state)

    @staticmethod
    def _put(state: dict[str, Any], record: ServiceRecord) -> None:
        state["services"] = [
            asdict(record) if entry["name"] == record.name else entry for entry in state["services"]
        ]

    def _read_state(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.state_path.read_text())
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as exc:
            raise StackError(f"{self.state_path} is corrupt ({exc}); inspect or remove it") from exc

    def _write_state(self, state: dict[str, Any]) -> None:
        """Atomic: a reader in another process sees the old file or the new one, never half."""
        tmp = self.state_path.with_suffix(f".json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(tmp, self.state_path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / "stack.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _records(state: dict[str, Any]) -> list[ServiceRecord]:
    return [ServiceRecord(**entry) for entry in state.get("services", [])]


def _answers(redis_url: str) -> bool:
    try:
        return redis_ping(redis_url)
    except Exception:  # noqa: BLE001 - any failure means "does not answer"
        return False


LAB_POLL_VAR = "LAGWATCH_LAB_POLL_S"
LAB_RETENTION_RISK_S = 120
DEFAULT_LAB_POLL_S = 10


def lab_poll_interval_s() -> int:
    """The lab cluster's poll interval: ``$LAGWATCH_LAB_POLL_S``, else 10 s."""
    text = os.environ.get(LAB_POLL_VAR, "").strip()
    if not text:
        return DEFAULT_LAB_POLL_S
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise StackError(f"{LAB_POLL_VAR}={text!r}: a whole number of seconds, at least 1")
    return value


def clusters_yaml(ctx: Context) -> str:
    """The lab cluster in the product's import format (``manage.py lagwatch_config import``).

    Strings are written as JSON strings, which YAML reads back unchanged. The poll interval
    is 10 s unless ``$LAGWATCH_LAB_POLL_S`` says otherwise (a whole number of seconds >= 1):
    end-to-end tests poll faster so that a status window fills in affordable time.
    """
    lines = ["clusters:"]
    if "kafka" in ctx.ports:
        lines += _lab_cluster(ctx)
    if "real_storm_ui" in ctx.ports:
        lines += storm_cluster_yaml(ctx, lab_poll_interval_s())
    return "\n".join(lines) + "\n"


def _lab_cluster(ctx: Context) -> list[str]:
    # With Toxiproxy in the stack the collectors reach the sources through it (lab/toxiproxy.py).
    kafka, zk = source_addr(ctx, "kafka"), source_addr(ctx, "zookeeper")
    lines = [
        f"  - name: {LAB_CLUSTER}",
        f"    poll_interval_s: {lab_poll_interval_s()}",
        f"    kafka: {{bootstrap_servers: {json.dumps(kafka)}, config: {{}}, "
        "read_consumer_offsets_topic: true}",
        f"    zookeeper: {{hosts: {json.dumps(zk)}, "
        'storm_spout_roots: ["/kafka-spout"], zk_consumers: true}',
    ]
    storm_ui = ctx.url("storm_ui") if "storm_ui" in ctx.ports else None
    lines.append(f"    storm_ui_url: {json.dumps(storm_ui)}")  # JSON's null is YAML's null
    if "kafka_metrics" in ctx.ports:  # the broker's JMX exporter agent (purgatory figures)
        lines.append(f"    broker_metrics_urls: [{json.dumps(broker_metrics_url(ctx))}]")
    # The lab's topics keep the broker's week of retention, but `retention-risk` shortens one
    # to minutes: a threshold in proportion, so that a consumer keeping up is never at risk.
    lines.append(f"    retention_risk_s: {LAB_RETENTION_RISK_S}")
    return lines

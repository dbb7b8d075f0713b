"""A simulated storm-kafka ``KafkaSpout`` that reads real messages and commits to ZooKeeper.

The product never talks to this code; it sees what a real topology leaves behind: znodes at
``<zkRoot>/<spoutId>/partition_<N>`` written exactly as storm-kafka writes them, and Storm UI
figures (see :mod:`lab.storm.ui_api`). Faults are produced by the *bolt policy*, which decides
per tuple whether the downstream "bolt" acks it, fails it or lets it time out, and how long it
takes; a scenario swaps the policy while the spout runs.

One thread per spout plays the single-threaded spout executor: it calls ``nextTuple`` (one
emit per call, round-robin over the partitions, committing every ``stateUpdateIntervalMs``
from inside ``nextTuple`` as storm-kafka does), then delivers the acks and fails that are due.
The bolt is a queue served by ``bolt_parallelism`` executors, so a slow bolt builds a backlog
that ``max_spout_pending`` caps, and a tuple not done within ``message_timeout_s`` fails.
Because commits live in ``nextTuple``, a spout stuck at max pending stops committing, as in
Storm.

Outages: the spout waits for ZooKeeper and the broker before starting, and afterwards keeps
running through outages: fetches come back empty, commits that cannot be written are kept and
retried, and everything is logged at most every few seconds per kind of problem.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import logging
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from confluent_kafka import KafkaException
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.retry import KazooRetry

from lab.storm.broker_reader import BrokerReader, LogLimiter
from lab.storm.partition_manager import (
    EARLIEST_TIME,
    LONG_MAX,
    FetchFailedError,
    PartitionCounters,
    PartitionIdentity,
    PartitionManager,
    PartitionManagerConfig,
    TooManyTupleFailuresError,
    committed_path,
    resolve_start_offset,
)

log = logging.getLogger(__name__)

Outcome = Literal["ack", "fail", "timeout"]

_IDLE_WAIT_S = 0.05
_BURST = 256  # nextTuple calls per loop turn before checking stop and publishing stats
_STATS_EVERY_S = 0.2
_INIT_RETRY_S = (0.5, 5.0)
_ZK_OP_TIMEOUT_S = 5.0
STORM_TOO_MANY_FAILURES = "java.lang.RuntimeException: Too many tuple failures"


@dataclass(frozen=True)
class BoltPolicy:
    """What the downstream bolt does with each tuple. Immutable: a scenario swaps it whole.

    ``poison`` holds ``(partition, offset)`` pairs that fail every time they are processed;
    the shares are probabilities per tuple; ``process_ms`` is the bolt's time per tuple.
    """

    process_ms: float = 2.0
    fail_share: float = 0.0
    timeout_share: float = 0.0
    poison: frozenset[tuple[int, int]] = frozenset()

    def __post_init__(self) -> None:
        if self.process_ms < 0:
            raise ValueError("process_ms must be >= 0")
        if not (0 <= self.fail_share <= 1 and 0 <= self.timeout_share <= 1):
            raise ValueError("shares must be within [0, 1]")
        if self.fail_share + self.timeout_share > 1:
            raise ValueError("fail_share + timeout_share must be <= 1")

    def decide(self, partition: int, offset: int, rng: random.Random) -> Outcome:
        if (partition, offset) in self.poison:
            return "fail"
        draw = rng.random()
        if draw < self.fail_share:
            return "fail"
        if draw < self.fail_share + self.timeout_share:
            return "timeout"
        return "ack"


@dataclass(frozen=True)
class PartitionStats:
    """Executor-level figures for one partition, plus its ``PartitionManager``'s own."""

    partition: int
    zk_path: str
    emitted: int
    acked: int
    failed: int
    in_flight: int
    complete_latency_ms: float
    manager: PartitionCounters


@dataclass(frozen=True)
class SpoutStats:
    """A consistent snapshot, published by the spout thread at most every 0.2 s.

    ``emitted``/``acked``/``failed`` count what the spout executor saw (as Storm UI does, so a
    failure the ``PartitionManager`` ignores still counts); ``pending`` is tuples in flight,
    the figure ``max_spout_pending`` caps. Counters survive simulated worker restarts.
    """

    running: bool
    emitted: int
    acked: int
    failed: int
    pending: int
    max_spout_pending: int | None
    complete_latency_ms: float
    bolt_executed: int
    bolt_acked: int
    bolt_failed: int
    bolt_process_latency_ms: float
    bolt_capacity: float
    restarts: int
    last_error: str
    error_time: float | None
    partitions: tuple[PartitionStats, ...] = ()


@dataclass
class _PartitionTally:
    emitted: int = 0
    acked: int = 0
    failed: int = 0
    in_flight: int = 0
    latency_ms_sum: float = 0.0

    def latency(self) -> float:
        return self.latency_ms_sum / self.acked if self.acked else 0.0


@dataclass(order=True)
class _Completion:
    due: float
    seq: int
    partition: int = field(compare=False)
    offset: int = field(compare=False)
    outcome: Outcome = field(compare=False)
    emitted_at: float = field(compare=False)


class KafkaSpoutSim:
    """One spout of one simulated topology: a ``PartitionManager`` per partition, one thread.

    Create, :meth:`start`, change faults with :meth:`set_policy` / :meth:`update_policy` /
    :meth:`add_poison` while it runs, read :meth:`stats`, :meth:`stop`. A stopped spout is not
    restarted; a new instance with the same ``topology_id`` resumes from ZooKeeper like a
    restarted worker, one with a new id behaves like a newly submitted topology.
    """

    def __init__(
        self,
        *,
        bootstrap: str,
        zk_hosts: str,
        topic: str,
        topology_name: str,
        spout_id: str,
        zk_root: str = "/kafka-spout",
        topology_id: str | None = None,
        component_id: str | None = None,
        partitions: Sequence[int] | None = None,
        broker_host: str | None = None,
        broker_port: int | None = None,
        force_from_start: bool = False,
        start_offset_time: int = EARLIEST_TIME,
        max_offset_behind: int = LONG_MAX,
        fetch_max_messages: int = 100,
        use_start_offset_time_if_offset_out_of_range: bool = True,
        state_update_interval_ms: int = 2000,
        max_spout_pending: int | None = 1000,
        message_timeout_s: float = 30.0,
        bolt_id: str = "process",
        bolt_parallelism: int = 1,
        policy: BoltPolicy | None = None,
        restart_delay_s: float = 2.0,
        seed: int | None = None,
    ) -> None:
        if zk_root.endswith("/") or not zk_root.startswith("/"):
            raise ValueError("zk_root must start with '/' and not end with '/'")
        if max_spout_pending is not None and max_spout_pending < 1:
            raise ValueError("max_spout_pending must be >= 1 or None")
        if bolt_parallelism < 1:
            raise ValueError("bolt_parallelism must be >= 1")
        self.bootstrap = bootstrap
        self.zk_hosts = zk_hosts
        self.topic = topic
        self.topology_name = topology_name
        self.topology_id = topology_id or f"{topology_name}-1-{int(time.time())}"
        # The topology's component name (Storm UI's spoutId); spout_id is SpoutConfig.id, the
        # ZooKeeper path element. Real topologies often name them differently.
        self.component_id = component_id or spout_id
        self.spout_id = spout_id
        self.zk_root = zk_root
        self.requested_partitions = tuple(partitions) if partitions is not None else None
        self.broker_host = broker_host
        self.broker_port = broker_port
        self.pm_config = PartitionManagerConfig(
            max_offset_behind=max_offset_behind,
            fetch_max_messages=fetch_max_messages,
            force_from_start=force_from_start,
            start_offset_time=start_offset_time,
            use_start_offset_time_if_offset_out_of_range=(
                use_start_offset_time_if_offset_out_of_range
            ),
        )
        self.state_update_interval_s = state_update_interval_ms / 1000.0
        self.max_spout_pending = max_spout_pending
        self.message_timeout_s = message_timeout_s
        self.bolt_id = bolt_id
        self.bolt_parallelism = bolt_parallelism
        self.restart_delay_s = restart_delay_s
        self._policy = policy or BoltPolicy()
        self._policy_lock = threading.Lock()
        self._rng = random.Random(seed)
        self._say = LogLimiter()

        self.started_at: float | None = None  # wall clock, for the UI's uptime
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stats_lock = threading.Lock()
        self._stats = self._empty_stats()

        # Everything below belongs to the spout thread.
        self._zk: KazooClient | None = None
        self._reader: BrokerReader | None = None
        self._managers: list[PartitionManager] | None = None
        self._by_partition: dict[int, PartitionManager] = {}
        self._tallies: dict[int, _PartitionTally] = {}
        self._unwritten: dict[int, dict[str, Any]] = {}
        self._due: list[_Completion] = []
        self._bolt_free: list[float] = [0.0] * bolt_parallelism
        self._seq = 0
        self._curr = 0
        self._last_commit = 0.0
        self._emitted = self._acked = self._failed = 0
        self._latency_ms_sum = 0.0
        self._bolt_executed = self._bolt_acked = self._bolt_failed = 0
        self._bolt_busy_s = 0.0
        self._restarts = 0
        self._last_error = ""
        self._error_time: float | None = None
        self._last_stats = 0.0

    # --- public API -------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("a KafkaSpoutSim starts once; create a new one to restart")
        self.started_at = time.time()
        self._thread = threading.Thread(
            target=self._run, name=f"spout-{self.topology_id}-{self.spout_id}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 15.0) -> None:
        """Stop without a final commit (as a killed worker): ZooKeeper keeps the last progress."""
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    @property
    def policy(self) -> BoltPolicy:
        return self._policy

    def set_policy(self, policy: BoltPolicy) -> BoltPolicy:
        """Swap the bolt's behaviour for the next tuples; returns the previous policy."""
        with self._policy_lock:
            previous, self._policy = self._policy, policy
        return previous

    def update_policy(self, **changes: Any) -> BoltPolicy:
        """Change some fields of the policy (e.g. ``fail_share=0.2``); returns the new one."""
        with self._policy_lock:
            self._policy = dataclasses.replace(self._policy, **changes)
            return self._policy

    def add_poison(self, partition: int, offset: int) -> None:
        """Make one message fail every time, which pins its partition's committed offset."""
        with self._policy_lock:
            poison = self._policy.poison | {(partition, offset)}
            self._policy = dataclasses.replace(self._policy, poison=poison)

    def clear_poison(self) -> None:
        with self._policy_lock:
            self._policy = dataclasses.replace(self._policy, poison=frozenset())

    def zk_path(self, partition: int) -> str:
        return committed_path(self.zk_root, self.spout_id, partition)

    def stats(self) -> SpoutStats:
        with self._stats_lock:
            return dataclasses.replace(self._stats, running=self.running)

    # --- the spout thread -------------------------------------------------------------

    def _run(self) -> None:
        retry = _INIT_RETRY_S[0]
        try:
            while not self._stop.is_set():
                if self._managers is None:
                    try:
                        self._initialize()
                        retry = _INIT_RETRY_S[0]
                    except Exception as exc:  # any outage: wait and retry
                        self._say("init", logging.WARNING, "spout %s waiting: %s", self, exc)
                        self._stop.wait(retry)
                        retry = min(retry * 2, _INIT_RETRY_S[1])
                    continue
                try:
                    busy = self._step()
                except TooManyTupleFailuresError:
                    self._crash(STORM_TOO_MANY_FAILURES)
                    continue
                except Exception as exc:  # keep the topology alive, as Storm does
                    log.exception("spout %s: unexpected error", self)
                    self._record_error(f"{type(exc).__name__}: {exc}")
                    self._stop.wait(0.5)
                    continue
                if not busy:
                    self._idle()
                self._publish_stats()
        finally:
            self._shutdown()

    def __repr__(self) -> str:
        return f"<KafkaSpoutSim {self.topology_id}/{self.spout_id} topic={self.topic}>"

    def _ensure_zk(self) -> KazooClient:
        if self._zk is None:
            self._zk = KazooClient(
                hosts=self.zk_hosts,
                timeout=10.0,
                connection_retry=KazooRetry(max_tries=-1, delay=0.2, max_delay=2.0),
            )
            self._zk.start_async().wait(_ZK_OP_TIMEOUT_S)
        if not self._zk.connected:
            raise ConnectionError(f"ZooKeeper {self.zk_hosts} not connected")
        return self._zk

    def _read_stored(self, zk: KazooClient, path: str) -> dict[str, Any] | None:
        try:
            raw, _stat = zk.get_async(path).get(timeout=_ZK_OP_TIMEOUT_S)
        except NoNodeError:
            return None
        try:
            parsed = json.loads((raw or b"").decode("utf-8"))
        except ValueError:  # includes UnicodeDecodeError; storm-kafka also starts afresh
            log.warning("Error reading and/or parsing at ZkNode: %s", path)
            return None
        return parsed if isinstance(parsed, dict) else None

    def _initialize(self) -> None:
        """KafkaSpout.open plus the PartitionManager constructors: read ZooKeeper, pick offsets."""
        zk = self._ensure_zk()
        if self._reader is None:
            self._reader = BrokerReader(
                self.bootstrap, self.topic, f"storm-sim-{self.topology_name}", self._say
            )
        reader = self._reader
        leaders = reader.partitions_and_leaders()
        wanted = self.requested_partitions or tuple(sorted(leaders))
        missing = [p for p in wanted if p not in leaders]
        if missing:
            raise KafkaException(f"topic {self.topic} has no partitions {missing}")
        managers: list[PartitionManager] = []
        for p in wanted:
            earliest, latest = reader.watermarks(p)
            stored = self._read_stored(zk, self.zk_path(p))
            decision = resolve_start_offset(
                stored, self.topology_id, self.pm_config, earliest, latest
            )
            host, port = leaders[p]
            identity = PartitionIdentity(
                topology_id=self.topology_id,
                topology_name=self.topology_name,
                topic=self.topic,
                partition=p,
                broker_host=self.broker_host if self.broker_host is not None else host,
                broker_port=self.broker_port if self.broker_port is not None else port,
            )
            log.info("spout %s partition %d: %s", self, p, decision.reason)
            managers.append(
                PartitionManager(
                    identity,
                    self.pm_config,
                    decision.offset,
                    fetch=partial(reader.fetch, p),
                    watermarks=partial(reader.watermarks, p),
                )
            )
        reader.assign({pm.partition: pm.emitted_to_offset for pm in managers})
        self._managers = managers
        self._by_partition = {pm.partition: pm for pm in managers}
        for pm in managers:
            self._tallies.setdefault(pm.partition, _PartitionTally()).in_flight = 0
        self._unwritten.clear()
        self._curr = 0
        self._last_commit = time.monotonic()
        log.info("spout %s started on partitions %s", self, list(wanted))

    def _step(self) -> bool:
        emitted = False
        for _ in range(_BURST):
            self._deliver_due(time.monotonic())
            if self.max_spout_pending is not None and len(self._due) >= self.max_spout_pending:
                break
            if not self._next_tuple():
                break
            emitted = True
            if self._stop.is_set():
                break
        return emitted

    def _idle(self) -> None:
        now = time.monotonic()
        wait = _IDLE_WAIT_S
        if self._due:
            wait = max(0.0, min(wait, self._due[0].due - now))
        assert self._reader is not None
        try:
            self._reader.poll(wait)
            self._reader.replace_if_stuck()
        except KafkaException as exc:
            self._say("poll", logging.WARNING, "spout %s poll: %s", self, exc)
            self._stop.wait(wait)

    def _next_tuple(self) -> bool:
        """KafkaSpout.nextTuple: at most one emit, then the periodic commit."""
        managers = self._managers
        assert managers is not None
        emitted = False
        for _ in range(len(managers)):
            self._curr %= len(managers)
            pm = managers[self._curr]
            try:
                msg = pm.next()
            except (FetchFailedError, KafkaException) as exc:
                self._say(
                    f"fetch:{pm.partition}", logging.WARNING, "spout %s fetch failed: %s", self, exc
                )
                msg = None
            if msg is None or not pm.has_waiting:
                self._curr = (self._curr + 1) % len(managers)
            if msg is not None:
                self._emit(pm.partition, msg[0])
                emitted = True
                break
        if time.monotonic() - self._last_commit > self.state_update_interval_s:
            self._commit()
        return emitted

    def _emit(self, partition: int, offset: int) -> None:
        now = time.monotonic()
        policy = self._policy
        outcome = policy.decide(partition, offset, self._rng)
        i = min(range(len(self._bolt_free)), key=self._bolt_free.__getitem__)
        done = max(now, self._bolt_free[i]) + policy.process_ms / 1000.0
        self._bolt_free[i] = done
        self._bolt_busy_s += policy.process_ms / 1000.0
        self._bolt_executed += 1
        if outcome == "fail":
            self._bolt_failed += 1
        elif outcome == "ack":
            self._bolt_acked += 1
        due = done
        if outcome == "timeout" or done - now > self.message_timeout_s:
            outcome, due = "timeout", now + self.message_timeout_s
        self._seq += 1
        heapq.heappush(self._due, _Completion(due, self._seq, partition, offset, outcome, now))
        self._emitted += 1
        tally = self._tallies[partition]
        tally.emitted += 1
        tally.in_flight += 1

    def _deliver_due(self, now: float) -> None:
        while self._due and self._due[0].due <= now:
            c = heapq.heappop(self._due)
            tally = self._tallies[c.partition]
            tally.in_flight -= 1
            pm = self._by_partition[c.partition]
            if c.outcome == "ack":
                latency_ms = (now - c.emitted_at) * 1000.0
                self._acked += 1
                self._latency_ms_sum += latency_ms
                tally.acked += 1
                tally.latency_ms_sum += latency_ms
                pm.ack(c.offset)
            else:
                self._failed += 1
                tally.failed += 1
                pm.fail(c.offset)

    def _commit(self) -> None:
        self._last_commit = time.monotonic()
        zk = self._zk
        if zk is None or not zk.connected:
            # Leave _committedTo alone so the progress is written once ZooKeeper is back.
            self._say("zk-down", logging.WARNING, "spout %s: ZooKeeper down, not committing", self)
            return
        assert self._managers is not None
        for pm in self._managers:
            data = pm.commit() or self._unwritten.pop(pm.partition, None)
            if data is None:
                continue
            path = self.zk_path(pm.partition)
            raw = json.dumps(data, separators=(",", ":")).encode("utf-8")
            try:
                try:
                    zk.set_async(path, raw).get(timeout=_ZK_OP_TIMEOUT_S)
                except NoNodeError:
                    zk.create_async(path, raw, makepath=True).get(timeout=_ZK_OP_TIMEOUT_S)
            except Exception as exc:  # keep it and retry at the next interval
                self._unwritten[pm.partition] = data
                self._say("zk-write", logging.WARNING, "spout %s commit %s: %s", self, path, exc)

    def _crash(self, error: str) -> None:
        """The worker dies: in-flight tuples are lost, state is re-read from ZooKeeper."""
        log.error("spout %s: %s; restarting the worker in %.1fs", self, error, self.restart_delay_s)
        self._record_error(error)
        self._restarts += 1
        self._due.clear()
        self._bolt_free = [0.0] * self.bolt_parallelism
        self._managers = None
        self._publish_stats(force=True)
        self._stop.wait(self.restart_delay_s)

    def _record_error(self, error: str) -> None:
        self._last_error = error
        self._error_time = time.time()

    def _shutdown(self) -> None:
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:  # closing on the way out must not raise
                log.debug("closing consumer failed", exc_info=True)
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception:
                log.debug("closing ZooKeeper client failed", exc_info=True)
        self._publish_stats(force=True)

    # --- stats ------------------------------------------------------------------------

    def _empty_stats(self) -> SpoutStats:
        return SpoutStats(
            running=False,
            emitted=0,
            acked=0,
            failed=0,
            pending=0,
            max_spout_pending=self.max_spout_pending,
            complete_latency_ms=0.0,
            bolt_executed=0,
            bolt_acked=0,
            bolt_failed=0,
            bolt_process_latency_ms=0.0,
            bolt_capacity=0.0,
            restarts=0,
            last_error="",
            error_time=None,
        )

    def _publish_stats(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_stats < _STATS_EVERY_S:
            return
        self._last_stats = now
        partitions = tuple(
            PartitionStats(
                partition=pm.partition,
                zk_path=self.zk_path(pm.partition),
                emitted=self._tallies[pm.partition].emitted,
                acked=self._tallies[pm.partition].acked,
                failed=self._tallies[pm.partition].failed,
                in_flight=self._tallies[pm.partition].in_flight,
                complete_latency_ms=self._tallies[pm.partition].latency(),
                manager=pm.counters(),
            )
            for pm in (self._managers or [])
        )
        uptime = time.time() - self.started_at if self.started_at else 0.0
        executed = self._bolt_executed
        stats = SpoutStats(
            running=self.running,
            emitted=self._emitted,
            acked=self._acked,
            failed=self._failed,
            pending=len(self._due),
            max_spout_pending=self.max_spout_pending,
            complete_latency_ms=self._latency_ms_sum / self._acked if self._acked else 0.0,
            bolt_executed=executed,
            bolt_acked=self._bolt_acked,
            bolt_failed=self._bolt_failed,
            bolt_process_latency_ms=self._bolt_busy_s * 1000.0 / executed if executed else 0.0,
            bolt_capacity=(
                min(1.0, self._bolt_busy_s / (uptime * self.bolt_parallelism)) if uptime else 0.0
            ),
            restarts=self._restarts,
            last_error=self._last_error,
            error_time=self._error_time,
            partitions=partitions or self._stats.partitions,
        )
        with self._stats_lock:
            self._stats = stats

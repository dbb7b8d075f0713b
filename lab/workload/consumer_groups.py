"""Kafka consumer groups made of real confluent-kafka consumers, one thread per member.

Members commit after processing (at-least-once, the common production pattern), so the
committed offsets the dashboard reads follow the processing pace that scenarios slow down or
stop. Membership is changeable at run time to cause rebalances. A group speaks either group
protocol (``GroupSpec.protocol``): the classic one, where the members assign partitions among
themselves, or KIP-848's consumer protocol, where the broker does.

The faults a scenario sets on a group (a processing delay, a hold, a poison message) live in
one ``_Faults`` object that every member reads on each turn of its loop, so members that join
later (a rebalance storm) inherit them.

**Why one module of some 600 lines**: a member's loop, the group around it and the faults
they share are one state machine; split, the faults' fields would be read across modules.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from lagwatch_client import IngestSender, StatsForwarder

from lab.workload.clients import (
    FetchWatchdog,
    base_config,
    lagging,
    leave_and_close,
    leave_group,
)
from lab.workload.member_pool import MemberPool
from lab.workload.spec import CONSUMER, GroupSpec

log = logging.getLogger(__name__)

# How long a member waits before reading a poison message again: a consumer retrying a
# record it cannot process, without spinning the machine's two cores on it.
_POISON_RETRY_S = 0.5
# A slowed member hands the turn to its other partitions after this many records of one in a
# row, and takes that one up again after the pause below (see ``_take_turns``).
_TURN_RECORDS = 20
_TURN_PAUSE_S = 0.5


@dataclass(frozen=True)
class MemberSettings:
    """Timings shared by all members; tests shorten them.

    The session and heartbeat settings apply to classic groups only: a KIP-848 group's are
    the broker's (``group.consumer.session.timeout.ms``, 10 s in the lab), and librdkafka
    refuses them in a consumer-protocol client's configuration.
    """

    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    statistics_interval_ms: int = 5000
    commit_interval_s: float = 1.0


def group_settings(spec: GroupSpec, settings: MemberSettings) -> dict[str, object]:
    """The protocol-specific part of a member's configuration.

    Kept separate and pure so the rule "a consumer-protocol client names no client-side
    assignor and no session timings" is checked without a broker.
    """
    conf: dict[str, object] = {"group.id": spec.name, "group.protocol": spec.protocol}
    if spec.protocol == CONSUMER:
        conf["group.remote.assignor"] = spec.assignor
    else:
        conf.update(
            {
                "partition.assignment.strategy": spec.assignor,
                "session.timeout.ms": settings.session_timeout_ms,
                "heartbeat.interval.ms": settings.heartbeat_interval_ms,
            }
        )
    return conf


@dataclass
class _Faults:
    """What scenarios set on a whole group; members read it on every turn of their loop.

    ``held``: the members stay in the group but fetch, process and commit nothing (the
    retention scenario keeps a committed offset below the log start this way).
    ``poison``: (partition, offset) pairs the members fail on every time they read them.
    """

    delay_ms: float = 0.0
    held: threading.Event = field(default_factory=threading.Event)
    poison: frozenset[tuple[int, int]] = frozenset()


class GroupMember:
    """One consumer in its own thread, so a processing delay slows only its partitions and
    closing it is a real leave, as when one instance of a service goes away."""

    def __init__(
        self,
        spec: GroupSpec,
        client_id: str,
        bootstrap: str,
        settings: MemberSettings,
        faults: _Faults,
        ingest: IngestSender | None,
        group_owns_partitions: Callable[[], bool] = lambda: False,
    ) -> None:
        self.spec = spec
        self.client_id = client_id
        self._bootstrap = bootstrap
        self._settings = settings
        self._faults = faults
        # The consumer's statistics to Lagwatch, with its group (lagwatch_client).
        self._forward = StatsForwarder(ingest, group=spec.name) if ingest is not None else None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._assigned: set[int] = set()
        self._needs_start_commit: set[int] = set()
        self._processed: dict[int, int] = {}  # partition -> next offset to commit
        self._committed: dict[int, int] = {}
        # Partitions this member paused -> when to resume them (0: once no longer held).
        self._paused: dict[int, float] = {}
        # Newly assigned partitions: librdkafka keeps a partition's pause across a revoke and
        # a new assignment, so each one is paused or resumed explicitly once.
        self._fresh: set[int] = set()
        self._run_of = (-1, 0)  # (partition, records of it processed in a row)
        self._holding = False
        self.consumed = 0
        self.rebalances = 0
        self.commit_failures = 0
        self.poison_failures = 0
        self.cgrp: dict[str, object] = {}
        self.started_at = time.time()
        self._group_owns_partitions = group_owns_partitions
        self._watchdog = FetchWatchdog(bootstrap)
        self._consumer: Consumer | None = None
        self._thread = threading.Thread(target=self._run, name=f"member-{client_id}", daemon=True)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def signal_stop(self) -> None:
        self._stop.set()

    def join(self, timeout_s: float = 15.0) -> None:
        self._thread.join(timeout=timeout_s)
        if self._thread.is_alive():
            log.warning("member %s did not close within %.0fs", self.client_id, timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def holding(self) -> bool:
        """True once the member has paused everything it owns because the group is held."""
        return self._holding

    def forget_hold(self) -> None:
        """The hold ended: until its loop sees so, the member must not count as holding (a
        new hold right after must wait for it again)."""
        self._holding = False

    def assignment(self) -> list[int]:
        with self._lock:
            return sorted(self._assigned)

    def status(self) -> dict[str, object]:
        return {
            "client_id": self.client_id,
            "alive": self.alive,
            "assignment": self.assignment(),
            "holding": self._holding,
            "consumed": self.consumed,
            "rebalances": self.rebalances,
            "commit_failures": self.commit_failures,
            "poison_failures": self.poison_failures,
            "watchdog_restarts": self._watchdog.restarts,
            "cgrp": self.cgrp,
        }

    # -- consumer loop -------------------------------------------------------------------
    def _config(self) -> dict[str, object]:
        conf = base_config(self._bootstrap, self.client_id)
        conf.update(group_settings(self.spec, self._settings))
        conf.update(
            {
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "statistics.interval.ms": self._settings.statistics_interval_ms,
                "stats_cb": self._on_stats,
                "on_commit": self._on_commit,
            }
        )
        return conf

    def _run(self) -> None:
        while not self._stop.is_set():
            consumer = Consumer(self._config())
            self._consumer = consumer
            stuck = False
            try:
                stuck = self._consume(consumer)
            finally:
                if not stuck:
                    # close() leaves the group at once instead of waiting for the session
                    # timeout; the revocation is served before it (``leave_and_close``).
                    leave_and_close(consumer)
            if not stuck:
                return
            # The watchdog gave up on this consumer: a new one joins as a restarted instance.
            # Unset first, so the callbacks of its leaving and its close (in another thread)
            # are ignored.
            self._consumer = None
            leave_group(consumer)
            self._watchdog.abandon(consumer, self.client_id)
            self._forget(set(self.assignment()))

    def _consume(self, consumer: Consumer) -> bool:
        """Run ``consumer`` until asked to stop (False) or until the watchdog finds it stuck
        (True: the caller abandons it and starts another)."""
        try:
            consumer.subscribe(
                [self.spec.topic],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            last_commit = time.monotonic()
            while not self._stop.is_set():
                held = self._faults.held.is_set()
                self._pause_or_resume(consumer, held)
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    self._watchdog.progress()
                    self._handle(consumer, msg.partition(), msg.offset())
                elif msg is not None:
                    log.debug("%s: %s", self.client_id, msg.error())
                if self._needs_start_commit and not held:
                    self._commit_start_positions(consumer)
                if time.monotonic() - last_commit >= self._settings.commit_interval_s:
                    self._commit(consumer, asynchronous=True)
                    last_commit = time.monotonic()
                if held or self._idle_by_design():
                    self._watchdog.progress()
                elif self._watchdog.due() and self._stuck(consumer):
                    return True
            self._commit(consumer, asynchronous=False)
        except KafkaException as exc:
            log.warning("member %s stopped on error: %s", self.client_id, exc)
        return False

    def _idle_by_design(self) -> bool:
        """No partition, but another member of the group has some (more members than
        partitions): nothing to fetch, nothing stuck."""
        with self._lock:
            if self._assigned:
                return False
        return self._group_owns_partitions()

    def _stuck(self, consumer: Consumer) -> bool:
        """Nobody in the group owns a partition, or this member owns some with records
        waiting that it has not fetched for the watchdog's span."""
        with self._lock:
            if not self._assigned:
                return True
            mine = {p: self._processed.get(p) for p in self._assigned if p not in self._paused}
        return bool(mine) and lagging(consumer, self.spec.topic, mine)

    def _pause_or_resume(self, consumer: Consumer, held: bool) -> None:
        """Held: pause whatever this member owns (new partitions too, after a rebalance).
        Not held: resume what was paused for the hold, and poisoned partitions whose retry
        is due."""
        with self._lock:
            assigned = set(self._assigned)
            fresh, self._fresh = self._fresh & assigned, set()
        try:
            if held:
                new = sorted((assigned - self._paused.keys()) | fresh)
                if new:
                    consumer.pause([TopicPartition(self.spec.topic, p) for p in new])
                    self._paused.update(dict.fromkeys(new, 0.0))
                self._holding = True
                return
            self._holding = False
            now = time.monotonic()
            due = {p for p, at in self._paused.items() if at <= now}
            todo = sorted(due | (fresh - self._paused.keys()))
            if todo:
                consumer.resume([TopicPartition(self.spec.topic, p) for p in todo])
                for p in due:
                    del self._paused[p]
        except KafkaException as exc:  # e.g. a rebalance in between: the next turn retries
            log.debug("%s: pause/resume failed: %s", self.client_id, exc)
            with self._lock:
                self._fresh |= fresh

    def _handle(self, consumer: Consumer, partition: int, offset: int) -> None:
        if self._faults.held.is_set():
            # Fetched before the pause took effect: read it again once released.
            self._rewind(consumer, partition, offset, resume_at=0.0)
            return
        if (partition, offset) in self._faults.poison:
            # A record the application cannot process: it retries it rather than skipping
            # it, so nothing of this partition past it is ever committed.
            self.poison_failures += 1
            self._rewind(consumer, partition, offset, time.monotonic() + _POISON_RETRY_S)
            return
        self._process(partition, offset)
        self._take_turns(consumer, partition, offset)

    def _take_turns(self, consumer: Consumer, partition: int, offset: int) -> None:
        """A slowed member works through its partitions in turns, a few records each.

        librdkafka hands out a fetched chunk partition by partition; after a broker restart
        one chunk is a partition's whole backlog, and at the slow-consumer scenario's pace
        the member's other partitions would commit nothing for a minute: a STALL by the rules,
        not the slow consumer the scenario means (every partition moving, falling behind).
        """
        if self._faults.delay_ms <= 0:
            return
        self._run_of = (partition, self._run_of[1] + 1 if self._run_of[0] == partition else 1)
        if self._run_of[1] < _TURN_RECORDS:
            return
        with self._lock:
            others = self._assigned - self._paused.keys() - {partition}
        if others:
            self._run_of = (-1, 0)
            self._rewind(consumer, partition, offset + 1, time.monotonic() + _TURN_PAUSE_S)

    def _rewind(self, consumer: Consumer, partition: int, offset: int, resume_at: float) -> None:
        """Pause the partition and seek back to ``offset``: its next fetch starts there."""
        tp = TopicPartition(self.spec.topic, partition, offset)
        try:
            consumer.pause([tp])
            consumer.seek(tp)
        except KafkaException as exc:  # revoked meanwhile: its next owner reads it anyway
            log.debug("%s: rewind of partition %d failed: %s", self.client_id, partition, exc)
            return
        self._paused[partition] = resume_at

    def _process(self, partition: int, offset: int) -> None:
        delay = self._faults.delay_ms / 1000.0
        if delay > 0:
            self._stop.wait(delay)
        with self._lock:
            if partition in self._assigned:
                self._processed[partition] = offset + 1
        self.consumed += 1

    def _commit(self, consumer: Consumer, asynchronous: bool, only: set[int] | None = None) -> None:
        with self._lock:
            offsets = [
                TopicPartition(self.spec.topic, p, off)
                for p, off in self._processed.items()
                if self._committed.get(p) != off and (only is None or p in only)
            ]
        if not offsets:
            return
        try:
            consumer.commit(offsets=offsets, asynchronous=asynchronous)
        except KafkaException as exc:
            self.commit_failures += 1
            # The first failure of a run of them, and every 50th after, at WARNING: a member
            # that never commits again after a broker restart (seen once, a KIP-848 member,
            # under a loaded suite) must leave its reason in the test's captured log.
            level = logging.WARNING if self.commit_failures % 50 == 1 else logging.DEBUG
            log.log(level, "%s: commit failed (%d so far): %s", self.client_id,
                    self.commit_failures, exc)  # fmt: skip
            return
        with self._lock:
            for tp in offsets:
                self._committed[tp.partition] = tp.offset

    def _commit_start_positions(self, consumer: Consumer) -> None:
        """Commit the start offset of partitions that have no commit yet.

        librdkafka commits only offsets that changed, so a member that never receives a
        message (the quiet topic) would never commit. Committing the start position once,
        as a Java consumer's auto-commit of its reset position does, gives such a group a
        commit with lag 0 that then grows old: exactly the quiet-topic case, which Lagwatch
        must judge OK, never STOP.
        """
        with self._lock:
            todo = sorted(self._needs_start_commit)
            self._needs_start_commit.clear()
        tps = [TopicPartition(self.spec.topic, p) for p in todo]
        try:
            committed = consumer.committed(tps, timeout=5)
            starts = []
            for tp in committed:
                if tp.offset < 0:
                    marks = consumer.get_watermark_offsets(tp, timeout=5)
                    if marks is None:
                        raise KafkaException(f"watermarks of partition {tp.partition} timed out")
                    starts.append(TopicPartition(tp.topic, tp.partition, marks[0]))
            if starts:
                consumer.commit(offsets=starts, asynchronous=False)
        except KafkaException as exc:
            log.debug("%s: start-position commit failed, retrying: %s", self.client_id, exc)
            with self._lock:
                self._needs_start_commit.update(p for p in todo if p in self._assigned)

    # -- callbacks (run inside poll/close on this member's thread) ------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if consumer is not self._consumer:
            return  # an abandoned consumer closing in the background
        # Incremental with cooperative-sticky and with the consumer protocol (only the added
        # partitions), the whole assignment with the eager classic assignors: a union fits both.
        with self._lock:
            added = {tp.partition for tp in partitions}
            self._assigned |= added
            self._needs_start_commit |= added
            self._fresh |= added
        self.rebalances += 1
        log.info("%s assigned %s", self.client_id, sorted(p.partition for p in partitions))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if consumer is not self._consumer:
            return
        revoked = {tp.partition for tp in partitions}
        # Commit what was processed before the partitions move, as a careful consumer does.
        self._commit(consumer, asynchronous=False, only=revoked)
        self._forget(revoked)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if consumer is not self._consumer:
            return
        log.info("%s lost %s", self.client_id, sorted(tp.partition for tp in partitions))
        self._forget({tp.partition for tp in partitions})

    def _forget(self, partitions: set[int]) -> None:
        with self._lock:
            self._assigned -= partitions
            self._needs_start_commit -= partitions
            for p in partitions:
                self._processed.pop(p, None)
                self._committed.pop(p, None)
        for p in partitions:
            self._paused.pop(p, None)
            self._fresh.discard(p)

    def _on_commit(self, err: KafkaError | None, _partitions: list[TopicPartition]) -> None:
        if err is not None and err.code() != KafkaError._NO_OFFSET:
            self.commit_failures += 1
            log.debug("%s: async commit failed: %s", self.client_id, err)

    def _on_stats(self, stats_json: str) -> None:
        if self._forward is not None:
            self._forward(stats_json)
        try:
            self.cgrp = json.loads(stats_json).get("cgrp", {})
        except ValueError:
            self.cgrp = {}


class ConsumerGroup(MemberPool[GroupMember]):
    """A group's members plus the knobs scenarios turn: processing delay, member count, a
    hold and poison messages."""

    def __init__(
        self,
        spec: GroupSpec,
        bootstrap: str,
        settings: MemberSettings | None = None,
        ingest: IngestSender | None = None,
    ) -> None:
        super().__init__(spec, _Faults(delay_ms=spec.delay_ms))
        self._bootstrap = bootstrap
        self._settings = settings or MemberSettings()
        self._ingest = ingest

    @property
    def held(self) -> bool:
        return self._faults.held.is_set()

    def hold(self, timeout_s: float = 30.0) -> bool:
        """Stop fetching, processing and committing, members staying in the group. Returns
        once every member has paused what it owns (True), or at the deadline (False): from
        then on no commit of the group goes past the log end as it is now."""
        self._faults.held.set()
        deadline = time.monotonic() + timeout_s
        while not all(m.holding or not m.alive for m in self.members()):
            if time.monotonic() > deadline:
                log.warning("%s: not every member paused within %.0fs", self.name, timeout_s)
                return False
            time.sleep(0.05)
        return True

    def release(self) -> None:
        """Resume where each member stood; an offset retention removed meanwhile is out of
        range and resets to the log start (``auto.offset.reset=earliest``)."""
        self._faults.held.clear()
        for member in self.members():
            member.forget_hold()

    def set_poison(self, partition: int, offset: int) -> None:
        self._faults.poison = self._faults.poison | {(partition, offset)}

    def _new_member(self, client_id: str) -> GroupMember:
        return GroupMember(
            self.spec, client_id, self._bootstrap, self._settings, self._faults, self._ingest,
            self._owns_partitions,
        )  # fmt: skip

    def _owns_partitions(self) -> bool:
        return any(m.assignment() for m in self.members())

    def status(self) -> dict[str, object]:
        return {
            "topic": self.spec.topic,
            "protocol": self.spec.protocol,
            "assignor": self.spec.assignor,
            "delay_ms": self.delay_ms,
            "held": self.held,
            "poison": sorted(self._faults.poison),
            "member_changes": self.member_changes,
            "members": [m.status() for m in self.members()],
        }

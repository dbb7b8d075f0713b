"""Kafka consumer groups made of real confluent-kafka consumers, one thread per member.

Members commit after processing (at-least-once, the common production pattern), so the
committed offsets the dashboard reads follow the processing pace that scenarios slow down or
stop. Membership is changeable at run time to cause rebalances.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from lab.workload.clients import base_config
from lab.workload.spec import GroupSpec

log = logging.getLogger(__name__)


class StatsSink(Protocol):
    """Takes a librdkafka statistics document, and the group of the consumer that wrote it
    (librdkafka's document does not name it). Must not block: it runs inside poll()."""

    def __call__(self, stats_json: str, group: str | None = None) -> None: ...


@dataclass(frozen=True)
class MemberSettings:
    """Timings shared by all members; tests shorten them."""

    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    statistics_interval_ms: int = 5000
    commit_interval_s: float = 1.0


class GroupMember:
    """One consumer in its own thread, so a processing delay slows only its partitions and
    closing it is a real LeaveGroup, as when one instance of a service goes away."""

    def __init__(
        self,
        spec: GroupSpec,
        client_id: str,
        bootstrap: str,
        settings: MemberSettings,
        delay_s: Callable[[], float],
        stats_sink: StatsSink | None,
    ) -> None:
        self.spec = spec
        self.client_id = client_id
        self._bootstrap = bootstrap
        self._settings = settings
        self._delay_s = delay_s
        self._stats_sink = stats_sink
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._assigned: set[int] = set()
        self._needs_start_commit: set[int] = set()
        self._processed: dict[int, int] = {}  # partition -> next offset to commit
        self._committed: dict[int, int] = {}
        self.consumed = 0
        self.rebalances = 0
        self.commit_failures = 0
        self.cgrp: dict[str, object] = {}
        self.started_at = time.time()
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

    def assignment(self) -> list[int]:
        with self._lock:
            return sorted(self._assigned)

    def status(self) -> dict[str, object]:
        return {
            "client_id": self.client_id,
            "alive": self.alive,
            "assignment": self.assignment(),
            "consumed": self.consumed,
            "rebalances": self.rebalances,
            "commit_failures": self.commit_failures,
            "cgrp": self.cgrp,
        }

    # -- consumer loop -------------------------------------------------------------------
    def _config(self) -> dict[str, object]:
        s = self._settings
        conf = base_config(self._bootstrap, self.client_id)
        conf.update(
            {
                "group.id": self.spec.name,
                "partition.assignment.strategy": self.spec.assignor,
                "session.timeout.ms": s.session_timeout_ms,
                "heartbeat.interval.ms": s.heartbeat_interval_ms,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "statistics.interval.ms": s.statistics_interval_ms,
                "stats_cb": self._on_stats,
                "on_commit": self._on_commit,
            }
        )
        return conf

    def _run(self) -> None:
        consumer = Consumer(self._config())
        try:
            consumer.subscribe(
                [self.spec.topic],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            last_commit = time.monotonic()
            while not self._stop.is_set():
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    self._process(msg.partition(), msg.offset())
                elif msg is not None:
                    log.debug("%s: %s", self.client_id, msg.error())
                if self._needs_start_commit:
                    self._commit_start_positions(consumer)
                if time.monotonic() - last_commit >= self._settings.commit_interval_s:
                    self._commit(consumer, asynchronous=True)
                    last_commit = time.monotonic()
            self._commit(consumer, asynchronous=False)
        except KafkaException as exc:
            log.warning("member %s stopped on error: %s", self.client_id, exc)
        finally:
            # close() leaves the group at once instead of waiting for the session timeout.
            consumer.close()

    def _process(self, partition: int, offset: int) -> None:
        delay = self._delay_s()
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
            log.debug("%s: commit failed: %s", self.client_id, exc)
            return
        with self._lock:
            for tp in offsets:
                self._committed[tp.partition] = tp.offset

    def _commit_start_positions(self, consumer: Consumer) -> None:
        """Commit the start offset of partitions that have no commit yet.

        librdkafka commits only offsets that changed, so a member of a group that has never
        received a message (the quiet topic) would never commit and the broker would never
        list its group. Committing the start position once makes such a group visible with
        lag 0 and a last commit that then grows old, which is exactly the quiet-topic case.
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
                    low, _high = consumer.get_watermark_offsets(tp, timeout=5)
                    starts.append(TopicPartition(tp.topic, tp.partition, low))
            if starts:
                consumer.commit(offsets=starts, asynchronous=False)
        except KafkaException as exc:
            log.debug("%s: start-position commit failed, retrying: %s", self.client_id, exc)
            with self._lock:
                self._needs_start_commit.update(p for p in todo if p in self._assigned)

    # -- callbacks (run inside poll/close on this member's thread) ------------------------
    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            added = {tp.partition for tp in partitions}
            self._assigned |= added
            self._needs_start_commit |= added
        self.rebalances += 1
        log.info("%s assigned %s", self.client_id, sorted(p.partition for p in partitions))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = {tp.partition for tp in partitions}
        # Commit what was processed before the partitions move, as a careful consumer does.
        self._commit(consumer, asynchronous=False, only=revoked)
        self._forget(revoked)

    def _on_lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._forget({tp.partition for tp in partitions})

    def _forget(self, partitions: set[int]) -> None:
        with self._lock:
            self._assigned -= partitions
            self._needs_start_commit -= partitions
            for p in partitions:
                self._processed.pop(p, None)
                self._committed.pop(p, None)

    def _on_commit(self, err: KafkaError | None, _partitions: list[TopicPartition]) -> None:
        if err is not None and err.code() != KafkaError._NO_OFFSET:
            self.commit_failures += 1
            log.debug("%s: async commit failed: %s", self.client_id, err)

    def _on_stats(self, stats_json: str) -> None:
        if self._stats_sink is not None:
            self._stats_sink(stats_json, self.spec.name)
        try:
            self.cgrp = json.loads(stats_json).get("cgrp", {})
        except ValueError:
            self.cgrp = {}


class ConsumerGroup:
    """A group's members plus the knobs scenarios turn: processing delay and member count."""

    def __init__(
        self,
        spec: GroupSpec,
        bootstrap: str,
        settings: MemberSettings | None = None,
        stats_sink: StatsSink | None = None,
        partitions: int | None = None,
    ) -> None:
        self.spec = spec
        self._partitions = partitions
        self._bootstrap = bootstrap
        self._settings = settings or MemberSettings()
        self._stats_sink = stats_sink
        self._lock = threading.Lock()
        self._members: list[GroupMember] = []
        self._next_index = 0
        self.delay_ms = spec.delay_ms
        self.member_changes = 0

    @property
    def name(self) -> str:
        return self.spec.name

    def start(self) -> None:
        self.set_members(self.spec.members)

    def stop(self) -> None:
        self.set_members(0)

    def set_delay_ms(self, delay_ms: float) -> float:
        """Set the per-message processing delay; return the previous value."""
        if delay_ms < 0:
            raise ValueError("delay_ms must be >= 0")
        previous, self.delay_ms = self.delay_ms, delay_ms
        return previous

    def add_member(self) -> str:
        with self._lock:
            self._next_index += 1
            member = GroupMember(
                self.spec,
                f"{self.spec.name}-{self._next_index}",
                self._bootstrap,
                self._settings,
                lambda: self.delay_ms / 1000.0,
                self._stats_sink,
            )
            self._members.append(member)
            self.member_changes += 1
        member.start()
        return member.client_id

    def remove_member(self) -> str | None:
        """Close the newest member (it leaves the group); return its client id."""
        with self._lock:
            if not self._members:
                return None
            member = self._members.pop()
            self.member_changes += 1
        _close([member])
        return member.client_id

    def set_members(self, count: int) -> None:
        """Grow or shrink to `count` members; members leaving close in parallel."""
        if count < 0:
            raise ValueError("count must be >= 0")
        with self._lock:
            leaving = self._members[count:]
            del self._members[count:]
            missing = count - len(self._members)
            self.member_changes += len(leaving)
        if count == 0 and len(leaving) > 1:
            self._close_all(leaving)
        else:
            _close(leaving)
        for _ in range(missing):
            self.add_member()

    def _close_all(self, members: list[GroupMember]) -> None:
        """Empty the group in two steps: all but one, a rebalance, then the last one.

        Lab workaround (Tansu, not Kafka): when every member leaves at once, Tansu may keep a
        departed member as the group's leader, and members joining later wait forever for
        that leader's SyncGroup. Letting one survivor take over everything first makes it
        the leader of a fresh generation, and its leaving then really empties the group.
        """
        last, others = members[0], members[1:]
        before = last.rebalances

        def taken_over() -> bool:
            if self._partitions is not None:
                return len(last.assignment()) == self._partitions
            return last.rebalances > before

        _close(others)
        deadline = time.monotonic() + 15
        while before and last.alive and not taken_over():
            if time.monotonic() > deadline:
                log.warning("%s: no rebalance after members left; closing anyway", self.name)
                break
            time.sleep(0.1)
        _close([last])

    def member_count(self) -> int:
        with self._lock:
            return len(self._members)

    def members(self) -> list[GroupMember]:
        with self._lock:
            return list(self._members)

    def status(self) -> dict[str, object]:
        return {
            "topic": self.spec.topic,
            "assignor": self.spec.assignor,
            "delay_ms": self.delay_ms,
            "member_changes": self.member_changes,
            "members": [m.status() for m in self.members()],
        }


def _close(members: list[GroupMember]) -> None:
    for member in members:
        member.signal_stop()
    for member in members:
        member.join()

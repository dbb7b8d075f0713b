"""Kafka share groups (KIP-932, queues) made of real share consumers, one thread per member.

Each member is confluent-kafka's preview ``ShareConsumer`` in explicit acknowledgement mode:
it acknowledges every record itself, ACCEPT once processed, so the start offset Lagwatch
reads follows the processing pace the scenarios change, and a poison record can be RELEASEd
(delivered again, until the group's delivery count limit archives it) or REJECTed (archived
at once), as an application that cannot process it would.

A share group starts at the log end unless its group config says ``earliest``; the group sets
that before its first member joins, so what was produced before it came is read too.

The faults (a processing delay, a poison record) live in one ``ShareFaults`` object that every
member reads on each record, so members that join later inherit them. The pool of members is
``consumer_groups.py``'s too (``member_pool.MemberPool``: ``set_members``, ``set_delay_ms``,
``clear_poison``…), so the same scenarios drive both kinds of group.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from lab.workload.clients import base_config
from lab.workload.member_pool import MemberPool
from lab.workload.spec import ShareGroupSpec

log = logging.getLogger(__name__)

RELEASE = "release"
REJECT = "reject"
ACKS = {RELEASE: AcknowledgeType.RELEASE, REJECT: AcknowledgeType.REJECT}


@dataclass(frozen=True)
class ShareSettings:
    """Timings shared by all members; tests shorten them.

    ``max_poll_records`` keeps a batch small: every record of a batch is locked for the
    group's ``share.record.lock.duration.ms`` (30 s) from its fetch, and a slowed member must
    finish its batch well within that, or the broker takes the records back and counts a
    delivery."""

    max_poll_records: int = 10
    poll_timeout_s: float = 0.5


@dataclass
class ShareFaults:
    """What scenarios set on a whole share group; members read it on every record.

    ``poison``: (partition, offset) pairs the members fail on every delivery: they work on
    the record ``poison_hold_s`` (its fetch lock must outlast that), then acknowledge it with
    ``poison_ack`` (RELEASE: delivered again; REJECT: archived)."""

    delay_ms: float = 0.0
    poison: frozenset[tuple[int, int]] = frozenset()
    poison_ack: str = RELEASE
    poison_hold_s: float = 0.0


def set_group_config(admin: AdminClient, group: str, name: str, value: str) -> None:
    """One of a group's configs (IncrementalAlterConfigs on the GROUP resource)."""
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET),
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(15)


class ShareMember:
    """One share consumer in its own thread: closing it is a real leave."""

    def __init__(
        self,
        spec: ShareGroupSpec,
        client_id: str,
        bootstrap: str,
        settings: ShareSettings,
        faults: ShareFaults,
    ) -> None:
        self.spec = spec
        self.client_id = client_id
        self._bootstrap = bootstrap
        self._settings = settings
        self._faults = faults
        self._stop = threading.Event()
        self.consumed = 0
        self.poison_deliveries = 0
        self.errors = 0
        self.partitions: set[int] = set()
        self._thread = threading.Thread(target=self._run, name=f"share-{client_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def signal_stop(self) -> None:
        self._stop.set()

    def join(self, timeout_s: float = 30.0) -> None:
        self._thread.join(timeout=timeout_s)
        if self._thread.is_alive():
            log.warning("share member %s did not close within %.0fs", self.client_id, timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def status(self) -> dict[str, object]:
        return {
            "client_id": self.client_id,
            "alive": self.alive,
            "consumed": self.consumed,
            "partitions": sorted(self.partitions),
            "poison_deliveries": self.poison_deliveries,
            "errors": self.errors,
        }

    def _config(self) -> dict[str, object]:
        conf = base_config(self._bootstrap, self.client_id)
        # Refused by the preview share consumer (librdkafka 2.16): it never creates a topic.
        del conf["allow.auto.create.topics"]
        conf.update(
            {
                "group.id": self.spec.name,
                "share.acknowledgement.mode": "explicit",
                "max.poll.records": self._settings.max_poll_records,
            }
        )
        return conf

    def _run(self) -> None:
        consumer = ShareConsumer(self._config())
        try:
            consumer.subscribe([self.spec.topic])
            while not self._stop.is_set():
                try:
                    batch = consumer.poll(self._settings.poll_timeout_s)
                except KafkaException as exc:  # the broker going away: librdkafka reconnects
                    self.errors += 1
                    log.debug("share member %s: poll: %s", self.client_id, exc)
                    self._stop.wait(1.0)
                    continue
                for message in batch:
                    if message.error() is None:
                        self._process(consumer, message)
                    else:
                        self.errors += 1
                if batch:
                    consumer.commit_async()
        finally:
            try:
                consumer.close()  # sends what is acknowledged and leaves the group
            except KafkaException as exc:
                log.warning("share member %s: close: %s", self.client_id, exc)

    def _process(self, consumer: ShareConsumer, message: object) -> None:
        faults = self._faults
        partition, offset = message.partition(), message.offset()  # type: ignore[attr-defined]
        self.partitions.add(partition)
        if (partition, offset) in faults.poison:
            self.poison_deliveries += 1
            consumer.commit_async()  # what this batch accepted so far is not held with it
            self._stop.wait(faults.poison_hold_s)  # working on it, failing
            consumer.acknowledge(message, ACKS[faults.poison_ack])
            return
        if faults.delay_ms:
            self._stop.wait(faults.delay_ms / 1000.0)
        consumer.acknowledge(message)  # ACCEPT
        self.consumed += 1


class ShareGroup(MemberPool[ShareMember]):
    """A share group of ``spec.members`` members, grown, shrunk and faulted at run time."""

    def __init__(
        self, spec: ShareGroupSpec, bootstrap: str, settings: ShareSettings | None = None
    ) -> None:
        super().__init__(spec, ShareFaults(delay_ms=spec.delay_ms))
        self._bootstrap = bootstrap
        self._settings = settings or ShareSettings()

    def start(self) -> None:
        self.set_config("share.auto.offset.reset", "earliest")
        super().start()

    def set_config(self, name: str, value: str) -> None:
        admin = AdminClient({"bootstrap.servers": self._bootstrap})
        set_group_config(admin, self.name, name, value)

    def set_poison(
        self, partition: int, offset: int, ack: str = RELEASE, hold_s: float = 0.0
    ) -> None:
        if ack not in ACKS:
            raise ValueError(f"ack must be one of {tuple(ACKS)}, not {ack!r}")
        self._faults.poison_ack, self._faults.poison_hold_s = ack, hold_s
        self._faults.poison = self._faults.poison | {(partition, offset)}

    def _new_member(self, client_id: str) -> ShareMember:
        return ShareMember(self.spec, client_id, self._bootstrap, self._settings, self._faults)

    def consumed(self) -> int:
        return sum(m.consumed for m in self.members())

    def poison_deliveries(self) -> int:
        return sum(m.poison_deliveries for m in self.members())

    def status(self) -> dict[str, object]:
        return {
            "topic": self.spec.topic,
            "type": "share",
            "delay_ms": self.delay_ms,
            "poison": sorted(self._faults.poison),
            "poison_ack": self._faults.poison_ack,
            "member_changes": self.member_changes,
            "members": [m.status() for m in self.members()],
        }

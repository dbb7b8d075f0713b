"""The secured lab broker (lab/secured_kafka.py) for the tests marked ``secured``, and the
groups they read through it: a classic group and a KIP-848 group with live members, and a
group of commits only (an Empty classic group, with lag), made by the lab's own clients over
the broker's PLAINTEXT listener (a super user) with the real-broker tests' helpers.

Members are kept in their groups by a thread that polls them (they consume every record and
commit it), so each listener's source reads the same settled groups.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from collectors.kafka import KafkaSource
from collectors.records import CollectionResult
from lab.secured_kafka import admin_bootstrap, client_config
from lab.services import Context
from lab.stack import Stack
from lab.workload.clients import leave_and_close
from tests.collectors.test_kafka_source import (
    _member,
    _settled,
    alter_offsets,
    create_topic,
    group_of,
    produce,
)
from tests.waiting import wait_for

PARTITIONS = 4
PRODUCED = {0: 5, 1: 3, 2: 0, 3: 7}
HELD = {0: 2, 1: 3, 3: 1}  # the commits-only group's offsets: lag 3, 0, -, 6


def context_of(stack: Stack) -> Context:
    return stack._context(stack._read_state())


@dataclass
class Groups:
    topic: str
    classic: str
    kip848: str
    held: str
    members: list[Consumer] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _poller: threading.Thread | None = None

    @property
    def names(self) -> tuple[str, str, str]:
        return (self.classic, self.kip848, self.held)

    def start_polling(self) -> None:
        def poll() -> None:
            while not self._stop.is_set():
                for member in self.members:
                    message = member.poll(0.05)
                    if message is not None and message.error() is None:
                        member.commit(message=message, asynchronous=True)

        self._poller = threading.Thread(target=poll, name="secured-members", daemon=True)
        self._poller.start()

    def close(self) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(10)
        for member in self.members:
            leave_and_close(member)


def make_groups(ctx: Context, admin: AdminClient) -> Groups:
    """The three groups, settled: every member Stable with its whole assignment, and every
    record consumed and committed."""
    bootstrap = admin_bootstrap(ctx)
    stem = f"sec-{uuid.uuid4().hex[:8]}"
    topic = create_topic(admin, PARTITIONS)
    produce(bootstrap, topic, PRODUCED)
    groups = Groups(topic, f"{stem}-classic", f"{stem}-kip848", f"{stem}-held")
    alter_offsets(admin, groups.held, {(topic, p): o for p, o in HELD.items()})
    for group, protocol, clients in (
        (groups.classic, "classic", 1),
        (groups.kip848, "consumer", 2),
    ):
        for i in range(clients):
            member = _member(bootstrap, group, protocol, f"{protocol}-{i}")
            member.subscribe([topic])
            groups.members.append(member)
    groups.start_polling()
    try:
        source = KafkaSource(bootstrap, timeout_s=10)
        try:
            for group, members in ((groups.classic, 1), (groups.kip848, 2)):
                wait_for(_settled(source, group, members, PARTITIONS), 90, f"{group} settled")
            consumed = {p: n for p, n in PRODUCED.items() if n}

            def committed() -> bool:
                result = source.collect(now())
                return all(
                    {(c.partition): c.offset for c in result.commits if c.group == g} == consumed
                    for g in (groups.classic, groups.kip848)
                )

            wait_for(committed, 60, "every record consumed and committed")
        finally:
            source.close()
    except BaseException:
        groups.close()
        raise
    return groups


def now() -> int:
    import time

    return int(time.time() * 1000)


def figures(result: CollectionResult, groups: Groups) -> dict[str, Any]:
    """What the product read about the world's groups: members, generations and epochs,
    committed offsets (with a commit time each), log offsets, lag."""
    out: dict[str, Any] = {}
    latest = {o.partition: o.latest for o in result.offsets if o.topic == groups.topic}
    out["log"] = {
        o.partition: (o.earliest, o.latest) for o in result.offsets if o.topic == groups.topic
    }
    for name in groups.names:
        snapshot = group_of(result, name)
        assert snapshot is not None, f"{name} not collected"
        commits = {c.partition: c.offset for c in result.commits if c.group == name}
        out[name] = {
            "state": snapshot.state,
            "type": snapshot.protocol_type,
            "generation": snapshot.generation,
            "assignment_epoch": snapshot.assignment_epoch,
            "members": sorted(
                (m.client_id, m.member_epoch, tuple(sorted(m.assignment))) for m in snapshot.members
            ),
            "commits": commits,
            "lag": {p: latest[p] - o for p, o in commits.items()},
            "commit_times_known": all(
                c.commit_time_ms is not None for c in result.commits if c.group == name
            ),
        }
    return out


def monitor_source(ctx: Context, listener: str, mechanism: str | None = None) -> KafkaSource:
    config = client_config(ctx, listener, mechanism)
    return KafkaSource(config.pop("bootstrap.servers"), config, timeout_s=10)

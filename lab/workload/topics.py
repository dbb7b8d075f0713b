"""Topic administration against the broker, idempotent so it can be re-run at any time.

The lab broker creates no topic by itself (``auto.create.topics.enable=false``): every topic
is created here, with the partition count the world declares. Kafka keeps topics, records and
committed offsets across a restart, so `ensure` has nothing to do after a broker outage; it
only puts back a topic that is really missing (deleted by hand, or a broker started afresh).

The admin client is recreated once its calls have failed for ``RECREATE_AFTER_S``: after a
broker restart a librdkafka client sometimes never answers again (docs/LAB.md, "Findings"),
and the lab's own watermarks are what the scenarios and the tests wait on.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import ParamSpec, TypeVar

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from lab.workload.clients import base_config
from lab.workload.spec import TopicSpec

log = logging.getLogger(__name__)

RECREATE_AFTER_S = 15.0
# How long a broker may take to describe a topic setting the controller has committed.
_CONFIG_SEEN_WITHIN_S = 30  # a change the controller committed, seen by the broker
P = ParamSpec("P")
R = TypeVar("R")


def _recovering(method: Callable[P, R]) -> Callable[P, R]:
    """The call, with its outcome counted toward recreating the client (module docstring)."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        admin: TopicAdmin = args[0]  # type: ignore[assignment]
        try:
            result = method(*args, **kwargs)
        except KafkaException:
            admin._failed()
            raise
        admin._failing_since = None
        return result

    return call


def _is_retention(described: tuple[int, bool], value: int | None) -> bool:
    """``described`` (retention.ms, is default) is ``value`` (None: the broker's default)."""
    ms, default = described
    return default if value is None else (ms == value and not default)


class TopicAdmin:
    def __init__(self, bootstrap: str, timeout_s: float = 5.0) -> None:
        self._config = base_config(bootstrap, "lab-workload-admin")
        self._admin = AdminClient(self._config)
        self._timeout_s = timeout_s
        self._failing_since: float | None = None
        self._lock = threading.Lock()

    def _failed(self) -> None:
        with self._lock:
            now = time.monotonic()
            if self._failing_since is None:
                self._failing_since = now
            elif now - self._failing_since >= RECREATE_AFTER_S:
                log.warning(
                    "admin calls failing for %.0fs: recreating the lab's admin client "
                    "(lab watchdog, docs/LAB.md)", now - self._failing_since,
                )  # fmt: skip
                self._admin = AdminClient(self._config)
                self._failing_since = now

    @_recovering
    def existing(self) -> dict[str, int]:
        """Topic name -> partition count, as the broker reports them now."""
        md = self._admin.list_topics(timeout=self._timeout_s)
        return {
            name: len(t.partitions)
            for name, t in md.topics.items()
            if t.error is None and not name.startswith("__")
        }

    @_recovering
    def ensure(self, specs: Iterable[TopicSpec]) -> list[str]:
        """Create the topics that are missing, each with its declared partition count; return
        the names created."""
        have = self.existing()
        missing = [s for s in specs if s.name not in have]
        if not missing:
            return []
        futures = self._admin.create_topics(
            [NewTopic(s.name, s.partitions, 1) for s in missing],
            operation_timeout=self._timeout_s,
            request_timeout=self._timeout_s,
        )
        created = []
        for name, fut in futures.items():
            try:
                fut.result()
                created.append(name)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
        if created:
            self._await_listed({s.name: s.partitions for s in missing if s.name in created})
            log.info("created topics %s", ", ".join(sorted(created)))
        return created

    def _await_listed(self, wanted: Mapping[str, int]) -> None:
        """Until the broker's metadata lists each topic with its partitions: CreateTopics is
        answered by the controller once committed, and the broker's metadata follows (a test
        that listed the topics at once, beside three lab stacks, did not find its new one)."""
        deadline = time.monotonic() + _CONFIG_SEEN_WITHIN_S
        while any((have := self.existing()).get(name) != n for name, n in wanted.items()):
            if time.monotonic() > deadline:
                late = sorted(name for name, n in wanted.items() if have.get(name) != n)
                raise RuntimeError(
                    f"topics {late} created but not listed {_CONFIG_SEEN_WITHIN_S} s after"
                )
            time.sleep(0.2)

    @_recovering
    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        """Delete every record below ``before[p]`` of each partition p (DeleteRecords), as
        retention would; return each partition's new log start offset."""
        futures = self._admin.delete_records(
            [TopicPartition(topic, p, offset) for p, offset in sorted(before.items())],
            request_timeout=self._timeout_s,
            operation_timeout=self._timeout_s,
        )
        starts = {tp.partition: fut.result().low_watermark for tp, fut in futures.items()}
        log.info("deleted records of %s: log start now %s", topic, starts)
        return starts

    @_recovering
    def retention_ms(self, topic: str) -> tuple[int, bool]:
        """The topic's ``retention.ms`` and whether it is the broker's default (DescribeConfigs)."""
        resource = ConfigResource(ResourceType.TOPIC, topic)
        entries = self._admin.describe_configs([resource], request_timeout=self._timeout_s)[
            resource
        ].result()
        entry = entries["retention.ms"]
        return int(entry.value), bool(entry.is_default)

    @_recovering
    def set_retention_ms(self, topic: str, value: int | None) -> None:
        """Set the topic's ``retention.ms`` (IncrementalAlterConfigs); None: back to the
        broker's default. Returns once the broker describes the new value: the controller
        answers the change when it has committed it, and the broker's DescribeConfigs may
        still show the old one for a moment (a scenario test read it back at once and saw the
        old retention)."""
        op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
        entry = ConfigEntry("retention.ms", None if value is None else str(value),
                            incremental_operation=op)  # fmt: skip
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        self._admin.incremental_alter_configs([resource], request_timeout=self._timeout_s)[
            resource
        ].result()
        deadline = time.monotonic() + _CONFIG_SEEN_WITHIN_S
        while not _is_retention(seen := self.retention_ms(topic), value):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"retention.ms of {topic} still described as {seen} "
                    f"{_CONFIG_SEEN_WITHIN_S} s after it was set to {value}"
                )
            time.sleep(0.2)
        log.info("retention.ms of %s: %s", topic, "default" if value is None else value)

    @_recovering
    def watermarks(self, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
        """Partition -> (earliest, latest) offsets, in two batched ListOffsets calls."""
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        low = self._admin.list_offsets(
            {tp: OffsetSpec.earliest() for tp in tps}, request_timeout=self._timeout_s
        )
        high = self._admin.list_offsets(
            {tp: OffsetSpec.latest() for tp in tps}, request_timeout=self._timeout_s
        )
        return {tp.partition: (low[tp].result().offset, high[tp].result().offset) for tp in tps}

    def high_watermarks(self, topic: str, partitions: int) -> dict[int, int]:
        return {p: hi for p, (_lo, hi) in self.watermarks(topic, partitions).items()}

"""Topic administration against the broker, idempotent so it can be re-run at any time.

The lab broker creates no topic by itself (``auto.create.topics.enable=false``): every topic
is created here, with the partition count the world declares. Kafka keeps topics, records and
committed offsets across a restart, so `ensure` has nothing to do after a broker outage; it
only puts back a topic that is really missing (deleted by hand, or a broker started afresh).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

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


class TopicAdmin:
    def __init__(self, bootstrap: str, timeout_s: float = 5.0) -> None:
        self._admin = AdminClient(base_config(bootstrap, "lab-workload-admin"))
        self._timeout_s = timeout_s

    def existing(self) -> dict[str, int]:
        """Topic name -> partition count, as the broker reports them now."""
        md = self._admin.list_topics(timeout=self._timeout_s)
        return {
            name: len(t.partitions)
            for name, t in md.topics.items()
            if t.error is None and not name.startswith("__")
        }

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
            log.info("created topics %s", ", ".join(sorted(created)))
        return created

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

    def retention_ms(self, topic: str) -> tuple[int, bool]:
        """The topic's ``retention.ms`` and whether it is the broker's default (DescribeConfigs)."""
        resource = ConfigResource(ResourceType.TOPIC, topic)
        entries = self._admin.describe_configs([resource], request_timeout=self._timeout_s)[
            resource
        ].result()
        entry = entries["retention.ms"]
        return int(entry.value), bool(entry.is_default)

    def set_retention_ms(self, topic: str, value: int | None) -> None:
        """Set the topic's ``retention.ms`` (IncrementalAlterConfigs); None: back to the
        broker's default."""
        op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
        entry = ConfigEntry("retention.ms", None if value is None else str(value),
                            incremental_operation=op)  # fmt: skip
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        self._admin.incremental_alter_configs([resource], request_timeout=self._timeout_s)[
            resource
        ].result()
        log.info("retention.ms of %s: %s", topic, "default" if value is None else value)

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

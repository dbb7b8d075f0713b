"""The records Kafka's share coordinator wrote to ``__share_group_state``, read and decoded
apart from the product's reader: what the share-group lab tests compare the product's figures
and diagnoses with."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from collectors.share_state import ShareStateRecord, decode_share_state

STATE_TOPIC = "__share_group_state"


def state_records(bootstrap: str, group: str) -> list[ShareStateRecord]:
    """Every record of ``__share_group_state`` about ``group``'s partition 0, read from the
    start by a consumer of no group (as the ``__consumer_offsets`` reader reads)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"state-reader-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        meta = consumer.list_topics(STATE_TOPIC, timeout=10).topics[STATE_TOPIC]
        consumer.assign([TopicPartition(STATE_TOPIC, p, OFFSET_BEGINNING) for p in meta.partitions])
        ends = {p: consumer.get_watermark_offsets(TopicPartition(STATE_TOPIC, p), timeout=10)[1]
                for p in meta.partitions}  # fmt: skip
        found: list[ShareStateRecord] = []
        done = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + 30
        while len(done) < len(ends) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            if message.offset() + 1 >= ends[message.partition()]:
                done.add(message.partition())
            record = decode_share_state(message.key(), message.value())
            if record.group == group and record.partition == 0:
                found.append(record)
        return found
    finally:
        consumer.close()

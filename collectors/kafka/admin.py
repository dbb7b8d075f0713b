"""The cycle's requests through confluent-kafka's AdminClient: ListGroups, topic metadata,
ListOffsets.

These stay on librdkafka because it asks them of any broker, not of a group's coordinator:
the coordinator-targeted calls are the ones librdkafka 2.16 can crash the process over, and
they all go through ``collectors.kafka_wire`` (``wire_groups``), whatever the security.
Every call is issued with all its batches in flight at once, bounded by the cycle's budget.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from collectors.kafka.cycle import Cycle, describe_exc, is_transient
from collectors.kafka.to_records import state_name, type_name
from collectors.records import PartitionOffsets

__all__ = [
    "listed_groups",
    "log_offsets",
    "topic_partitions",
]

_RELIST_PAUSE_S = 0.25


def listed_groups(
    future: Future, cycle: Cycle, admin: AdminClient | None = None
) -> dict[str, tuple[str | None, str | None]] | None:
    """Group id -> (state, type) as ListGroups gave them; None when the listing failed.

    A coordinator still loading ``__consumer_offsets`` (the first seconds after a broker
    starts or takes over a partition) answers COORDINATOR_LOAD_IN_PROGRESS for its
    groups: the listing is asked again within the cycle's budget, because a group missing
    from one cycle would read as a gap in its history, not as what it is.
    """
    while True:
        cycle.gather([future])
        if not future.done():
            cycle.error("groups", "ListGroups timed out")
            return None
        exc = future.exception()
        answer = None if exc is not None else future.result()
        transient = (
            is_transient(exc)
            if exc is not None
            else any(is_transient(e) for e in answer.errors or [])
        )
        if not (transient and admin is not None and cycle.remaining() > 2 * _RELIST_PAUSE_S):
            break
        time.sleep(_RELIST_PAUSE_S)
        future = admin.list_consumer_groups(request_timeout=cycle.remaining())
    if exc is not None:
        cycle.error("groups", f"ListGroups: {describe_exc(exc)}")
        return None
    for err in answer.errors or []:
        # Partial: some broker did not answer; the groups it coordinates are missing.
        cycle.error("groups", f"ListGroups: {describe_exc(err)}")
    return {
        g.group_id: (
            state_name(getattr(g, "state", None)),
            type_name(getattr(g, "type", None)),
        )
        for g in answer.valid or []
    }


def topic_partitions(
    metadata: Any, cycle: Cycle, only: set[str] | None = None
) -> dict[str, list[int]]:
    """Each topic's partitions from a metadata answer (of ``only``, if given); a topic with
    an error is left out, and said so."""
    partitions_of: dict[str, list[int]] = {}
    for name, topic in metadata.topics.items():
        if only is not None and name not in only:
            continue
        if topic.error is not None and topic.error.code() != KafkaError.NO_ERROR:
            cycle.error(f"topic {name}", f"metadata: {topic.error.name()}")
            continue
        partitions_of[name] = sorted(topic.partitions)
    return partitions_of


def log_offsets(
    admin: AdminClient, partitions: Sequence[tuple[str, int]], cycle: Cycle
) -> list[PartitionOffsets]:
    """Earliest and latest offset of each partition: two batched ListOffsets calls."""
    tps = [TopicPartition(t, p) for t, p in partitions]
    futures_by_kind = {
        kind: admin.list_offsets({tp: spec for tp in tps}, request_timeout=cycle.remaining())
        for kind, spec in (("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest()))
    }
    cycle.gather(f for futs in futures_by_kind.values() for f in futs.values())
    read_ms = cycle.clock_ms()

    values: dict[str, dict[tuple[str, int], int]] = {"earliest": {}, "latest": {}}
    failures: dict[tuple[str, int], list[str]] = {}
    for kind, futs in futures_by_kind.items():
        for tp, fut in futs.items():
            key = (tp.topic, tp.partition)
            if not fut.done():
                failures.setdefault(key, []).append(f"ListOffsets {kind}: timed out")
            elif (exc := fut.exception()) is not None:
                failures.setdefault(key, []).append(f"ListOffsets {kind}: {describe_exc(exc)}")
            else:
                values[kind][key] = fut.result().offset
    for (topic, partition), messages in sorted(failures.items()):
        cycle.error(f"{topic}/{partition}", "; ".join(messages))

    out = []
    for key in partitions:
        earliest = values["earliest"].get(key)
        latest = values["latest"].get(key)
        if earliest is None and latest is None:
            continue
        out.append(
            PartitionOffsets(
                topic=key[0],
                partition=key[1],
                earliest=earliest,
                latest=latest,
                time_ms=read_ms,
            )
        )
    return out

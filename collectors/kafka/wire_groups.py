"""The cycle's coordinator requests through the wire client (``collectors.kafka_wire``):
committed offsets, classic groups' descriptions, KIP-848 groups' epochs.

Not through the AdminClient, because librdkafka 2.16 can take the whole process down on
exactly these calls when a coordinator moves or its connection drops (a broker restart, a
rolling upgrade), and a monitor must outlive those moments. The answers are turned into
completed futures, the shape the AdminClient's calls give, so ``to_records.group_outcome``
reads both paths alike.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from collectors.kafka.cycle import Cycle
from collectors.kafka.to_records import snapshot_from_classic, snapshot_from_epochs
from collectors.kafka_wire import ConsumerGroupEpochs, GroupClient, PartitionOffset
from collectors.storm_commit_metadata import parse_commit_metadata

__all__ = ["committed_offsets", "consumer_group_epochs", "wire_descriptions"]


def committed_offsets(groups: GroupClient, group_ids: list[str], cycle: Cycle) -> dict[str, Future]:
    """Every group's committed offsets, as one completed future per group.

    One batched OffsetFetch per coordinator, not ``AdminClient.list_consumer_group_offsets``:
    librdkafka 2.16 crashes the whole process when that call meets NOT_COORDINATOR
    (librdkafka issue #5040, open), which every coordinator move answers.
    """
    try:
        answers = groups.fetch_committed(group_ids, timeout_s=cycle.remaining())
    except (OSError, ValueError) as exc:
        return _failed(group_ids, exc)
    futures: dict[str, Future] = {}
    for group in group_ids:
        future: Future = Future()
        answer = answers.get(group)
        if answer is None:
            future.set_exception(TimeoutError("OffsetFetch timed out"))
        elif not answer.ok:
            reason = answer.error_message or answer.error_name
            future.set_exception(KafkaException(KafkaError(answer.error_code, reason)))
        else:
            kept = []
            for po in answer.offsets:
                if po.error_code:
                    cycle.error(
                        f"group {group} {po.topic}/{po.partition}",
                        f"OffsetFetch: {po.error_name}",
                    )
                else:
                    kept.append(_partition(po))
            future.set_result(ConsumerGroupTopicPartitions(group, kept))
        futures[group] = future
    return futures


def _partition(po: PartitionOffset) -> TopicPartition:
    """A commit as the AdminClient's answer gives it. With its metadata where it is a Storm 2
    spout's, which names the spout's topology (``collectors.storm_commit_metadata``); without
    any other client's: TopicPartition refuses a string holding a NUL, as librdkafka's hold."""
    if parse_commit_metadata(po.metadata) is None:
        return TopicPartition(po.topic, po.partition, po.offset)
    return TopicPartition(po.topic, po.partition, po.offset, metadata=po.metadata)


def wire_descriptions(
    groups: GroupClient | None,
    group_ids: list[str],
    listed: dict[str, tuple[str | None, str | None]],
    epochs: dict[str, ConsumerGroupEpochs],
    cycle: Cycle,
) -> dict[str, Future]:
    """Every group's description through the wire client, as completed futures of
    ``GroupSnapshot``: KIP-848 groups from ConsumerGroupDescribe (already read for their
    epochs), the others from one batched DescribeGroups per coordinator. Not the
    AdminClient's describe: a connection dropped under it can abort the process inside
    librdkafka 2.16 (issue #4605), and a broker restart is exactly when a monitor must
    keep running."""
    futures: dict[str, Future] = {}
    classic = [g for g in group_ids if listed[g][1] != "consumer"]
    answers: dict[str, Any] = {}
    if classic and groups is not None:
        try:
            answers = groups.describe_classic(classic, timeout_s=cycle.remaining())
        except (OSError, ValueError) as exc:
            futures = _failed(classic, exc)
    coordinators = getattr(groups, "coordinators", {})
    for group in group_ids:
        if group in futures:
            continue
        future: Future = Future()
        answer = epochs.get(group) if listed[group][1] == "consumer" else answers.get(group)
        if answer is None:
            future.set_exception(TimeoutError("DescribeGroups timed out"))
        elif not answer.ok:
            reason = answer.error_message or answer.error_name
            future.set_exception(KafkaException(KafkaError(answer.error_code, reason)))
        elif isinstance(answer, ConsumerGroupEpochs):
            future.set_result(snapshot_from_epochs(answer, coordinators.get(group)))
        else:
            future.set_result(snapshot_from_classic(answer, coordinators.get(group)))
        futures[group] = future
    return futures


def consumer_group_epochs(
    groups: GroupClient, group_ids: list[str], cycle: Cycle
) -> dict[str, ConsumerGroupEpochs]:
    """ConsumerGroupDescribe of the KIP-848 groups; a failure is a warning of the cycle."""
    if not group_ids:
        return {}
    try:
        answers = groups.describe(group_ids, timeout_s=cycle.remaining())
    except (OSError, ValueError) as exc:
        cycle.error("groups (KIP-848)", f"ConsumerGroupDescribe: {type(exc).__name__}: {exc}")
        return {}
    for group, answer in answers.items():
        # GROUP_ID_NOT_FOUND: deleted since ListGroups, or no longer a consumer group;
        # the AdminClient's describe says which, as for any group.
        if not answer.ok and answer.error_name != "GROUP_ID_NOT_FOUND":
            message = f": {answer.error_message}" if answer.error_message else ""
            cycle.error(f"group {group}", f"ConsumerGroupDescribe: {answer.error_name}{message}")
    return answers


def _failed(group_ids: list[str], exc: BaseException) -> dict[str, Future]:
    """A call that failed as a whole, as each of its groups' outcome."""
    futures: dict[str, Future] = {}
    for group in group_ids:
        futures[group] = Future()
        futures[group].set_exception(exc)
    return futures

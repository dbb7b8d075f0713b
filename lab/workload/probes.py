"""Read back, from the real services, what a scenario left there: the ground truth that
Lagwatch's collectors see. Used by the tests, and handy from a REPL while a scenario runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T | None], timeout_s: float, what: str, interval_s: float = 0.2
) -> T:
    """Poll `probe` until it returns something truthy; fail with `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what} ({last!r})")
        time.sleep(interval_s)


def listed_groups(admin: AdminClient) -> set[str]:
    return {g.group_id for g in admin.list_consumer_groups(request_timeout=10).result().valid}


def committed_offsets(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset, as the broker's OffsetFetch answers.

    The group's coordinator is asked first with DescribeGroups, which raises while the
    coordinator is not ready (a fresh broker, one just restarted): librdkafka 2.16's
    AdminClient crashes the whole process when OffsetFetch answers NOT_COORDINATOR
    (librdkafka #5040), and its DescribeGroups does not.
    """
    admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    futures = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=10
    )
    result = futures[group].result()
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def spout_znode(zk: KazooClient, path: str) -> tuple[dict[str, Any], ZnodeStat] | None:
    """A spout's committed JSON and the znode's Stat, or None before its first commit."""
    try:
        raw, stat = zk.get(path)
    except NoNodeError:
        return None
    return json.loads(raw), stat


def zk_consumer_offsets(zk: KazooClient, group: str, topic: str) -> dict[int, int]:
    base = f"/consumers/{group}/offsets/{topic}"
    try:
        children = zk.get_children(base)
    except NoNodeError:
        return {}
    return {int(p): int(zk.get(f"{base}/{p}")[0]) for p in children}

"""Topic retention settings by DescribeConfigs, re-read every few minutes per topic.

The retention forecast (``spark_jobs/evaluator/retention.py``) needs each consumed topic's
``retention.ms``, ``retention.bytes`` and ``cleanup.policy``. They change rarely and a
DescribeConfigs answer carries every setting of the topic, so the source asks for a topic only
when its last good reading is older than ``refresh_s`` (default 5 minutes): most cycles ask
nothing, and a cycle that does sends all due topics in one request, in flight beside
ListOffsets.

**Errors are source warnings, never a forecast.** A topic the broker will not describe
(authorization, a broker down, a timeout) gets a ``SourceError`` naming it and no record: the
stored reading stays as it was (or absent), so the forecast is the last good one or none. A
failed topic is asked again at the next cycle, not after ``refresh_s``.

**Size-based retention.** A forecast from ``retention.bytes`` needs each partition's log size,
which only DescribeLogDirs reports; confluent-kafka 2.16's AdminClient has no such call, so
``retention.bytes`` is read and shown but nothing is forecast from it (docs/EVALUATOR.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from collectors.kafka.cycle import Cycle, describe_exc
from collectors.records import TopicRetention

__all__ = ["DEFAULT_REFRESH_S", "TopicConfigCache", "retention_of"]

DEFAULT_REFRESH_S = 300.0
_NAMES = ("retention.ms", "retention.bytes", "cleanup.policy")


def _integer(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def retention_of(topic: str, entries: Mapping[str, Any], read_ms: int) -> TopicRetention | None:
    """The retention settings from a DescribeConfigs answer (name -> entry with ``.value``);
    None when a setting is missing or unreadable, which is an error, not a default."""
    values = {name: getattr(entries.get(name), "value", None) for name in _NAMES}
    retention_ms = _integer(values["retention.ms"])
    retention_bytes = _integer(values["retention.bytes"])
    policy = values["cleanup.policy"]
    if retention_ms is None or retention_bytes is None or not isinstance(policy, str) or not policy:
        return None
    return TopicRetention(topic, retention_ms, retention_bytes, policy, read_ms)


class TopicConfigCache:
    """When each topic's config was last read, so that a cycle asks only for the due ones."""

    def __init__(self, refresh_s: float = DEFAULT_REFRESH_S) -> None:
        if refresh_s <= 0:
            raise ValueError("refresh_s must be positive")
        self.refresh_ms = int(refresh_s * 1000)
        self._read_ms: dict[str, int] = {}

    def due(self, topics: Iterable[str], now_ms: int) -> list[str]:
        """The topics never read, or read ``refresh_s`` or longer before ``now_ms``."""
        return sorted(
            t
            for t in set(topics)
            if (at := self._read_ms.get(t)) is None or now_ms - at >= self.refresh_ms
        )

    def forget(self) -> None:
        """Read everything again (a new client: the cluster may have changed meanwhile)."""
        self._read_ms.clear()

    def submit(self, admin: AdminClient, topics: list[str], cycle: Cycle) -> dict[str, Future]:
        """One DescribeConfigs request for ``topics``; a refused request fails every topic."""
        if not topics:
            return {}
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        try:
            futures = admin.describe_configs(resources, request_timeout=cycle.remaining())
        except Exception as exc:  # the client refused the request itself
            failed: Future = Future()
            failed.set_exception(exc)
            return dict.fromkeys(topics, failed)
        return {resource.name: future for resource, future in futures.items()}

    def collect(self, futures: Mapping[str, Future], cycle: Cycle) -> list[TopicRetention]:
        """The answers (``cycle.gather`` them first): records for the good ones, a source
        warning for each failed topic."""
        read_ms = cycle.clock_ms()
        out: list[TopicRetention] = []
        for topic, future in sorted(futures.items()):
            if not future.done():
                cycle.error(f"topic {topic}", "DescribeConfigs: timed out")
                continue
            if (exc := future.exception()) is not None:
                cycle.error(f"topic {topic}", f"DescribeConfigs: {describe_exc(exc)}")
                continue
            record = retention_of(topic, future.result(), read_ms)
            if record is None:
                cycle.error(f"topic {topic}", "DescribeConfigs: no retention settings in answer")
                continue
            self._read_ms[topic] = read_ms
            out.append(record)
        return out

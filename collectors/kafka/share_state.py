"""What ``__share_group_state`` adds to a Kafka cycle (KIP-932): each share-partition's
delivery figures (records delivered again, the highest delivery count, records archived),
which no API answers a client, and each share group's delivery count limit.

The reader (``collectors.share_state``) runs beside the cycle's requests on a thread of its
own, as the ``__consumer_offsets`` reader does; this module sets its figures on the cycle's
share-group commits once both are done, matched by group, topic id and partition (the state
topic names a topic by its id, DescribeShareGroupOffsets gives both). The limit,
``share.delivery.count.limit``, is a group config (its default the broker's
``group.share.delivery.count.limit``): read by DescribeConfigs on the group, only for a group
whose records came back or were archived (where it matters), at most once a minute.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from collectors.consumer_offsets.reader import ReaderOutcome
from collectors.kafka.cycle import Cycle, describe_exc
from collectors.records import ShareStateFigures
from collectors.share_state import ShareStateTopic

__all__ = ["DeliveryLimits", "apply_share_state", "topic_uuid"]

LIMIT_CONFIG = "share.delivery.count.limit"
_REFRESH_MS = 60_000


def topic_uuid(text: str) -> uuid.UUID | None:
    """A topic id from Kafka's text form (URL-safe base64 of 16 bytes); None if it is not."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        return None
    return uuid.UUID(bytes=raw) if len(raw) == 16 else None


def apply_share_state(
    outcome: ReaderOutcome | None, state: ShareStateTopic | None, cycle: Cycle
) -> None:
    """Each share-group commit of the cycle gets its share-partition's figures (its group's
    limit: ``DeliveryLimits.refresh``, after). A topic that cannot be read leaves them
    unknown and says so (a warning: lag and status do not depend on it); a reader still
    catching up sets none yet, since a partial picture could name a record archived long ago
    as the newest."""
    result = cycle.result
    shares = [c for c in result.commits if c.share]
    if not result.reachable or not shares or outcome is None or state is None:
        return
    result.errors.extend(outcome.errors)
    where = "__share_group_state"
    if not outcome.readable:
        cycle.error(where, "not readable: share groups' deliveries and archived records unknown")
        return
    if outcome.caught_up:
        state.read_to_end = True
    if not state.read_to_end:
        behind = outcome.records_behind
        cycle.error(
            where, f"catching up: {behind if behind is not None else 'some'} records behind"
        )
        return
    for commit in shares:
        topic_id = topic_uuid(commit.topic_id) if commit.topic_id else None
        figures = state.figures(commit.group, topic_id, commit.partition) if topic_id else None
        commit.share_state = figures if figures is not None else ShareStateFigures()


class DeliveryLimits:
    """Each share group's delivery count limit, read where it matters: for a group one of
    whose records came back or was archived, when never read or read a minute ago or more
    (one DescribeConfigs request for all of them, after the state topic's figures). A failed
    read keeps the last one and says so."""

    def __init__(self, refresh_ms: int = _REFRESH_MS) -> None:
        self.refresh_ms = refresh_ms
        self.limits: dict[str, int] = {}
        self._read_ms: dict[str, int] = {}

    def refresh(self, admin: AdminClient, cycle: Cycle) -> None:
        """Read the limits due and set every share commit's (its ``share_state``)."""
        shares = [c for c in cycle.result.commits if c.share and c.share_state is not None]
        telling = {
            c.group for c in shares if c.share_state.redelivered_count or c.share_state.archived
        }
        futures = self.submit(admin, telling, cycle)
        if futures:
            cycle.gather(futures.values())
            self.collect(futures, cycle)
        for c in shares:
            limit = self.limits.get(c.group)
            if limit != c.share_state.delivery_limit:
                c.share_state = dataclasses.replace(c.share_state, delivery_limit=limit)

    def submit(self, admin: AdminClient, groups: Iterable[str], cycle: Cycle) -> dict[str, Future]:
        """One DescribeConfigs request for the groups due."""
        now, every = cycle.now_ms, self.refresh_ms
        due = sorted(g for g in set(groups) if now - self._read_ms.get(g, now - every) >= every)
        if not due:
            return {}
        resources = [ConfigResource(ResourceType.GROUP, g) for g in due]
        try:
            futures = admin.describe_configs(resources, request_timeout=cycle.remaining())
        except Exception as exc:  # the client refused the request itself
            failed: Future = Future()
            failed.set_exception(exc)
            return dict.fromkeys(due, failed)
        return {resource.name: future for resource, future in futures.items()}

    def collect(self, futures: Mapping[str, Future], cycle: Cycle) -> None:
        """The answers (``cycle.gather`` them first)."""
        for group, future in sorted(futures.items()):
            where, what = f"group {group}", f"DescribeConfigs ({LIMIT_CONFIG})"
            if not future.done():
                cycle.error(where, f"{what}: timed out")
                continue
            if (exc := future.exception()) is not None:
                cycle.error(where, f"{what}: {describe_exc(exc)}")
                continue
            value = _integer(getattr(future.result().get(LIMIT_CONFIG), "value", None))
            if value is not None:
                self.limits[group] = value
                self._read_ms[group] = cycle.now_ms

    def forget(self) -> None:
        """Read every limit again (a new client: the cluster may have changed meanwhile)."""
        self._read_ms.clear()


def _integer(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None

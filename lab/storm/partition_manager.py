"""Offset bookkeeping of one storm-kafka ``PartitionManager``, without any I/O.

The lab needs spouts that fail in exactly the ways real storm-kafka spouts fail, because the
product's Storm rules are judged against them. So this follows the 0.9.x ``PartitionManager``
(the one with a ``failed`` sorted set, ``forceFromStart`` and
``useStartOffsetTimeIfOffsetOutOfRange``) rule for rule, including its traps
(``maxOffsetBehind`` dropping pending offsets, ignored failures, "Too many tuple failures").

Reading the broker is injected (``fetch`` and ``watermarks`` callables) so that this module can be
tested without a broker, and so that the simulator decides how to talk to Kafka.

Java fields and their names here: ``_emittedToOffset`` -> ``emitted_to_offset``, ``_pending`` ->
``pending`` (sorted), ``failed`` -> ``failed`` (sorted), ``_waitingToEmit`` -> ``waiting_to_emit``,
``_committedTo`` -> ``committed_to``, ``numberAcked`` / ``numberFailed`` -> ``number_acked`` /
``number_failed``.

Two deliberate differences from the Java code, both needed for the simulation to keep going:

- An out-of-range fetch while retrying failed offsets drops the failed offsets the broker no longer
  has (as STORM-643 fixed later); without this the 0.9.x spout refetches them forever.
- Offsets are counted in messages (``fetch_max_messages``), not in bytes (``fetchSizeBytes``).

**Why one module of some 430 lines**: a port of one Java class, kept in its order so that it
can be read against storm-kafka's source.
"""

from __future__ import annotations

import bisect
import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: ``kafka.api.OffsetRequest.EarliestTime()`` / ``LatestTime()``: the only start offset times the
#: simulator supports (no timestamp lookups).
EARLIEST_TIME = -2
LATEST_TIME = -1
#: storm-kafka's default ``maxOffsetBehind`` is ``Long.MAX_VALUE``: nothing is ever "too far".
LONG_MAX = 2**63 - 1

Message = tuple[int, bytes | None]
#: ``fetch(offset, max_messages)`` returns messages at or after ``offset`` (possibly fewer,
#: possibly starting earlier: older ones are skipped) or raises :class:`OffsetOutOfRangeError`.
FetchFn = Callable[[int, int], Sequence[Message]]
#: ``watermarks()`` returns ``(earliest, latest)`` offsets of the partition.
WatermarksFn = Callable[[], tuple[int, int]]


class OffsetOutOfRangeError(Exception):
    """The broker answered OFFSET_OUT_OF_RANGE: the offset was deleted or never existed."""


class FetchFailedError(Exception):
    """Out of range with ``useStartOffsetTimeIfOffsetOutOfRange`` off: the partition is stuck.

    storm-kafka throws ``FailedFetchException`` here and the spout retries the same fetch
    forever; the simulator does the same.
    """


class TooManyTupleFailuresError(RuntimeError):
    """storm-kafka's ``RuntimeException("Too many tuple failures")``: it kills the worker."""

    def __init__(self) -> None:
        super().__init__("Too many tuple failures")


@dataclass(frozen=True)
class PartitionManagerConfig:
    """The ``SpoutConfig`` fields a ``PartitionManager`` reads (Storm's defaults)."""

    max_offset_behind: int = LONG_MAX
    fetch_max_messages: int = 100
    force_from_start: bool = False
    start_offset_time: int = EARLIEST_TIME
    use_start_offset_time_if_offset_out_of_range: bool = True

    def __post_init__(self) -> None:
        if self.start_offset_time not in (EARLIEST_TIME, LATEST_TIME):
            raise ValueError("start_offset_time must be EARLIEST_TIME (-2) or LATEST_TIME (-1)")
        if self.fetch_max_messages < 1:
            raise ValueError("fetch_max_messages must be >= 1")
        if self.max_offset_behind < 0:
            raise ValueError("max_offset_behind must be >= 0")


@dataclass(frozen=True)
class PartitionIdentity:
    """What a commit says about who wrote it and where the partition lives."""

    topology_id: str
    topology_name: str
    topic: str
    partition: int
    broker_host: str
    broker_port: int


@dataclass(frozen=True)
class StartDecision:
    """Where a new ``PartitionManager`` starts, and the storm-kafka log line explaining why."""

    offset: int
    reason: str


@dataclass(frozen=True)
class PartitionCounters:
    """Figures a metrics consumer wants for one partition."""

    emitted: int
    acked: int
    failed: int
    pending: int
    failed_waiting: int
    smallest_failed: int | None
    emitted_to_offset: int
    committed_to: int
    last_completed_offset: int
    ignored_failures: int
    dropped_pending: int
    skipped_messages: int
    lost_failed: int
    out_of_range_jumps: int
    fetches: int


def committed_path(zk_root: str, spout_id: str, partition: int) -> str:
    """``committedPath()``: no normalisation, exactly like storm-kafka builds it."""
    return f"{zk_root}/{spout_id}/partition_{partition}"


def _offset_for_time(start_offset_time: int, earliest: int, latest: int) -> int:
    return earliest if start_offset_time == EARLIEST_TIME else latest


def _configured_offset(config: PartitionManagerConfig, earliest: int, latest: int) -> int:
    """``KafkaUtils.getOffset(consumer, topic, partition, config)``: latest unless forced."""
    if config.force_from_start:
        return _offset_for_time(config.start_offset_time, earliest, latest)
    return latest


def _stored_topology_and_offset(stored: Mapping[str, Any] | None) -> tuple[str | None, int | None]:
    """Parse the znode like storm-kafka does: anything malformed counts as "no information"."""
    if not isinstance(stored, Mapping):
        return None, None
    topology = stored.get("topology")
    topology_id = topology.get("id") if isinstance(topology, Mapping) else None
    offset = stored.get("offset")
    if not isinstance(topology_id, str) or isinstance(offset, bool) or not isinstance(offset, int):
        return None, None
    return topology_id, offset


def resolve_start_offset(
    stored: Mapping[str, Any] | None,
    topology_id: str,
    config: PartitionManagerConfig,
    earliest: int,
    latest: int,
) -> StartDecision:
    """The ``PartitionManager`` constructor's choice of ``_committedTo``.

    The stored offset wins unless this is a *new* topology instance with ``forceFromStart``;
    the same instance ignores ``forceFromStart``. Afterwards a stored offset that is ``<= 0`` or
    more than ``maxOffsetBehind`` behind the configured offset is replaced by that offset (so a
    spout that committed 0 and restarts without ``forceFromStart`` jumps to the latest offset).
    """
    current = _configured_offset(config, earliest, latest)
    stored_id, stored_offset = _stored_topology_and_offset(stored)
    if stored_id is None or stored_offset is None:
        offset = current
        reason = "No partition information found, using configuration to determine offset"
    elif stored_id != topology_id and config.force_from_start:
        offset = _offset_for_time(config.start_offset_time, earliest, latest)
        reason = (
            "Topology change detected and reset from start forced, "
            "using configuration to determine offset"
        )
    else:
        offset = stored_offset
        reason = (
            f"Read last commit offset from zookeeper: {offset}; "
            f"old topology_id: {stored_id} - new topology_id: {topology_id}"
        )
    if current - offset > config.max_offset_behind:
        reason += (
            f"; commit offset {offset} is more than {config.max_offset_behind} behind "
            f"{current}, resetting to it"
        )
        offset = current
    elif offset <= 0 and offset != current:
        reason += f"; commit offset {offset} <= 0, resetting to {current}"
        offset = current
    return StartDecision(offset=offset, reason=reason)


class _SortedSet:
    """The bits of Java's ``TreeSet<Long>`` that storm-kafka uses."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[int] = []

    def add(self, value: int) -> None:
        i = bisect.bisect_left(self._items, value)
        if i == len(self._items) or self._items[i] != value:
            self._items.insert(i, value)

    def discard(self, value: int) -> bool:
        i = bisect.bisect_left(self._items, value)
        if i < len(self._items) and self._items[i] == value:
            del self._items[i]
            return True
        return False

    def first(self) -> int:
        return self._items[0]

    def clear_below(self, bound: int) -> list[int]:
        """``headSet(bound).clear()``: remove and return every value < bound."""
        i = bisect.bisect_left(self._items, bound)
        removed = self._items[:i]
        del self._items[:i]
        return removed

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        i = bisect.bisect_left(self._items, value)
        return i < len(self._items) and self._items[i] == value

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self) -> Iterator[int]:
        return iter(list(self._items))


class PartitionManager:
    """One partition of one spout task: what was fetched, emitted, failed and committed."""

    def __init__(
        self,
        identity: PartitionIdentity,
        config: PartitionManagerConfig,
        start_offset: int,
        fetch: FetchFn,
        watermarks: WatermarksFn,
    ) -> None:
        self.identity = identity
        self.config = config
        self._fetch = fetch
        self._watermarks = watermarks
        self.emitted_to_offset = start_offset
        self.committed_to = start_offset
        self.pending = _SortedSet()
        self.failed = _SortedSet()
        self.waiting_to_emit: deque[Message] = deque()
        self.number_acked = 0
        self.number_failed = 0
        self.emitted = 0
        self.ignored_failures = 0
        self.dropped_pending = 0
        self.skipped_messages = 0
        self.lost_failed = 0
        self.out_of_range_jumps = 0
        self.fetches = 0

    @property
    def partition(self) -> int:
        return self.identity.partition

    @property
    def has_waiting(self) -> bool:
        """``EMITTED_MORE_LEFT``: the last fetched batch is not fully emitted yet."""
        return bool(self.waiting_to_emit)

    def next(self) -> Message | None:
        """Emit one message (``None`` = ``NO_EMITTED``), fetching a batch when none is waiting.

        A message without a value produces no tuple, so storm-kafka acks it on the spot.
        """
        if not self.waiting_to_emit:
            self._fill()
        while self.waiting_to_emit:
            offset, value = self.waiting_to_emit.popleft()
            if value is None:
                self.ack(offset)
                continue
            self.emitted += 1
            return offset, value
        return None

    def _fill(self) -> None:
        had_failed = bool(self.failed)
        offset = self.failed.first() if had_failed else self.emitted_to_offset
        try:
            messages = self._fetch(offset, self.config.fetch_max_messages)
        except OffsetOutOfRangeError:
            self._handle_out_of_range(offset, had_failed)
            return
        self.fetches += 1
        for msg_offset, value in messages:
            if msg_offset < offset:
                continue
            if had_failed and msg_offset not in self.failed:
                continue
            # Pending from fetch time on, so lastCompletedOffset never skips a waiting message.
            self.pending.add(msg_offset)
            self.waiting_to_emit.append((msg_offset, value))
            self.emitted_to_offset = max(msg_offset + 1, self.emitted_to_offset)
            if had_failed:
                self.failed.discard(msg_offset)

    def _handle_out_of_range(self, offset: int, had_failed: bool) -> None:
        p = self.identity.partition
        if not self.config.use_start_offset_time_if_offset_out_of_range:
            raise FetchFailedError(
                f"Error fetching data from partition {p} of {self.identity.topic}: "
                f"OFFSET_OUT_OF_RANGE at offset {offset}"
            )
        earliest, latest = self._watermarks()
        if had_failed:
            gone = [o for o in self.failed if o < earliest or o >= latest]
            for o in gone:
                self.failed.discard(o)
                self.pending.discard(o)
            self.lost_failed += len(gone)
            log.warning(
                "partition %d: removing the failed offsets that are out of range [%d, %d): %s",
                p,
                earliest,
                latest,
                gone,
            )
            return
        new_offset = _configured_offset(self.config, earliest, latest)
        skipped = max(0, new_offset - earliest)
        deleted = max(0, earliest - offset)
        self.skipped_messages += skipped
        self.out_of_range_jumps += 1
        self.emitted_to_offset = new_offset
        log.warning(
            "partition %d: offset %d out of range [%d, %d]; using new offset %d "
            "(skipped %d messages still on the broker, %d deleted before being read)",
            p,
            offset,
            earliest,
            latest,
            new_offset,
            skipped,
            deleted,
        )

    def ack(self, offset: int) -> None:
        """Mark done; an ack far ahead of the oldest pending offset drops the old ones unacked."""
        bound = offset - self.config.max_offset_behind
        if self.pending and self.pending.first() < bound:
            dropped = self.pending.clear_below(bound)
            self.dropped_pending += len(dropped)
            log.info(
                "partition %d: too many things pending, dropped %d offsets below %d",
                self.identity.partition,
                len(dropped),
                bound,
            )
        self.pending.discard(offset)
        self.number_acked += 1

    def fail(self, offset: int) -> None:
        """Queue for retry, unless too far behind: then the message is silently never retried."""
        if offset < self.emitted_to_offset - self.config.max_offset_behind:
            self.ignored_failures += 1
            log.info(
                "Skipping failed tuple at offset=%d because it's more than maxOffsetBehind=%d "
                "behind _emittedToOffset=%d",
                offset,
                self.config.max_offset_behind,
                self.emitted_to_offset,
            )
            return
        self.failed.add(offset)
        self.number_failed += 1
        if self.number_acked == 0 and self.number_failed > self.config.max_offset_behind:
            raise TooManyTupleFailuresError()

    def last_completed_offset(self) -> int:
        """Everything below this is acked or given up."""
        return self.pending.first() if self.pending else self.emitted_to_offset

    def commit(self) -> dict[str, Any] | None:
        """The JSON to write to ZooKeeper, or ``None`` when nothing progressed since last time.

        Unchanged offsets are not rewritten, which is why the znode's mtime means "last
        progress" rather than "last heartbeat".
        """
        last_completed = self.last_completed_offset()
        if last_completed == self.committed_to:
            return None
        ident = self.identity
        data: dict[str, Any] = {
            "topology": {"id": ident.topology_id, "name": ident.topology_name},
            "offset": last_completed,
            "partition": ident.partition,
            "broker": {"host": ident.broker_host, "port": ident.broker_port},
            "topic": ident.topic,
        }
        self.committed_to = last_completed
        return data

    def counters(self) -> PartitionCounters:
        return PartitionCounters(
            emitted=self.emitted,
            acked=self.number_acked,
            failed=self.number_failed,
            pending=len(self.pending),
            failed_waiting=len(self.failed),
            smallest_failed=self.failed.first() if self.failed else None,
            emitted_to_offset=self.emitted_to_offset,
            committed_to=self.committed_to,
            last_completed_offset=self.last_completed_offset(),
            ignored_failures=self.ignored_failures,
            dropped_pending=self.dropped_pending,
            skipped_messages=self.skipped_messages,
            lost_failed=self.lost_failed,
            out_of_range_jumps=self.out_of_range_jumps,
            fetches=self.fetches,
        )

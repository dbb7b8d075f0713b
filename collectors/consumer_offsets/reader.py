"""The ``__consumer_offsets`` reader: one group-less consumer per Kafka cluster (SPEC §2.2).

Each :meth:`ConsumerOffsetsReader.poll` reads every partition of Kafka's internal
``__consumer_offsets`` topic from where the last poll stopped up to the end offsets as they were
when the poll began, and folds the records into one :class:`OffsetsTopicState` kept for the
life of the reader. Taking the end offsets first bounds a poll: on a busy cluster the topic
grows while it is read, and a reader chasing the moving end could never finish. A poll is also
bounded by ``timeout_s`` and ``max_records_per_poll``; a reader that stopped short says so
(``caught_up`` False, ``records_behind``) and goes on from there next time.

Where it starts: at the log start, on its first poll. The topic is compacted, so the log from
its start is what the group coordinator itself replays when it takes over a partition: the
latest commit of every live (group, topic, partition), the latest metadata of every group, the
tombstones not yet purged (``delete.retention.ms``, a day by default), plus the not yet
compacted tail of recent commits. That costs one read of the whole topic when the reader
starts: on the order of its live keys plus the dirty tail, at several hundred thousand records
a second (benchmarks/bench_offsets_reader.py). A process restart re-reads it the same way and
rebuilds the same state: nothing is persisted, because positions alone are worthless without
the state they lead to, and persisting the state would mean a second, drifting copy of what
the compacted topic already keeps. Events are re-emitted with their original record times and
``(log_partition, log_offset)``, which a caller uses to store them idempotently.

Being group-less: librdkafka insists on a ``group.id`` for a consumer (confluent-kafka refuses
an empty one), so the reader carries a fixed dummy one (:data:`READER_GROUP_ID`) and never
subscribes nor commits: partitions are ``assign()``-ed at explicit offsets, auto commit and
offset store are off. The broker lists no group for it. librdkafka still looks up the group's
coordinator, and on a cluster where ``__consumer_offsets`` does not exist yet that lookup makes
the broker create the topic, exactly as the first consumer group of the cluster would.

Only ``__consumer_offsets`` is ever read: librdkafka can crash when a topic read by an
``assign()``-based consumer is deleted (LAB.md), and this topic cannot be deleted.

Read-committed: transactional offset commits (TxnOffsetCommit) are written inside the producer's
transaction and only count once it commits; ``isolation.level=read_committed`` makes the reader
skip aborted ones exactly as the coordinator does, and stop at the last stable offset.

Outages: a poll that cannot reach the cluster reports ``reachable=False`` within ``timeout_s``;
the next poll starts on a new consumer, assigned at the positions the state kept, so nothing
is read twice or lost. As with the admin client of ``collectors.kafka``, a client that lived through
a broker restart is not trusted to recover by itself: three polls in a row that were behind yet
read nothing also replace it.

One module of some 500 lines, on purpose: it is one class around one consumer and one state,
and a poll is one protocol (end offsets first, then assign, consume, unassign) whose steps
guard each other's assumptions (the share coordinators' topic is read by the same poll:
``collectors.share_state.reader``); half of the length is the why above and the measured
settings below, which belong next to the code they explain.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from collectors.consumer_offsets.fold import PollFold
from collectors.consumer_offsets.state import OffsetsTopicState
from collectors.records import Source, SourceError

__all__ = [
    "OFFSETS_TOPIC",
    "READER_GROUP_ID",
    "ConsumerOffsetsReader",
    "ReaderOutcome",
]

# Named as when the reader was collectors/consumer_offsets_reader.py: logging configuration
# and log queries that name them keep working.
log = logging.getLogger("collectors.consumer_offsets_reader")
client_log = logging.getLogger(f"{log.name}.librdkafka")

OFFSETS_TOPIC: Final = "__consumer_offsets"
# Never joined, never committed: librdkafka only needs a name (see the module docstring).
READER_GROUP_ID: Final = "lagwatch-offsets-reader"

# Messages per consume() call. Small on purpose: every message is a GC-tracked object, and a
# batch that outlives Python's youngest generation (700 allocations) is promoted and then
# rescanned by every full collection; 500 at a time die young (all but the last commit of
# each key, which the fold keeps until the poll ends: fold.py). That cut the CPU time of a
# catch-up by a third (benchmarks/bench_offsets_reader.py); the per-call cost is ~µs.
_BATCH: Final = 500
# The longest one consume() call waits: compaction gaps can make a batch fall short of the
# count asked for, and the rest of the poll should not wait for it.
_CONSUME_WAIT_S: Final = 0.2
# Polls in a row that were behind and read nothing before the consumer is replaced.
_RECREATE_AFTER_STALLED_POLLS: Final = 3

# Throughput settings, measured on the lab broker: a bare consumer read a million commit
# records in 6.0 s with librdkafka's defaults and in 0.9 s with these. The default prefetch
# target (queued.min.messages=100,000) is what stalls a reader of many small records; the
# memory prefetching may hold stays bounded by queued.max.messages.kbytes. Larger partition
# fetches (4 MiB) cut round trips. check.crcs costs nothing measurable (CRC32C in hardware)
# and lets librdkafka refuse corrupt batches, in the spirit of the strict decoder.
_DEFAULTS: Final[Mapping[str, Any]] = {
    "queued.min.messages": 1_000_000,
    "queued.max.messages.kbytes": 65_536,
    "fetch.message.max.bytes": 4 * 1024 * 1024,
    "check.crcs": True,
    # A fetch at the end of the log waits this long for news, and the next poll's metadata
    # request waits behind it on the same connection: keep it short.
    "fetch.wait.max.ms": 10,
    "auto.offset.reset": "earliest",
    # librdkafka's own logs go to Python logging (served by consume()), not raw stderr.
    "logger": client_log,
    "log.connection.close": False,
}
# What makes the consumer group-less and correct, whatever the caller's config says.
_FORCED: Final[Mapping[str, Any]] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,  # the end is reported even after markers or gaps
    "isolation.level": "read_committed",
    "allow.auto.create.topics": False,
}

# Answers meaning "this topic may not be read here": the caller falls back to the AdminClient.
_NOT_READABLE: Final = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED}
)


@dataclass(frozen=True, slots=True)
class ReaderOutcome:
    """What one poll did.

    ``reachable`` False: the cluster did not answer; nothing else is known this poll.
    ``readable`` False: the cluster answered that ``__consumer_offsets`` does not exist or may
    not be read (the caller falls back to the AdminClient and says so); also False when
    unreachable. ``caught_up``: every partition was read up to the end offsets taken at the
    start of the poll. ``records_behind`` is what was left to those ends, counted in offsets
    (an upper bound: compaction leaves gaps); None when the ends are unknown.
    ``records_read`` counts every record consumed (decoded + superseded within the poll, so
    never decoded: ``fold.py`` + skipped + stale); ``skipped`` is
    this poll's undecodable records by ``DecodeError.kind``. ``errors`` name where.
    """

    reachable: bool
    readable: bool
    caught_up: bool
    records_read: int
    records_decoded: int
    records_behind: int | None
    skipped: dict[str, int]
    bytes_read: int
    partitions: int
    errors: tuple[SourceError, ...]
    started_ms: int
    finished_ms: int


@dataclass
class _Poll:
    """The bookkeeping of one poll: deadline, clock, findings."""

    now_ms: int
    timeout_s: float
    t0: float = field(default_factory=time.monotonic)
    reachable: bool = True
    readable: bool = True
    errors: list[SourceError] = field(default_factory=list)

    def remaining(self) -> float:
        # librdkafka reads a zero timeout as "do not wait" in places and "forever" in others.
        return max(0.01, self.t0 + self.timeout_s - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.t0 + self.timeout_s

    def clock_ms(self) -> int:
        return self.now_ms + int((time.monotonic() - self.t0) * 1000)

    def error(self, where: str, error: str) -> None:
        # librdkafka repeats a failure for as long as it lasts: once per poll is enough.
        found = SourceError(source=Source.KAFKA, where=where, error=error)
        if found not in self.errors:
            self.errors.append(found)


def _describe(exc: BaseException | KafkaError) -> str:
    err = exc if isinstance(exc, KafkaError) else None
    if err is None and isinstance(exc, KafkaException) and exc.args:
        first = exc.args[0]
        err = first if isinstance(first, KafkaError) else None
    if err is not None:
        return f"{err.name()}: {err.str()}"
    return f"{type(exc).__name__}: {exc}"


class ConsumerOffsetsReader:
    """Reads one cluster's ``__consumer_offsets`` into :attr:`state`, poll after poll.

    ``state`` is the same object from poll to poll (its positions are where the next poll
    starts), except when the log went back under it, which replaces it with one rebuilt from
    the log start (see ``_check_truncation``). ``config`` holds client settings (security,
    timeouts, throughput, the dummy ``group.id`` if a cluster's ACLs want another name); the
    settings that keep the reader group-less and read-committed are applied over it.

    A subclass reads another internal topic of the same kind (``collectors.share_state``):
    it names the topic and its client, and gives the state and the fold.
    """

    topic: str = OFFSETS_TOPIC
    group_id: str = READER_GROUP_ID  # also the client.id: what the broker's logs show

    def __init__(
        self,
        bootstrap_servers: str,
        config: Mapping[str, Any] | None = None,
        *,
        timeout_s: float,
        max_records_per_poll: int = 2_000_000,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if max_records_per_poll <= 0:
            raise ValueError("max_records_per_poll must be positive")
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = float(timeout_s)
        self.max_records_per_poll = max_records_per_poll
        conf: dict[str, Any] = {
            **_DEFAULTS,
            "group.id": self.group_id,
            "client.id": self.group_id,
            **(config or {}),
        }
        conf.update(_FORCED)
        conf["bootstrap.servers"] = bootstrap_servers
        self._conf = conf
        self.state = self._new_state()
        self._consumer: Consumer | None = self._new_consumer()
        self._renew_why: str | None = None  # set by a poll after which the consumer is replaced
        self._stalled_polls = 0

    def _new_state(self) -> Any:
        """The fold's state, empty: where a poll's records go."""
        return OffsetsTopicState()

    def _new_fold(self) -> Any:
        """One poll's fold over :attr:`state` (``batch`` per consume() batch, then ``finish``)."""
        return PollFold(self.state)

    # -- lifecycle -----------------------------------------------------------------------------

    def _new_consumer(self) -> Consumer:
        return Consumer(self._conf)

    def close(self) -> None:
        """Release the consumer. It never joined a group, so closing commits and leaves nothing."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    def __enter__(self) -> ConsumerOffsetsReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recreate(self, why: str) -> None:
        log.warning(
            "recreating the %s consumer for %s: %s", self.topic, self.bootstrap_servers, why
        )
        self.close()
        self._consumer = self._new_consumer()
        self._renew_why = None
        self._stalled_polls = 0

    # -- one poll ------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> ReaderOutcome:
        """Read up to the end offsets as of now; never raises for what the cluster does."""
        if self._consumer is None:
            raise RuntimeError("ConsumerOffsetsReader is closed")
        if self._renew_why is not None:
            self._recreate(self._renew_why)
        poll = _Poll(now_ms, self.timeout_s)
        state0 = self.state
        decoded0, skipped0, bytes0 = (
            state0.records_decoded,
            Counter(state0.skipped),
            state0.bytes_read,
        )
        read = 0
        behind: int | None = None
        complete = False
        partitions: list[int] = []
        try:
            partitions = self._partitions(poll)
            ends = self._end_offsets(partitions, poll) if partitions else None
            if ends is not None:
                self._check_truncation(ends, poll)
                read = self._read(ends, poll)
                behind = self._behind(ends)
                complete = len(ends) == len(partitions)
        except Exception as exc:  # a bug or a client surprise must not kill the collector loop
            log.exception("%s poll failed for %s", self.topic, self.bootstrap_servers)
            poll.error(self.topic, f"reader error: {_describe(exc)}")
        if not poll.reachable:
            self._renew_why = "the last poll could not reach the cluster"
        self._note_stall(behind, read)
        state = self.state
        if state is not state0:  # rebuilt during the poll: all it holds was read by this poll
            decoded0, skipped0, bytes0 = 0, Counter(), 0
        skipped = state.skipped - skipped0
        return ReaderOutcome(
            reachable=poll.reachable,
            readable=poll.reachable and poll.readable,
            caught_up=behind == 0 and complete and poll.reachable and poll.readable,
            records_read=read,
            records_decoded=state.records_decoded - decoded0,
            records_behind=behind,
            skipped=dict(skipped),
            bytes_read=state.bytes_read - bytes0,
            partitions=len(partitions),
            errors=tuple(poll.errors),
            started_ms=now_ms,
            finished_ms=poll.clock_ms(),
        )

    def _note_stall(self, behind: int | None, read: int) -> None:
        """Count polls that were behind and read nothing; the third in a row renews the client
        (a consumer that lived through a broker restart may never fetch again)."""
        if behind and read == 0:
            self._stalled_polls += 1
            if self._stalled_polls >= _RECREATE_AFTER_STALLED_POLLS:
                self._renew_why = f"{self._stalled_polls} polls in a row read nothing while behind"
        else:
            self._stalled_polls = 0

    def _partitions(self, poll: _Poll) -> list[int]:
        """The topic's partitions, or [] with the reason in ``poll``."""
        consumer = self._consumer
        assert consumer is not None
        try:
            metadata = consumer.list_topics(self.topic, timeout=poll.remaining())
        except KafkaException as exc:
            poll.reachable = False
            poll.error("cluster", f"unreachable: {_describe(exc)}")
            return []
        topic = metadata.topics.get(self.topic)
        if topic is None:
            poll.readable = False
            poll.error(self.topic, "not in the metadata answer")
            return []
        if topic.error is not None and topic.error.code() != KafkaError.NO_ERROR:
            if topic.error.code() in _NOT_READABLE:
                poll.readable = False
            poll.error(self.topic, f"metadata: {_describe(topic.error)}")
            return []
        return sorted(topic.partitions)

    def _end_offsets(self, partitions: list[int], poll: _Poll) -> dict[int, tuple[int, int]] | None:
        """Partition -> (log start, end) in two batched ListOffsets calls; None if unreachable.

        The end is the last stable offset (read-committed). ``offsets_for_times`` with Kafka's
        special timestamps -2 (earliest) and -1 (latest) asks every partition leader once,
        where ``get_watermark_offsets`` would ask twice per partition, one after the other.
        """
        consumer = self._consumer
        assert consumer is not None
        answers: dict[int, dict[int, int]] = {}
        for spec in (-2, -1):
            try:
                tps = consumer.offsets_for_times(
                    [TopicPartition(self.topic, p, spec) for p in partitions],
                    timeout=poll.remaining(),
                )
            except KafkaException as exc:
                poll.reachable = False
                poll.error("cluster", f"unreachable: ListOffsets: {_describe(exc)}")
                return None
            for tp in tps:
                if tp.error is not None and tp.error.code() != KafkaError.NO_ERROR:
                    if tp.error.code() in _NOT_READABLE:
                        poll.readable = False
                    poll.error(
                        f"{self.topic}/{tp.partition}", f"ListOffsets: {_describe(tp.error)}"
                    )
                elif tp.offset >= 0:
                    answers.setdefault(tp.partition, {})[spec] = tp.offset
        if not poll.readable:
            return None
        return {p: (a[-2], a[-1]) for p, a in answers.items() if len(a) == 2}

    def _check_truncation(self, ends: dict[int, tuple[int, int]], poll: _Poll) -> None:
        """Start over when a partition's end is below the position already read.

        A read-committed position never passes the last stable offset, so this means the log
        lost its tail (an unclean leader election) or the address now leads to another
        cluster. The state may describe records that no longer exist: it is rebuilt from the
        log start, and the events not yet drained are lost with it.
        """
        positions = self.state.positions
        shrunk = sorted(p for p, (_, end) in ends.items() if positions.get(p, 0) > end)
        if not shrunk:
            return
        where = ", ".join(f"{p} ({positions[p]} > {ends[p][1]})" for p in shrunk)
        log.warning("%s of %s went back: %s", self.topic, self.bootstrap_servers, where)
        poll.error(
            self.topic,
            f"log end below the position read (partitions {where}): "
            "the state is rebuilt from the log start",
        )
        self.state = self._new_state()

    def _behind(self, ends: dict[int, tuple[int, int]]) -> int:
        positions = self.state.positions
        return sum(
            max(0, end - max(positions.get(p, 0), start)) for p, (start, end) in ends.items()
        )

    def _read(self, ends: dict[int, tuple[int, int]], poll: _Poll) -> int:
        """Consume and apply until every partition reaches its end, the deadline or the cap.

        Only the partitions behind are assigned, at the positions the state holds, and only
        for the length of the poll: between polls nothing is fetched, no memory is held, and
        no long-polling fetch (``fetch.wait.max.ms``) sits in front of the next poll's
        metadata and ListOffsets requests on the same connection.
        """
        state = self.state
        positions = state.positions
        pending = {p for p, (_, end) in ends.items() if positions.get(p, 0) < end}
        if not pending:
            return 0
        consumer = self._consumer
        assert consumer is not None
        consumer.assign(
            [
                TopicPartition(
                    self.topic,
                    p,
                    max(positions[p], ends[p][0]) if p in positions else OFFSET_BEGINNING,
                )
                for p in sorted(pending)
            ]
        )
        try:
            return self._consume(ends, pending, poll)
        finally:
            consumer.unassign()

    def _consume(self, ends: dict[int, tuple[int, int]], pending: set[int], poll: _Poll) -> int:
        consumer = self._consumer
        assert consumer is not None
        positions = self.state.positions
        fold = self._new_fold()
        budget = self.max_records_per_poll
        read = 0
        try:
            while pending and read < budget and not poll.expired():
                # Ask for no more than can be left (records plus one end-of-partition event
                # each): consume() returns as soon as it has them instead of waiting out its
                # timeout.
                left = sum(ends[p][1] - positions.get(p, 0) for p in pending) + len(pending)
                messages = consumer.consume(
                    min(_BATCH, budget - read, left), min(_CONSUME_WAIT_S, poll.remaining())
                )
                n, errors = fold.batch(messages)
                read += n
                messages = None  # freed before the next batch is made (see _BATCH)
                for message in errors:
                    self._consume_error(message, poll)
                if not (poll.readable and poll.reachable):
                    break
                pending = {p for p in pending if positions.get(p, 0) < ends[p][1]}
        finally:
            fold.finish()
        return read

    def _consume_error(self, message: Any, poll: _Poll) -> None:
        err = message.error()
        code = err.code()
        partition = message.partition()
        if code == KafkaError._PARTITION_EOF:
            # The end of the log: past any transaction markers or compacted-away offsets.
            self.state.advance(partition, message.offset())
            return
        if code in _NOT_READABLE:
            poll.readable = False
        elif code == KafkaError._ALL_BROKERS_DOWN:
            poll.reachable = False
        where = self.topic if partition is None or partition < 0 else f"{self.topic}/{partition}"
        poll.error(where, f"fetch: {_describe(err)}")

"""The decoded picture of Kafka's ``__consumer_offsets`` topic, folded record by record.

``reader`` owns the I/O and hands every record it reads, in offset order per partition, to
:meth:`OffsetsTopicState.apply`. The state keeps what a monitor needs between
cycles (SPEC §2.2): the last commit of every (group, topic, partition) with its commit time and
metadata, the last metadata of every classic group (generation, assignor, leader, members and
their assignments), what was deleted and when, and the events the caller drains each cycle:
generation changes with their causes, deleted groups, expired or deleted offsets.

It is pure (no I/O, no clock, no Django): records in, state and events out, so it is tested with
tables of byte vectors and a reader restarted from the log start rebuilds exactly the same
picture. Nothing a record holds can stop it: what :func:`decode.decode_record` cannot decode
is counted by ``DecodeError.kind`` and skipped.

Why records are applied exactly as they come: ``__consumer_offsets`` is the group coordinator's
own log. Kafka writes a tombstone for every offset of a deleted group as well as for the group
itself, so the state never infers deletions; it applies what the coordinator wrote. Each group
lives on one partition of the topic (``abs(hash(group)) % partitions``), so the order between
partitions never matters, only the order within one, which :attr:`positions` guards.

Speed: a commit whose key bytes were decoded before is read by the short path of ``values``
(:func:`values.fast_commit`) when its value is exactly one of the fixed layouts; every other
record goes through ``decode_record``. The reader goes further (``reader.py``, "Folding a
poll"): it keeps only the last record of each known commit key it reads in a poll and hands
it over by :meth:`OffsetsTopicState.apply_latest`, so a commit superseded within the poll is
never decoded, as the coordinator's own compaction would never keep it.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator, KeysView, Mapping
from types import MappingProxyType
from typing import Any, Final

from collectors.consumer_offsets.cursor import UNKNOWN_VERSION, UNSUPPORTED_RECORD_TYPE, DecodeError
from collectors.consumer_offsets.decode import decode_record
from collectors.consumer_offsets.picture import (
    CommitInfo,
    Event,
    GenerationChange,
    GroupDeleted,
    GroupInfo,
    OffsetDeleted,
    generation_causes,
    group_info,
)
from collectors.consumer_offsets.values import fast_commit, fast_commit_key

__all__ = ["OffsetsTopicState"]

# Key versions Kafka 4.1's group coordinator writes besides offset commits (0, 1) and classic
# group metadata (2): CoordinatorRecordType 3-8 consumer groups (KIP-848), 10-15 share groups,
# 16 a consumer group's regular-expression subscription (KIP-848), 17-23 streams groups
# (KIP-1071). ``decode_record`` reports 3-15 as unsupported record types and 16 and above as
# unknown versions; the later ones are Kafka's own record types too, not garbage, so they are
# counted with the unsupported ones.
_COORDINATOR_RECORD_TYPES: Final = range(3, 24)
_COMMIT_KEY_PREFIXES: Final = (b"\x00\x00", b"\x00\x01")  # key versions 0 and 1


class _CommitsView(Mapping[tuple[str, str, int], CommitInfo]):
    """Commits as CommitInfo, over a dict of plain tuples.

    The state keeps plain tuples because CPython's collector stops tracking a plain tuple of
    numbers and strings after its first collection, and never a NamedTuple: a hundred
    thousand tracked commits made every full collection of a catch-up walk them all.
    """

    __slots__ = ("_raw",)

    def __init__(self, raw: dict[tuple[str, str, int], tuple]) -> None:
        self._raw = raw

    def __getitem__(self, key: tuple[str, str, int]) -> CommitInfo:
        return CommitInfo._make(self._raw[key])

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[tuple[str, str, int]]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self)!r})"


class OffsetsTopicState:
    """Commits, classic groups, deletions and events from ``__consumer_offsets`` records.

    Feed it with :meth:`apply` in offset order per partition (partitions may interleave in any
    way); read :attr:`commits`, :attr:`groups`, :attr:`deleted_groups`,
    :attr:`deleted_offsets` and the counters at any time; take the events with
    :meth:`drain_events` once per cycle. Events beyond ``max_events`` undrained drop the
    oldest, counted in ``events_dropped``, so a caller that stops draining cannot exhaust
    memory.

    A deletion fact lasts until something new arrives for the same key: a later commit of the
    same (group, topic, partition) or metadata of the same group supersedes it (the event has
    gone out already).
    """

    def __init__(self, *, max_events: int = 100_000) -> None:
        self._commits: dict[tuple[str, str, int], tuple] = {}  # CommitInfo's fields
        self._groups: dict[str, GroupInfo] = {}
        self._deleted_groups: dict[str, int] = {}
        self._deleted_offsets: dict[tuple[str, str, int], int] = {}
        self._positions: dict[int, int] = {}
        self._events: deque[Event] = deque(maxlen=max_events)
        self._held: list[Event] = []  # see drain_settled_events
        # Key bytes of offset commits decoded once -> (group, topic, partition): the short path.
        self._commit_keys: dict[bytes, tuple[str, str, int]] = {}
        self.records_decoded = 0
        self.records_stale = 0  # offsets below the partition's position: already applied
        # Commits replaced by a later one of their key before being decoded (fold.py).
        self.records_superseded = 0
        self.bytes_read = 0
        self.skipped: Counter[str] = Counter()  # by DecodeError.kind
        self.skipped_key_versions: Counter[int] = Counter()  # record types not decoded
        self.events_dropped = 0
        self.last_error: str | None = None
        # Set by the reader's caller once a poll read every partition to its end: from then
        # on the picture is the coordinator's, not a prefix of its history.
        self.read_to_end = False
        # The (group, topic) pairs the last caught-up cycle found hidden by the brokers
        # (collectors/kafka/offsets_topic.py: a warning once seen twice in a row).
        self.hidden_topics_seen: set[tuple[str, str]] = set()

    # -- reading the picture ----------------------------------------------------------------

    @property
    def commits(self) -> Mapping[tuple[str, str, int], CommitInfo]:
        """(group, topic, partition) -> the last commit; a read-only live view."""
        return _CommitsView(self._commits)

    @property
    def groups(self) -> Mapping[str, GroupInfo]:
        """Classic group -> its last metadata; a read-only live view."""
        return MappingProxyType(self._groups)

    @property
    def deleted_groups(self) -> Mapping[str, int]:
        """Group -> time (ms) of its metadata tombstone, until the group is seen again."""
        return MappingProxyType(self._deleted_groups)

    @property
    def deleted_offsets(self) -> Mapping[tuple[str, str, int], int]:
        """(group, topic, partition) -> time (ms) of its offset tombstone, until a new commit."""
        return MappingProxyType(self._deleted_offsets)

    @property
    def positions(self) -> Mapping[int, int]:
        """Partition -> next offset to read (one past the last record applied or skipped to)."""
        return MappingProxyType(self._positions)

    @property
    def commit_keys(self) -> KeysView[bytes]:
        """Key bytes of the offset commits decoded so far (a live view, for the fold's
        per-record test): a commit under one of them is read by the short path."""
        return self._commit_keys.keys()

    @property
    def position_table(self) -> dict[int, int]:
        """:attr:`positions` itself, writable: for the reader's fold (``fold.py``), which moves
        a position past the commits it keeps undecoded. Positions only ever go forward."""
        return self._positions

    @property
    def records_skipped(self) -> int:
        return sum(self.skipped.values())

    def drain_events(self) -> list[Event]:
        """The events since the last call, oldest first."""
        events = self._held + list(self._events)
        self._events.clear()
        self._held = []
        return events

    def drain_settled_events(self) -> list[Event]:
        """:meth:`drain_events`, less a group's offset tombstones that end what was read of
        their log partition: those wait one drain.

        Apache Kafka's group coordinator may split one DeleteGroups' records over batches
        (offset tombstones first, the group's tombstone last), and a read can stop between
        them; folded a drain apart they would read as two deletions. Nothing else is written
        between the records of one coordinator operation, so a tombstone followed by anything
        on its partition is complete. Held once, they go out with the next drain whatever
        follows: an offsets-only deletion (DeleteOffsets, expiry) comes one cycle later.
        """
        held_before = self._held
        fresh = list(self._events)
        self._events.clear()
        positions = self._positions
        hold: list[Event] = []
        closed: set[int] = set()  # log partitions whose tail has been looked at
        tail_group: dict[int, str] = {}
        keep: list[Event] = []
        for event in reversed(fresh):
            p = event.log_partition
            if p not in closed:
                if isinstance(event, OffsetDeleted) and (
                    tail_group.get(p) == event.group
                    or (p not in tail_group and positions.get(p, 0) == event.log_offset + 1)
                ):
                    tail_group[p] = event.group
                    hold.append(event)
                    continue
                closed.add(p)
            keep.append(event)
        keep.reverse()
        hold.reverse()
        self._held = hold
        return held_before + keep

    # -- folding records --------------------------------------------------------------------

    def advance(self, partition: int, next_offset: int) -> None:
        """Move a partition's position forward without a record: the reader reached the end
        past offsets it was never given (transaction markers, compacted-away records)."""
        if next_offset > self._positions.get(partition, 0):
            self._positions[partition] = next_offset

    def apply(
        self, partition: int, offset: int, timestamp_ms: int, key: bytes, value: bytes | None
    ) -> None:
        """Fold one record in. Never raises for what the record holds.

        A record below the partition's position was applied already (a re-delivery) and is
        only counted in ``records_stale``.
        """
        positions = self._positions
        if offset < positions.get(partition, 0):
            self.records_stale += 1
            return
        positions[partition] = offset + 1
        if type(value) is bytes and type(key) is bytes:
            self.bytes_read += len(key) + len(value)
            ident = self._commit_keys.get(key)
            if ident is not None:
                commit = fast_commit(value, timestamp_ms, partition, offset)
                if commit is not None:
                    self._commits[ident] = commit
                    self.records_decoded += 1
                    return
        else:
            # A null, or a bytearray or memoryview from another client: made hashable bytes.
            if key is not None and type(key) is not bytes:
                key = bytes(key)
            if value is not None and type(value) is not bytes:
                value = bytes(value)
            self.bytes_read += (len(key) if key is not None else 0) + (
                len(value) if value is not None else 0
            )
        self._apply_decoded(partition, offset, timestamp_ms, key, value)

    def apply_latest(
        self, partition: int, offset: int, timestamp_ms: int, key: bytes, value: bytes
    ) -> None:
        """Fold in the last of a run of commits under one key of :attr:`commit_keys`, whose
        position the caller has already moved past and whose earlier records it counted in
        ``records_superseded`` (and ``bytes_read``, with this one).

        Valid only while nothing else of that key came between (a tombstone, say: the reader
        hands the commit over before such a record). Decoded as :meth:`apply` would, by the
        long path when the short one is not sure.
        """
        ident = self._commit_keys.get(key)
        if ident is not None:
            commit = fast_commit(value, timestamp_ms, partition, offset)
            if commit is not None:
                self._commits[ident] = commit
                self.records_decoded += 1
                return
        self._apply_decoded(partition, offset, timestamp_ms, key, value)

    def _apply_decoded(
        self, partition: int, offset: int, timestamp_ms: int, key: bytes, value: bytes | None
    ) -> None:
        """The long path: ``decode_record`` decides; a commit's key is remembered for later."""
        if value is not None and key is not None and key[:2] in _COMMIT_KEY_PREFIXES:
            # A commit under a key not seen yet: the key by its short path (else decoded
            # alone), then the value by the short path if it can; otherwise the whole
            # record below.
            ident = fast_commit_key(key)
            if ident is None:
                try:
                    fields = decode_record(key, None)
                except DecodeError as exc:
                    self._skip(exc, key)
                    return
                ident = (fields["group"], fields["topic"], fields["partition"])
            commit = fast_commit(value, timestamp_ms, partition, offset)
            if commit is not None:
                self.records_decoded += 1
                self._commit_keys[key] = ident
                self._deleted_offsets.pop(ident, None)
                self._commits[ident] = commit
                return
        try:
            record = decode_record(key, value)
        except DecodeError as exc:
            self._skip(exc, key)
            return
        self.records_decoded += 1
        if record["type"] == "offset_commit":
            self._apply_commit(record, partition, offset, timestamp_ms, key)
        else:
            self._apply_group(record, partition, offset, timestamp_ms)

    def _skip(self, exc: DecodeError, key: bytes) -> None:
        kind = exc.kind
        if exc.field == "key_version" and kind in (UNKNOWN_VERSION, UNSUPPORTED_RECORD_TYPE):
            key_version = int.from_bytes(key[:2], "big", signed=True)
            self.skipped_key_versions[key_version] += 1
            if key_version in _COORDINATOR_RECORD_TYPES:
                kind = UNSUPPORTED_RECORD_TYPE
        self.skipped[kind] += 1
        self.last_error = str(exc)

    def _apply_commit(
        self, record: dict[str, Any], partition: int, offset: int, timestamp_ms: int, key: bytes
    ) -> None:
        ident = (record["group"], record["topic"], record["partition"])
        if record["deleted"]:
            self._commit_keys.pop(key, None)
            before = self._commits.pop(ident, None)
            self._deleted_offsets[ident] = timestamp_ms
            self._event(
                OffsetDeleted(
                    group=ident[0],
                    topic=ident[1],
                    partition=ident[2],
                    time_ms=timestamp_ms,
                    offset_before=before[0] if before is not None else None,
                    log_partition=partition,
                    log_offset=offset,
                )
            )
            return
        self._commit_keys[key] = ident
        self._deleted_offsets.pop(ident, None)
        commit_ts = record["commit_timestamp_ms"]
        self._commits[ident] = (
            record["offset"],
            commit_ts if commit_ts >= 0 else timestamp_ms,
            record["metadata"],
            timestamp_ms,
            record["leader_epoch"],
            partition,
            offset,
        )

    def _apply_group(
        self, record: dict[str, Any], partition: int, offset: int, timestamp_ms: int
    ) -> None:
        group = record["group"]
        if record["deleted"]:
            before = self._groups.pop(group, None)
            self._deleted_groups[group] = timestamp_ms
            self._event(
                GroupDeleted(
                    group=group,
                    time_ms=timestamp_ms,
                    generation_before=before.generation if before is not None else None,
                    log_partition=partition,
                    log_offset=offset,
                )
            )
            return
        self._deleted_groups.pop(group, None)
        after = group_info(record, timestamp_ms, partition, offset)
        before = self._groups.get(group)
        self._groups[group] = after
        if before is not None and before.generation == after.generation:
            return  # same generation rewritten (e.g. a static member replaced): no rebalance
        before_ids = {m.member_id for m in before.members} if before is not None else set()
        after_ids = {m.member_id for m in after.members}
        self._event(
            GenerationChange(
                group=group,
                generation_before=before.generation if before is not None else None,
                generation_after=after.generation,
                time_ms=timestamp_ms,
                causes=generation_causes(before, after),
                members_joined=tuple(sorted(after_ids - before_ids)),
                members_left=tuple(sorted(before_ids - after_ids)),
                leader_before=before.leader if before is not None else None,
                leader_after=after.leader,
                protocol_before=before.protocol if before is not None else None,
                protocol_after=after.protocol,
                members_after=len(after.members),
                log_partition=partition,
                log_offset=offset,
            )
        )

    def _event(self, event: Event) -> None:
        if len(self._events) == self._events.maxlen:
            self.events_dropped += 1
        self._events.append(event)

"""The decoded picture of Kafka's ``__consumer_offsets`` topic, folded record by record.

``consumer_offsets_reader`` owns the I/O and hands every record it reads, in offset order per
partition, to :meth:`OffsetsTopicState.apply`. The state keeps what a monitor needs between
cycles (SPEC §2.2): the last commit of every (group, topic, partition) with its commit time and
metadata, the last metadata of every classic group (generation, assignor, leader, members and
their assignments), what was deleted and when, and the events the caller drains each cycle:
generation changes with their causes, deleted groups, expired or deleted offsets.

It is pure (no I/O, no clock, no Django): records in, state and events out, so it is tested with
tables of byte vectors and a reader restarted from the log start rebuilds exactly the same
picture. Nothing a record holds can stop it: what :func:`consumer_offsets.decode_record` cannot
decode is counted by ``DecodeError.kind`` and skipped.

Why records are applied exactly as they come: ``__consumer_offsets`` is the group coordinator's
own log. Kafka writes a tombstone for every offset of a deleted group as well as for the group
itself, so the state never infers deletions; it applies what the coordinator wrote. Each group
lives on one partition of the topic (``abs(hash(group)) % partitions``), so the order between
partitions never matters, only the order within one, which :attr:`positions` guards.

Speed: a busy cluster's topic holds millions of offset commits, nearly all with a key seen
before and a value in one of five fixed layouts. A commit whose key bytes were decoded before
and whose value is exactly one of those layouts is read by a short path here; every other
record, and every byte string the short path has the slightest doubt about (a length that does
not add up, a null, a multi-byte varint), goes through ``decode_record``. The short path gives
the same fields as ``decode_record`` for every record it accepts; the tests check that on every
version and on mutated bytes.
"""

from __future__ import annotations

import struct
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from collectors.consumer_offsets import (
    UNKNOWN_VERSION,
    UNSUPPORTED_RECORD_TYPE,
    DecodeError,
    decode_record,
)

__all__ = [
    "ALL_MEMBERS_LEFT",
    "ASSIGNMENT_CHANGED",
    "FIRST_SEEN",
    "LEADER_CHANGED",
    "MEMBERS_JOINED",
    "MEMBERS_LEFT",
    "PROTOCOL_CHANGED",
    "SAME_MEMBERS",
    "CommitInfo",
    "Event",
    "GenerationChange",
    "GroupDeleted",
    "GroupInfo",
    "MemberInfo",
    "OffsetDeleted",
    "OffsetsTopicState",
    "generation_causes",
]

# Causes of a generation change, derived from the group's two consecutive metadata records.
FIRST_SEEN: Final = "first_seen"  # no earlier record of the group (or it was deleted since)
MEMBERS_JOINED: Final = "members_joined"
MEMBERS_LEFT: Final = "members_left"
ALL_MEMBERS_LEFT: Final = "all_members_left"  # the group went Empty
LEADER_CHANGED: Final = "leader_changed"
ASSIGNMENT_CHANGED: Final = "assignment_changed"  # a member present before and after moved
PROTOCOL_CHANGED: Final = "protocol_changed"  # assignor or protocol type
# A new generation with the same members, leader and assignment: a member rejoined (new
# subscription or metadata, a restart within the session timeout) without visible effect.
SAME_MEMBERS: Final = "same_members"

# Key versions Kafka 4.1's group coordinator writes besides offset commits (0, 1) and classic
# group metadata (2): CoordinatorRecordType 3-8 consumer groups (KIP-848), 10-15 share groups,
# 16 a consumer group's regular-expression subscription (KIP-848), 17-23 streams groups
# (KIP-1071). ``decode_record`` reports 3-15 as unsupported record types and 16 and above as
# unknown versions; the later ones are Kafka's own record types too, not garbage, so they are
# counted with the unsupported ones.
_COORDINATOR_RECORD_TYPES: Final = range(3, 24)

_I64 = struct.Struct(">q").unpack_from
# Offset commit value layouts, up to the metadata string (see CONSUMER_OFFSETS_LAYOUT.md).
_V0_HEAD = struct.Struct(">hqh").unpack_from  # v0, v1, v2: version, offset, metadata length
_V3_HEAD = struct.Struct(">hqih").unpack_from  # v3: version, offset, leader epoch, length
_V4_HEAD = struct.Struct(">hqiB").unpack_from  # v4: ..., first byte of the compact length
_V4_EMPTY = struct.Struct(">hqiBqB").unpack  # v4 without metadata, all 24 bytes
_COMMIT_KEY_PREFIXES: Final = (b"\x00\x00", b"\x00\x01")  # key versions 0 and 1


class CommitInfo(NamedTuple):
    """The last commit of one (group, topic, partition).

    ``commit_timestamp_ms`` is the value's commit timestamp (the coordinator's clock when it
    accepted the commit), falling back to the record's timestamp when the value has none.
    ``log_partition``/``log_offset`` locate the record in ``__consumer_offsets``.
    """

    offset: int
    commit_timestamp_ms: int
    metadata: str
    record_timestamp_ms: int
    leader_epoch: int | None
    log_partition: int
    log_offset: int


@dataclass(frozen=True, slots=True)
class MemberInfo:
    """One member of a classic group as its group-metadata record lists it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: dict[str, list[int]]  # topic -> sorted partitions; {} = none or not decodable


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """The last metadata of one classic group (GroupMetadataValue), as of ``time_ms``."""

    group: str
    generation: int
    protocol_type: str
    protocol: str | None  # the assignor name for "consumer" groups; None when Empty
    leader: str | None
    members: tuple[MemberInfo, ...]  # sorted by member_id
    current_state_timestamp_ms: int | None
    time_ms: int  # the record's timestamp
    log_partition: int
    log_offset: int


@dataclass(frozen=True, slots=True)
class GenerationChange:
    """A classic group's generation differs between two consecutive metadata records.

    ``generation_before`` is None the first time a group is seen (``causes`` = first_seen).
    ``log_partition``/``log_offset`` identify the record uniquely and survive a re-read of the
    topic, so a caller can store events idempotently.
    """

    group: str
    generation_before: int | None
    generation_after: int
    time_ms: int
    causes: tuple[str, ...]
    members_joined: tuple[str, ...]
    members_left: tuple[str, ...]
    leader_before: str | None
    leader_after: str | None
    protocol_before: str | None
    protocol_after: str | None
    members_after: int
    log_partition: int
    log_offset: int


@dataclass(frozen=True, slots=True)
class GroupDeleted:
    """A group-metadata tombstone: the group was deleted or expired (empty, offsets gone)."""

    group: str
    time_ms: int
    generation_before: int | None  # None when the group's metadata was never seen
    log_partition: int
    log_offset: int


@dataclass(frozen=True, slots=True)
class OffsetDeleted:
    """An offset tombstone: a commit expired, or was deleted (alone or with its group).

    The tombstone does not say which; ``offset_before`` is None when no commit was seen.
    """

    group: str
    topic: str
    partition: int
    time_ms: int
    offset_before: int | None
    log_partition: int
    log_offset: int


Event = GenerationChange | GroupDeleted | OffsetDeleted


def _fast_commit(value: bytes, timestamp_ms: int, partition: int, offset: int) -> tuple | None:
    """The commit an offset-commit value holds (CommitInfo's fields), or None when this short
    path is not sure.

    None sends the record to ``decode_record``, which either decodes the value or says exactly
    what is wrong with it. A value is accepted only if its length is exactly what its
    version's layout gives for the metadata length it states, so trailing bytes, truncation,
    nulls and negative lengths all fall through. Called once per commit, millions of times.
    """
    size = len(value)
    if size < 20 or value[0] != 0:
        return None
    version = value[1]
    if size == 24 and version == 4 and value[14] == 1 and value[23] == 0:
        # What Kafka 4 writes for a commit without metadata, read in one call.
        _, committed, epoch, _, commit_ts, _ = _V4_EMPTY(value)
        metadata = ""
    elif version == 4:
        _, committed, epoch, head = _V4_HEAD(value)
        # One-byte compact length (0 would be null), metadata, timestamp, no tagged fields.
        end = 14 + head
        if head == 0 or head >= 0x80 or size != end + 9 or value[-1] != 0:
            return None
        metadata = value[15:end].decode("utf-8", "replace") if head > 1 else ""
        commit_ts = _I64(value, end)[0]
    elif version == 3:
        _, committed, epoch, n = _V3_HEAD(value)
        end = 16 + n
        if n < 0 or size != end + 8:
            return None
        metadata = value[16:end].decode("utf-8", "replace") if n else ""
        commit_ts = _I64(value, end)[0]
    elif version <= 2:
        _, committed, n = _V0_HEAD(value)
        end = 12 + n
        epoch = -1
        # v1 carries an expire timestamp after the commit timestamp.
        if n < 0 or size != end + (16 if version == 1 else 8):
            return None
        metadata = value[12:end].decode("utf-8", "replace") if n else ""
        commit_ts = _I64(value, end)[0]
    else:
        return None
    return (
        committed,
        commit_ts if commit_ts >= 0 else timestamp_ms,
        metadata,
        timestamp_ms,
        None if epoch == -1 else epoch,
        partition,
        offset,
    )


def _sorted_assignment(assignment: dict[str, list[int]]) -> dict[str, list[int]]:
    return {topic: sorted(partitions) for topic, partitions in sorted(assignment.items())}


def _group_info(record: dict[str, Any], time_ms: int, partition: int, offset: int) -> GroupInfo:
    members = tuple(
        sorted(
            (
                MemberInfo(
                    member_id=m["member_id"],
                    group_instance_id=m["group_instance_id"],
                    client_id=m["client_id"],
                    client_host=m["client_host"],
                    assignment=_sorted_assignment(m["assignment"]),
                )
                for m in record["members"]
            ),
            key=lambda m: m.member_id,
        )
    )
    return GroupInfo(
        group=record["group"],
        generation=record["generation"],
        protocol_type=record["protocol_type"],
        protocol=record["protocol"],
        leader=record["leader"],
        members=members,
        current_state_timestamp_ms=record["current_state_timestamp_ms"],
        time_ms=time_ms,
        log_partition=partition,
        log_offset=offset,
    )


def generation_causes(before: GroupInfo | None, after: GroupInfo) -> tuple[str, ...]:
    """Why a group's generation changed, from its two member lists (a table of rules).

    An emptied group is only ``all_members_left``: its leader and protocol going to null and
    its assignment going away say nothing more. Leader and protocol changes count only between
    two known (non-null) values, so a group filling up again is just ``members_joined``.
    """
    if before is None:
        return (FIRST_SEEN,)
    before_ids = {m.member_id: m for m in before.members}
    after_ids = {m.member_id: m for m in after.members}
    if before_ids and not after_ids:
        return (ALL_MEMBERS_LEFT,)
    causes = []
    if after_ids.keys() - before_ids.keys():
        causes.append(MEMBERS_JOINED)
    if before_ids.keys() - after_ids.keys():
        causes.append(MEMBERS_LEFT)
    if before.leader and after.leader and before.leader != after.leader:
        causes.append(LEADER_CHANGED)
    if any(
        before_ids[member_id].assignment != member.assignment
        for member_id, member in after_ids.items()
        if member_id in before_ids
    ):
        causes.append(ASSIGNMENT_CHANGED)
    if (before.protocol and after.protocol and before.protocol != after.protocol) or (
        before.protocol_type and after.protocol_type and before.protocol_type != after.protocol_type
    ):
        causes.append(PROTOCOL_CHANGED)
    return tuple(causes) or (SAME_MEMBERS,)


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
        # Key bytes of offset commits decoded once -> (group, topic, partition): the short path.
        self._commit_keys: dict[bytes, tuple[str, str, int]] = {}
        self.records_decoded = 0
        self.records_stale = 0  # offsets below the partition's position: already applied
        self.bytes_read = 0
        self.skipped: Counter[str] = Counter()  # by DecodeError.kind
        self.skipped_key_versions: Counter[int] = Counter()  # record types not decoded
        self.events_dropped = 0
        self.last_error: str | None = None

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
    def records_skipped(self) -> int:
        return sum(self.skipped.values())

    def drain_events(self) -> list[Event]:
        """The events since the last call, oldest first."""
        events = list(self._events)
        self._events.clear()
        return events

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
                commit = _fast_commit(value, timestamp_ms, partition, offset)
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

    def _apply_decoded(
        self, partition: int, offset: int, timestamp_ms: int, key: bytes, value: bytes | None
    ) -> None:
        """The long path: ``decode_record`` decides; a commit's key is remembered for later."""
        if value is not None and key is not None and key[:2] in _COMMIT_KEY_PREFIXES:
            # A commit under a key not seen yet: decode the key alone (cheap), then the value
            # by the short path if it can; otherwise the whole record below.
            try:
                fields = decode_record(key, None)
            except DecodeError as exc:
                self._skip(exc, key)
                return
            commit = _fast_commit(value, timestamp_ms, partition, offset)
            if commit is not None:
                self.records_decoded += 1
                ident = (fields["group"], fields["topic"], fields["partition"])
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
        after = _group_info(record, timestamp_ms, partition, offset)
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

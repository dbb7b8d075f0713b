"""Decoding one ``__consumer_offsets`` record: its key says what it is, its value the rest.

Real Apache Kafka clusters let a group-less consumer read this topic, and it is the only
place where every offset commit arrives with its commit timestamp and every generation change
of a classic group is visible (SPEC §2.2). The bytes follow Kafka's own message schemas
(``OffsetCommitKey/Value``, ``GroupMetadataKey/Value`` in ``group-coordinator``).

Where Burrow and Kafka disagree, this decoder follows Kafka:

* offset-commit value v2 is a valid layout (Burrow rejects it);
* flexible versions (v4) must end with their tagged-field section (Burrow never reads it);
* key versions 3-15 are KIP-848 consumer/share-group records, reported as an unsupported
  record type rather than as garbage;
* a null in a non-nullable field is an error (Burrow maps every null string to ``""``).

Pure (no I/O, no Django) so the collector, a management command and the tests can all call
it; a reader loop uses :class:`DecodeStats` to count and skip what cannot be decoded.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from collectors.consumer_offsets.cursor import (
    UNKNOWN_VERSION,
    UNSUPPORTED_RECORD_TYPE,
    Cursor,
    DecodeError,
)
from collectors.consumer_offsets.values import (
    Record,
    group_metadata_value,
    offset_commit_value,
)

__all__ = ["DecodeStats", "decode_record"]

_OFFSET_KEY_WHERE: Final = ("offset commit key v0", "offset commit key v1")


def decode_record(key: bytes, value: bytes | None) -> Record:
    """Decode one ``__consumer_offsets`` record, or raise :class:`DecodeError`.

    A ``None`` value is a tombstone (offsets deleted or expired, group deleted) and yields the
    key's fields with ``deleted: True``; an empty, non-null value is not a tombstone in Kafka
    and fails as truncated. ``bytearray``/``memoryview`` are accepted (copied once) because
    client libraries differ in what they hand out.
    """
    if key is None:
        raise DecodeError("key: missing (null) key", field="key_version")
    if type(key) is not bytes:
        key = bytes(key)
    if value is not None and type(value) is not bytes:
        value = bytes(value)

    kc = Cursor(key, "key")
    key_version = kc.int16("key_version")
    if key_version == 0 or key_version == 1:
        kc.where = _OFFSET_KEY_WHERE[key_version]
        group = kc.string("group")
        topic = kc.string("topic")
        partition = kc.int32("partition")
        kc.finish()
        if value is None:
            return {
                "type": "offset_commit",
                "group": group,
                "topic": topic,
                "partition": partition,
                "key_version": key_version,
                "deleted": True,
            }
        record = offset_commit_value(value)
        record["group"] = group
        record["topic"] = topic
        record["partition"] = partition
        record["key_version"] = key_version
        return record
    if key_version == 2:
        kc.where = "group metadata key v2"
        group = kc.string("group")
        kc.finish()
        if value is None:
            return {"type": "group_metadata", "group": group, "key_version": 2, "deleted": True}
        record = group_metadata_value(value)
        record["group"] = group
        record["key_version"] = 2
        return record
    if 3 <= key_version <= 15:
        # GroupCoordinatorRecordSerde maps these to KIP-848 records (3 = ConsumerGroupMetadataKey
        # and so on); they describe the new consumer/share-group protocols, not classic groups.
        raise DecodeError(
            f"key: key version {key_version} is a KIP-848 consumer/share-group record type, "
            "not an offset commit or classic group metadata; not decoded",
            kind=UNSUPPORTED_RECORD_TYPE,
            offset=0,
            field="key_version",
        )
    raise DecodeError(
        f"key: unknown key version {key_version} (known: 0-2 decoded, 3-15 KIP-848)",
        kind=UNKNOWN_VERSION,
        offset=0,
        field="key_version",
    )


@dataclass
class DecodeStats:
    """Counts for a reader loop that must never stop on one bad record (SPEC §2.2).

    Use :meth:`decode` in place of :func:`decode_record`: it returns ``None`` for a record it
    skipped and keeps the counts (by record type, and skipped by ``DecodeError.kind``) that a
    collector exports as metrics, plus the last error for a log line.
    """

    decoded: Counter[str] = field(default_factory=Counter)
    deleted: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    last_error: str | None = None

    def decode(self, key: bytes, value: bytes | None) -> Record | None:
        try:
            record = decode_record(key, value)
        except DecodeError as exc:
            self.skipped[exc.kind] += 1
            self.last_error = str(exc)
            return None
        self.decoded[record["type"]] += 1
        if record["deleted"]:
            self.deleted += 1
        return record

    @property
    def total_decoded(self) -> int:
        return sum(self.decoded.values())

    @property
    def total_skipped(self) -> int:
        return sum(self.skipped.values())

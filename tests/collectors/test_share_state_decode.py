"""``__share_group_state`` records decoded (``collectors/share_state``): records a Kafka 4.4.0
lab broker wrote, then a table of built ones, each field and each way the bytes can be wrong.

The three real records were read from the lab broker's ``__share_group_state`` after a share
consumer had released offset 7 of a one-partition topic at every delivery (20 records, the
default delivery count limit of 5): the snapshot written when the group was initialised, the
update after the first deliveries (7 released, the rest acknowledged), and the last one,
offset 7 archived after its fifth delivery.
"""

from __future__ import annotations

import struct
import uuid

import pytest

from collectors.consumer_offsets.cursor import (
    MALFORMED,
    TRUNCATED,
    UNKNOWN_VERSION,
    UNSUPPORTED_RECORD_TYPE,
    DecodeError,
)
from collectors.share_state import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    ShareStateRecord,
    StateBatch,
    decode_share_state,
    given_up,
)

TOPIC = uuid.UUID("afc2a869-618e-48fc-b81f-58f1c606462b")
REAL_SNAPSHOT_KEY = bytes.fromhex(
    "00000008672d376266663264afc2a869618e48fcb81f58f1c606462b00000000"
)
REAL_UPDATE_KEY = bytes.fromhex("00010008672d376266663264afc2a869618e48fcb81f58f1c606462b00000000")
REAL_SNAPSHOT = bytes.fromhex(
    "0000000000000000000200000000ffffffffffffffff000001a225b71792000001a225b717920100"
)
REAL_FIRST_UPDATE = bytes.fromhex(
    "0000000000000000000000000000000000000400000000000000000000000000000006020001000000000000"
    "0000070000000000000007000001000000000000000008000000000000001302000100010004000000"
    "13"
)
REAL_ARCHIVED = bytes.fromhex(
    "0000000000000000000000000000000000070200000000000000070000000000000007040005000100040000000d"
)


def test_real_records_of_a_released_record_until_archived() -> None:
    snapshot = decode_share_state(REAL_SNAPSHOT_KEY, REAL_SNAPSHOT)
    assert (snapshot.kind, snapshot.group, snapshot.topic_id, snapshot.partition) == (
        "snapshot", "g-7bff2d", TOPIC, 0,
    )  # fmt: skip
    assert (snapshot.start_offset, snapshot.state_epoch, snapshot.batches) == (None, 2, ())
    assert snapshot.create_timestamp_ms == snapshot.write_timestamp_ms == 1795929085842

    first = decode_share_state(REAL_UPDATE_KEY, REAL_FIRST_UPDATE)
    assert (first.kind, first.start_offset, first.delivery_complete_count) == ("update", 0, 19)
    assert first.batches == (
        StateBatch(0, 6, ACKNOWLEDGED, 1),
        StateBatch(7, 7, AVAILABLE, 1),  # released: delivered again
        StateBatch(8, 19, ACKNOWLEDGED, 1),
    )
    assert given_up(first) == []

    last = decode_share_state(REAL_UPDATE_KEY, REAL_ARCHIVED)
    assert (last.start_offset, last.delivery_complete_count) == (7, 13)
    assert last.batches == (StateBatch(7, 7, ARCHIVED, 5),)
    assert given_up(last) == [(7, 7, 5)]


# --- built records -------------------------------------------------------------------------


def key(record_type: int = 1, group: str = "q", partition: int = 3) -> bytes:
    name = group.encode()
    return (
        struct.pack(">hh", record_type, len(name))
        + name
        + TOPIC.bytes
        + struct.pack(">i", partition)
    )


def batch(first: int, last: int, state: int, count: int, tags: bytes = b"\x00") -> bytes:
    return struct.pack(">qqbh", first, last, state, count) + tags


def uvarint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def update(start: int = 10, batches: tuple[bytes, ...] = (), tags: bytes = b"\x00",
           version: int = 0) -> bytes:  # fmt: skip
    head = struct.pack(">hiiq", version, 1, 2, start)
    return head + uvarint(len(batches) + 1) + b"".join(batches) + tags


def snapshot(start: int = 10, batches: tuple[bytes, ...] = (), tags: bytes = b"\x00") -> bytes:
    head = struct.pack(">hiiiqqq", 0, 1, 3, 2, start, 1000, 2000)
    return head + uvarint(len(batches) + 1) + b"".join(batches) + tags


def tagged(*fields: tuple[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in fields)


GOOD = [
    ("an update", key(), update(), ShareStateRecord(
        "update", "q", TOPIC, 3, False, 1, None, 2, 10)),
    ("an update leaving the start offset", key(), update(-1), ShareStateRecord(
        "update", "q", TOPIC, 3, False, 1, None, 2, None)),
    ("a snapshot", key(0), snapshot(), ShareStateRecord(
        "snapshot", "q", TOPIC, 3, False, 1, 3, 2, 10, None, 1000, 2000)),
    ("a tombstone", key(0, "jobs", 7), None, ShareStateRecord(
        "snapshot", "jobs", TOPIC, 7, deleted=True)),
    ("batches", key(), update(5, (batch(5, 5, ARCHIVED, 8), batch(6, 9, ACKNOWLEDGED, 1))),
     ShareStateRecord("update", "q", TOPIC, 3, False, 1, None, 2, 5, None, None, None,
                      (StateBatch(5, 5, ARCHIVED, 8), StateBatch(6, 9, ACKNOWLEDGED, 1)))),
    ("a batch with a tag of its own", key(), update(5, (batch(5, 6, AVAILABLE, 2, tagged((3, b"xy"))),)),
     ShareStateRecord("update", "q", TOPIC, 3, False, 1, None, 2, 5, None, None, None,
                      (StateBatch(5, 6, AVAILABLE, 2),))),
    ("KIP-1226's count", key(), update(tags=tagged((0, struct.pack(">i", 42)))),
     ShareStateRecord("update", "q", TOPIC, 3, False, 1, None, 2, 10, 42)),
    ("the count unknown (-1)", key(), update(tags=tagged((0, struct.pack(">i", -1)))),
     ShareStateRecord("update", "q", TOPIC, 3, False, 1, None, 2, 10, None)),
    ("another tag skipped", key(), update(tags=tagged((5, b"abc"), (0, struct.pack(">i", 7)))),
     ShareStateRecord("update", "q", TOPIC, 3, False, 1, None, 2, 10, 7)),
    ("a group named in UTF-8", key(1, "fila-é"), update(),
     ShareStateRecord("update", "fila-é", TOPIC, 3, False, 1, None, 2, 10)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "k", "v", "expected"), GOOD, ids=[g[0] for g in GOOD])
def test_decoded(name: str, k: bytes, v: bytes | None, expected: ShareStateRecord) -> None:
    assert decode_share_state(k, v) == expected


BAD = [
    ("a null key", None, update(), MALFORMED),
    ("a consumer-offsets record type", key(2), update(), UNSUPPORTED_RECORD_TYPE),
    ("a truncated key", key()[:-2], update(), TRUNCATED),
    ("a key with trailing bytes", key() + b"\x00", update(), MALFORMED),
    ("value version 1", key(), update(version=1), UNKNOWN_VERSION),
    ("an empty value", key(), b"", TRUNCATED),
    ("a truncated value", key(), update()[:-3], TRUNCATED),
    ("a truncated batch", key(), update(batches=(batch(1, 2, 0, 1)[:-4],)), TRUNCATED),
    ("an unknown delivery state", key(), update(batches=(batch(1, 2, 3, 1),)), MALFORMED),
    ("a batch ending before it starts", key(), update(batches=(batch(5, 2, 2, 1),)), MALFORMED),
    ("a value with trailing bytes", key(), update() + b"\x00", MALFORMED),
    ("a snapshot read as an update", key(1), snapshot(), MALFORMED),
]  # fmt: skip


@pytest.mark.parametrize(("name", "k", "v", "kind"), BAD, ids=[b[0] for b in BAD])
def test_refused(name: str, k: bytes | None, v: bytes | None, kind: str) -> None:
    with pytest.raises(DecodeError) as raised:
        decode_share_state(k, v)  # type: ignore[arg-type]
    assert raised.value.kind == kind, str(raised.value)


@pytest.mark.parametrize(
    ("batches", "limit", "found"),
    [
        ((), 2, []),
        (((5, 5, ARCHIVED, 8),), 2, [(5, 5, 8)]),
        (((5, 5, ARCHIVED, 1),), 2, []),  # rejected at once: not redelivered
        (((5, 5, ARCHIVED, 1),), 1, [(5, 5, 1)]),
        (((5, 5, AVAILABLE, 4), (6, 6, ACKNOWLEDGED, 3)), 2, []),  # not given up (yet)
        (((1, 3, ARCHIVED, 5), (4, 4, ACKNOWLEDGED, 1), (5, 5, ARCHIVED, 5)), 2,
         [(1, 3, 5), (5, 5, 5)]),
    ],
)  # fmt: skip
def test_given_up(batches: tuple, limit: int, found: list) -> None:
    record = ShareStateRecord(
        "update", "q", TOPIC, 0, batches=tuple(StateBatch(*b) for b in batches)
    )
    assert given_up(record, limit) == found

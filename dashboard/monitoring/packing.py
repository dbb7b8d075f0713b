"""Columns of figures packed into one compact ``bytes`` value (pure; no Django).

Why: the raw history holds every partition at every poll for hours. As one database row per
partition and poll it cost ~126 bytes a row with its index, 3.79 GiB at 10,000 partitions
polled every 10 s (benchmarks/RESULTS.md, "The hot database"), and every cycle inserted
10,000 rows. Packed as one row per group and poll (``GroupSample``), a partition's figures
take a few tens of bytes, and a cycle writes one row per group. The readers (charts, the
API's raw history, Burrow's offsets) read a group's rows and unpack them.

The format is columnar: a 4-byte tag, then zlib of the row count and each column in the
order of its ``kinds``: integers as little-endian int64 deltas from the previous value
(offsets of a topic's partitions and consecutive partition numbers make small deltas), floats
as float64, booleans as bits, strings as a JSON list of the distinct values and an int64
index per row; each column but strings starts with a null mask (one byte 0 when it has no
nulls). Integers must fit a signed 64-bit value, as Kafka's offsets do.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["INT", "FLOAT", "BOOL", "STR", "PackingError", "pack", "unpack"]

INT, FLOAT, BOOL, STR = "int", "float", "bool", "str"
_TAG = b"LWP1"
_LEVEL = 1  # zlib: level 6 packs a group's figures 3 % smaller at twice the time


class PackingError(ValueError):
    """Bytes that are not a packed value of the expected columns (truncated, another tag)."""


def pack(columns: Mapping[str, Sequence[Any]], kinds: Mapping[str, str]) -> bytes:
    """``columns`` (every name of ``kinds``, equal lengths) as bytes; ``None`` is kept."""
    return pack_slices(columns, kinds, [(0, _length(columns, kinds))])[0]


def pack_slices(
    columns: Mapping[str, Sequence[Any]],
    kinds: Mapping[str, str],
    slices: Sequence[tuple[int, int]],
) -> list[bytes]:
    """``pack`` of each ``[start, end)`` row range of ``columns``, in one pass over them: a
    cycle packs every group of a cluster, and numpy's cost per call, not per value, is what
    a group of a few dozen partitions pays (2,000 groups: 0.5 s one by one)."""
    n = _length(columns, kinds)
    prepared = [_prepare(name, kind, columns[name], n) for name, kind in kinds.items()]
    starts = np.array([a for a, b in slices if b > a], np.intp)
    encoded = []
    for kind, values, nulls in prepared:
        if kind == INT:
            # Every slice's deltas at once: from the previous row, a slice's first row as is.
            deltas = values.copy()
            deltas[1:] -= values[:-1]
            deltas[starts] = values[starts]
            values = deltas
        # Which slices hold a null, at once (a mask is written for those only).
        with_nulls = _any_per_slice(nulls, slices, starts)
        encoded.append((kind, values, nulls, with_nulls))
    out = []
    for i, (a, b) in enumerate(slices):
        parts = [struct.pack("<I", b - a)]
        for kind, values, nulls, with_nulls in encoded:
            if kind == STR:
                index: dict[str, int] = {}
                codes = [index.setdefault(v, len(index)) for v in values[a:b]]
                text = json.dumps(list(index), ensure_ascii=False).encode()
                parts += [struct.pack("<I", len(text)), text]
                parts.append(_deltas(np.array(codes, np.int64)))
                continue
            if with_nulls[i]:
                parts += [b"\x01", np.packbits(nulls[a:b]).tobytes()]
            else:
                parts.append(b"\x00")
            if kind == BOOL:
                parts.append(np.packbits(values[a:b]).tobytes())
            else:
                parts.append(values[a:b].tobytes())
        out.append(_TAG + zlib.compress(b"".join(parts), _LEVEL))
    return out


def _any_per_slice(
    nulls: np.ndarray | None, slices: Sequence[tuple[int, int]], starts: np.ndarray
) -> list[bool]:
    if nulls is None:
        return [False] * len(slices)
    counts = iter(np.add.reduceat(nulls, starts).tolist() if len(starts) else [])
    return [bool(next(counts)) if b > a else False for a, b in slices]


def _length(columns: Mapping[str, Sequence[Any]], kinds: Mapping[str, str]) -> int:
    lengths = {len(columns[name]) for name in kinds}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def _prepare(
    name: str, kind: str, values: Sequence[Any], n: int
) -> tuple[str, Any, np.ndarray | None]:
    """(kind, the values as a little-endian array with nulls as 0, or a STR column's list;
    the null mask or None)."""
    if kind == STR:
        return kind, list(values), None
    nulls = None
    if None in values:
        nulls = np.fromiter((v is None for v in values), bool, n)
    if kind == INT:
        zero: Any = 0
        dtype: Any = "<i8"
    elif kind == FLOAT:
        zero, dtype = 0.0, "<f8"
    elif kind == BOOL:
        zero, dtype = False, bool
    else:
        raise ValueError(f"column {name!r}: unknown kind {kind!r}")
    if nulls is not None:
        values = [zero if v is None else v for v in values]
    return kind, np.array(values, dtype), nulls


def unpack(data: bytes, kinds: Mapping[str, str]) -> dict[str, list[Any]]:
    """The columns ``pack`` was given, as lists of Python values (ints, floats, bools, str,
    None). Raises :class:`PackingError` on bytes that do not hold them."""
    if not isinstance(data, bytes | bytearray | memoryview) or bytes(data[:4]) != _TAG:
        raise PackingError("not a packed value (no LWP1 tag)")
    try:
        body = zlib.decompress(bytes(data[4:]))
        reader = _Reader(body)
        (n,) = reader.unpack("<I")
        columns: dict[str, list[Any]] = {}
        for name, kind in kinds.items():
            if kind == STR:
                (size,) = reader.unpack("<I")
                distinct = json.loads(reader.take(size))
                columns[name] = [distinct[i] for i in _undelta(reader.take(8 * n)).tolist()]
                continue
            nulls = None
            if reader.take(1) == b"\x01":
                bits = np.frombuffer(reader.take((n + 7) // 8), np.uint8)
                nulls = np.unpackbits(bits, count=n).astype(bool).tolist()
            if kind == INT:
                values = _undelta(reader.take(8 * n)).tolist()
            elif kind == FLOAT:
                values = np.frombuffer(reader.take(8 * n), "<f8").tolist()
            elif kind == BOOL:
                bits = np.frombuffer(reader.take((n + 7) // 8), np.uint8)
                values = np.unpackbits(bits, count=n).astype(bool).tolist()
            else:
                raise ValueError(f"column {name!r}: unknown kind {kind!r}")
            if nulls is not None:
                values = [None if null else v for v, null in zip(values, nulls, strict=True)]
            columns[name] = values
        if reader.left():
            raise PackingError(f"{reader.left()} bytes left over: other columns than expected")
        return columns
    except (zlib.error, struct.error, IndexError, ValueError, TypeError) as exc:
        if isinstance(exc, PackingError):
            raise
        raise PackingError(f"a damaged packed value: {exc}") from exc


def _deltas(values: np.ndarray) -> bytes:
    # Differences wrap around in int64 and the running sum wraps back: exact for any int64.
    # (In place rather than np.diff, which costs ten times more on a group's few values.)
    out = values.astype("<i8")
    out[1:] -= values[:-1]
    return out.tobytes()


def _undelta(raw: bytes) -> np.ndarray:
    return np.cumsum(np.frombuffer(raw, "<i8"), dtype=np.int64)


class _Reader:
    def __init__(self, body: bytes) -> None:
        self._body, self._at = body, 0

    def take(self, size: int) -> bytes:
        chunk = self._body[self._at : self._at + size]
        if len(chunk) != size:
            raise PackingError("a truncated packed value")
        self._at += size
        return chunk

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def left(self) -> int:
        return len(self._body) - self._at

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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "BOOL", "FLOAT", "INT", "STR", "PackingError", "pack", "pack_slices", "unpack", "unpack_row",
]  # fmt: skip

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
    with _damage():
        n, layout = _layout(data, kinds)
        return {name: column.values(n) for name, column in layout.items()}


def unpack_row(
    data: bytes, kinds: Mapping[str, str], key: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The first row whose ``key`` columns hold ``key``'s values, or None. Only the key
    columns are decoded whole: a partition's chart reads its one row out of each poll of a
    group of hundreds."""
    with _damage():
        n, layout = _layout(data, kinds)
        match = np.ones(n, bool)
        for name, wanted in key.items():
            match &= layout[name].equals(n, wanted)
        hits = np.flatnonzero(match)
        if not len(hits):
            return None
        i = int(hits[0])
        return {name: column.value(n, i) for name, column in layout.items()}


class _Column(NamedTuple):
    kind: str
    nulls: bytes | None  # the packed mask, when the column has nulls
    raw: bytes
    names: list[str]  # a STR column's distinct values

    def _null(self, n: int) -> np.ndarray | None:
        if self.nulls is None:
            return None
        return np.unpackbits(np.frombuffer(self.nulls, np.uint8), count=n).astype(bool)

    def values(self, n: int) -> list[Any]:
        if self.kind == STR:
            return [self.names[i] for i in _undelta(self.raw).tolist()]
        if self.kind == INT:
            values = _undelta(self.raw).tolist()
        elif self.kind == FLOAT:
            values = np.frombuffer(self.raw, "<f8").tolist()
        else:
            values = np.unpackbits(np.frombuffer(self.raw, np.uint8), count=n).astype(bool)
            values = values.tolist()
        nulls = self._null(n)
        if nulls is None:
            return values
        return [None if null else v for v, null in zip(values, nulls.tolist(), strict=True)]

    def equals(self, n: int, wanted: Any) -> np.ndarray:
        """Which rows hold ``wanted`` (a bool per row)."""
        if self.kind == STR:
            if wanted not in self.names:
                return np.zeros(n, bool)
            return _undelta(self.raw) == self.names.index(wanted)
        if self.kind == INT and isinstance(wanted, int) and -(2**63) <= wanted < 2**63:
            hit = _undelta(self.raw) == wanted
            nulls = self._null(n)
            return hit if nulls is None else hit & ~nulls
        return np.array([v == wanted for v in self.values(n)], bool)

    def value(self, n: int, i: int) -> Any:
        nulls = self._null(n)
        if nulls is not None and nulls[i]:
            return None
        if self.kind == STR:
            return self.names[int(np.frombuffer(self.raw, "<i8", count=i + 1).sum())]
        if self.kind == INT:
            return int(np.frombuffer(self.raw, "<i8", count=i + 1).sum())  # wraps as packed
        if self.kind == FLOAT:
            return float(np.frombuffer(self.raw, "<f8")[i])
        return bool(np.unpackbits(np.frombuffer(self.raw, np.uint8), count=n)[i])


def _layout(data: bytes, kinds: Mapping[str, str]) -> tuple[int, dict[str, _Column]]:
    """The row count and where each column lies, nothing decoded yet."""
    if not isinstance(data, bytes | bytearray | memoryview) or bytes(data[:4]) != _TAG:
        raise PackingError("not a packed value (no LWP1 tag)")
    reader = _Reader(zlib.decompress(bytes(data[4:])))
    (n,) = reader.unpack("<I")
    bits = (n + 7) // 8
    layout = {}
    for name, kind in kinds.items():
        if kind == STR:
            (size,) = reader.unpack("<I")
            names = json.loads(reader.take(size))
            layout[name] = _Column(kind, None, reader.take(8 * n), names)
            continue
        if kind not in (INT, FLOAT, BOOL):
            raise ValueError(f"column {name!r}: unknown kind {kind!r}")
        nulls = reader.take(bits) if reader.take(1) == b"\x01" else None
        layout[name] = _Column(kind, nulls, reader.take(bits if kind == BOOL else 8 * n), [])
    if reader.left():
        raise PackingError(f"{reader.left()} bytes left over: other columns than expected")
    return n, layout


@contextmanager
def _damage() -> Iterator[None]:
    """Any failure to read packed bytes as a :class:`PackingError`."""
    try:
        yield
    except PackingError:
        raise
    except (zlib.error, struct.error, IndexError, ValueError, TypeError) as exc:
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

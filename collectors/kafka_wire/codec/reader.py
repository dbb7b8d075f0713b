"""Reading Kafka messages: one bounds-checked cursor that every decoder goes through.

Strict on purpose, because a monitor that misreads an answer reports wrong facts with
confidence. Every read is bounds-checked and names the field it was reading, so a truncated or
garbled answer raises ``WireError`` ("... reading Groups[0].Members[1].ClientId"), never
``IndexError`` or ``struct.error``. Bytes left over after a complete message are an error too:
we asked for one exact version, so extra bytes mean we misread it. A null where the schema
does not allow one is an error, as it is in Kafka's own reader. Unknown tagged fields are
skipped: that is how Kafka adds optional fields without a new version, so skipping them is the
forward-compatible reading.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

__all__ = ["Reader", "WireError", "read_uvarint", "uuid_str"]

T = TypeVar("T")


class WireError(ValueError):
    """Bytes that are not the Kafka message they should be (truncated, garbled, misframed)."""


def read_uvarint(data: bytes, what: str = "unsigned varint") -> tuple[int, int]:
    """(value, bytes used) of the unsigned varint at the start of ``data``."""
    reader = Reader(data, what)
    value = reader.uvarint("value")
    return value, reader.pos


def uuid_str(raw: bytes) -> str:
    """Kafka's text form of a Uuid (``Uuid.toString``): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


class Reader:
    """Bounds-checked reads over one message; every failure names the field being read."""

    __slots__ = ("_data", "_path", "_what", "pos")

    def __init__(self, data: bytes, what: str) -> None:
        self._data = memoryview(data)
        self._what = what
        # Names of the structs being read; array elements as (array, index), formatted only
        # on failure, as answers can hold tens of thousands of them.
        self._path: list[str | tuple[str, int]] = []
        self.pos = 0

    def fail(self, leaf: str, problem: str, at: int | None = None) -> NoReturn:
        """Raise, naming the field and the byte its value starts at."""
        names = [p if isinstance(p, str) else f"{p[0]}[{p[1]}]" for p in self._path]
        where = ".".join([*names, leaf])
        at = self.pos if at is None else at
        raise WireError(f"{self._what}: {problem} at byte {at} reading {where}")

    def _take(self, n: int, leaf: str) -> memoryview:
        left = len(self._data) - self.pos
        if n > left:
            self.fail(leaf, f"truncated (needs {n} bytes, {left} left)")
        chunk = self._data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int8(self, leaf: str) -> int:
        return int.from_bytes(self._take(1, leaf), "big", signed=True)

    def int16(self, leaf: str) -> int:
        return int.from_bytes(self._take(2, leaf), "big", signed=True)

    def int32(self, leaf: str) -> int:
        return int.from_bytes(self._take(4, leaf), "big", signed=True)

    def int64(self, leaf: str) -> int:
        return int.from_bytes(self._take(8, leaf), "big", signed=True)

    def boolean(self, leaf: str) -> bool:
        return self._take(1, leaf)[0] != 0

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...] | None:
        """Several fixed-size fields at once, or None if fewer bytes are left than they take
        (the caller then reads them one by one, so that the error names the field)."""
        if layout.size > len(self._data) - self.pos:
            return None
        values = layout.unpack_from(self._data, self.pos)
        self.pos += layout.size
        return values

    def uvarint(self, leaf: str) -> int:
        if self.pos < len(self._data) and self._data[self.pos] < 0x80:  # one byte: most are
            self.pos += 1
            return self._data[self.pos - 1]
        start, value = self.pos, 0
        for i in range(5):
            byte = self._take(1, leaf)[0]
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                return value
        self.fail(leaf, "unsigned varint longer than 5 bytes", start)

    def uuid(self, leaf: str) -> str:
        return uuid_str(bytes(self._take(16, leaf)))

    def text(self, length: int, leaf: str) -> str:
        """``length`` bytes of UTF-8 (a string whose length the caller has read)."""
        start = self.pos
        raw = self._take(length, leaf)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            self.fail(leaf, f"invalid UTF-8 ({exc.reason})", start)

    def compact_string(self, leaf: str) -> str:
        start = self.pos
        value = self.compact_nullable_string(leaf)
        if value is None:
            self.fail(leaf, "null in a non-nullable string", start)
        return value

    def compact_nullable_string(self, leaf: str) -> str | None:
        length = self.uvarint(leaf) - 1
        return None if length < 0 else self.text(length, leaf)

    def string(self, leaf: str) -> str:
        """Non-flexible STRING: int16 length (a null is an error)."""
        start = self.pos
        value = self.nullable_string(leaf)
        if value is None:
            self.fail(leaf, "null in a non-nullable string", start)
        return value

    def nullable_string(self, leaf: str) -> str | None:
        length = self.int16(leaf)
        return None if length < 0 else self.text(length, leaf)

    def legacy_bytes(self, leaf: str) -> bytes:
        """Non-flexible BYTES: int32 length (a null is an error)."""
        start = self.pos
        length = self.int32(leaf)
        if length < 0:
            self.fail(leaf, "null in non-nullable bytes", start)
        return bytes(self._take(length, leaf))

    def compact_array(self, leaf: str, item: Callable[[], T], min_size: int) -> list[T]:
        start = self.pos
        count = self.uvarint(leaf) - 1
        if count < 0:
            self.fail(leaf, "null in a non-nullable array", start)
        return self._items(leaf, start, count, item, min_size)

    def compact_nullable_array(
        self, leaf: str, item: Callable[[], T], min_size: int
    ) -> list[T] | None:
        start = self.pos
        count = self.uvarint(leaf) - 1
        if count < 0:
            return None
        return self._items(leaf, start, count, item, min_size)

    def present(self, leaf: str) -> bool:
        """The marker before a nullable struct in a flexible version: -1 null, 1 present."""
        start = self.pos
        marker = self.int8(leaf)
        if marker not in (-1, 1):
            self.fail(leaf, f"nullable struct marker {marker} (not -1 or 1)", start)
        return marker == 1

    def array(self, leaf: str, item: Callable[[], T], min_size: int) -> list[T]:
        """Non-flexible array: int32 count (-1 = null)."""
        start = self.pos
        count = self.int32(leaf)
        if count < 0:
            self.fail(leaf, "null in a non-nullable array", start)
        return self._items(leaf, start, count, item, min_size)

    def _items(
        self, leaf: str, start: int, count: int, item: Callable[[], T], min_size: int
    ) -> list[T]:
        # Refuse a count the remaining bytes cannot hold before allocating anything for it.
        left = len(self._data) - self.pos
        if count * min_size > left:
            self.fail(leaf, f"truncated ({count} elements cannot fit in {left} bytes)", start)
        items = []
        path = self._path
        for i in range(count):
            path.append((leaf, i))
            items.append(item())
            path.pop()
        return items

    def enter(self, name: str) -> None:
        """Read a nested struct: failures inside name it in their path."""
        self._path.append(name)

    def leave(self) -> None:
        self._path.pop()

    def compact_bytes(self, leaf: str) -> bytes:
        start = self.pos
        length = self.uvarint(leaf) - 1
        if length < 0:
            self.fail(leaf, "null in non-nullable bytes", start)
        return bytes(self._take(length, leaf))

    def int32_array(self, leaf: str) -> list[int]:
        return self.compact_array(leaf, lambda: self.int32("value"), 4)

    def string_array(self, leaf: str) -> list[str]:
        return self.compact_array(leaf, lambda: self.compact_string("value"), 1)

    def tagged_fields(self, leaf: str = "TaggedFields") -> dict[int, bytes]:
        """Every tagged field, as raw bytes by tag; callers take the tags they know."""
        fields: dict[int, bytes] = {}
        for i in range(self.uvarint(leaf)):
            tag = self.uvarint(f"{leaf}[{i}].tag")
            size = self.uvarint(f"{leaf}[{i}].size")
            fields[tag] = bytes(self._take(size, f"{leaf}[{i}].data"))
        return fields

    def end(self) -> None:
        extra = len(self._data) - self.pos
        if extra:
            self.fail("end of message", f"{extra} unexpected bytes")

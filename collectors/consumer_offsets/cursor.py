"""Reading the bytes of ``__consumer_offsets`` records: one bounds-checked cursor.

Separate from the schemas (``decode``, ``values``) because it is what makes decoding safe, not
what a record means: no ``IndexError`` or ``struct.error`` can escape it, only a
:class:`DecodeError` with the reason and the byte where it happened. It is stricter than
Kafka's Java readers where a monitoring reader should notice corruption rather than guess:
string/bytes lengths below -1 and trailing bytes are errors. Its reads are inlined by hand
because they run several times per record, millions of times in a catch-up.
"""

from __future__ import annotations

import struct
from typing import Final, NoReturn

__all__ = [
    "MALFORMED",
    "TRUNCATED",
    "UNKNOWN_VERSION",
    "UNSUPPORTED_RECORD_TYPE",
    "Cursor",
    "DecodeError",
]

# DecodeError.kind values: a reader counts skipped records by these, so that "the topic holds
# KIP-848 records we do not read" is not confused with "the topic holds corrupt bytes".
TRUNCATED: Final = "truncated"
MALFORMED: Final = "malformed"
UNKNOWN_VERSION: Final = "unknown_version"
UNSUPPORTED_RECORD_TYPE: Final = "unsupported_record_type"

_I16: Final = struct.Struct(">h").unpack_from
_I32: Final = struct.Struct(">i").unpack_from
_I64: Final = struct.Struct(">q").unpack_from


_MAX_STRING_LENGTH: Final = 0x7FFF  # Kafka's generated readers reject longer compact strings.


class DecodeError(ValueError):
    """Bytes that Kafka's schemas do not allow, with the reason and the byte where it happened.

    ``kind`` lets a reader tell corruption from records it merely does not read; ``offset`` is
    the byte position in the key or value (the message says which) for a hex dump; ``field``
    is the schema field being read when decoding stopped (None for trailing bytes).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = MALFORMED,
        offset: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.offset = offset
        self.field = field


class Cursor:
    """Bounds-checked reads over one buffer, so no IndexError or struct.error can escape.

    ``where`` names the structure being read; every error message starts with it. Offsets are
    absolute within ``buf`` even for a sub-range (an embedded assignment), so they line up with
    a hex dump of the whole value.
    """

    __slots__ = ("buf", "end", "pos", "where")

    def __init__(self, buf: bytes, where: str, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.where = where

    def _truncated(self, pos: int, name: str, n: int) -> NoReturn:
        left = self.end - pos
        raise DecodeError(
            f"{self.where}: truncated at byte {pos} reading {name} (needs {n} bytes, {left} left)",
            kind=TRUNCATED,
            offset=pos,
            field=name,
        )

    def take(self, n: int, name: str) -> int:
        """Claim n bytes and return where they start; for runs of fixed-size items."""
        pos = self.pos
        if pos + n > self.end:
            self._truncated(pos, name, n)
        self.pos = pos + n
        return pos

    # The readers below inline take(): they run several times per record, millions of times.

    def int16(self, name: str) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            self._truncated(pos, name, 2)
        self.pos = pos + 2
        return _I16(self.buf, pos)[0]

    def int32(self, name: str) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            self._truncated(pos, name, 4)
        self.pos = pos + 4
        return _I32(self.buf, pos)[0]

    def int64(self, name: str) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            self._truncated(pos, name, 8)
        self.pos = pos + 8
        return _I64(self.buf, pos)[0]

    def _negative_length(self, n: int, name: str, pos: int, nullable: bool) -> None:
        """Accept -1 as null where the schema allows it; anything else negative is corrupt."""
        if n == -1:
            if nullable:
                return
            raise DecodeError(
                f"{self.where}: null {name} at byte {pos}, but {name} is not nullable",
                offset=pos,
                field=name,
            )
        raise DecodeError(
            f"{self.where}: negative length {n} at byte {pos} for {name}", offset=pos, field=name
        )

    def _text(self, n: int, name: str) -> str:
        start = self.pos
        stop = start + n
        if stop > self.end:
            self._truncated_text(start, name, n)
        self.pos = stop
        # Java's new String(bytes, UTF_8) replaces bad sequences instead of failing; so do we.
        return self.buf[start:stop].decode("utf-8", "replace")

    def _truncated_text(self, start: int, name: str, n: int) -> NoReturn:
        raise DecodeError(
            f"{self.where}: truncated at byte {start} reading {name} "
            f"(length {n}, {self.end - start} bytes left)",
            kind=TRUNCATED,
            offset=start,
            field=name,
        )

    def string(self, name: str) -> str:
        buf = self.buf
        pos = self.pos
        if pos + 2 > self.end:
            self._truncated(pos, name, 2)
        n = _I16(buf, pos)[0]
        if n < 0:
            self._negative_length(n, name, pos, nullable=False)
        start = pos + 2
        stop = start + n
        if stop > self.end:
            self._truncated_text(start, name, n)
        self.pos = stop
        return buf[start:stop].decode("utf-8", "replace")

    def nullable_string(self, name: str) -> str | None:
        pos = self.pos
        n = self.int16(name)
        if n < 0:
            self._negative_length(n, name, pos, nullable=True)
            return None
        return self._text(n, name)

    def bytes_span(self, name: str, nullable: bool = False) -> tuple[int, int]:
        """Return (start, end) of a bytes field instead of copying it: most are skipped.

        A null (nullable fields only) comes back as an empty span; no caller needs to tell
        null from empty.
        """
        pos = self.pos
        n = _I32(self.buf, self.take(4, name))[0]
        if n < 0:
            self._negative_length(n, name, pos, nullable)
            return pos + 4, pos + 4
        start = self.take(n, name)
        return start, start + n

    def array_count(self, name: str, elem_size: int = 1) -> int:
        """Read a non-nullable array count, refusing counts the remaining bytes cannot hold.

        The check mirrors Kafka's "Tried to allocate a collection of size N" guard and keeps a
        corrupt count from driving a loop of billions of iterations.
        """
        pos = self.pos
        n = _I32(self.buf, self.take(4, name))[0]
        if n < 0:
            self._negative_length(n, name, pos, nullable=False)
        self._check_count(n, name, pos, elem_size)
        return n

    def _check_count(self, n: int, name: str, pos: int, elem_size: int) -> None:
        left = self.end - self.pos
        if n * elem_size > left:
            raise DecodeError(
                f"{self.where}: truncated at byte {pos}: {name} count {n} needs at least "
                f"{n * elem_size} bytes, {left} left",
                kind=TRUNCATED,
                offset=pos,
                field=name,
            )

    # Flexible versions (v4, KIP-915): unsigned varints, compact types, tagged fields.

    def uvarint(self, name: str) -> int:
        buf = self.buf
        pos = start = self.pos
        end = self.end
        value = 0
        for shift in (0, 7, 14, 21, 28):
            if pos >= end:
                raise DecodeError(
                    f"{self.where}: truncated at byte {start} reading {name} (varint)",
                    kind=TRUNCATED,
                    offset=start,
                    field=name,
                )
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return value
        raise DecodeError(
            f"{self.where}: varint longer than 5 bytes at byte {start} reading {name}",
            offset=start,
            field=name,
        )

    def _compact_length(self, name: str, nullable: bool) -> int:
        """Read an N+1 length; return N, with -1 only for a null the schema allows."""
        pos = self.pos
        n = self.uvarint(name) - 1
        if n < 0:
            self._negative_length(n, name, pos, nullable)
        return n

    def compact_string(self, name: str) -> str:
        pos = self.pos
        return self._compact_text(self._compact_length(name, False), name, pos)

    def nullable_compact_string(self, name: str) -> str | None:
        pos = self.pos
        n = self._compact_length(name, True)
        return None if n < 0 else self._compact_text(n, name, pos)

    def _compact_text(self, n: int, name: str, pos: int) -> str:
        if n > _MAX_STRING_LENGTH:
            raise DecodeError(
                f"{self.where}: {name} length {n} at byte {pos} exceeds {_MAX_STRING_LENGTH}",
                offset=pos,
                field=name,
            )
        return self._text(n, name)

    def compact_bytes_span(self, name: str, nullable: bool = False) -> tuple[int, int]:
        n = self._compact_length(name, nullable)
        if n < 0:
            return self.pos, self.pos
        start = self.take(n, name)
        return start, start + n

    def compact_array_count(self, name: str, elem_size: int = 1) -> int:
        pos = self.pos
        n = self._compact_length(name, nullable=False)
        self._check_count(n, name, pos, elem_size)
        return n

    def skip_tagged_fields(self) -> None:
        """Skip the mandatory tagged-field section; no tag of these records carries data we use."""
        count = self.uvarint("tagged_fields")
        for _ in range(count):
            tag = self.uvarint("tagged_fields")
            size = self.uvarint(f"tagged field {tag}")
            self.take(size, f"tagged field {tag}")

    def finish(self) -> None:
        if self.pos != self.end:
            raise DecodeError(
                f"{self.where}: {self.end - self.pos} trailing bytes at byte {self.pos}",
                offset=self.pos,
            )

"""A write-only file whose bytes are taken away as they come: how the Parquet and XLSX writers
(libraries that want a file) hand their output to a streaming response chunk by chunk."""

from __future__ import annotations

from typing import Any


class ByteSink:
    """Unseekable, but knows its position (Parquet and zip writers ask ``tell()``)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.closed = False
        self.position = 0

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.parts.append(chunk)
        self.position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def take(self) -> bytes:
        """The bytes written since the last call."""
        data = b"".join(self.parts)
        self.parts.clear()
        return data

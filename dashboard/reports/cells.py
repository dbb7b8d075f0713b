"""Cell-level transformations shared by the writers: ISO-8601 times and formula escaping.

Pure functions over Python values and Arrow arrays, vectorised where a report has a million
of them.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "FORMULA_PREFIXES",
    "escape_formula",
    "escape_text_array",
    "iso_ms_strings",
    "string_array_bytes",
]

# A spreadsheet runs a cell starting with one of these as a formula (CSV injection);
# tab and carriage return can hide such a prefix from a quick look in some importers.
FORMULA_PREFIXES: Final = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_REGEX: Final = "^[=+\\-@\t\r]"


def escape_formula(value: Any) -> Any:
    """A text cell a spreadsheet would evaluate gets a leading ``'``; anything else as is.

    Only strings: numbers (a negative lag) must stay numbers.
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def escape_text_array(array: pa.Array) -> pa.Array:
    """:func:`escape_formula` over a string or dictionary-of-string array.

    A dictionary array is escaped through its dictionary only (the distinct names), so a
    million rows of a few hundred group names cost a few hundred checks.
    """
    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([escape_text_array(c) for c in array.chunks], array.type)
    if pa.types.is_dictionary(array.type):
        dictionary = escape_text_array(array.dictionary)
        if dictionary is array.dictionary:
            return array
        return pa.DictionaryArray.from_arrays(array.indices, dictionary)
    if len(array) == 0:
        return array
    hit = pc.match_substring_regex(array, _FORMULA_REGEX)
    if not pc.any(hit).as_py():
        return array
    escaped = pc.binary_join_element_wise(pa.scalar("'"), array, "")
    return pc.if_else(hit, escaped, array)


def _digit_table(count: int, width: int) -> np.ndarray:
    """Row ``i`` holds the ASCII digits of ``i``, zero-padded to ``width``."""
    text = "".join(f"{i:0{width}d}" for i in range(count)).encode()
    return np.frombuffer(text, dtype=np.uint8).reshape(count, width)


_TWO: Final = _digit_table(100, 2)
_THREE: Final = _digit_table(1000, 3)


def _date_bytes(days: np.ndarray) -> np.ndarray:
    """``YYYY-MM-DD`` for each day number (days since 1970-01-01), as an (n, 10) byte table."""
    z = days + 719_468  # civil date from days (H. Hinnant's algorithm), vectorised
    era = np.floor_divide(z, 146_097)
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + (month <= 2)
    out = np.empty((len(days), 10), dtype=np.uint8)
    out[:, 0:2] = _TWO[year // 100]
    out[:, 2:4] = _TWO[year % 100]
    out[:, 4] = ord("-")
    out[:, 5:7] = _TWO[month]
    out[:, 7] = ord("-")
    out[:, 8:10] = _TWO[day]
    return out


def iso_ms_strings(ts_ms: np.ndarray | pa.Array | pa.ChunkedArray) -> pa.StringArray:
    """Epoch milliseconds (UTC) as ``YYYY-MM-DDTHH:MM:SS.mmmZ``, 24 characters each.

    Built as one fixed-width byte buffer from digit tables (dates computed once per distinct
    day): several times faster than ``pc.strftime``, and times are the widest column of a
    CSV report. Years 1970-9999; nulls are not expected (every sample has a time).
    """
    if isinstance(ts_ms, pa.Array | pa.ChunkedArray) and pa.types.is_timestamp(ts_ms.type):
        ts_ms = ts_ms.cast(pa.int64())
    ts = np.asarray(ts_ms, dtype=np.int64)
    n = len(ts)
    out = np.empty((n, 24), dtype=np.uint8)
    if n:
        days, ms_of_day = np.divmod(ts, 86_400_000)
        first = int(days.min())
        span = int(days.max()) - first + 1
        if span <= 4096:  # the usual report: a few days, each date formatted once
            out[:, 0:10] = _date_bytes(np.arange(first, first + span, dtype=np.int64))[days - first]
        else:
            out[:, 0:10] = _date_bytes(days)
        seconds, milli = np.divmod(ms_of_day, 1000)
        minutes, second = np.divmod(seconds, 60)
        hour, minute = np.divmod(minutes, 60)
        out[:, 10] = ord("T")
        out[:, 11:13] = _TWO[hour]
        out[:, 13] = ord(":")
        out[:, 14:16] = _TWO[minute]
        out[:, 16] = ord(":")
        out[:, 17:19] = _TWO[second]
        out[:, 19] = ord(".")
        out[:, 20:23] = _THREE[milli]
        out[:, 23] = ord("Z")
    offsets = np.arange(0, 24 * n + 1, 24, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(out.data)]
    )


def string_array_bytes(array: pa.Array | pa.ChunkedArray) -> bytes:
    """The concatenated values of a string array without nulls, straight from its buffers
    (how the JSON and XLSX writers turn a batch of assembled rows into output)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)
    lo, hi = offsets[array.offset], offsets[array.offset + len(array)]
    return array.buffers()[2].to_pybytes()[lo:hi]

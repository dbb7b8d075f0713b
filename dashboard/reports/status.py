"""The status a partition had at a given time, from its history of status changes.

Pure module: built from plain tuples (the database query is in :mod:`dashboard.reports.history`)
and applied to Arrow batches with a vectorised lookup, because a report asks it once per row.

Semantics: a change recorded at ``at`` holds from ``at`` (inclusive) until the partition's
next change; before a partition's first change, and for partitions with no history, the
status is ``UNKNOWN``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["STATUSES", "UNKNOWN", "StatusHistory"]

UNKNOWN: Final = "UNKNOWN"
STATUSES: Final = ("UNKNOWN", "OK", "WARN", "STALL", "STOP", "REWIND", "ERR")
_TIME_BITS: Final = 42  # epoch ms below 2^42: until the year 2109
_TIME_MASK: Final = (1 << _TIME_BITS) - 1

Change = tuple[str, str, str, int, int, str]  # source, group, topic, partition, at_ms, status


class StatusHistory:
    """Status changes of partitions, keyed by (source, group, topic, partition)."""

    def __init__(self, changes: Iterable[Change]) -> None:
        rows = sorted(changes, key=lambda c: (c[0], c[1], c[2], c[3], c[4]))
        self._statuses = list(STATUSES)
        keys: dict[tuple[str, str, str, int], int] = {}
        composite, codes = [], []
        for source, group, topic, partition, at_ms, status in rows:
            if status not in self._statuses:
                self._statuses.append(status)
            kid = keys.setdefault((source, group, topic, partition), len(keys))
            if not 0 <= at_ms <= _TIME_MASK:
                raise ValueError(f"change time out of range: {at_ms}")
            composite.append((kid << _TIME_BITS) | at_ms)
            codes.append(self._statuses.index(status))
        self._keys = keys
        self._composite = np.array(composite, dtype=np.int64)
        order = np.argsort(self._composite, kind="stable")
        self._composite = self._composite[order]
        self._status_codes = np.array(codes, dtype=np.int32)[order]
        self._dictionary = pa.array(self._statuses, pa.string())

    def __len__(self) -> int:
        return len(self._composite)

    @property
    def dictionary(self) -> pa.Array:
        return self._dictionary

    def status_at(self, source: str, group: str, topic: str, partition: int, at_ms: int) -> str:
        """One lookup (for tests and small callers)."""
        batch = pa.table(
            {
                "source": [source],
                "group": [group],
                "topic": [topic],
                "partition": pa.array([partition], pa.int32()),
            }
        )
        return self.lookup(batch, np.array([at_ms], dtype=np.int64))[0].as_py()

    def lookup(self, batch: pa.RecordBatch | pa.Table, at_ms: np.ndarray) -> pa.DictionaryArray:
        """The status in force at ``at_ms[i]`` for row ``i`` of ``batch`` (columns source,
        group, topic, partition), as a dictionary array over :attr:`dictionary`."""
        n = batch.num_rows
        indices = np.zeros(n, dtype=np.int32)  # UNKNOWN
        if n and len(self._composite):
            kid = self._key_ids_of(batch)
            known = kid >= 0
            if known.any():
                # Sample times are epoch ms >= 0 (the log refuses others) and below 2^42.
                at = np.asarray(at_ms, dtype=np.int64)
                probe = ((kid if known.all() else np.where(known, kid, 0)) << _TIME_BITS) | at
                pos = np.searchsorted(self._composite, probe, side="right") - 1
                safe = np.maximum(pos, 0)
                hit = known & (pos >= 0) & ((self._composite[safe] >> _TIME_BITS) == kid)
                indices = np.where(hit, self._status_codes[safe], 0).astype(np.int32)
        return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), self._dictionary)

    # -- internals -------------------------------------------------------------------------

    def _key_ids_of(self, batch: pa.RecordBatch | pa.Table) -> np.ndarray:
        """Per row, the history's id of the row's partition (-1: no history).

        Report batches come sorted by partition, so rows form runs of one partition: the
        partition is looked up once per run (a dict lookup) and the id repeated over the run.
        Any order is correct; sorted input is what makes it cheap.
        """
        n = batch.num_rows
        names, codes = [], []
        for column in ("source", "group", "topic"):
            values = batch.column(column)
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            if not pa.types.is_dictionary(values.type):
                values = pc.dictionary_encode(values)
            dictionary = [*values.dictionary.to_pylist(), None]
            names.append(dictionary)
            indices = values.indices
            if indices.null_count:
                indices = indices.fill_null(len(dictionary) - 1)
            codes.append(indices.to_numpy(zero_copy_only=False))
        partition = batch.column("partition")
        if isinstance(partition, pa.ChunkedArray):
            partition = partition.combine_chunks()
        if partition.null_count:
            partition = partition.fill_null(-1)
        p = partition.to_numpy(zero_copy_only=False)
        change = np.empty(n, dtype=bool)
        change[0] = True
        change[1:] = p[1:] != p[:-1]
        for code in codes:
            change[1:] |= code[1:] != code[:-1]
        starts = np.flatnonzero(change)
        s, g, t = codes
        sources, groups, topics = names
        keys = self._keys
        ids = np.fromiter(
            (
                keys.get((sources[s[i]], groups[g[i]], topics[t[i]], int(p[i])), -1)
                for i in starts.tolist()
            ),
            dtype=np.int64,
            count=len(starts),
        )
        return np.repeat(ids, np.diff(np.append(starts, n)))

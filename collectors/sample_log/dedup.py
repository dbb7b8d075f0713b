"""One sample per key: which of two copies of a sample is the one to keep, and keeping it.

The sample key is ``KEY_COLUMNS``; when two files hold the same key, the later write wins.
"Later" is the ``lagwatch.version_ns`` footer entry (:data:`VERSION_KEY`): the write time of a
micro-batch, and for a compacted file the newest version among its inputs (not the compaction
time), so a batch rewritten while compaction ran still wins over the compacted copy of its
previous version. Versions come from the writers' clocks, so two writes of one key closer
together than the hosts' clock skew may be ordered either way; collection cycles are seconds
apart. Both the reader and compaction deduplicate this way, so they agree on every sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from collectors.sample_log.schema import SORT_COLUMNS

__all__ = ["VERSION_KEY", "Loaded", "merge"]

VERSION_KEY: Final = "lagwatch.version_ns"


@dataclass(frozen=True, slots=True)
class Loaded:
    name: str
    version: int
    table: pa.Table


def merge(loaded: Sequence[Loaded]) -> pa.Table:
    """Concatenate oldest first, sort by ``SORT_COLUMNS``, keep the last row of every key.

    The sort runs on integers: each string key is replaced by the rank of its dictionary
    entry, which is cheap because a dictionary holds only the distinct values; one gather
    (``take``) then moves the surviving rows.
    """
    table = pa.concat_tables([item.table for item in loaded]).unify_dictionaries().combine_chunks()
    n = table.num_rows
    if n == 0:
        return table
    keys = []
    for name in SORT_COLUMNS:
        column = table[name].chunk(0)
        if pa.types.is_dictionary(column.type):
            rank = pc.rank(column.dictionary, sort_keys="ascending", tiebreaker="dense")
            column = pc.take(rank, column.indices)
        keys.append(column)
    keys.append(pa.array(range(n), pa.int64()))  # write order breaks ties: last write wins
    ranks = pa.table(keys, names=[f"k{i}" for i in range(len(keys))])
    order = pc.sort_indices(ranks, sort_keys=[(name, "ascending") for name in ranks.column_names])
    ranks = ranks.take(order)
    differs = pa.chunked_array([pa.array([False] * (n - 1), pa.bool_())])
    for column in ranks.columns[:-1]:
        differs = pc.or_(differs, pc.not_equal(column.slice(0, n - 1), column.slice(1)))
    last_of_key = pa.chunked_array([*differs.chunks, pa.array([True])])
    return table.take(pc.filter(order, last_of_key))

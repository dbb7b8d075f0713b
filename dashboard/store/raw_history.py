"""The raw history: each group's partitions at each poll, one ``GroupSample`` row per group and
poll with the partitions' figures packed (``dashboard.store.packing``).

The store builds the rows (:func:`sample_row`); the charts, the API's raw points and
Burrow's offsets read them back through :func:`partition_points` and :func:`group_points`,
so the packed layout is known here only. A group's sums at a poll are columns of the row,
computed as SQL's ``SUM``/``MAX`` over one row per partition did (nulls left out, null when
every partition's figure is), so a group chart unpacks nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from dashboard.monitoring.models import GroupSample
from dashboard.store.packing import (
    BOOL,
    FLOAT,
    INT,
    STR,
    pack,
    pack_slices,
    unpack,
    unpack_row,
)

__all__ = [
    "BROKER_KINDS",
    "KINDS",
    "BrokerPoint",
    "Point",
    "broker_points",
    "broker_row",
    "group_points",
    "group_samples",
    "partition_points",
    "sample_row",
    "sample_rows",
]

KINDS = {
    "topic": STR, "partition": INT, "committed": INT, "latest": INT, "lag": INT,
    "time_lag_s": FLOAT, "pending": INT, "failed": INT, "acked": INT, "stale": BOOL,
}  # fmt: skip


# The broker offsets a cycle read (``BrokerOffsets``): each partition at its own read time.
BROKER_KINDS = {
    "topic": STR, "partition": INT, "time_ms": INT, "earliest": INT, "latest": INT,
}  # fmt: skip
# (topic, partition, read time in ms, earliest, latest)
BrokerPoint = tuple[str, int, int, int | None, int | None]


class Point(NamedTuple):
    """One partition at one poll, as the raw history holds it."""

    at: datetime
    committed: int | None
    latest: int | None
    lag: int | None
    time_lag_s: float | None
    pending: int | None
    failed: int | None
    acked: int | None
    stale: bool


# (topic, partition, committed, latest, lag, time_lag_s, pending, failed, acked, stale)
Figures = tuple[str, int, Any, Any, Any, Any, Any, Any, Any, bool]


def sample_row(figures: Sequence[Figures]) -> dict[str, Any]:
    """A ``GroupSample``'s fields but its group and time (see :func:`sample_rows`)."""
    return sample_rows([figures])[0]


def sample_rows(groups: Sequence[Sequence[Figures]]) -> list[dict[str, Any]]:
    """Each group's ``GroupSample`` fields but its group and time: the partitions packed
    (sorted by topic and partition, for small deltas) and the group's sums at the poll. One
    pass for all the groups of a cycle (``packing.pack_slices``)."""
    rows: list[Figures] = []
    slices = []
    for figures in groups:
        start = len(rows)
        rows.extend(sorted(figures, key=_TOPIC_PARTITION))
        slices.append((start, len(rows)))
    transposed = list(zip(*rows, strict=True)) if rows else [() for _ in KINDS]
    columns = dict(zip(KINDS, transposed, strict=True))
    packed = pack_slices(columns, KINDS, slices)
    sums = {name: _per_slice(columns[name], slices, np.add, np.int64) for name in _SUMMED}
    top = _per_slice(columns["time_lag_s"], slices, np.maximum, np.float64)
    stale = _per_slice(columns["stale"], slices, np.logical_or, bool)
    return [
        {"partitions": b - a, "lag": sums["lag"][i], "max_time_lag_s": top[i],
         "pending": sums["pending"][i], "failed": sums["failed"][i], "acked": sums["acked"][i],
         "stale": bool(stale[i]), "figures": packed[i]}
        for i, (a, b) in enumerate(slices)
    ]  # fmt: skip


_SUMMED = ("lag", "pending", "failed", "acked")
_TOPIC_PARTITION = itemgetter(0, 1)


def _per_slice(
    values: Sequence[Any], slices: Sequence[tuple[int, int]], op: np.ufunc, dtype: type
) -> list[Any]:
    """``op`` reduced over each slice's non-null values, None where it has none (as SQL's
    ``SUM`` and ``MAX`` over one row per partition). Every slice at once (``reduceat``):
    a cycle's groups are a few hundred slices of one column."""
    starts = [a for a, b in slices if b > a]
    if not starts:
        return [None] * len(slices)
    if None in values:
        present = np.array([v is not None for v in values], bool)
        if not present.any():
            return [None] * len(slices)
        empty = op.identity if op.identity is not None else -np.inf
        array = np.array([empty if v is None else v for v in values], dtype)
        found = iter(np.logical_or.reduceat(present, starts).tolist())
    else:
        array = np.array(values, dtype)
        found = None
    reduced = iter(op.reduceat(array, starts).tolist())
    out: list[Any] = []
    for a, b in slices:
        if b <= a:
            out.append(None)
            continue
        value = next(reduced)
        out.append(value if found is None or next(found) else None)
    return out


def broker_row(offsets: Sequence[BrokerPoint]) -> tuple[int, bytes]:
    """(newest read time in ms, the points packed) of one cycle's broker offsets, packed in
    the order of their read time (the order the time tables take them in)."""
    rows = sorted(offsets, key=lambda o: (o[2], o[0], o[1]))
    columns = {name: [r[i] for r in rows] for i, name in enumerate(BROKER_KINDS)}
    return max((r[2] for r in rows), default=0), pack(columns, BROKER_KINDS)


def broker_points(data: bytes) -> list[BrokerPoint]:
    """The points :func:`broker_row` packed, oldest read first."""
    columns = unpack(data, BROKER_KINDS)
    return list(zip(*(columns[name] for name in BROKER_KINDS), strict=True))


def group_samples(points: Iterable[tuple[int, datetime, Figures]]) -> list[GroupSample]:
    """Unsaved ``GroupSample`` rows of partition points given as (group id, time, figures):
    a bulk load of history (the upgrade of stored rows, benchmarks' and tests' worlds)."""
    by_key: dict[tuple[int, datetime], list[Figures]] = {}
    for group_id, at, figures in points:
        by_key.setdefault((group_id, at), []).append(figures)
    rows = sample_rows(list(by_key.values()))
    return [
        GroupSample(group_id=group_id, at=at, **row)
        for (group_id, at), row in zip(by_key, rows, strict=True)
    ]


def _rows(group_id: int, since: datetime, until: datetime | None) -> Iterator[tuple]:
    rows = GroupSample.objects.filter(group_id=group_id, at__gte=since)
    if until is not None:
        rows = rows.filter(at__lt=until)
    yield from rows.order_by("at").values_list("at", "figures").iterator(chunk_size=500)


def _points(at: datetime, columns: dict[str, list], i: int) -> Point:
    return Point(
        at, columns["committed"][i], columns["latest"][i], columns["lag"][i],
        columns["time_lag_s"][i], columns["pending"][i], columns["failed"][i],
        columns["acked"][i], columns["stale"][i],
    )  # fmt: skip


def partition_points(
    group_id: int, topic: str, partition: int, since: datetime, until: datetime | None = None
) -> list[Point]:
    """One partition's polls with ``since <= at < until``, oldest first (polls of its group
    where it was not collected are left out)."""
    out = []
    key = {"partition": partition, "topic": topic}
    for at, data in _rows(group_id, since, until):
        row = unpack_row(data, KINDS, key)
        if row is not None:
            out.append(Point(at, *(row[name] for name in Point._fields[1:])))
    return out


def group_points(
    group_id: int, since: datetime, until: datetime | None = None
) -> dict[tuple[str, int], list[Point]]:
    """Every partition's polls of one group with ``since <= at < until``, oldest first."""
    out: dict[tuple[str, int], list[Point]] = {}
    for at, data in _rows(group_id, since, until):
        columns = unpack(data, KINDS)
        for i, key in enumerate(zip(columns["topic"], columns["partition"], strict=True)):
            out.setdefault(key, []).append(_points(at, columns, i))
    return out

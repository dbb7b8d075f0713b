"""The one place a cycle is written: database rows, Parquet micro-batch, stale rows.

Both stores get the same staleness (:mod:`collectors.cycle.stale`), and the sample log gets
the rows an unreachable source hides too, so that the status job sees the outage itself
(SOURCE_UNREACHABLE) instead of a gap it would read as a consumer that stopped committing.

The micro-batch is written on a thread of its own while the database transaction runs: both
spend most of their time outside the interpreter (SQLite, Arrow and Parquet), so the cycle
takes the longer of the two instead of their sum. Either failing fails the cycle (after both
have ended); a retry with the same ``cycle_ms`` rewrites the same rows and replaces the same
micro-batch file.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pyarrow as pa

from collectors.cycle.stale import Staleness
from collectors.cycle.store_port import CycleStore
from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome
from collectors.records import SHARE_STATE_COLUMNS, share_state_values

log = logging.getLogger(__name__)

__all__ = ["SampleBatches", "sample_columns", "sample_rows", "write_cycle"]


class SampleBatches(Protocol):
    """What the write needs of ``collectors.sample_log.SampleLog``."""

    def write_batch(self, cluster: str, cycle_id: str, rows: pa.Table) -> object: ...


def write_cycle(
    store: CycleStore,
    sample_log: SampleBatches,
    outcome: CycleOutcome,
    stored: Callable[[], object] = lambda: None,
) -> None:
    """Write ``outcome`` to the database and the sample log; raises if either failed.

    ``stored`` is called once the database has the cycle, even if the log write then fails:
    what the runner remembers of the store must follow the store, not the log.
    """
    stale = Staleness.of(outcome)
    # Read before the store's transaction, which leaves these rows' figures as they are
    # (it only marks them stale, and the log's rows say stale themselves).
    last_known = store.last_known(stale.hidden) if stale.hidden else []
    columns = sample_columns(outcome, stale, last_known)
    cluster, cycle_ms = outcome.cluster, outcome.cycle_ms
    log_write = _Background(
        _write_sample_log, sample_log, cluster, f"{cluster}@{cycle_ms}", columns
    )
    try:
        store.write_cycle(outcome, stale)
    except BaseException:
        if (error := log_write.wait()) is not None:
            log.error("sample log write of %s@%d failed too: %r", cluster, cycle_ms, error)
        raise
    stored()
    if (error := log_write.wait()) is not None:
        raise error


def sample_columns(
    outcome: CycleOutcome,
    stale: Staleness | None = None,
    last_known: Sequence[PartitionFigure] = (),
) -> dict[str, list[Any]]:
    """The cycle's rows of the Parquet sample log (``collectors.sample_log.SAMPLE_SCHEMA``),
    column by column: what ``SampleLog.write_batch`` takes fastest (as ``pyarrow.table``).

    A blind partition (no broker offsets because the broker was unreachable) is written
    stale: its committed offset is fresh but its lag is not known. ``last_known`` (what an
    unreachable source hides) follow the cycle's figures, all stale.
    """
    stale = Staleness.of(outcome) if stale is None else stale
    figures = outcome.figures
    blind = stale.blind
    flags = [blind(f) for f in figures] if stale.broker_down else [False] * len(figures)
    if last_known:
        figures = [*figures, *last_known]
        flags += [True] * len(last_known)
    return {
        "ts_ms": [outcome.cycle_ms] * len(figures),
        "source": [str(f.source) for f in figures],
        "group": [f.group for f in figures],
        "topic": [f.topic for f in figures],
        "partition": [f.partition for f in figures],
        "committed": [f.committed for f in figures],
        "earliest": [f.earliest for f in figures],
        "latest": [f.latest for f in figures],
        "lag": [f.lag for f in figures],
        "time_lag_s": [f.time_lag_s for f in figures],
        "commit_time_ms": [f.commit_time_ms for f in figures],
        "commit_version": [f.commit_version for f in figures],
        "owner": [f.owner for f in figures],
        "topology_id": [f.topology_id for f in figures],
        "alive": [f.alive for f in figures],
        "pending": [f.pending for f in figures],
        "failed": [f.failed for f in figures],
        "acked": [f.acked for f in figures],
        "stale": flags,
        "emitted": [f.emitted for f in figures],
        "max_spout_pending": [f.max_spout_pending for f in figures],
        "spout_pending": [f.spout_pending for f in figures],
        "smallest_failed_offset": [f.smallest_failed_offset for f in figures],
        "max_offset_behind": [f.max_offset_behind for f in figures],
        "share": [f.share for f in figures],
        "lag_upper_bound": [f.lag_upper_bound for f in figures],
        **share_state_columns(figures),
    }


def share_state_columns(figures: Sequence[PartitionFigure]) -> dict[str, list[Any]]:
    """The share-state columns (``SHARE_STATE_COLUMNS``): nulls but for a share group's
    partitions whose state topic was read."""
    if not any(f.share_state is not None for f in figures):
        return {name: [None] * len(figures) for name in SHARE_STATE_COLUMNS}
    rows = [share_state_values(f.share_state) for f in figures]
    return {name: [r[i] for r in rows] for i, name in enumerate(SHARE_STATE_COLUMNS)}


def sample_rows(outcome: CycleOutcome) -> list[dict[str, Any]]:
    """``sample_columns`` row by row, one dict per partition."""
    columns = sample_columns(outcome)
    rows = zip(*columns.values(), strict=True)
    return [dict(zip(columns, values, strict=True)) for values in rows]


def _write_sample_log(log: SampleBatches, cluster: str, cycle_id: str, columns: dict) -> None:
    log.write_batch(cluster, cycle_id, pa.table(columns))


class _Background:
    """A call run on a thread of its own; ``wait`` returns its exception (None if none)."""

    def __init__(self, fn: Callable[..., object], *args: object) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="sample-log")
        self._thread.start()

    def _run(self, fn: Callable[..., object], args: tuple) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # handed to the cycle's thread by wait()
            self._error = exc

    def wait(self) -> BaseException | None:
        self._thread.join()
        return self._error

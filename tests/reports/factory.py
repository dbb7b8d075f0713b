"""Sample logs with known values for the report tests: real files written by ``SampleLog``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from collectors.sample_log import SampleLog

T0 = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1000)  # a midnight, UTC
MINUTE = 60_000
HOUR = 3_600_000


def sample(
    ts_ms: int,
    group: str,
    topic: str,
    partition: int,
    committed: int,
    latest: int | None = None,
    source: str = "kafka",
    time_lag_s: float | None = 0.0,
) -> dict[str, Any]:
    latest = committed if latest is None else latest
    return {
        "ts_ms": ts_ms, "source": source, "group": group, "topic": topic,
        "partition": partition, "committed": committed, "latest": latest,
        "lag": latest - committed, "time_lag_s": time_lag_s, "stale": False,
    }  # fmt: skip


def write_cycles(log: SampleLog, cluster: str, samples: list[dict[str, Any]]) -> None:
    """One collection cycle per distinct time, as the collector writes them."""
    by_time: dict[int, list[dict[str, Any]]] = {}
    for row in samples:
        by_time.setdefault(row["ts_ms"], []).append(row)
    for ts, rows in sorted(by_time.items()):
        log.write_batch(cluster, f"{cluster}-{ts}", rows)


def regular_samples(
    start_ms: int,
    cycles: int,
    every_ms: int,
    keys: list[tuple[str, str, str, int]],
) -> list[dict[str, Any]]:
    """Every key sampled every ``every_ms``; committed = cycle number * 10 + partition,
    latest = committed + cycle number (so lag = cycle number), time lag = cycle / 2."""
    rows = []
    for c in range(cycles):
        for source, group, topic, partition in keys:
            committed = c * 10 + partition
            rows.append(
                sample(start_ms + c * every_ms, group, topic, partition, committed,
                       committed + c, source, c / 2)
            )  # fmt: skip
    return rows


def big_table(cluster: str, start_ms: int, n_rows: int, partitions: int, every_ms: int) -> pa.Table:
    """``n_rows`` samples of ``partitions`` partitions (vectorised, for the million-row tests);
    lag = partition % 13 - 3 (so some negative), time lag = partition % 5 * 1.25."""
    import numpy as np

    cycle = np.arange(n_rows, dtype=np.int64) // partitions
    part = (np.arange(n_rows, dtype=np.int64) % partitions).astype(np.int32)
    committed = cycle * 100 + part
    lag = (part % 13).astype(np.int64) - 3

    def names(values: list[str], index: np.ndarray) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(pa.array(index.astype(np.int32)), pa.array(values))

    zeros = np.zeros(n_rows, dtype=np.int32)
    return pa.table(
        {
            "ts_ms": pa.array(start_ms + cycle * every_ms),
            "cluster": names([cluster], zeros),
            "source": names(["kafka"], zeros),
            "group": names([f"group-{i:02d}" for i in range(40)], part % 40),
            "topic": names([f"topic-{i}" for i in range(7)], part % 7),
            "partition": pa.array(part),
            "committed": pa.array(committed),
            "latest": pa.array(committed + lag),
            "lag": pa.array(lag),
            "time_lag_s": pa.array((part % 5).astype(np.float64) * 1.25),
            "stale": pa.array(np.zeros(n_rows, dtype=bool)),
        }
    )

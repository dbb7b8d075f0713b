"""One row per spout per cycle: Storm UI's whole-spout figures joined with its push."""

from __future__ import annotations

import pytest

from collectors.records import SpoutFigures
from collectors.spout_totals import SpoutTotals, spout_totals


def ui(topology: str = "topo-1", spout: str = "sp", **f) -> SpoutFigures:
    return SpoutFigures(topology, spout, **f)


def pushed(partition: int, topology: str = "topo-1", spout: str = "sp", **f) -> SpoutFigures:
    return SpoutFigures(topology, spout, topic="t", partition=partition, **f)


@pytest.mark.parametrize(
    ("spouts", "expected"),
    [
        ([], []),
        # Storm UI alone: its counts and latency; no in flight or cap when it gives none.
        (
            [ui(emitted=10, acked=8, failed=1, complete_latency_ms=12.5)],
            [SpoutTotals("topo-1", "sp", 10, 8, 1, 12.5)],
        ),
        # Storm UI alone, in flight (exact counts) and cap (the topology's, times the tasks).
        (
            [ui(emitted=10, acked=8, failed=1, complete_latency_ms=12.5, spout_pending=1,
                max_spout_pending=800)],
            [SpoutTotals("topo-1", "sp", 10, 8, 1, 12.5, 1, 800)],
        ),  # fmt: skip
        # Both give in flight and cap: the push's win (it counts the task itself).
        (
            [ui(emitted=10, acked=8, failed=1, spout_pending=1, max_spout_pending=800),
             pushed(0, spout_pending=7, max_spout_pending=9)],
            [SpoutTotals("topo-1", "sp", 10, 8, 1, None, 7, 9)],
        ),  # fmt: skip
        # The push gives in flight but no cap: Storm UI's cap.
        (
            [ui(emitted=10, spout_pending=1, max_spout_pending=800), pushed(0, spout_pending=7)],
            [SpoutTotals("topo-1", "sp", 10, pending=7, max_spout_pending=800)],
        ),
        # The push gives neither: Storm UI's.
        (
            [ui(emitted=10, spout_pending=1, max_spout_pending=800), pushed(0, acked=3)],
            [SpoutTotals("topo-1", "sp", 10, pending=1, max_spout_pending=800)],
        ),
        # The push alone: counts summed over the partitions, the task's figures, no latency.
        (
            [
                pushed(0, emitted=5, acked=4, failed=0, pending=1, spout_pending=20,
                       max_spout_pending=20),
                pushed(1, emitted=7, acked=6, failed=1, pending=1, spout_pending=20,
                       max_spout_pending=20),
            ],
            [SpoutTotals("topo-1", "sp", 12, 10, 1, None, 20, 20)],
        ),  # fmt: skip
        # Both: Storm UI's counts win (it counts what the executors saw), the push adds the task.
        (
            [
                ui(emitted=100, acked=90, failed=2, complete_latency_ms=3.0),
                pushed(0, emitted=5, acked=4, failed=0, spout_pending=7, max_spout_pending=9),
            ],
            [SpoutTotals("topo-1", "sp", 100, 90, 2, 3.0, 7, 9)],
        ),
        # A push without emitted counts gives no emitted, not 0.
        ([pushed(0, acked=4, failed=0)], [SpoutTotals("topo-1", "sp", None, 4, 0)]),
        # Different topology instances or spout ids stay apart, sorted.
        (
            [ui("topo-2", "sp", emitted=1), ui("topo-1", "zz", emitted=2),
             pushed(0, "topo-1", "aa", spout_pending=3)],
            [SpoutTotals("topo-1", "aa", pending=3), SpoutTotals("topo-1", "zz", emitted=2),
             SpoutTotals("topo-2", "sp", emitted=1)],
        ),  # fmt: skip
    ],
)
def test_spout_totals(spouts: list[SpoutFigures], expected: list[SpoutTotals]) -> None:
    assert spout_totals(spouts) == expected

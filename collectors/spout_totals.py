"""One row per spout per cycle: what Storm UI says of the whole spout, with what the spout
pushed about its task (pure).

Storm UI's REST API gives emitted, acked, failed and complete latency per spout (component),
and, from the topology's configuration, the cap and (when the counts are exact) the tuples in
flight (``collectors.storm_ui``); the spout's own push (docs/INGEST.md) gives per partition
counts, the task's tuples in flight and its cap, but no latency. The spout's history (the
dashboard's chart, ``/metrics``, the API) wants both on one row, so they are joined here by
topology instance id and spout id: Storm UI's counts, the push's in flight and cap, Storm UI's
where the push gives none (or there is no push, as with a real Storm that pushes nothing). A
spout Storm UI does not list (no UI configured, or a component id other than
``SpoutConfig.id``) still gets a row from its push: its partitions' counts summed, no latency.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from collectors.records import SpoutFigures

__all__ = ["SpoutTotals", "spout_totals"]


@dataclass(frozen=True, slots=True)
class SpoutTotals:
    """A spout's figures at one cycle; None: no source gave it."""

    topology_id: str
    spout_id: str
    emitted: int | None = None
    acked: int | None = None
    failed: int | None = None
    complete_latency_ms: float | None = None
    pending: int | None = None  # the tuples in flight (pushed, else Storm UI's)
    max_spout_pending: int | None = None  # topology.max.spout.pending (pushed, else Storm UI's)


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def spout_totals(spouts: Iterable[SpoutFigures]) -> list[SpoutTotals]:
    """Whole-spout rows (``partition`` None, Storm UI's) joined with the pushed per-partition
    figures of the same topology instance and spout id, sorted by those two; one row each."""
    ui: dict[tuple[str, str], SpoutFigures] = {}
    pushed: dict[tuple[str, str], list[SpoutFigures]] = {}
    for s in spouts:
        key = (s.topology_id, s.spout_id)
        if s.partition is None:
            ui[key] = s
        else:
            pushed.setdefault(key, []).append(s)
    rows = []
    for key in sorted(ui.keys() | pushed.keys()):
        parts = pushed.get(key, [])
        whole = ui.get(key)
        pending = next((p.spout_pending for p in parts if p.spout_pending is not None), None)
        cap = next((p.max_spout_pending for p in parts if p.max_spout_pending is not None), None)
        if whole is not None:
            counts = (whole.emitted, whole.acked, whole.failed)
            latency = whole.complete_latency_ms
            pending = whole.spout_pending if pending is None else pending
            cap = whole.max_spout_pending if cap is None else cap
        else:
            fields = ("emitted", "acked", "failed")
            counts = tuple(_sum(getattr(p, f) for p in parts) for f in fields)
            latency = None
        rows.append(SpoutTotals(*key, *counts, latency, pending, cap))
    return rows

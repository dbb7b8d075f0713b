"""What one collection cycle of one cluster produced, as plain data (no Django).

The cycle runner fills it from the adapters' results; the store writes it. Keeping it a
plain value makes the store testable without sources and the runner testable without a DB.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.figures import PartitionFigure
from collectors.rebalance import RebalanceEvent
from collectors.records import (
    BrokerFigures,
    GroupSnapshot,
    PartitionOffsets,
    SourceError,
    SpoutFigures,
    TopicRetention,
)


@dataclass(frozen=True, slots=True)
class SourceOutcome:
    """How one source fared in a cycle: the basis of source health and staleness."""

    source: str
    reachable: bool
    started_ms: int
    finished_ms: int
    error: str = ""


@dataclass
class CycleOutcome:
    cluster: str
    cycle_ms: int  # the cycle's scheduled time: the idempotency key of every sample
    figures: list[PartitionFigure] = field(default_factory=list)
    # When the figures' time lags were computed (the cycle's read time, not its slot): what a
    # time lag that only grew since the last cycle is recomputed at (``time_lag_from_ms``).
    figures_ms: int | None = None
    groups: list[GroupSnapshot] = field(default_factory=list)
    offsets: list[PartitionOffsets] = field(default_factory=list)
    spouts: list[SpoutFigures] = field(default_factory=list)
    rebalances: list[RebalanceEvent] = field(default_factory=list)
    sources: list[SourceOutcome] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    brokers: list[BrokerFigures] = field(default_factory=list)  # purgatory figures (DOMAIN §5)
    topic_configs: list[TopicRetention] = field(default_factory=list)
    # The collector process that ran the cycle (``collectors.cycle.runner.collector_id``):
    # stored with the cycle, so that the next process knows whose memory the store holds.
    collected_by: str = ""
    # Each reachable source's identity marks (``CollectionResult.identity``), by source.
    identities: dict[str, dict[str, str]] = field(default_factory=dict)

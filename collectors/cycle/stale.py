"""What a cycle's unreachable sources leave stale: decided here once, for both stores.

The database and the Parquet sample log must agree on it, or the status job (reading the
log) and the UI (reading the database) would tell one outage two ways. An unreachable
source's partitions keep their last known figures, marked stale, so that the evaluator sees
SOURCE_UNREACHABLE instead of a gap it would read as a consumer that stopped committing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome
from collectors.records import Source

__all__ = ["STALE_WHEN_UNREACHABLE", "Staleness", "hidden_by"]

# Whose figures go stale when an adapter cannot reach its system: a ZooKeeper outage hides
# both ZooKeeper consumers and Storm spouts (spouts keep their offsets there); a Storm UI
# outage only loses spout counts, the offsets still come from ZooKeeper; a broker metrics
# endpoint down loses only purgatory figures.
STALE_WHEN_UNREACHABLE: dict[Source, tuple[Source, ...]] = {
    Source.KAFKA: (Source.KAFKA,),
    Source.ZOOKEEPER: (Source.ZOOKEEPER, Source.STORM),
    Source.STORM: (),
    Source.BROKER_METRICS: (),  # brokers' purgatory figures: no consumer's lag depends on them
    Source.SAMPLE_LOG: (),  # the log's store: its batches wait in the collector's spool
}


def hidden_by(sources: Iterable[str]) -> frozenset[str]:
    """The sources whose groups the named adapters stand for (by ``STALE_WHEN_UNREACHABLE``).

    Also what a source's errors replace: a ZooKeeper read speaks for the spouts too.
    """
    return frozenset(str(h) for s in sources for h in STALE_WHEN_UNREACHABLE.get(Source(s), ()))


@dataclass(frozen=True, slots=True)
class Staleness:
    """One cycle's stale verdicts.

    ``hidden``: sources whose stored groups and partitions an unreachable adapter hides; their
    last known figures stay as they are, marked stale. ``broker_down``: the broker was not
    reached, so a partition read elsewhere (ZooKeeper) has a fresh commit but no broker
    offsets: it is *blind* (:meth:`blind`), written with its last known broker figures.
    """

    hidden: frozenset[str] = frozenset()
    broker_down: bool = False

    @classmethod
    def of(cls, outcome: CycleOutcome) -> Staleness:
        down = [s.source for s in outcome.sources if not s.reachable]
        return cls(hidden=hidden_by(down), broker_down=Source.KAFKA in down)

    def blind(self, figure: PartitionFigure) -> bool:
        return self.broker_down and figure.latest is None

"""The store as the cycle runner sees it: the few calls it makes, and nothing of Django.

The runner needs a database for a few things only: the broker offsets and the groups other
collector processes stored (its time tables and rebalance tracker catch up on them), the
reports clients pushed to the ingest endpoint, and the cycle's own write. Naming them here
keeps ``collectors/`` free of the ORM, and lets a test drive a whole cycle with a fake store.
One store object serves one cluster; the web app builds one per cycle (its
``dashboard/store/cycle.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from collectors.client_reports import ClientReport
from collectors.cycle.stale import Staleness
from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome
from collectors.records import GroupSnapshot, SpoutFigures

__all__ = ["BrokerOffsetPoint", "CycleStore", "StoredCycle"]

# (topic, partition, at_ms, latest): one stored latest offset of a partition.
BrokerOffsetPoint = tuple[str, int, int, int]
# (cycle_ms, collected_by): the newest cycle stored for a cluster and the process that ran it.
StoredCycle = tuple[int, str]


class CycleStore(Protocol):
    def broker_offsets_since(self, since_ms: int) -> Iterable[BrokerOffsetPoint]:
        """Latest offsets stored after ``since_ms``, oldest first (any process's cycles).

        Read at the start of each cycle: a second process collecting the cluster, or a
        restarted one, gets the offset history time lag needs instead of starting blind.
        """
        ...

    def last_cycle(self) -> StoredCycle | None:
        """The newest cycle stored for the cluster and which collector process stored it;
        None before the first. Read at the start of each cycle: a process whose own last
        cycle is not the newest rebuilds its rebalance tracker (:meth:`group_snapshots`)."""
        ...

    def group_snapshots(self) -> list[GroupSnapshot]:
        """Every group of the cluster as the newest cycle that saw it stored it, except the
        groups deleted since: what the rebalance tracker of the process that stored that
        cycle held. Only the groups a source described (Kafka, ZooKeeper consumers)."""
        ...

    def recent_reports(
        self, now_ms: int, max_age_s: float
    ) -> tuple[list[ClientReport], list[SpoutFigures]]:
        """Pushed reports received within ``max_age_s`` before ``now_ms``, oldest first:
        librdkafka clients' reports and spouts' per-partition figures. Older ones are not
        evidence: a client that stopped pushing is not reporting."""
        ...

    def last_known(self, sources: frozenset[str]) -> list[PartitionFigure]:
        """The stored figures of every partition of the groups of ``sources`` that has a
        commit: what an unreachable source hides, to be logged again as stale. Called before
        :meth:`write_cycle`, which leaves those figures as they are."""
        ...

    def write_cycle(self, outcome: CycleOutcome, stale: Staleness) -> None:
        """The cycle's database rows, in one transaction, keyed by ``outcome.cycle_ms`` so
        that a retry rewrites the same rows; raises if they could not be written. Among them
        the retention settings of the topics read this cycle (``outcome.topic_configs``,
        upserted per topic; a topic not read keeps its stored settings)."""
        ...

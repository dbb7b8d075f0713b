"""A Storm spout's per-partition figures to Lagwatch (docs/INGEST.md, "Spout figures"):
what Storm UI does not give, a partition's pending set, failed and acked counts and its
smallest failed offset, with the task's tuples in flight against ``max.spout.pending``.

A report is checked when it is built (names non-empty and at most 255 characters; counts
and offsets non-negative 64-bit integers; each partition once), so a mistake raises in the
caller's code instead of being refused later by the endpoint.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from lagwatch_client.sender import SPOUT, IngestSender

log = logging.getLogger("lagwatch_client")

_MAX_NAME = 255
_MAX_INT = 2**63 - 1


def _name(value: object, what: str) -> None:
    if not isinstance(value, str) or not value or len(value) > _MAX_NAME:
        raise ValueError(f"{what}: a non-empty string of at most {_MAX_NAME} characters")


def _count(value: object, what: str, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_INT:
        raise ValueError(f"{what}: a non-negative 64-bit integer, got {value!r}")


@dataclass(frozen=True)
class SpoutPartition:
    """One partition's figures: storm-kafka's pending set (emitted, not yet acked, failed
    and waiting included), failed and acked (and emitted) since the spout started, and the
    lowest offset waiting for a retry (None: nothing failed is waiting)."""

    topic: str
    partition: int
    pending: int
    failed: int
    acked: int
    smallest_failed_offset: int | None = None
    emitted: int | None = None
    max_offset_behind: int | None = None

    def __post_init__(self) -> None:
        _name(self.topic, "topic")
        where = f"partitions[{self.topic}/{self.partition}]"
        _count(self.partition, f"{where}.partition")
        for what in ("pending", "failed", "acked"):
            _count(getattr(self, what), f"{where}.{what}")
        for what in ("smallest_failed_offset", "emitted", "max_offset_behind"):
            _count(getattr(self, what), f"{where}.{what}", optional=True)

    def to_dict(self) -> dict:
        doc = {
            "topic": self.topic, "partition": self.partition, "pending": self.pending,
            "failed": self.failed, "acked": self.acked,
            "smallest_failed_offset": self.smallest_failed_offset,
        }  # fmt: skip
        if self.emitted is not None:
            doc["emitted"] = self.emitted
        if self.max_offset_behind is not None:
            doc["max_offset_behind"] = self.max_offset_behind
        return doc


@dataclass(frozen=True)
class SpoutReport:
    """One spout's push. ``max_spout_pending`` is ``topology.max.spout.pending`` (None: not
    set); ``pending`` the spout task's tuples in flight, the figure that cap limits (for a
    report covering several tasks, their sum, with the cap times the tasks); ``time_ms`` when
    the figures were true (default: when the report is pushed)."""

    topology_id: str
    spout_id: str
    max_spout_pending: int | None
    partitions: Sequence[SpoutPartition] = field(default_factory=tuple)
    topology_name: str | None = None
    time_ms: int | None = None
    pending: int | None = None
    max_offset_behind: int | None = None

    def __post_init__(self) -> None:
        _name(self.topology_id, "topology_id")
        _name(self.spout_id, "spout_id")
        if self.topology_name is not None:
            _name(self.topology_name, "topology_name")
        for what in ("max_spout_pending", "time_ms", "pending", "max_offset_behind"):
            _count(getattr(self, what), what, optional=True)
        object.__setattr__(self, "partitions", tuple(self.partitions))
        seen = set()
        for p in self.partitions:
            if not isinstance(p, SpoutPartition):
                raise ValueError(f"partitions: SpoutPartition expected, got {type(p).__name__}")
            if (p.topic, p.partition) in seen:
                raise ValueError(f"partitions: {p.topic}/{p.partition} appears twice")
            seen.add((p.topic, p.partition))

    def to_dict(self) -> dict:
        doc: dict = {
            "topology_id": self.topology_id,
            "spout_id": self.spout_id,
            "time_ms": self.time_ms if self.time_ms is not None else int(time.time() * 1000),
            "max_spout_pending": self.max_spout_pending,
            "pending": self.pending,
            "partitions": [p.to_dict() for p in self.partitions],
        }
        if self.topology_name is not None:
            doc["topology_name"] = self.topology_name
        if self.max_offset_behind is not None:
            doc["max_offset_behind"] = self.max_offset_behind
        return doc

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


class SpoutPusher:
    """Pushes spout reports through an ``IngestSender``: ``push(report)`` from your own code,
    or give ``sample`` (returning the reports of the moment) and ``start()``: a thread of the
    pusher's calls it every ``interval_s`` and pushes what it returns. ``close()`` stops that
    thread (the sender is closed by its owner)."""

    def __init__(
        self,
        sender: IngestSender,
        sample: Callable[[], Iterable[SpoutReport]] | None = None,
        interval_s: float = 5.0,
    ) -> None:
        self.sender = sender
        self._sample = sample
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.pushed = 0
        self.dropped = 0
        self.sampled = 0

    def push(self, report: SpoutReport) -> bool:
        """Queue the report as its spout's latest; False if the sender dropped it."""
        key = f"{report.topology_id}\x00{report.spout_id}"
        if self.sender.submit(SPOUT, report.to_json(), key=key):
            self.pushed += 1
            return True
        self.dropped += 1
        return False

    def sample_once(self) -> int:
        """Push what ``sample`` returns now; how many reports."""
        if self._sample is None:
            raise ValueError("no sample function given")
        count = 0
        for report in self._sample():
            self.push(report)
            count += 1
        self.sampled += count
        return count

    def start(self) -> None:
        if self._sample is None:
            raise ValueError("no sample function given: call push() instead")
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="lagwatch-spout", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=self._interval_s + 1)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.sample_once()
            except Exception:  # a sampling bug must not end the pushes for good
                log.exception("lagwatch-client: sampling spout figures failed")

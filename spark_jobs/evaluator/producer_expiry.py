"""``PRODUCER_EXPIRY``: records a producer gave up on, a topic's diagnosis (DOMAIN §4).

**Why per topic, and apart from ``decide``.** A record that expired in the producer
(``delivery.timeout.ms``, librdkafka's ``_MSG_TIMED_OUT``) never reached the log, so no
offset, lag or commit of a partition's window shows it, and the partition table of ``decide``
has nothing to decide it from. What shows it is the producers' own delivery-report counts,
which they push per client and topic (docs/INGEST.md); and a record that expired before the
partitioner placed it belongs to no partition at all. So this is the evaluator's one rule per
topic: it never changes a partition's status or stored diagnosis; documents list it apart
(``producer_expiry``), pages show it on the groups reading the topic, and alert rules see it
on the topic's partitions (docs/ALERTS.md).

**Figures in, decision here.** ``collectors/producer_deliveries.py`` parses the pushed counts
and merges them across client restarts (each client's expired total and when it last grew);
``dashboard/monitoring/producers.py`` reads the stored rows and calls :func:`expiring_topics`
for every reader (the producers page, ``/api/v1/producers/``, ``/metrics``,
``lagwatch_status``, the alert rules). The table of cases is
``tests/spark_jobs/test_producer_expiry.py``.

Pure, no Django, like the rest of the package.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from spark_jobs.evaluator.types import PRODUCER_EXPIRY

__all__ = [
    "PRODUCER_EXPIRY",
    "ProducerCounts",
    "expired_lately",
    "expiring_topics",
    "expiry_sentence",
]


class ProducerCounts(Protocol):
    """One producer client's figures for one topic, as the collectors merged them
    (``collectors.producer_deliveries.ProducerTopic`` is one)."""

    @property
    def topic(self) -> str: ...

    @property
    def expired(self) -> int | None:
        """Records that timed out, counted since the client's first push (None: not counted)."""

    @property
    def expired_grew_at_ms(self) -> int | None:
        """When that count last grew, by the client's report time (None: never seen to)."""


def expired_lately(
    expired: int | None, grew_at_ms: int | None, now_ms: int, window_ms: int
) -> bool:
    """The rule, for one client and topic: records expired, and their count grew within
    ``window_ms`` before ``now_ms`` (the edge included). A count that grew after ``now_ms``
    (the client's clock ahead of ours) counts as within: a clock is no reason to hide lost
    records. Unknown counts, or a growth time never seen, are no expiry."""
    if not expired or grew_at_ms is None:
        return False
    return grew_at_ms >= now_ms - window_ms


def expiring_topics(rows: Iterable[ProducerCounts], now_ms: int, window_ms: int) -> dict[str, int]:
    """Topics under PRODUCER_EXPIRY, sorted, each with the records expired in all of its
    producers' counts (the figure the sentence gives): one client whose count grew lately puts
    the topic under it, and every client's expired records are then what was lost."""
    rows = list(rows)
    hit = {
        r.topic for r in rows if expired_lately(r.expired, r.expired_grew_at_ms, now_ms, window_ms)
    }
    return {t: sum(r.expired or 0 for r in rows if r.topic == t) for t in sorted(hit)}


def expiry_sentence(expired: int) -> str:
    """The diagnosis's reason, as documents and pages give it: lag alone cannot show these."""
    noun = "record" if expired == 1 else "records"
    return f"{expired} {noun} expired before reaching the broker: no consumer will ever see them"

"""Producers as the pages, the API, ``/metrics`` and ``lagwatch_status`` show them (DOMAIN §4).

One reading of the stored producer rows (``dashboard.ingest.store.stored_producers``) for
every reader, so they agree: per client and topic, records queued and in flight (librdkafka's
statistics), delivered, failed and expired (the client's delivery-report counts,
docs/INGEST.md). The ``PRODUCER_EXPIRY`` diagnosis is read here, once for every reader, from
the evaluator's per-topic rule (``spark_jobs.evaluator.producer_expiry.expiring_topics``): a
topic whose expired count grew within ``LAGWATCH_PRODUCER_EXPIRY_WINDOW_S``. It is a topic's
diagnosis, not a partition's verdict: the status job judges consumers from offsets, and an
expired record never reaches an offset, so it is decided where the counts are read, not in
the status run.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from dashboard.ingest.store import StoredProducer, stored_producers
from spark_jobs.evaluator.producer_expiry import (
    PRODUCER_EXPIRY,
    expiring_topics,
    expiry_sentence,
)


def _iso_ms(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def producer_rows(stored: list[StoredProducer]) -> list[dict[str, Any]]:
    """JSON-ready rows, one per client and topic, sorted by cluster, client and topic."""
    rows = []
    for producer in stored:
        for t in producer.topics:
            rows.append(
                {
                    "cluster": producer.cluster,
                    "client_id": t.client_id,
                    "name": t.name,
                    "host": t.host,
                    "topic": t.topic,
                    "queued": t.queued,
                    "in_flight": t.in_flight,
                    "delivered": t.delivered,
                    "failed": t.failed,
                    "expired": t.expired,
                    "failed_by_reason": t.failed_by_reason,
                    "restarts": t.restarts,
                    "last_expired_at": _iso_ms(t.expired_grew_at_ms),
                    "as_of": _iso_ms(t.as_of_ms),
                    "partitions": [dataclasses.asdict(p) for p in t.partitions],
                }
            )
    rows.sort(key=lambda r: (r["cluster"], r["client_id"], r["name"], r["host"] or "", r["topic"]))
    return rows


def topic_expiry(
    stored: list[StoredProducer], now: datetime | None = None
) -> dict[tuple[str, str], int]:
    """(cluster, topic) under PRODUCER_EXPIRY, with the records its producers counted expired."""
    now = now or timezone.now()
    window_ms = settings.LAGWATCH_PRODUCER_EXPIRY_WINDOW_S * 1000
    out: dict[tuple[str, str], int] = {}
    for cluster in sorted({p.cluster for p in stored}):
        topics = [t for p in stored if p.cluster == cluster for t in p.topics]
        for topic, n in expiring_topics(topics, int(now.timestamp() * 1000), window_ms).items():
            out[cluster, topic] = n
    return out


def expiry_rows(expiry: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """The diagnosis as documents show it: one row per topic."""
    return [
        {
            "cluster": cluster,
            "topic": topic,
            "diagnosis": PRODUCER_EXPIRY,
            "expired": n,
            "reason": expiry_sentence(n),
        }
        for (cluster, topic), n in sorted(expiry.items())
    ]


def producers_document(cluster: str | None = None) -> dict[str, Any]:
    """``producers`` and ``producer_expiry``, as ``lagwatch_status`` and the API give them."""
    stored = stored_producers(cluster)
    return {
        "producers": producer_rows(stored),
        "producer_expiry": expiry_rows(topic_expiry(stored)),
    }

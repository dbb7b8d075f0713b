"""Where pushed client reports are kept, and how the collection cycle reads them back.

The ingest views write here; the cycle's store (``dashboard.store.cycle``) calls
:func:`recent_reports` and hands the runner the same plain records the parsers produce
(``collectors.ingest_parsing``), so it never sees the database rows. Old rows are skipped
by age: a client that stopped pushing is not reporting.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction

from collectors.client_reports import (
    CONSUMER,
    ClientReport,
    client_report_from_dict,
    client_report_to_dict,
    spout_figures_from_dict,
    spout_figures_to_dict,
)
from collectors.producer_deliveries import (
    DeliveryState,
    ProducerTopic,
    PushedDeliveries,
    accumulate,
    producer_topics,
    state_from_dict,
    state_to_dict,
)
from collectors.records import SpoutFigures
from dashboard.monitoring.models import ClientReportRow, Cluster, IngestKind


def client_key(report: ClientReport) -> str:
    """Instance names (``<client.id>#consumer-<n>``) repeat across processes; the group and
    the host tell them apart, and a restarted client on the same host replaces its row."""
    return f"{report.group or '-'}/{report.name}@{report.host or '-'}"


def spout_key(topology_id: str, spout_id: str) -> str:
    return f"{topology_id}/{spout_id}"


def store_client_report(
    cluster: Cluster,
    report: ClientReport,
    received_at: datetime,
    deliveries: PushedDeliveries | None = None,
) -> None:
    """A producer's delivery counts are merged into what its row already holds
    (``producer_deliveries.accumulate``: a restart neither loses nor negates counts); a push
    without them keeps the row's counts as they were."""
    consumer = report.kind == CONSUMER
    kind = IngestKind.LIBRDKAFKA_CONSUMER if consumer else IngestKind.LIBRDKAFKA_PRODUCER
    payload = client_report_to_dict(report)
    key = client_key(report)
    if consumer:
        _upsert(cluster, kind, key, group=report.group or "", received_at=received_at,
                payload=payload)  # fmt: skip
        return
    for attempt in range(2):
        try:
            with transaction.atomic():
                row = (
                    ClientReportRow.objects.select_for_update()
                    .filter(cluster=cluster, kind=kind, key=key)
                    .first()
                )
                state = state_from_dict(row.payload.get("deliveries")) if row else None
                if deliveries is not None:
                    state = accumulate(state, deliveries, report.time_ms)
                if state is not None:
                    payload["deliveries"] = state_to_dict(state)
                ClientReportRow.objects.update_or_create(
                    cluster=cluster, kind=kind, key=key,
                    defaults={"group": report.group or "", "received_at": received_at,
                              "payload": payload},
                )  # fmt: skip
            return
        except IntegrityError:  # two first pushes raced: the loser merges into the winner's
            if attempt:
                raise


def store_spout_report(
    cluster: Cluster,
    topology_id: str,
    spout_id: str,
    topology_name: str | None,
    figures: list[SpoutFigures],
    received_at: datetime,
) -> None:
    _upsert(
        cluster,
        IngestKind.SPOUT,
        spout_key(topology_id, spout_id),
        group=spout_id,
        received_at=received_at,
        payload={
            "topology_id": topology_id,
            "spout_id": spout_id,
            "topology_name": topology_name,
            "figures": [spout_figures_to_dict(f) for f in figures],
        },
    )


def _upsert(cluster: Cluster, kind: str, key: str, **values: object) -> None:
    """Latest push wins. Two first pushes of one client racing both try to insert; the loser
    of the unique constraint then finds the row and updates it."""
    for attempt in range(2):
        try:
            with transaction.atomic():
                ClientReportRow.objects.update_or_create(
                    cluster=cluster, kind=kind, key=key, defaults=values
                )
            return
        except IntegrityError:
            if attempt:
                raise


def recent_reports(
    cluster: Cluster, now: datetime, max_age_s: float
) -> tuple[list[ClientReport], list[SpoutFigures]]:
    """Reports received within ``max_age_s`` before ``now``: librdkafka clients' reports and
    spouts' per-partition figures, oldest first."""
    rows = ClientReportRow.objects.filter(
        cluster=cluster, received_at__gte=now - timedelta(seconds=max_age_s)
    ).order_by("received_at", "id")
    clients: list[ClientReport] = []
    spouts: list[SpoutFigures] = []
    for row in rows:
        if row.kind == IngestKind.SPOUT:
            spouts.extend(spout_figures_from_dict(f) for f in row.payload.get("figures", []))
        else:
            clients.append(client_report_from_dict(row.payload))
    return clients, spouts


@dataclass(frozen=True)
class StoredProducer:
    """One stored producer row as readers need it: its cluster and its per-topic figures."""

    cluster: str
    key: str
    received_at: datetime
    topics: list[ProducerTopic]


def stored_producers(cluster: str | None = None) -> list[StoredProducer]:
    """Every stored producer client's per-topic figures, by cluster and client. All rows, not
    only recent ones: a producer that stopped pushing still shows what it last said, with its
    ``as_of``; ``prune_reports`` removes the long silent."""
    rows = ClientReportRow.objects.filter(kind=IngestKind.LIBRDKAFKA_PRODUCER).select_related(
        "cluster"
    )
    if cluster is not None:
        rows = rows.filter(cluster__name=cluster)
    out = []
    for row in rows.order_by("cluster__name", "key"):
        report = client_report_from_dict(row.payload)
        state: DeliveryState | None = state_from_dict(row.payload.get("deliveries"))
        topics = producer_topics(report, state)
        out.append(StoredProducer(row.cluster.name, row.key, row.received_at, topics))
    return out


def prune_reports(before: datetime) -> int:
    """Drop rows of clients silent since ``before`` (departed consumers, killed topologies,
    whose keys never come back); returns how many went."""
    deleted, _ = ClientReportRow.objects.filter(received_at__lt=before).delete()
    return deleted

"""One cluster's page: its groups' lag beside its brokers' delayed operations (DOMAIN §5).

A constant number of queries: the cluster, its groups with their partitions' lag summed in
the database, its brokers, its source health, its timeline (``ClusterEvent``: a rebuild).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Sum

from dashboard.monitoring.models import (
    BrokerPurgatory,
    Cluster,
    ClusterEvent,
    ConsumerGroup,
    SourceHealth,
)
from dashboard.ui.queries.common import SOURCE_LABEL

EVENTS_SHOWN = 50


def cluster_page(cluster: Cluster) -> dict[str, Any]:
    groups = list(
        ConsumerGroup.objects.filter(cluster=cluster)
        .annotate(
            lag=Sum("partitions__lag"),
            time_lag=Max("partitions__time_lag_s"),
            partition_count=Count("partitions"),
        )
        .order_by("-lag", "name")
        .values("id", "name", "source", "status", "stale", "lag", "time_lag", "partition_count")
    )
    brokers = list(BrokerPurgatory.objects.filter(cluster=cluster).order_by("broker"))
    health = {
        h.source: h for h in SourceHealth.objects.filter(cluster=cluster, source="broker_metrics")
    }.get("broker_metrics")
    return {
        "cluster": cluster,
        "groups": groups,
        "total_lag": sum(g["lag"] or 0 for g in groups),
        "brokers": brokers,
        "fetch_purgatory": sum(b.fetch_purgatory or 0 for b in brokers),
        "produce_purgatory": sum(b.produce_purgatory or 0 for b in brokers),
        "broker_metrics_health": health,
        "broker_metrics_label": SOURCE_LABEL["broker_metrics"],
        "broker_metrics_urls": list(cluster.broker_metrics_urls or []),
        "events": list(ClusterEvent.objects.filter(cluster=cluster)[:EVENTS_SHOWN]),
    }

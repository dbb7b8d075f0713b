"""``/api/v1/clusters/``: the monitored clusters, their groups by status and source health;
one cluster also with its brokers' purgatory figures."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated

from django.db.models import Count
from django.http import HttpRequest
from ninja import Path, Query, Router

from dashboard.api import params
from dashboard.api.errors import not_found
from dashboard.api.pagination import paginate
from dashboard.api.schemas.common import answers
from dashboard.api.schemas.monitoring import ClusterDetail, ClusterPage
from dashboard.api.schemas.query import ClusterQuery
from dashboard.monitoring.models import (
    BrokerPurgatory,
    Cluster,
    CollectionError,
    ConsumerGroup,
    SourceHealth,
)

router = Router(tags=["clusters"])
ClusterName = Annotated[str, Path(description="Cluster name.")]


def _attach_groups_by_status(clusters: list[Cluster]) -> None:
    """``cluster.groups_by_status`` of each cluster of the page, in one query."""
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    rows = (
        ConsumerGroup.objects.filter(cluster_id__in=[c.pk for c in clusters])
        .values_list("cluster_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for cluster_id, status, n in rows:
        counts[cluster_id][status] = n
    for cluster in clusters:
        cluster.groups_by_status = counts.get(cluster.pk, {})


@router.get("/", response=answers(ClusterPage, 400), url_name="clusters",
            operation_id="listClusters", summary="The monitored clusters")  # fmt: skip
def cluster_list(request: HttpRequest, query: Query[ClusterQuery]) -> dict:
    clusters = Cluster.objects.order_by("name")
    if query.enabled is not None:
        clusters = clusters.filter(enabled=query.enabled)
    return paginate(request, clusters, query.page, query.page_size,
                    prepare=_attach_groups_by_status)  # fmt: skip


@router.get(
    "/{name}/", response=answers(ClusterDetail, 400, 404), url_name="cluster",
    operation_id="getCluster",
    summary="One cluster, with source health, the latest collection errors and its brokers' "
    "purgatory figures",
)  # fmt: skip
def cluster_detail(request: HttpRequest, name: ClusterName) -> Cluster:
    params.check_known(request.GET, ())
    cluster = Cluster.objects.filter(name=name).first()
    if cluster is None:
        raise not_found(f"cluster {name!r}")
    _attach_groups_by_status([cluster])
    cluster.source_health = list(SourceHealth.objects.filter(cluster=cluster).order_by("source"))
    cluster.collection_errors = list(
        CollectionError.objects.filter(cluster=cluster).order_by("-at")[:100]
    )
    cluster.brokers = [
        b.document() for b in BrokerPurgatory.objects.filter(cluster=cluster).order_by("broker")
    ]
    return cluster

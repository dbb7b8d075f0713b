"""``/api/v1/clusters/``: the monitored clusters, their groups by status and source health;
one cluster also with its brokers' purgatory figures."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count
from django.http import HttpRequest

from dashboard.api import params
from dashboard.api.auth import api_view
from dashboard.api.errors import not_found
from dashboard.api.pagination import PAGE_PARAMS, paginate
from dashboard.api.responses import ApiJsonResponse
from dashboard.api.serializers import cluster_dict, iso, source_health_dict
from dashboard.monitoring.models import (
    BrokerPurgatory,
    Cluster,
    CollectionError,
    ConsumerGroup,
    SourceHealth,
)


def _groups_by_status(cluster_ids: list[int]) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    rows = (
        ConsumerGroup.objects.filter(cluster_id__in=cluster_ids)
        .values_list("cluster_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for cluster_id, status, n in rows:
        counts[cluster_id][status] = n
    return counts


@api_view()
def cluster_list(request: HttpRequest) -> ApiJsonResponse:
    params.check_known(request.GET, ("enabled", *PAGE_PARAMS))
    clusters = Cluster.objects.order_by("name")
    if "enabled" in request.GET:
        clusters = clusters.filter(enabled=params.boolean(request.GET, "enabled"))
    body = paginate(request, clusters, lambda c: c)
    counts = _groups_by_status([c.pk for c in body["results"]])
    body["results"] = [cluster_dict(c, counts.get(c.pk, {})) for c in body["results"]]
    return ApiJsonResponse(body)


@api_view()
def cluster_detail(request: HttpRequest, name: str) -> ApiJsonResponse:
    params.check_known(request.GET, ())
    cluster = Cluster.objects.filter(name=name).first()
    if cluster is None:
        raise not_found(f"cluster {name!r}")
    body = cluster_dict(cluster, _groups_by_status([cluster.pk]).get(cluster.pk, {}))
    body["source_health"] = [
        source_health_dict(h)
        for h in SourceHealth.objects.filter(cluster=cluster).order_by("source")
    ]
    body["collection_errors"] = [
        {"source": e.source, "where": e.where, "error": e.error, "at": iso(e.at)}
        for e in CollectionError.objects.filter(cluster=cluster).order_by("-at")[:100]
    ]
    body["brokers"] = [
        b.document() for b in BrokerPurgatory.objects.filter(cluster=cluster).order_by("broker")
    ]
    return ApiJsonResponse(body)

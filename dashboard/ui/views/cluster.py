"""A cluster's page: its groups' lag beside its brokers' purgatory figures (DOMAIN §5)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.monitoring.models import Cluster
from dashboard.ui.params import BadParam
from dashboard.ui.queries import cluster as q
from dashboard.ui.views.common import bad_request, live_mode, live_regions, page_context


@require_GET
def cluster(request: HttpRequest, name: str) -> HttpResponse:
    try:
        mode = live_mode(request)
    except BadParam as e:
        return bad_request(e)
    found = Cluster.objects.filter(name=name).first()
    if found is None:
        raise Http404("no such cluster")
    context = page_context(**q.cluster_page(found))
    if mode:
        return live_regions(request, {"cluster": ("ui/partials/cluster_live.html", context)})
    return render(request, "ui/cluster.html", context)

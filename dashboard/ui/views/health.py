"""Source health per cluster and Spark job runs: why figures may be stale or statuses old."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.monitoring.models import Cluster
from dashboard.status.runs import JOBS
from dashboard.ui.params import BadParam, cluster_param, job_param
from dashboard.ui.queries import health as q
from dashboard.ui.views.common import bad_request, live_mode, live_regions, page_context


@require_GET
def sources(request: HttpRequest) -> HttpResponse:
    try:
        mode = live_mode(request)
        cluster = cluster_param(request.GET)
    except BadParam as e:
        return bad_request(e)
    context = page_context(**q.sources(cluster), cluster=cluster)
    if mode:
        return live_regions(request, {"sources": ("ui/partials/sources_live.html", context)})
    names = Cluster.objects.order_by("name").values_list("name", flat=True)
    return render(request, "ui/sources.html", {**context, "cluster_names": names})


@require_GET
def jobs(request: HttpRequest) -> HttpResponse:
    try:
        mode = live_mode(request)
        job = job_param(request.GET)
    except BadParam as e:
        return bad_request(e)
    context = page_context(**q.jobs(job), job=job, job_names=JOBS)
    if mode:
        return live_regions(request, {"jobs": ("ui/partials/jobs_live.html", context)})
    return render(request, "ui/jobs.html", context)

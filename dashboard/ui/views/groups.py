"""The groups list: searchable, sortable, filterable, paginated; every view a deep link."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.monitoring.membership import group_type
from dashboard.monitoring.models import Cluster, SourceKind
from dashboard.ui import charts
from dashboard.ui.params import (
    GROUP_SORTS,
    GROUP_TYPE_FILTERS,
    PER_PAGE,
    STATUSES_WORST_FIRST,
    BadParam,
    group_filter,
)
from dashboard.ui.queries import groups as q
from dashboard.ui.queries.common import unreachable_sources
from dashboard.ui.views.common import bad_request, live_mode, live_regions, page_context, url_for_pk
from spark_jobs.evaluator.retention import at_risk


def _context(f) -> dict:
    page = q.page(f)
    now = page_context()["now"]
    lines = q.sparklines(list(page.object_list), now)
    trend_of = q.group_trends(list(page.object_list), now)
    group_url = url_for_pk("ui:group")
    rows = [
        {
            "group": g,
            "url": group_url(g.pk),
            "spark": charts.sparkline_points(lines.get(g.id, [])),
            "type": group_type(g.source, g.group_type),
            "trend": trend_of.get(g.id),
            "retention_risk": at_risk(g.retention_left, g.cluster.retention_risk_s),
        }
        for g in page.object_list
    ]
    counts = q.status_counts(f)
    return page_context(
        f=f,
        page=page,
        rows=rows,
        status_chips=[
            {
                "status": s,
                "count": counts.get(s, 0),
                "active": s in f.statuses,
                "toggle": f.query_string(
                    statuses=tuple(x for x in f.statuses if x != s)
                    if s in f.statuses
                    else (*f.statuses, s),
                    page=1,
                ),
            }
            for s in STATUSES_WORST_FIRST
        ],
        sorts=[
            {"key": k, "label": label, "qs": f.query_string(sort=k, page=1), "active": k == f.sort}
            for k, label in GROUP_SORTS.items()
        ],
        sort_qs={k: f.query_string(sort=k, page=1) for k in GROUP_SORTS},
        prev_qs=f.query_string(page=page.number - 1) if page.has_previous() else None,
        next_qs=f.query_string(page=page.number + 1) if page.has_next() else None,
        unreachable=unreachable_sources(),
    )


@require_GET
def groups(request: HttpRequest) -> HttpResponse:
    try:
        mode = live_mode(request)
        f = group_filter(request.GET)
    except BadParam as e:
        return bad_request(e)
    context = _context(f)
    if mode:
        return live_regions(request, {"groups": ("ui/partials/groups_live.html", context)})
    return render(
        request,
        "ui/groups.html",
        {
            **context,
            "clusters": Cluster.objects.order_by("name").values_list("name", flat=True),
            "sources": SourceKind.choices,
            "group_types": GROUP_TYPE_FILTERS.items(),
            "per_page_choices": PER_PAGE,
            "statuses": STATUSES_WORST_FIRST,
        },
    )

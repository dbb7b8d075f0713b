"""``/api/v1/rebalances/``: rebalance events with their generation and cause."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils import timezone

from dashboard.api import params, queries
from dashboard.api.auth import api_view
from dashboard.api.pagination import PAGE_PARAMS, paginate
from dashboard.api.responses import ApiJsonResponse
from dashboard.api.serializers import rebalance_dict
from dashboard.monitoring.models import RebalanceEvent

FILTERS = ("cluster", "source", "name", "search", "group_id", "cause", "since", "until")


@api_view()
def rebalance_list(request: HttpRequest) -> ApiJsonResponse:
    query = request.GET
    params.check_known(query, (*FILTERS, *PAGE_PARAMS))
    now = timezone.now()
    events = queries.filter_groups(
        RebalanceEvent.objects.select_related("group__cluster"), query, prefix="group__"
    )
    group_id = params.integer(query, "group_id", minimum=1)
    if group_id is not None:
        events = events.filter(group_id=group_id)
    cause = params.text(query, "cause", max_length=64)
    if cause is not None:
        events = events.filter(cause=cause)
    since = params.moment(query, "since", now)
    if since is not None:
        events = events.filter(at__gte=since)
    until = params.moment(query, "until", now)
    if until is not None:
        events = events.filter(at__lt=until)
    return ApiJsonResponse(paginate(request, events.order_by("-at", "-id"), rebalance_dict))

"""``/api/v1/rebalances/``: rebalance events with their generation and cause."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router

from dashboard.api import queries
from dashboard.api.pagination import paginate
from dashboard.api.schemas.common import answers
from dashboard.api.schemas.monitoring import RebalancePage
from dashboard.api.schemas.query import RebalanceQuery
from dashboard.monitoring.models import RebalanceEvent

router = Router(tags=["rebalances"])


@router.get("/", response=answers(RebalancePage, 400), url_name="rebalances",
            operation_id="listRebalances",
            summary="Rebalances with their generation and cause, newest first")  # fmt: skip
def rebalance_list(request: HttpRequest, query: Query[RebalanceQuery]) -> dict:
    events = queries.filter_groups(
        RebalanceEvent.objects.select_related("group__cluster"), query, prefix="group__"
    )
    events = queries.where(events, group_id=query.group_id, cause=query.cause,
                           at__gte=query.since, at__lt=query.until)  # fmt: skip
    return paginate(request, events.order_by("-at", "-id"), query.page, query.page_size)

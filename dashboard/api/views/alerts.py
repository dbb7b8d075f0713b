"""``/api/v1/alerts/``: alerts with their history; acknowledge with an operate or write token."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router

from dashboard.accounts.roles import Action
from dashboard.alerts import lifecycle
from dashboard.alerts.models import Alert
from dashboard.api import params, queries
from dashboard.api.auth import writers
from dashboard.api.errors import ApiError, not_found
from dashboard.api.pagination import paginate
from dashboard.api.schemas.activity import AlertDetail, AlertPage
from dashboard.api.schemas.common import answers, object_id
from dashboard.api.schemas.query import AlertQuery

router = Router(tags=["alerts"])
AlertId = object_id("Alert")


@router.get("/", response=answers(AlertPage, 400), url_name="alerts", operation_id="listAlerts",
            summary="Alerts, newest first")  # fmt: skip
def alert_list(request: HttpRequest, query: Query[AlertQuery]) -> dict:
    alerts = Alert.objects.all()
    if query.state:
        alerts = alerts.filter(state__in=query.state)
    if query.severity:
        alerts = alerts.filter(severity__in=query.severity)
    alerts = queries.where(alerts, level=query.level, cluster=query.cluster, group=query.group,
                           topic=query.topic, fired_at__gte=query.since,
                           fired_at__lt=query.until)  # fmt: skip
    return paginate(request, alerts.order_by("-fired_at", "-id"), query.page, query.page_size)


@router.get("/{int:alert_id}/", response=answers(AlertDetail, 400, 404), url_name="alert",
            operation_id="getAlert", summary="One alert with its history")  # fmt: skip
def alert_detail(request: HttpRequest, alert_id: AlertId) -> Alert:
    params.check_known(request.GET, ())
    alert = Alert.objects.filter(pk=alert_id).first()
    if alert is None:
        raise not_found(f"alert {alert_id}")
    return alert


def alert_acknowledge(request: HttpRequest, alert_id: AlertId) -> Alert:
    """Firing -> acknowledged, by the token's name (``token:<name>``) or the user."""
    try:
        return lifecycle.acknowledge(alert_id, request.api_actor)
    except lifecycle.AlertNotFound:
        raise not_found(f"alert {alert_id}") from None
    except lifecycle.AlertTransitionError as exc:
        raise ApiError(409, str(exc)) from None


# Served with and without the trailing slash (the catch-all adds a slash, never removes one).
router.post(
    "/{int:alert_id}/acknowledge", response=answers(AlertDetail, 403, 404, 409),
    auth=writers(Action.ACKNOWLEDGE), url_name="alert-acknowledge",
    operation_id="acknowledgeAlert",
    summary="Acknowledge a firing alert (operate or write scope)",
    description="By the token's name (token:<name>) or the user. Twice is harmless; a resolved "
    "alert is a 409. Takes no body.",
)(alert_acknowledge)  # fmt: skip
router.post(
    "/{int:alert_id}/acknowledge/", response=answers(AlertDetail, 403, 404, 409),
    auth=writers(Action.ACKNOWLEDGE), operation_id="acknowledgeAlertSlash",
    include_in_schema=False,
)(alert_acknowledge)  # fmt: skip

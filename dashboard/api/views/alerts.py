"""``/api/v1/alerts/``: alerts with their history; acknowledge with an operate or write token."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils import timezone

from dashboard.accounts.roles import Action
from dashboard.alerts import lifecycle
from dashboard.alerts.models import Alert, AlertState, Level, Severity
from dashboard.api import params
from dashboard.api.auth import api_view
from dashboard.api.errors import ApiError, not_found
from dashboard.api.pagination import PAGE_PARAMS, paginate
from dashboard.api.responses import ApiJsonResponse
from dashboard.api.serializers import iso

FILTERS = ("state", "severity", "level", "cluster", "group", "topic", "since", "until")


def alert_dict(alert: Alert) -> dict:
    return {
        "id": alert.pk,
        "rule": alert.rule_name,
        "level": alert.level,
        "cluster": alert.cluster,
        "source": alert.source,
        "group": alert.group,
        "topic": alert.topic or None,
        "partition": alert.partition,
        "state": alert.state,
        "severity": alert.severity,
        "title": alert.title,
        "status": alert.status,
        "diagnosis": alert.diagnosis or [],
        "reason": alert.reason,
        "lag": alert.lag,
        "time_lag_s": alert.time_lag_s,
        "started_at": iso(alert.started_at),
        "fired_at": iso(alert.fired_at),
        "acknowledged_at": iso(alert.acknowledged_at),
        "acknowledged_by": alert.acknowledged_by,
        "resolved_at": iso(alert.resolved_at),
        "resolved_reason": alert.resolved_reason,
        "silenced": alert.silence_id is not None,
    }


def alert_detail_dict(alert: Alert) -> dict:
    body = alert_dict(alert)
    body["details"] = alert.details or {}
    body["events"] = [
        {"at": iso(e.at), "kind": e.kind, "actor": e.actor, "message": e.message}
        for e in alert.events.order_by("pk")
    ]
    return body


@api_view()
def alert_list(request: HttpRequest) -> ApiJsonResponse:
    query = request.GET
    params.check_known(query, (*FILTERS, *PAGE_PARAMS))
    now = timezone.now()
    alerts = Alert.objects.all()
    states = params.choices(query, "state", tuple(AlertState.values))
    if states:
        alerts = alerts.filter(state__in=states)
    severities = params.choices(query, "severity", tuple(Severity.values))
    if severities:
        alerts = alerts.filter(severity__in=severities)
    level = params.choice(query, "level", tuple(Level.values))
    if level is not None:
        alerts = alerts.filter(level=level)
    for name in ("cluster", "group", "topic"):
        value = params.text(query, name)
        if value is not None:
            alerts = alerts.filter(**{name: value})
    since = params.moment(query, "since", now)
    if since is not None:
        alerts = alerts.filter(fired_at__gte=since)
    until = params.moment(query, "until", now)
    if until is not None:
        alerts = alerts.filter(fired_at__lt=until)
    return ApiJsonResponse(paginate(request, alerts.order_by("-fired_at", "-id"), alert_dict))


@api_view()
def alert_detail(request: HttpRequest, alert_id: int) -> ApiJsonResponse:
    params.check_known(request.GET, ())
    alert = Alert.objects.filter(pk=alert_id).first()
    if alert is None:
        raise not_found(f"alert {alert_id}")
    return ApiJsonResponse(alert_detail_dict(alert))


@api_view(["POST"], action=Action.ACKNOWLEDGE)
def alert_acknowledge(request: HttpRequest, alert_id: int) -> ApiJsonResponse:
    """Firing -> acknowledged, by the token's name (``token:<name>``) or the user."""
    try:
        alert = lifecycle.acknowledge(alert_id, request.api_actor)
    except lifecycle.AlertNotFound:
        raise not_found(f"alert {alert_id}") from None
    except lifecycle.AlertTransitionError as exc:
        raise ApiError(409, str(exc)) from None
    return ApiJsonResponse(alert_detail_dict(alert))

"""Alerts pages (login required by the middleware; forms with CSRF). Thin: the work is in
lifecycle, silencing, delivery and the forms. Reading is every role's; acting on alerts is
an operator's, changing rules and channels an admin's (``@requires``, dashboard/accounts)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from dashboard.accounts.access import UNSAFE, requires
from dashboard.accounts.roles import Action
from dashboard.alerts import lifecycle
from dashboard.alerts.delivery import send_test_notice
from dashboard.alerts.forms import ChannelForm, RuleForm, SilenceForm
from dashboard.alerts.models import OPEN_STATES, Alert, AlertState, Channel, Rule, Severity, Silence
from dashboard.alerts.silencing import apply_to_open_alerts, silence_alert

STATE_FILTERS = {
    "open": Q(state__in=OPEN_STATES),
    "firing": Q(state=AlertState.FIRING),
    "acknowledged": Q(state=AlertState.ACKNOWLEDGED),
    "resolved": Q(state=AlertState.RESOLVED),
    "all": Q(),
}


def index(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("state", "open")
    if state not in STATE_FILTERS:
        state = "open"
    alerts = Alert.objects.filter(STATE_FILTERS[state]).select_related("silence")
    severity = request.GET.get("severity", "")
    if severity in Severity.values:
        alerts = alerts.filter(severity=severity)
    q = request.GET.get("q", "").strip()[:255]
    if q:
        alerts = alerts.filter(
            Q(group__icontains=q) | Q(topic__icontains=q) | Q(cluster__icontains=q)
            | Q(rule_name__icontains=q)
        )  # fmt: skip
    page = Paginator(alerts.order_by("-fired_at", "-pk"), 50).get_page(request.GET.get("page"))
    counts = {s: Alert.objects.filter(f).count() for s, f in STATE_FILTERS.items() if s != "all"}
    return render(request, "alerts/index.html", {
        "page": page, "state": state, "severity": severity, "q": q,
        "states": [(s, counts.get(s)) for s in STATE_FILTERS], "severities": Severity.choices,
    })  # fmt: skip


def detail(request: HttpRequest, alert_id: int) -> HttpResponse:
    alert = get_object_or_404(Alert.objects.select_related("rule", "silence"), pk=alert_id)
    deliveries = alert.deliveries.prefetch_related("attempt_log")
    return render(request, "alerts/detail.html", {
        "alert": alert, "events": alert.events.all(), "deliveries": deliveries,
    })  # fmt: skip


def _back(request: HttpRequest, alert: Alert) -> HttpResponse:
    target = request.POST.get("next", "")
    if target == "index":
        return redirect("alerts:index")
    return redirect("alerts:detail", alert.pk)


@require_POST
@requires(Action.ACKNOWLEDGE)
def acknowledge(request: HttpRequest, alert_id: int) -> HttpResponse:
    alert = get_object_or_404(Alert, pk=alert_id)
    try:
        lifecycle.acknowledge(alert.pk, by=request.user.get_username())
        messages.success(request, f"Alert #{alert.pk} acknowledged.")
    except lifecycle.AlertTransitionError as exc:
        messages.error(request, str(exc))
    return _back(request, alert)


@require_POST
@requires(Action.SILENCE)
def silence(request: HttpRequest, alert_id: int) -> HttpResponse:
    alert = get_object_or_404(Alert, pk=alert_id)
    try:
        hours = float(request.POST.get("hours", "1"))
        if not 0 < hours <= 24 * 90:
            raise ValueError
    except ValueError:
        messages.error(request, "hours: give a number of hours between 0 and 2160.")
        return _back(request, alert)
    reason = request.POST.get("reason", "").strip()[:1000]
    s = silence_alert(alert, hours, reason, request.user.get_username())
    messages.success(request, f"Silenced until {s.until:%Y-%m-%d %H:%M} UTC.")
    return _back(request, alert)


# --- Rules ---------------------------------------------------------------------------------


def rules(request: HttpRequest) -> HttpResponse:
    return render(request, "alerts/rules.html", {
        "rules": Rule.objects.prefetch_related("channels"),
    })  # fmt: skip


def _edit(request: HttpRequest, form_class: type, obj: object | None, what: str,
          back: str) -> HttpResponse:  # fmt: skip
    """Create (``obj`` None) or edit a rule or a channel: the form again with a 400 when
    invalid, back to the list when saved."""
    form = form_class(request.POST or None, instance=obj)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        messages.success(request, f"{what.capitalize()} “{saved.name}” saved.")
        return redirect(back)
    status = 400 if request.method == "POST" else 200
    return render(request, "alerts/edit.html", {
        "form": form, "what": what, "object": obj, "cancel": back,
    }, status=status)  # fmt: skip


@requires(Action.EDIT_RULES)
def rule_edit(request: HttpRequest, rule_id: int | None = None) -> HttpResponse:
    rule = get_object_or_404(Rule, pk=rule_id) if rule_id else None
    return _edit(request, RuleForm, rule, "rule", "alerts:rules")


def _delete(request: HttpRequest, obj: object, what: str, back: str) -> HttpResponse:
    if request.method == "POST":
        name = str(obj)
        obj.delete()  # type: ignore[attr-defined]
        messages.success(request, f"{what.capitalize()} “{name}” deleted.")
        return redirect(back)
    return render(request, "alerts/confirm_delete.html", {
        "object": obj, "what": what, "cancel": back,
    })  # fmt: skip


@requires(Action.EDIT_RULES)
def rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    """Its open alerts resolve at the next evaluation ("rule disabled or deleted")."""
    return _delete(request, get_object_or_404(Rule, pk=rule_id), "rule", "alerts:rules")


# --- Channels ------------------------------------------------------------------------------


def channels(request: HttpRequest) -> HttpResponse:
    return render(request, "alerts/channels.html", {"channels": Channel.objects.all()})


@requires(Action.EDIT_CHANNELS)
def channel_edit(request: HttpRequest, channel_id: int | None = None) -> HttpResponse:
    channel = get_object_or_404(Channel, pk=channel_id) if channel_id else None
    return _edit(request, ChannelForm, channel, "channel", "alerts:channels")


@requires(Action.EDIT_CHANNELS)
def channel_delete(request: HttpRequest, channel_id: int) -> HttpResponse:
    return _delete(request, get_object_or_404(Channel, pk=channel_id), "channel", "alerts:channels")


@require_POST
@requires(Action.EDIT_CHANNELS)
def channel_test(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = get_object_or_404(Channel, pk=channel_id)
    ok, error = send_test_notice(channel, request.user.get_username())
    if ok:
        messages.success(request, f"Test notice sent to “{channel.name}”.")
    else:
        messages.error(request, f"Test notice to “{channel.name}” failed: {error}")
    return redirect("alerts:channels")


# --- Silences ------------------------------------------------------------------------------


@requires(Action.SILENCE, methods=UNSAFE)
def silences(request: HttpRequest) -> HttpResponse:
    form = SilenceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        s = form.save(commit=False)
        s.created_by = request.user.get_username()
        s.save()
        n = apply_to_open_alerts(s)
        messages.success(request, f"Silence saved; {n} open alert(s) silenced.")
        return redirect("alerts:silences")
    now = timezone.now()
    return render(request, "alerts/silences.html", {
        "form": form, "active": Silence.objects.filter(until__gt=now).select_related("rule"),
        "ended": Silence.objects.filter(until__lte=now).select_related("rule")[:50],
    }, status=400 if request.method == "POST" else 200)  # fmt: skip


@require_POST
@requires(Action.SILENCE)
def silence_end(request: HttpRequest, silence_id: int) -> HttpResponse:
    s = get_object_or_404(Silence, pk=silence_id)
    if s.until > timezone.now():
        s.until = timezone.now()
        s.save(update_fields=["until"])
        messages.success(request, f"Silence #{s.pk} ended.")
    return redirect("alerts:silences")

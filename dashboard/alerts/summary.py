"""What the overview page and the navigation show of the alerts (called by dashboard.ui)."""

from django.urls import reverse

from dashboard.alerts.models import OPEN_STATES, Alert, Severity

_SEVERITY_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


def open_alerts(limit: int) -> list[dict]:
    """The open (firing or acknowledged) alerts, most severe then newest first."""
    rows = list(
        Alert.objects.filter(state__in=OPEN_STATES)
        .order_by("-fired_at", "-pk")
        .values("id", "severity", "state", "title", "started_at")
    )
    rows.sort(key=lambda r: (_SEVERITY_RANK.get(r["severity"], 9), r["state"] != "firing"))
    out = []
    for row in rows[: max(limit, 0)]:
        row["url"] = reverse("alerts:detail", args=[row["id"]])
        out.append(row)
    return out


def open_alerts_count() -> int:
    return Alert.objects.filter(state__in=OPEN_STATES).count()

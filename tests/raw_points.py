"""How many partition points the raw history holds: each ``GroupSample`` row packs one per
partition of its group at that poll (what a count of rows was when the history was a row per
partition and poll)."""

from __future__ import annotations

from django.db.models import Sum

from dashboard.monitoring.models import GroupSample


def stored_points(**filters: object) -> int:
    return GroupSample.objects.filter(**filters).aggregate(n=Sum("partitions"))["n"] or 0

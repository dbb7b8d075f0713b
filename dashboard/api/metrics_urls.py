"""``/metrics`` in Prometheus text format (open by default, SPEC §9; docs/API.md)."""

from django.urls import path

from dashboard.api import metrics_views

urlpatterns = [path("", metrics_views.metrics, name="metrics")]

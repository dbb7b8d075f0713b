"""``/metrics`` in Prometheus text format (open by default, SPEC §9; docs/API.md)."""

from django.urls import path

from dashboard.api.metrics import views as metrics_views

urlpatterns = [path("", metrics_views.metrics, name="metrics")]

"""``/metrics`` in Prometheus text format (open by default, SPEC §9)."""

from django.urls import path  # noqa: F401

urlpatterns: list = []

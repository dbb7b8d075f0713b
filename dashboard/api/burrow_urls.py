"""The Burrow-compatible subset under /v3/ (open by default, SPEC §9)."""

from django.urls import path  # noqa: F401

app_name = "burrow"
urlpatterns: list = []

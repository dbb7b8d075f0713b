"""The REST API under /api/v1/ (token authentication)."""

from django.urls import path  # noqa: F401

app_name = "api"
urlpatterns: list = []

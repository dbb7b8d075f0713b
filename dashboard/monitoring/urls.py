"""The monitoring app has no pages of its own any more: the dashboard's pages live in
``dashboard.ui`` (the overview at ``/``); ``/health/`` is mapped in ``dashboard/urls.py``."""

app_name = "monitoring"
urlpatterns: list = []

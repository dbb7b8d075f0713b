from django.apps import AppConfig


class UiConfig(AppConfig):
    """The dashboard's pages (SPEC §8): read-only views over the monitoring app's state."""

    name = "dashboard.ui"
    label = "ui"
    verbose_name = "Dashboard pages"

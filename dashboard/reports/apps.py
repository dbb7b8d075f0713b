from django.apps import AppConfig


class ReportsConfig(AppConfig):
    """Lag reports (SPEC §9): CSV, JSON and Parquet exports of lag history."""

    name = "dashboard.reports"
    label = "reports"
    verbose_name = "Reports"

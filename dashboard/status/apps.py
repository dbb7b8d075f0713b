from django.apps import AppConfig


class StatusConfig(AppConfig):
    """The status run's tasks and commands (``spark_job``, ``evaluate_window``)."""

    name = "dashboard.status"

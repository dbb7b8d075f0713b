from django.apps import AppConfig


class StatusConfig(AppConfig):
    """The status run's tasks and commands (``spark_job``, ``evaluate_window``)."""

    name = "dashboard.status"

    def ready(self) -> None:
        from dashboard.status import requests

        requests.connect()

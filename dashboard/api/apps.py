from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API, the Burrow-compatible /v3 subset and /metrics (SPEC §9)."""

    name = "dashboard.api"
    label = "api"
    verbose_name = "API"

    def ready(self) -> None:
        from dashboard.api.metrics import signals, tasks  # noqa: F401 (registers the task)

        signals.connect()

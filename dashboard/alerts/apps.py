from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Stuck-partition alerts (SPEC §7): rules, alerts and their history, silences, channels."""

    name = "dashboard.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        from dashboard.alerts import signals

        signals.connect()

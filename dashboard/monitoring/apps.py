from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "dashboard.monitoring"
    label = "monitoring"
    verbose_name = "Monitoring"

"""Receivers: the alerts react to status runs (the monitoring app never calls them)."""

from dashboard.alerts.evaluation import on_status_applied
from dashboard.signals import status_applied


def connect() -> None:
    status_applied.connect(on_status_applied, dispatch_uid="alerts.evaluate")

"""Models of the monitoring app, one module per concern."""

from dashboard.monitoring.models.config import Cluster
from dashboard.monitoring.models.health import ServiceHeartbeat

__all__ = ["Cluster", "ServiceHeartbeat"]

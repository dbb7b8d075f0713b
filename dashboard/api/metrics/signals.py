"""Receivers: /metrics reacts to stored figures (the monitoring app never calls it)."""

from dashboard.signals import figures_stored


def _on_figures_stored(sender: object, **kwargs: object) -> None:
    """A cycle's figures are its cluster's (``cluster``); a Spark run's may be anyone's."""
    from dashboard.api.metrics.exposition import request_build

    cluster = kwargs.get("cluster")
    request_build(cluster if isinstance(cluster, str) and "run" not in kwargs else None)


def connect() -> None:
    figures_stored.connect(_on_figures_stored, dispatch_uid="api.metrics_exposition")

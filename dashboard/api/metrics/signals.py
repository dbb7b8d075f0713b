"""Receivers: /metrics reacts to stored figures (the monitoring app never calls it)."""

from dashboard.signals import figures_stored


def _on_figures_stored(sender: object, **kwargs: object) -> None:
    from dashboard.api.metrics.exposition import request_build

    request_build()


def connect() -> None:
    figures_stored.connect(_on_figures_stored, dispatch_uid="api.metrics_exposition")

"""``/metrics`` in Prometheus text format (SPEC §9): open by default (``open_auth``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from prometheus_client.exposition import choose_encoder

from dashboard.api.metrics import build_registry
from dashboard.api.open_auth import open_endpoint

# One registry per variant: the collector reads the database at each collect(), so a
# registry holds no figures, only which series to produce.
_REGISTRIES = {True: build_registry(partitions=True), False: build_registry(partitions=False)}
_BOOLEANS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def _refuse(request: HttpRequest, status: int, message: str, headers: dict) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain")
    for name, value in headers.items():
        response[name] = value
    return response


@open_endpoint(_refuse)
def metrics(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response = _refuse(request, 405, "method not allowed", {})
        response["Allow"] = "GET, HEAD"
        return response
    raw = request.GET.get("partitions", "true").strip().lower()
    if raw not in _BOOLEANS or set(request.GET) - {"partitions"}:
        return _refuse(request, 400, "the only parameter is partitions=true|false", {})
    # Prometheus' classic text format (0.0.4) unless the scraper asks for OpenMetrics.
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(_REGISTRIES[_BOOLEANS[raw]]), content_type=content_type)

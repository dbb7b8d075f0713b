"""``/metrics`` in Prometheus text format (SPEC §9): open by default (``open_auth``).

Served from the exposition built after each stored cycle or Spark run where one is fresh
(``dashboard/api/metrics/exposition.py``), gzipped when the scraper accepts it (Prometheus does).
"""

from __future__ import annotations

import gzip
import time

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client.exposition import choose_encoder

from dashboard.api.metrics import exposition
from dashboard.api.metrics.collector import LagwatchCollector, build_registry
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
    partitions = _BOOLEANS[raw]
    # Prometheus' classic text format (0.0.4) unless the scraper asks for OpenMetrics.
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    kind = exposition.kind_of(content_type)
    gzipped = _accepts_gzip(request.headers.get("Accept-Encoding", ""))
    started = time.perf_counter()
    published = exposition.published_bulk(kind, partitions, gzipped)
    if published is None:
        exposition.request_build()
        return HttpResponse(encoder(_REGISTRIES[partitions]), content_type=content_type)
    bulk, age_s, set_name = published

    def body() -> bytes:
        live = LagwatchCollector(partitions).live(timezone.now(), started, age_s)
        live_bytes = exposition.finish(kind, exposition.encode(kind, live))
        # A gzip stream may hold several members (RFC 1952 §2.2): the stored ones, then this.
        tail = gzip.compress(live_bytes, compresslevel=1) if gzipped else live_bytes
        return b"".join([*bulk, tail])

    key = (set_name, kind, partitions, gzipped)
    response = HttpResponse(exposition.served_body(key, body), content_type=content_type)
    response["Vary"] = "Accept-Encoding"
    if gzipped:
        response["Content-Encoding"] = "gzip"
    return response


def _accepts_gzip(header: str) -> bool:
    for coding in header.split(","):
        name, _, params = coding.strip().partition(";")
        if name.strip().lower() in ("gzip", "x-gzip"):
            return params.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False

"""The ingest endpoint (SPEC §2.3, docs/INGEST.md): clients push what the brokers cannot say.

    POST /api/v1/ingest/<cluster>/librdkafka   a librdkafka statistics document
    POST /api/v1/ingest/<cluster>/spout        a spout's per-partition figures

Machines call it, not people: a bearer token instead of a login or a CSRF cookie. Every
check that needs no body (method, token, declared size, cluster) comes before the body is
read, so an unauthenticated or oversized push costs nothing. Validation lives in
``collectors.ingest_parsing``; storage in ``dashboard.ingest.store``.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from collectors.client_reports import PRODUCER
from collectors.ingest_parsing import IngestError, parse_librdkafka_stats, parse_spout_report
from collectors.producer_deliveries import FIELD as DELIVERIES_FIELD
from collectors.producer_deliveries import parse_deliveries
from dashboard.ingest.store import store_client_report, store_spout_report
from dashboard.monitoring.models import Cluster

DISABLED = "ingest disabled: LAGWATCH_INGEST_TOKEN not set"

# (cluster, parsed JSON, request, received_at) -> number of records accepted
Handler = Callable[[Cluster, object, HttpRequest, datetime], int]


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _refusal(request: HttpRequest) -> JsonResponse | None:
    token = settings.LAGWATCH_INGEST_TOKEN
    if not token:
        return _error(503, DISABLED)
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        response = _error(401, "missing bearer token (Authorization: Bearer <token>)")
        response["WWW-Authenticate"] = 'Bearer realm="lagwatch-ingest"'
        return response
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        return _error(403, "invalid token")
    return None


def _ingest(request: HttpRequest, cluster_name: str, handle: Handler) -> JsonResponse:
    refused = _refusal(request)
    if refused is not None:
        return refused
    limit = settings.LAGWATCH_INGEST_MAX_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return _error(400, "invalid Content-Length")
    if declared > limit:
        return _error(413, f"body of {declared} bytes exceeds the limit of {limit} bytes")
    cluster = Cluster.objects.filter(name=cluster_name).first()
    if cluster is None:
        return _error(404, f"unknown cluster {cluster_name!r}")
    # Read directly, not via request.body: the ingest limit, not DATA_UPLOAD_MAX_MEMORY_SIZE,
    # is the bound here, and one byte more than the limit is enough to tell.
    body = request.read(limit + 1)
    if len(body) > limit:
        return _error(413, f"body exceeds the limit of {limit} bytes")
    if not body:
        return _error(400, "empty body: expected a JSON document")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return _error(400, f"body is not valid JSON: {exc}")
    where = _lone_surrogate(doc)
    if where is not None:
        return _error(400, f"{where}: not valid Unicode (a lone surrogate escape such as \\ud800)")
    try:
        accepted = handle(cluster, doc, request, timezone.now())
    except IngestError as exc:
        return _error(400, str(exc))
    return JsonResponse({"accepted": accepted}, status=202)


def _lone_surrogate(doc: object) -> str | None:
    """The path (``partitions.0.topic``) of a string, or object key, holding a lone
    surrogate, or None. JSON may escape one (``"\\ud800"``) and ``json.loads`` keeps it, but no
    database stores it: refused here, it is a 400 naming the field rather than a 500 from the
    store. Iterative: the document may be nested as deep as ``json.loads`` allows."""
    stack: list[tuple[str, object]] = [("", doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if not _encodable(value):
                return path or "document"
        elif isinstance(value, dict):
            for key, item in value.items():
                here = f"{path}.{key}" if path else str(key)
                if not _encodable(key):
                    return here.encode("utf-8", "backslashreplace").decode()
                stack.append((here, item))
        elif isinstance(value, list):
            stack.extend((f"{path}.{i}" if path else str(i), item) for i, item in enumerate(value))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _declared(request: HttpRequest, param: str, header: str) -> str | None:
    """What the pusher declared in the query string or, failing that, in a header."""
    value = (request.GET.get(param) or request.headers.get(header) or "").strip()
    return value or None


def _librdkafka(cluster: Cluster, doc: object, request: HttpRequest, now: datetime) -> int:
    # A client behind a proxy or NAT may say where it runs; otherwise its address will do.
    host = _declared(request, "host", "X-Lagwatch-Host") or request.META.get("REMOTE_ADDR")
    report = parse_librdkafka_stats(
        doc,
        _declared(request, "group", "X-Lagwatch-Group"),
        int(now.timestamp() * 1000),
        host=host or None,
    )
    # A producer's own delivery-report counts ride in the same document (docs/INGEST.md):
    # validated before anything is stored, so a bad block leaves the stored counts alone.
    block = cast(Mapping[str, Any], doc).get(DELIVERIES_FIELD)
    deliveries = None
    if report.kind == PRODUCER and block is not None:
        deliveries = parse_deliveries(block)
    store_client_report(cluster, report, now, deliveries)
    return 1


def _spout(cluster: Cluster, doc: object, request: HttpRequest, now: datetime) -> int:
    figures = parse_spout_report(doc, int(now.timestamp() * 1000))
    checked = cast(Mapping[str, Any], doc)  # parse_spout_report has checked these fields
    store_spout_report(
        cluster,
        checked["topology_id"],
        checked["spout_id"],
        checked.get("topology_name"),
        figures,
        now,
    )
    return len(figures)


@csrf_exempt
@login_not_required
@require_POST
def librdkafka(request: HttpRequest, cluster: str) -> JsonResponse:
    return _ingest(request, cluster, _librdkafka)


@csrf_exempt
@login_not_required
@require_POST
def spout(request: HttpRequest, cluster: str) -> JsonResponse:
    return _ingest(request, cluster, _spout)

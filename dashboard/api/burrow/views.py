"""The Burrow-compatible subset under ``/v3/`` (SPEC §9): Burrow clients work unchanged.

Read-only, open by default (``open_auth``). Status codes are Burrow's: 404 with the error
envelope for an unknown cluster, 404 with a ``NOTFOUND`` status body for an unknown group.
"""

from __future__ import annotations

import socket
from functools import cache, wraps

from django.http import HttpRequest, HttpResponse

from dashboard.api.burrow import data as burrow_data
from dashboard.api.burrow import shapes as burrow
from dashboard.api.open_auth import open_endpoint
from dashboard.api.responses import ApiJsonResponse


@cache
def _hostname() -> str:
    return socket.gethostname()


def _request_info(request: HttpRequest) -> dict:
    return {"url": request.path, "host": _hostname()}


def _refuse(request: HttpRequest, status: int, message: str, headers: dict) -> HttpResponse:
    response = ApiJsonResponse(burrow.error_doc(message, _request_info(request)), status=status)
    for name, value in headers.items():
        response[name] = value
    return response


def _get_only(view):
    """Read-only Burrow view: GET/HEAD, guarded by ``LAGWATCH_OPEN_ENDPOINTS_AUTH``."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            response = _refuse(request, 405, "method not allowed", {})
            response["Allow"] = "GET, HEAD"
            return response
        return view(request, *args, **kwargs)

    return open_endpoint(_refuse)(wrapper)


@_get_only
def cluster_list(request: HttpRequest) -> ApiJsonResponse:
    return ApiJsonResponse(
        burrow.envelope(
            "cluster list returned",
            _request_info(request),
            clusters=burrow_data.cluster_names(),
        )
    )


@_get_only
def consumer_list(request: HttpRequest, cluster: str) -> ApiJsonResponse:
    names = burrow_data.consumer_names(cluster)
    if names is None:
        return _refuse(request, 404, "cluster not found", {})
    return ApiJsonResponse(
        burrow.envelope("consumer list returned", _request_info(request), consumers=names)
    )


def _status(request: HttpRequest, cluster: str, group: str, show_all: bool) -> ApiJsonResponse:
    found = burrow_data.find_group(cluster, group)
    if found is None:
        body = burrow.not_found_status(cluster, group)
        code = 404
    else:
        body = burrow.status_doc(
            cluster, group, found.status, found.complete,
            burrow_data.partition_rows(found), show_all,
        )  # fmt: skip
        code = 200
    return ApiJsonResponse(
        burrow.envelope("consumer status returned", _request_info(request), status=body),
        status=code,
    )


@_get_only
def consumer_status(request: HttpRequest, cluster: str, group: str) -> ApiJsonResponse:
    """Partitions not OK only (Burrow's ``/status``)."""
    return _status(request, cluster, group, show_all=False)


@_get_only
def consumer_lag(request: HttpRequest, cluster: str, group: str) -> ApiJsonResponse:
    """Every partition (Burrow's ``/lag``)."""
    return _status(request, cluster, group, show_all=True)


@_get_only
def consumer_detail(request: HttpRequest, cluster: str, group: str) -> ApiJsonResponse:
    """Burrow's consumer detail: each partition's recent offsets, owner and client id.

    An unknown cluster or group is Burrow's error document with 404, as Burrow answers it
    (not the ``NOTFOUND`` status document of ``/status`` and ``/lag``)."""
    found = burrow_data.find_group(cluster, group)
    if found is None:
        return _refuse(request, 404, "cluster or consumer not found", {})
    points = burrow_data.window_points(found)
    topics = burrow.consumer_topics(
        burrow_data.partition_rows(found, points), burrow_data.poll_offsets(found, points),
        found.window,
    )
    return ApiJsonResponse(
        burrow.envelope("consumer detail returned", _request_info(request), topics=topics)
    )


@_get_only
def unsupported(request: HttpRequest) -> ApiJsonResponse:
    """Burrow endpoints outside the subset: a Burrow-shaped 404 rather than an HTML page."""
    return _refuse(request, 404, "not supported by Lagwatch's Burrow-compatible API", {})

"""``/api/v1/partitions/<id>/history/`` and ``/api/v1/groups/<id>/history/``:
``?since=6h&until=&resolution=auto|raw|1m|1h``. A series for a chart: bounded by its range
and resolution rather than paginated."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest
from django.utils import timezone

from dashboard.api import history, params, queries
from dashboard.api.auth import api_view
from dashboard.api.responses import ApiJsonResponse
from dashboard.api.serializers import iso

PARAMS = ("since", "until", "resolution")
DEFAULT_RANGE = timedelta(hours=1)


def _range(request: HttpRequest, level: str):
    query = request.GET
    params.check_known(query, PARAMS)
    now = timezone.now()
    since = params.moment(query, "since", now, now - DEFAULT_RANGE)
    until = params.moment(query, "until", now, now)
    if since >= until:
        raise params.bad("since", "must be before until")
    requested = params.choice(query, "resolution", history.RESOLUTIONS, "auto")
    try:
        resolution = history.pick_resolution(
            level, requested, since, now, history.Retention.from_settings()
        )
    except history.ResolutionError as exc:
        raise params.bad("resolution", str(exc)) from None
    return since, until, resolution


def _body(since, until, resolution: str, points: list[dict]) -> dict:
    return {
        "since": iso(since),
        "until": iso(until),
        "resolution": resolution,
        "source": "raw samples" if resolution == "raw" else f"{resolution} rollups",
        "count": len(points),
        "points": points,
    }


@api_view()
def partition_history(request: HttpRequest, partition_id: int) -> ApiJsonResponse:
    partition = queries.get_partition(partition_id)
    since, until, resolution = _range(request, "partition")
    points = history.partition_points(partition, resolution, since, until)
    group = partition.group
    body = {
        "partition": {
            "id": partition.pk,
            "group_id": group.pk,
            "cluster": group.cluster.name,
            "source": group.source,
            "group": group.name,
            "topic": partition.topic,
            "partition": partition.partition,
        },  # fmt: skip
        **_body(since, until, resolution, points),
    }
    return ApiJsonResponse(body)


@api_view()
def group_history(request: HttpRequest, group_id: int) -> ApiJsonResponse:
    group = queries.get_group(group_id)
    since, until, resolution = _range(request, "group")
    points = history.group_points(group, resolution, since, until)
    body = {
        "group": {
            "id": group.pk,
            "cluster": group.cluster.name,
            "source": group.source,
            "name": group.name,
        },  # fmt: skip
        **_body(since, until, resolution, points),
    }
    return ApiJsonResponse(body)

"""``/api/v1/partitions/<id>/history/`` and ``/api/v1/groups/<id>/history/``:
``?since=6h&until=&resolution=auto|raw|1m|1h``. A series for a chart: bounded by its range
and resolution rather than paginated."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.http import HttpRequest
from ninja import Query, Router

from dashboard.api import history, params, queries
from dashboard.api.schemas.common import answers, object_id
from dashboard.api.schemas.monitoring import GroupHistory, PartitionHistory
from dashboard.api.schemas.query import HistoryQuery, request_now

# Mounted beside the groups' and partitions' routers, under the same prefixes.
group_router = Router(tags=["groups"])
partition_router = Router(tags=["partitions"])
DEFAULT_RANGE = timedelta(hours=1)
GroupId = object_id("Group")
PartitionId = object_id("Partition")


def _range(request: HttpRequest, query: HistoryQuery, level: str) -> tuple[datetime, datetime, str]:
    now = request_now(request)
    since = query.since or now - DEFAULT_RANGE
    until = query.until or now
    if since >= until:
        raise params.bad("since", "must be before until")
    try:
        resolution = history.pick_resolution(
            level, query.resolution, since, now, history.Retention.from_settings()
        )
    except history.ResolutionError as exc:
        raise params.bad("resolution", str(exc)) from None
    return since, until, resolution


def _series(since: datetime, until: datetime, resolution: str, points: list[dict]) -> dict:
    return {
        "since": since,
        "until": until,
        "resolution": resolution,
        "source": "raw samples" if resolution == "raw" else f"{resolution} rollups",
        "count": len(points),
        "points": points,
    }


@partition_router.get(
    "/{int:partition_id}/history/", response=answers(PartitionHistory, 400, 404),
    url_name="partition-history", operation_id="partitionHistory", exclude_unset=True,
    summary="A partition's lag history (one series, not paginated)",
    description="Partitions are rolled up hourly only: resolution=1m is a 400.",
)  # fmt: skip
def partition_history(
    request: HttpRequest, partition_id: PartitionId, query: Query[HistoryQuery]
) -> dict:
    partition = queries.get_partition(partition_id)
    since, until, resolution = _range(request, query, "partition")
    points = history.partition_points(partition, resolution, since, until)
    return {"partition": partition, **_series(since, until, resolution, points)}


@group_router.get(
    "/{int:group_id}/history/", response=answers(GroupHistory, 400, 404),
    url_name="group-history", operation_id="groupHistory", exclude_unset=True,
    summary="A group's lag history (one series, not paginated)",
    description="since defaults to 1 h ago, until to now; auto picks raw samples, 1m or 1h "
    "rollups, the finest that covers the range.",
)  # fmt: skip
def group_history(
    request: HttpRequest, group_id: GroupId, query: Query[HistoryQuery]
) -> dict:
    group = queries.get_group(group_id)
    since, until, resolution = _range(request, query, "group")
    points = history.group_points(group, resolution, since, until)
    return {"group": group, **_series(since, until, resolution, points)}

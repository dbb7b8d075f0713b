"""/api/v1 group and partition documents carry the newest rollup's trend and the retention
forecast (docs/API.md), read for a whole page in a fixed number of queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard.monitoring import group_totals
from dashboard.monitoring.models import (
    Cluster,
    LagRollup,
    PartitionState,
    TopicConfig,
)
from tests.api.test_endpoints import by_name
from tests.api.world import World

pytestmark = pytest.mark.django_db


def minute() -> timezone.datetime:
    return timezone.now().replace(second=0, microsecond=0)


@pytest.fixture
def trends(world: World) -> timezone.datetime:
    """The rollups' minute, returned: a test asking ``minute()`` again may be in the next."""
    now = minute()
    LagRollup.objects.create(
        level="group", cluster="prod", source="kafka", group="billing", resolution="1m",
        bucket_start=now, produce_per_s=10.0, consume_per_s=12.5, lag_slope_per_s=-2.5,
        eta_s=180.0,
    )  # fmt: skip
    LagRollup.objects.create(
        level="partition", cluster="prod", source="kafka", group="billing", topic="invoices",
        partition=1, resolution="1h", bucket_start=now.replace(minute=0), produce_per_s=4.0,
        consume_per_s=0.0, lag_slope_per_s=4.0, eta_s=None,
    )  # fmt: skip
    prod = Cluster.objects.get(name="prod")
    TopicConfig.objects.create(cluster=prod, topic="invoices", retention_ms=300_000,
                               retention_bytes=-1, cleanup_policy="delete", read_at=now)  # fmt: skip
    PartitionState.objects.filter(group__name="billing", group__cluster=prod, topic="invoices",
                                  partition=1).update(retention_left_s=60.0)  # fmt: skip
    group_totals.refresh_cluster(prod)  # as a status run does
    return now


def test_group_list_has_the_trend_and_the_soonest_deadline(api, trends) -> None:
    body = api.get("/api/v1/groups/", cluster="prod", source="kafka", name="billing")
    g = by_name(body["results"], name="billing")
    assert g["trend"] == {
        "produce_per_s": 10.0, "consume_per_s": 12.5, "lag_slope_per_s": -2.5,
        "direction": "falling", "eta_s": 180.0,
        "bucket_start": trends.isoformat().replace("+00:00", "Z"), "resolution": "1m",
    }  # fmt: skip
    assert g["retention_left_s"] == 60.0
    staging = api.get("/api/v1/groups/", cluster="staging")["results"][0]
    assert staging["trend"] is None and staging["retention_left_s"] is None


def test_partition_documents_have_trend_and_retention(api, trends) -> None:
    body = api.get("/api/v1/partitions/", cluster="prod", name="billing", topic="invoices",
                   partition=1)  # fmt: skip
    [p] = body["results"]
    assert p["trend"]["direction"] == "rising" and p["trend"]["eta_s"] is None
    assert p["trend"]["resolution"] == "1h"
    assert p["retention"]["seconds_left"] == 60.0
    assert p["retention"]["retention_ms"] == 300_000
    assert p["retention"]["cleanup_policy"] == "delete"
    detail = api.get(f"/api/v1/partitions/{p['id']}/")
    assert detail["retention"] == p["retention"] and detail["trend"] == p["trend"]
    other = api.get("/api/v1/partitions/", cluster="prod", name="billing", topic="payments")
    assert other["results"][0]["retention"] == {
        "seconds_left": None, "retention_ms": None, "retention_bytes": None,
        "cleanup_policy": None, "config_read_at": None,
    }  # fmt: skip


def test_group_detail_partition_list_carries_them(api, trends) -> None:
    gid = by_name(api.get("/api/v1/groups/", cluster="prod", name="billing")["results"],
                  name="billing", source="kafka")["id"]  # fmt: skip
    body = api.get(f"/api/v1/groups/{gid}/")
    assert body["trend"]["eta_s"] == 180.0
    p1 = by_name(body["partition_list"], topic="invoices", partition=1)
    assert p1["retention"]["seconds_left"] == 60.0 and p1["trend"]["produce_per_s"] == 4.0


def test_an_old_bucket_is_no_trend(api, world: World) -> None:
    LagRollup.objects.create(
        level="group", cluster="staging", source="kafka", group="billing", resolution="1m",
        bucket_start=minute() - timedelta(hours=1), produce_per_s=1.0,
    )  # fmt: skip
    body = api.get("/api/v1/groups/", cluster="staging", source="kafka", name="billing")
    assert body["results"][0]["trend"] is None


def test_partition_list_queries_do_not_grow_with_the_page(api, trends, client) -> None:
    api.get("/api/v1/partitions/", page_size=1)  # the token's first use writes to it
    counts = []
    for size in (1, 4):
        with CaptureQueriesContext(connection) as ctx:
            api.get("/api/v1/partitions/", page_size=size)
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1], counts

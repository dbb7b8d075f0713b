"""Trends (the newest rollups) and the retention forecast on the groups list, the group page
and the partition page; names escaped, "—" where nothing is known."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring import group_totals
from dashboard.monitoring.models import LagRollup, TopicConfig
from tests.ui import world

pytestmark = pytest.mark.django_db


def minute():
    return timezone.now().replace(second=0, microsecond=0)


def group_rollup(g, **figures) -> None:
    LagRollup.objects.create(level="group", cluster=g.cluster.name, source=g.source,
                             group=g.name, resolution="1m", bucket_start=minute(), **figures)  # fmt: skip


def at_risk_world():
    c = world.cluster()
    c.retention_risk_s = 600
    c.save()
    g = world.group(c, world.XSS, status="ERR")
    p0, p1 = world.partitions(g, 2, topic="short", status="STALL")
    p1.retention_left_s = 60.0
    p1.diagnosis = [{"code": "RETENTION_RISK", "evidence": {"seconds_left": 60.0}}]
    p1.save()
    p0.retention_left_s = 7200.0
    p0.save()
    group_totals.refresh([g.id])  # as the status run does
    TopicConfig.objects.create(cluster=c, topic="short", retention_ms=300_000,
                               retention_bytes=-1, cleanup_policy="delete",
                               read_at=timezone.now())  # fmt: skip
    return g, p0, p1


def test_groups_list_trend_eta_and_retention_badge(web: Client) -> None:
    g, _, _ = at_risk_world()
    draining = world.group(g.cluster, "draining")
    world.partitions(draining, 1)
    group_rollup(g, produce_per_s=10.0, consume_per_s=2.0, lag_slope_per_s=8.0, eta_s=None)
    group_rollup(draining, produce_per_s=1.0, consume_per_s=3.0, lag_slope_per_s=-2.0,
                 eta_s=95.0)  # fmt: skip
    quiet = world.group(g.cluster, "no-rollup")
    world.partitions(quiet, 1)
    body = web.get(reverse("ui:groups")).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and world.XSS not in body
    rows = {name: body.split(name, 1)[1].split("</tr>", 1)[0]
            for name in ("&lt;script&gt;", ">draining<", ">no-rollup<")}  # fmt: skip
    assert "↑ 8.00/s" in rows["&lt;script&gt;"]
    assert '<td class="num">—</td>' in rows["&lt;script&gt;"]  # not draining: no ETA
    assert 'retention-risk' in rows["&lt;script&gt;"] and "retention 1m" in rows["&lt;script&gt;"]
    assert "↓ -2.00/s" in rows[">draining<"] and '<td class="num">1m 35s</td>' in rows[">draining<"]
    assert "retention-risk" not in rows[">draining<"]
    assert "↑" not in rows[">no-rollup<"] and '<td class="num">—</td>' in rows[">no-rollup<"]


def test_group_page_trend_and_retention_column(web: Client) -> None:
    g, _, _ = at_risk_world()
    group_rollup(g, produce_per_s=10.0, consume_per_s=12.0, lag_slope_per_s=-2.0, eta_s=3600.0)
    body = web.get(reverse("ui:group", args=[g.pk])).content.decode()
    trend = body.split('id="group-trend"', 1)[1].split("</div>", 1)[0]
    assert "↓ -2.00/s" in trend and "produce 10/s" in trend and "consume 12/s" in trend
    assert "<dd>1h</dd>" in body  # the ETA
    retention = body.split('id="group-retention"', 1)[1].split("</div>", 1)[0]
    assert "RETENTION_RISK" in retention and "1m" in retention
    assert '<td class="num retention-risk">1m</td>' in body
    assert '<td class="num">2h</td>' in body


def test_partition_page_trend_and_retention(web: Client) -> None:
    g, p0, p1 = at_risk_world()
    LagRollup.objects.create(level="partition", cluster="prod", source="kafka", group=g.name,
                             topic="short", partition=1, resolution="1h",
                             bucket_start=minute().replace(minute=0), produce_per_s=5.0,
                             consume_per_s=0.0, lag_slope_per_s=5.0, eta_s=None)  # fmt: skip
    body = web.get(reverse("ui:partition", args=[p1.pk])).content.decode()
    trend = body.split('id="trend"', 1)[1].split("</dl>", 1)[0]
    assert "<dd>5.00/s</dd>" in trend and "<dd>0.00/s</dd>" in trend and "↑ 5.00/s" in trend
    retention = body.split('id="retention"', 1)[1].split("</section>", 1)[0]
    assert "RETENTION_RISK" in retention
    assert '<strong class="retention-left">1m</strong>' in retention
    assert "<dt>retention.ms</dt><dd>5m</dd>" in retention
    assert "<dt>retention.bytes</dt><dd>no limit</dd>" in retention
    assert "<dt>cleanup.policy</dt><dd>delete</dd>" in retention
    other = web.get(reverse("ui:partition", args=[p0.pk])).content.decode()
    assert "No trend yet" in other
    assert "RETENTION_RISK" not in other.split('id="retention"', 1)[1]


@pytest.mark.parametrize(
    ("config", "lag", "why"),
    [
        (None, 5, "have not been read"),
        ({"retention_ms": -1, "cleanup_policy": "delete"}, 5, "retention is infinite"),
        ({"retention_ms": 1000, "cleanup_policy": "compact"}, 5, "compacted"),
        ({"retention_ms": 300_000, "cleanup_policy": "delete"}, 0, "nothing is waiting"),
    ],
)
def test_partition_page_says_why_there_is_no_forecast(web: Client, config, lag, why) -> None:
    c = world.cluster()
    (p,) = world.partitions(world.group(c, "g"), 1, topic="t", lag=lag)
    if config is not None:
        TopicConfig.objects.create(cluster=c, topic="t", retention_bytes=-1,
                                   read_at=timezone.now(), **config)  # fmt: skip
    body = web.get(reverse("ui:partition", args=[p.pk])).content.decode()
    assert why in body.split('id="retention"', 1)[1]

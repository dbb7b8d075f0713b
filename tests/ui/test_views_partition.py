"""The partition page: diagnosis with evidence and reason, history, status changes."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring.models import LagRollup, StatusChange
from tests.ui import world

pytestmark = pytest.mark.django_db


def url(p, query: str = "") -> str:
    return reverse("ui:partition", args=[p.pk]) + query


def test_diagnosis_with_evidence_and_reason(web: Client) -> None:
    g = world.group(world.cluster(), "orders-spout", source="storm", status="STALL")
    (p,) = world.partitions(
        g, 1, status="STALL", reason="committed frozen at 42 while failed rises",
        diagnosis=[{"code": "POISON_MESSAGE", "evidence": {"offset": 42, "failed_rise": 17}}],
    )  # fmt: skip
    body = web.get(url(p)).content.decode()
    assert '<h3 class="diag-code">POISON_MESSAGE</h3>' in body
    assert "<dt>offset</dt><dd>42</dd>" in body and "<dt>failed_rise</dt><dd>17</dd>" in body
    assert "committed frozen at 42 while failed rises" in body


@pytest.mark.parametrize(
    ("figures", "shown", "absent"),
    [
        # A spout that pushes its partitions' figures (docs/INGEST.md).
        ({"pending": 3, "failed": 1, "acked": 40}, "<dt>Pending / failed / acked</dt><dd>3 / 1 / 40",
         "Storm has no per-partition"),
        # A real Storm's UI alone: the spout's counts, said to be the spout's.
        ({"pending": None, "failed": 7, "acked": 950}, "<dt>Spout's failed / acked</dt><dd>7 / 950",
         "Pending / failed / acked"),
        ({"pending": None, "failed": None, "acked": None}, "<dt>Owner</dt>", "failed / acked"),
    ],
)  # fmt: skip
def test_a_spouts_counts_say_whose_they_are(
    web: Client, figures: dict, shown: str, absent: str
) -> None:
    g = world.group(world.cluster(), "orders-spout", source="storm")
    (p,) = world.partitions(g, 1, **figures)
    body = web.get(url(p)).content.decode()
    assert shown in body and absent not in body


def test_healthy_partition_has_nothing_to_diagnose(web: Client) -> None:
    (p,) = world.partitions(world.group(world.cluster(), "ok"), 1)
    assert "Healthy: nothing to diagnose" in web.get(url(p)).content.decode()


def test_raw_history_charts_offsets_and_lag(web: Client) -> None:
    (p,) = world.partitions(world.group(world.cluster(), "g"), 1, lag=3)
    world.samples([p], points=3)
    r = web.get(url(p))
    offsets = r.context["figures"]["offsets"]["data"]
    assert [t["name"] for t in offsets] == ["latest", "committed"]
    assert offsets[1]["y"] == [98, 99, 100]
    assert r.context["figures"]["lag"]["data"][0]["y"] == [5, 4, 3]


def test_long_range_reads_partition_rollups(web: Client) -> None:
    g = world.group(world.cluster(), "g")
    (p,) = world.partitions(g, 1, topic="orders")
    LagRollup.objects.create(cluster="prod", level="partition", source="kafka", group="g",
                             topic="orders", partition=0, resolution="1h",
                             bucket_start=timezone.now() - timedelta(hours=5), lag=77)  # fmt: skip
    r = web.get(url(p, "?range=24h"))
    assert r.context["series_kind"] == "rollup 1h"
    assert r.context["figures"]["lag"]["data"][0]["y"] == [77]
    assert r.context["figures"]["offsets"] is None


def test_status_changes_of_this_partition_only(web: Client) -> None:
    g = world.group(world.cluster(), "g")
    p0, p1 = world.partitions(g, 2, topic="t")
    now = timezone.now()
    StatusChange.objects.create(
        group=g, topic="t", partition=0, at=now, old_status="OK", new_status="STALL", reason="mine"
    )
    StatusChange.objects.create(
        group=g,
        topic="t",
        partition=1,
        at=now,
        old_status="OK",
        new_status="STOP",
        reason="not mine",
    )
    body = web.get(url(p0)).content.decode()
    assert "mine" in body and "not mine" not in body


def test_stale_partition_is_marked(web: Client) -> None:
    c = world.cluster()
    world.health(c, "zookeeper", reachable=False)
    (p,) = world.partitions(world.group(c, "g", source="zookeeper", stale=True), 1, stale=True)
    body = web.get(url(p)).content.decode()
    assert "stale: last known figures" in body
    assert "ZooKeeper of cluster prod unreachable" in body


def test_a_partition_that_left_its_group_says_so_with_its_last_sample(web: Client) -> None:
    g = world.group(world.cluster(), "g")
    left, kept = world.partitions(g, 2)
    left.present, left.sampled_at = False, timezone.now() - timedelta(minutes=7)
    left.save()
    body = web.get(url(left)).content.decode()
    assert "no longer in the group: last sampled 7m" in body
    assert "no longer in the group" not in web.get(url(kept)).content.decode()


def test_missing_partition_is_404(web: Client) -> None:
    assert web.get(reverse("ui:partition", args=[12345])).status_code == 404


@pytest.mark.parametrize(
    ("status", "shown"), [("OK", True), ("STALL", False), ("ERR", False), ("UNKNOWN", False)]
)
def test_incomplete_window_banner_only_above_an_ok_verdict(
    web: Client, status: str, shown: bool
) -> None:
    """Once, "Window not complete … counts as OK" stood above a STALL verdict. A stuck
    partition is judged on the polls that watched it, with few commits in its window, so
    an incomplete window says nothing about a non-OK verdict."""
    g = world.group(world.cluster(), "g", status=status)
    (p,) = world.partitions(g, 1, status=status, complete=0.3)
    body = web.get(url(p)).content.decode()
    assert ("Window not complete yet (30%" in body) is shown
    assert ("counts as OK" in body) is shown

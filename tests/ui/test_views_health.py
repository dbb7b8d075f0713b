"""Source health and Spark job runs."""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring.models import CollectedCycle, CollectionError, SparkJobRun
from dashboard.ui.queries.health import collection_stopped
from tests.ui import world

pytestmark = pytest.mark.django_db


def test_sources_show_reachable_unreachable_and_errors(web: Client) -> None:
    c = world.cluster()
    world.health(c, "kafka")
    world.health(c, "zookeeper", reachable=False, error="ConnectionLoss to zk:2181")
    world.group(c, "legacy", source="zookeeper", stale=True)
    CollectionError.objects.create(
        cluster=c,
        source="storm",
        where="/spouts/x/partition_0",
        error="not valid JSON",
        at=timezone.now(),
    )
    r = web.get(reverse("ui:sources"))
    health = r.context["clusters"][0]["health"]
    assert {h.source: h.stale_groups for h in health} == {"kafka": 0, "zookeeper": 1}
    body = r.content.decode()
    assert '<span class="st ok">reachable</span>' in body
    assert '<span class="st bad">unreachable</span>' in body
    assert "ConnectionLoss to zk:2181" in body
    assert "/spouts/x/partition_0" in body and "not valid JSON" in body
    assert "never reported stuck because of an outage" in body


def test_sources_filter_by_cluster(web: Client) -> None:
    world.health(world.cluster("a"), "kafka", error="")
    world.health(world.cluster("b"), "kafka", reachable=False, error="b is down")
    body = web.get(reverse("ui:sources"), {"cluster": "a"}).content.decode()
    assert "b is down" not in body
    assert "No cluster named" in web.get(reverse("ui:sources"), {"cluster": "zz"}).content.decode()


@pytest.mark.parametrize(
    ("enabled", "last_cycle_s_ago", "stopped"),
    [
        (True, None, False),  # never polled: "not polled yet", not stopped
        (True, 5, False),
        (True, 30, False),  # three polls of 10 s: late, not yet stopped
        (True, 31, True),
        (True, 3600, True),
        (False, 3600, False),  # disabled: nobody is to collect it
    ],
)
def test_collection_stopped_after_three_silent_polls(
    enabled: bool, last_cycle_s_ago: int | None, stopped: bool
) -> None:
    now = timezone.now()
    c = world.cluster()
    c.enabled = enabled
    last = None if last_cycle_s_ago is None else now - timedelta(seconds=last_cycle_s_ago)
    assert collection_stopped(c, last, now) is stopped


def test_sources_say_collection_stopped_while_no_cycle_is_stored(web: Client) -> None:
    """Redis or every collector down: no source row can turn red, nobody records a failure
    (the soak's blind spot); the page says so from the stored cycles' times."""
    running, stopped = world.cluster("running"), world.cluster("stopped")
    now = timezone.now()
    for c, age in ((running, 4), (stopped, 95)):
        world.health(c, "kafka")
        CollectedCycle.objects.create(
            cluster=c, at=now - timedelta(seconds=age), collected_by="h:1"
        )
        CollectedCycle.objects.create(
            cluster=c, at=now - timedelta(seconds=age + 10), collected_by="h:1"
        )
    r = web.get(reverse("ui:sources"))
    flags = {row["cluster"].name: row["collection_stopped"] for row in r.context["clusters"]}
    assert flags == {"running": False, "stopped": True}
    body = r.content.decode()
    assert body.count('data-collection="stopped"') == 1
    assert "Collection stopped:" in body
    assert re.search(r"no cycle stored for 1m \d+s", body)  # 95 s and the render's own time
    live = web.get(reverse("ui:sources"), {"live": "1", "cluster": "stopped"}).content.decode()
    assert "Collection stopped:" in live


def test_cluster_never_polled(web: Client) -> None:
    world.cluster()
    assert "Not polled yet" in web.get(reverse("ui:sources")).content.decode()


def test_jobs_show_last_runs_and_failures(web: Client) -> None:
    now = timezone.now()
    SparkJobRun.objects.create(
        job="status",
        started_at=now - timedelta(minutes=2),
        finished_at=now - timedelta(minutes=2),
        duration_s=7.5,
        window_s=3600,
        input_rows=12345,
        outcome="ok",
    )
    SparkJobRun.objects.create(
        job="status",
        started_at=now,
        finished_at=now,
        duration_s=1.0,
        window_s=3600,
        outcome="failed",
        error="Py4JError: boom",
    )
    r = web.get(reverse("ui:jobs"))
    latest = r.context["latest"]
    assert latest[0]["outcome"] == "failed" and latest[0]["last_ok_at"] is not None
    body = r.content.decode()
    assert "Py4JError: boom" in body and "12\u202f345" in body
    assert web.get(reverse("ui:jobs"), {"job": "rollups"}).context["runs"] == []
    assert web.get(reverse("ui:jobs"), {"job": "other"}).status_code == 400


def test_no_job_yet(web: Client) -> None:
    assert "No Spark job has run yet" in web.get(reverse("ui:jobs")).content.decode()


def test_a_rebuilt_cluster_is_said_on_the_sources_page_and_its_timeline(web: Client) -> None:
    from dashboard.monitoring.models import ClusterEvent

    c = world.cluster("a")
    world.health(c, "kafka")
    at = timezone.now() - timedelta(minutes=3)
    ClusterEvent.objects.create(
        cluster=c, at=at, kind=ClusterEvent.REBUILT,
        text="kafka: cluster id <old> → new. Its offsets history starts over here.",
    )  # fmt: skip
    body = web.get(reverse("ui:sources")).content.decode()
    assert 'data-cluster="rebuilt"' in body and "Cluster rebuilt" in body
    assert "cluster id &lt;old&gt; → new" in body and at.strftime("%Y-%m-%d %H:%M:%S") in body
    page = web.get(reverse("ui:cluster", args=["a"])).content.decode()
    assert 'data-event="cluster_rebuilt"' in page and "cluster rebuilt" in page
    assert "cluster id &lt;old&gt; → new" in page
    world.health(world.cluster("b"), "kafka")
    assert (
        'data-cluster="rebuilt"'
        not in web.get(reverse("ui:sources"), {"cluster": "b"}).content.decode()
    )

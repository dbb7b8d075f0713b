"""Source health and Spark job runs."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring.models import CollectionError, SparkJobRun
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

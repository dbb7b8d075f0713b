"""The cluster page: the groups' lag beside the brokers' delayed operations (DOMAIN §5)."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring.models import BrokerPurgatory
from tests.ui import world

pytestmark = pytest.mark.django_db


def test_brokers_table_beside_the_lag(web: Client, django_assert_max_num_queries) -> None:
    c = world.cluster()
    c.broker_metrics_urls = ["http://b1:7071/metrics", "http://b2:7071/metrics"]
    c.save()
    world.partitions(world.group(c, "billing"), 3, lag=7)
    now = timezone.now()
    BrokerPurgatory.objects.create(
        cluster=c, broker="b1:7071", url="http://b1:7071/metrics", fetch_purgatory=12,
        produce_purgatory=0, fetch_expires_per_s=0.75, as_of=now, checked_at=now,
    )  # fmt: skip
    BrokerPurgatory.objects.create(
        cluster=c, broker="b2:7071", url="http://b2:7071/metrics", fetch_purgatory=3,
        as_of=now - timedelta(minutes=5), checked_at=now, error="Connection refused",
    )  # fmt: skip
    world.health(c, "broker_metrics", reachable=False, error="Connection refused")
    with django_assert_max_num_queries(12):
        r = web.get(reverse("ui:cluster", args=["prod"]))
    assert r.status_code == 200
    body = r.content.decode()
    assert r.context["total_lag"] == 21 and r.context["fetch_purgatory"] == 15
    assert 'data-figure="fetch_purgatory">12<' in body
    assert "0.75" in body
    assert "Connection refused" in body and "figures are the last known" in body
    assert "a source warning only" in body
    assert "billing" in body


def test_no_urls_configured_says_how(web: Client) -> None:
    world.cluster()
    body = web.get(reverse("ui:cluster", args=["prod"])).content.decode()
    assert "No broker metrics URLs configured" in body


def test_unknown_cluster_is_404_and_the_page_needs_login(web: Client, client: Client) -> None:
    world.cluster()
    assert web.get(reverse("ui:cluster", args=["nope"])).status_code == 404
    client.logout()
    r = client.get(reverse("ui:cluster", args=["prod"]))
    assert r.status_code == 302 and "/login" in r["Location"]


def test_hostile_names_are_escaped(web: Client) -> None:
    c = world.cluster()
    world.partitions(world.group(c, world.XSS), 1)
    BrokerPurgatory.objects.create(
        cluster=c, broker=world.XSS, url="http://x/", error=world.XSS, checked_at=timezone.now()
    )
    body = web.get(reverse("ui:cluster", args=["prod"])).content.decode()
    assert world.XSS not in body and "&lt;script&gt;" in body


def test_overview_links_the_cluster_page(web: Client) -> None:
    world.cluster()
    world.partitions(world.group(world.cluster("b"), "g"), 1)
    body = web.get(reverse("ui:overview")).content.decode()
    assert reverse("ui:cluster", args=["prod"]) in body


def test_a_broker_metrics_outage_banner_says_lag_is_not_affected(web: Client) -> None:
    c = world.cluster()
    world.health(c, "broker_metrics", reachable=False, error="Connection refused")
    body = web.get(reverse("ui:overview")).content.decode()
    assert "Broker metrics of cluster prod unreachable" in body
    assert "consumer lag and statuses do not depend on them" in body
    assert "not a stuck consumer" not in body

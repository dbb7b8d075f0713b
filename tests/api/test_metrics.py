"""/metrics: parses as Prometheus text, holds the expected samples, escapes hostile names,
and costs a fixed number of queries however many partitions there are."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from dashboard.monitoring.models import Cluster, ConsumerGroup, LagRollup, PartitionState
from tests.api.world import HOSTILE, HOSTILE_TOPIC, World

pytestmark = pytest.mark.django_db


def scrape(client: Client) -> dict[str, dict[tuple, float]]:
    """name -> {sorted label items: value}, through prometheus_client's own parser."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    found: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def labels(**kw) -> tuple:
    return tuple(sorted(kw.items()))


BILLING = {"cluster": "prod", "source": "kafka", "group": "billing"}


def test_partition_series(client: Client, world: World) -> None:
    m = scrape(client)
    key = labels(**BILLING, topic="invoices", partition="1")
    assert m["lagwatch_partition_lag"][key] == 400
    assert m["lagwatch_partition_time_lag_seconds"][key] == 600.0
    assert m["lagwatch_partition_status"][key] == 5  # STALL
    ok = labels(**BILLING, topic="invoices", partition="0")
    assert m["lagwatch_partition_status"][ok] == 1


def test_group_series(client: Client, world: World) -> None:
    m = scrape(client)
    key = labels(**BILLING)
    assert m["lagwatch_group_lag"][key] == 450
    assert m["lagwatch_group_max_time_lag_seconds"][key] == 600.0
    assert m["lagwatch_group_status"][key] == 3  # ERR
    assert m["lagwatch_group_partitions"][key] == 3
    assert m["lagwatch_group_members"][key] == 2
    assert m["lagwatch_group_complete_ratio"][key] == 1.0
    one_hot = {dict(k)["status"]: v for k, v in m["lagwatch_group_status_is"].items()
               if dict(k)["group"] == "billing" and dict(k)["cluster"] == "prod"}  # fmt: skip
    assert one_hot == {"UNKNOWN": 0, "OK": 0, "WARN": 0, "ERR": 1, "STOP": 0, "STALL": 0,
                       "REWIND": 0}  # fmt: skip
    spout = labels(cluster="prod", source="storm", group="orders-spout")
    assert m["lagwatch_group_status"][spout] == 2  # WARN
    assert m["lagwatch_groups"][labels(cluster="prod", status="ERR")] == 1


def test_collector_health_series(client: Client, world: World) -> None:
    m = scrape(client)
    kafka, zk = labels(cluster="prod", source="kafka"), labels(cluster="prod", source="zookeeper")
    assert m["lagwatch_source_up"][kafka] == 1 and m["lagwatch_source_up"][zk] == 0
    assert 5 <= m["lagwatch_source_last_success_age_seconds"][kafka] < 60
    assert m["lagwatch_source_last_duration_seconds"][kafka] == 0.25
    assert m["lagwatch_source_consecutive_failures"][zk] == 4
    assert m["lagwatch_source_collection_errors"][zk] == 1
    assert 0 <= m["lagwatch_heartbeat_age_seconds"][labels(process="celery")] < 60


def test_broker_purgatory_series(client: Client, world: World) -> None:
    m = scrape(client)
    b1, b2 = labels(cluster="prod", broker="b1:7071"), labels(cluster="prod", broker="b2:7071")
    fetch = labels(cluster="prod", broker="b1:7071", operation="fetch")
    produce = labels(cluster="prod", broker="b1:7071", operation="produce")
    assert m["lagwatch_broker_purgatory_size"][fetch] == 12
    assert m["lagwatch_broker_purgatory_size"][produce] == 1
    assert m["lagwatch_broker_purgatory_watched"][fetch] == 40
    assert m["lagwatch_broker_purgatory_expirations_per_second"][fetch] == 0.5
    assert produce not in m["lagwatch_broker_purgatory_expirations_per_second"]  # not known
    assert m["lagwatch_broker_metrics_up"] == {b1: 1, b2: 0}
    # b2 never answered: no figure is made up for it.
    assert not any(dict(k)["broker"] == "b2:7071" for k in m["lagwatch_broker_purgatory_size"])
    assert b1 in m["lagwatch_broker_metrics_last_success_timestamp_seconds"]


def test_spark_job_series_describe_the_last_finished_run(client: Client, world: World) -> None:
    m = scrape(client)
    job = labels(job="status")
    assert m["lagwatch_spark_job_last_duration_seconds"][job] == 10.0  # the failed one
    assert m["lagwatch_spark_job_last_input_rows"][job] == 4400
    assert m["lagwatch_spark_job_last_outcome"][labels(job="status", outcome="failed")] == 1
    assert m["lagwatch_spark_job_last_outcome"][labels(job="status", outcome="ok")] == 0
    assert m["lagwatch_spark_job_failed_runs"][job] == 1
    last_ok = m["lagwatch_spark_job_last_success_timestamp_seconds"][job]
    assert last_ok == (world.now - timezone.timedelta(minutes=2)).timestamp()
    assert m["lagwatch_spark_job_failed_runs"][labels(job="rollups")] == 0


def test_spout_series_are_each_spouts_latest_figures(client: Client, world: World) -> None:
    m = scrape(client)
    key = labels(cluster="prod", topology_id="orders-topo-1-1700000000", spout_id="orders-spout")
    assert m["lagwatch_spout_emitted_total"][key] == 1000
    assert m["lagwatch_spout_acked_total"][key] == 975
    assert m["lagwatch_spout_failed_total"][key] == 2
    assert m["lagwatch_spout_complete_latency_ms"][key] == 12.5
    assert m["lagwatch_spout_pending"][key] == 20
    assert m["lagwatch_spout_max_pending"][key] == 20
    # A killed instance's old rows are not exported; a spout the push did not cover has no
    # pending series rather than a 0.
    topologies = {dict(k)["topology_id"] for k in m["lagwatch_spout_emitted_total"]}
    assert topologies == {"orders-topo-1-1700000000", "evil-topo"}
    hostile = labels(cluster="prod", topology_id="evil-topo", spout_id=HOSTILE)
    assert m["lagwatch_spout_emitted_total"][hostile] == 1
    assert hostile not in m["lagwatch_spout_pending"]


def test_hostile_names_are_escaped_and_come_back_intact(client: Client, world: World) -> None:
    text = client.get("/metrics").content.decode()
    # the newline, quote and backslash of the name are escaped inside the label value
    assert 'group="evil\\"group\\\\with\\nnewline{}</script>é"' in text
    m = scrape(client)
    key = labels(cluster="prod", source="kafka", group=HOSTILE, topic=HOSTILE_TOPIC,
                 partition="0")  # fmt: skip
    assert m["lagwatch_partition_status"][key] == 0  # UNKNOWN
    assert key not in m["lagwatch_partition_lag"]  # no committed offset: no lag, not 0


def test_query_count_does_not_grow_with_partitions(
    client: Client, world: World, django_assert_max_num_queries
) -> None:
    cluster = Cluster.objects.create(name="wide")
    now = timezone.now()
    groups = ConsumerGroup.objects.bulk_create(
        ConsumerGroup(
            cluster=cluster, source="kafka", name=f"g{i}", first_seen_at=now, last_seen_at=now
        )  # fmt: skip
        for i in range(50)
    )
    PartitionState.objects.bulk_create(
        PartitionState(group=g, topic="t", partition=n, lag=n, sampled_at=now)
        for g in groups
        for n in range(40)
    )
    rollup(level="group", cluster="wide", group="g1", resolution="1m")
    LagRollup.objects.bulk_create(
        LagRollup(level="partition", cluster="wide", source="kafka", group=g.name, topic="t",
                  partition=n, resolution="1h", bucket_start=now, eta_s=n)  # fmt: skip
        for g in groups
        for n in range(40)
    )
    # 21 whatever the number of partitions: groups, partitions, last commits, rebalances, source
    # health, collection errors, four for the Spark jobs, heartbeats; the clusters' retention
    # thresholds and two per level of trends (groups, partitions: each cluster's newest
    # bucket, then its rows); spouts, brokers and producers, one each; the clusters' poll
    # intervals and newest cycles.
    with django_assert_max_num_queries(21):
        m = scrape(client)
    assert len(m["lagwatch_partition_lag"]) == 2000 + 6
    assert len(m["lagwatch_partition_eta_seconds"]) == 2000


def rollup(**kw) -> LagRollup:
    fields = {"source": "kafka", "bucket_start": timezone.now().replace(second=0, microsecond=0),
              **kw}  # fmt: skip
    return LagRollup.objects.create(**fields)


def test_trend_series_come_from_each_clusters_newest_rollup(client: Client, world) -> None:
    now = timezone.now().replace(second=0, microsecond=0)
    minute = timezone.timedelta(minutes=1)
    rollup(level="group", cluster="prod", group="billing", resolution="1m",
           bucket_start=now - minute, produce_per_s=1.0, consume_per_s=1.0, lag_slope_per_s=0.0)
    rollup(level="group", cluster="prod", group="billing", resolution="1m", bucket_start=now,
           produce_per_s=10.0, consume_per_s=4.0, lag_slope_per_s=6.0, eta_s=None)
    rollup(level="partition", cluster="prod", group="billing", topic="invoices", partition=1,
           resolution="1h", bucket_start=now.replace(minute=0), produce_per_s=5.0,
           consume_per_s=7.5, lag_slope_per_s=-2.5, eta_s=160.0)
    # Too old to be a trend: left out.
    rollup(level="group", cluster="prod", group="old", resolution="1m",
           bucket_start=now - 40 * minute, produce_per_s=3.0)  # fmt: skip
    m = scrape(client)
    g = labels(**BILLING)
    assert m["lagwatch_group_produce_messages_per_second"][g] == 10.0
    assert m["lagwatch_group_consume_messages_per_second"][g] == 4.0
    assert m["lagwatch_group_lag_slope_messages_per_second"][g] == 6.0
    assert g not in m.get("lagwatch_group_eta_seconds", {})  # not draining: absent, not 0
    p = labels(**BILLING, topic="invoices", partition="1")
    assert m["lagwatch_partition_eta_seconds"][p] == 160.0
    assert m["lagwatch_partition_lag_slope_messages_per_second"][p] == -2.5
    old = labels(cluster="prod", source="kafka", group="old")
    assert old not in m["lagwatch_group_produce_messages_per_second"]


def test_retention_series(client: Client, world: World) -> None:
    Cluster.objects.filter(name="prod").update(retention_risk_s=600)
    billing = PartitionState.objects.filter(group__name="billing", group__cluster__name="prod")
    billing.filter(partition=1).update(retention_left_s=60.0)
    billing.filter(partition=0).update(retention_left_s=7200.0)
    m = scrape(client)
    p = labels(**BILLING, topic="invoices", partition="1")
    assert m["lagwatch_partition_retention_seconds_left"][p] == 60.0
    staging = labels(cluster="staging", source="kafka", group="billing", topic="invoices",
                     partition="0")  # fmt: skip
    assert staging not in m["lagwatch_partition_retention_seconds_left"]  # no forecast: absent
    assert m["lagwatch_group_retention_seconds_left"][labels(**BILLING)] == 60.0
    assert m["lagwatch_group_retention_risk_partitions"][labels(**BILLING)] == 1
    spout = labels(cluster="prod", source="storm", group="orders-spout")
    assert m["lagwatch_group_retention_risk_partitions"][spout] == 0
    assert spout not in m["lagwatch_group_retention_seconds_left"]


def test_metrics_open_by_default_and_get_only(client: Client, world: World) -> None:
    assert client.get("/metrics").status_code == 200
    assert client.post("/metrics").status_code == 405


def test_openmetrics_when_the_scraper_asks_for_it(client: Client, world: World) -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse

    response = client.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert response["Content-Type"].startswith("application/openmetrics-text")
    families = {f.name: f for f in om_parse(response.content.decode())}
    lag = {tuple(sorted(s.labels.items())): s.value
           for s in families["lagwatch_partition_lag"].samples}  # fmt: skip
    assert lag[labels(**BILLING, topic="invoices", partition="1")] == 400


def test_group_series_only_on_request(client: Client, world: World) -> None:
    response = client.get("/metrics", {"partitions": "false"})
    names = {f.name for f in text_string_to_metric_families(response.content.decode())}
    assert "lagwatch_group_lag" in names and "lagwatch_source_up" in names
    assert not {n for n in names if n.startswith("lagwatch_partition_")}
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    totals = {s.labels["group"]: s.value for s in families["lagwatch_group_lag"].samples
              if s.labels["cluster"] == "prod"}  # fmt: skip
    assert totals["billing"] == 450  # group totals still summed from every partition
    assert client.get("/metrics", {"partitions": "maybe"}).status_code == 400
    assert client.get("/metrics", {"debug": "1"}).status_code == 400

"""A small monitored world in the test database, with figures the API must serve exactly.

Cluster ``prod`` holds a Kafka group ``billing`` (3 partitions, one STALL with a diagnosis),
a ZooKeeper consumer ``legacy-zk`` (OK), a Storm spout ``orders-spout`` (WARN) and a group
with a hostile name; cluster ``staging`` one group. Raw samples every 10 s for the last
10 minutes, a few hourly rollups, rebalances, status changes, source health, Spark runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone

from collectors.ingest_parsing import parse_librdkafka_stats
from collectors.producer_deliveries import parse_deliveries
from dashboard.ingest.store import store_client_report
from dashboard.monitoring import group_totals
from dashboard.monitoring.models import (
    BrokerPurgatory,
    Cluster,
    CollectionError,
    ConsumerGroup,
    GroupSample,
    LagRollup,
    PartitionState,
    RebalanceEvent,
    ServiceHeartbeat,
    SourceHealth,
    SparkJobRun,
    SpoutSample,
    StatusChange,
)
from dashboard.store import raw_history
from tests.collectors.ingest_documents import producer_doc

HOSTILE = 'evil"group\\with\nnewline{}</script>é'
HOSTILE_TOPIC = 'topic"=\\x'


@dataclass
class World:
    now: datetime
    clusters: dict[str, Cluster] = field(default_factory=dict)
    groups: dict[str, ConsumerGroup] = field(default_factory=dict)
    partitions: dict[tuple[str, str, int], PartitionState] = field(default_factory=dict)


def _group(world: World, cluster: str, source: str, name: str, status: str, **kw) -> ConsumerGroup:
    g = ConsumerGroup.objects.create(
        cluster=world.clusters[cluster], source=source, name=name, status=status,
        first_seen_at=world.now - timedelta(days=1), last_seen_at=world.now,
        evaluated_at=world.now - timedelta(seconds=20),
        status_since=world.now - timedelta(minutes=5), **kw,
    )  # fmt: skip
    world.groups[name if cluster == "prod" else f"{cluster}/{name}"] = g
    return g


def _partition(world: World, g: ConsumerGroup, topic: str, n: int, committed, latest, **kw):
    p = PartitionState.objects.create(
        group=g, topic=topic, partition=n, committed=committed, earliest=0, latest=latest,
        lag=None if committed is None or latest is None else latest - committed,
        sampled_at=world.now, **kw,
    )  # fmt: skip
    if g.cluster.name == "prod":
        world.partitions[(g.name, topic, n)] = p
    return p


def build_world(now: datetime | None = None) -> World:
    now = now or timezone.now().replace(microsecond=0)
    world = World(now=now)
    world.clusters["prod"] = Cluster.objects.create(
        name="prod", kafka_bootstrap_servers="k:9092", zk_hosts="zk:2181", zk_consumers=True,
        storm_spout_roots=["/spouts"], poll_interval_s=10,
    )  # fmt: skip
    world.clusters["staging"] = Cluster.objects.create(name="staging", enabled=False)

    members = [
        {"member_id": "m-1", "client_id": "billing-app", "host": "/10.0.0.1", "assignment": []},
        {"member_id": "m-2", "client_id": "billing-app", "host": "/10.0.0.2", "assignment": []},
    ]
    billing = _group(world, "prod", "kafka", "billing", "ERR", complete=1.0, state="Stable",
                     generation=7, members=members, total_lag=0)  # fmt: skip
    commit_at = now - timedelta(minutes=3)
    _partition(world, billing, "invoices", 0, 100, 150, owner="m-1", status="OK", complete=1.0,
               last_commit_at=commit_at, time_lag_s=2.5, alive=True)  # fmt: skip
    _partition(world, billing, "invoices", 1, 500, 900, owner="m-2", status="STALL",
               complete=1.0, last_commit_at=commit_at, time_lag_s=600.0, alive=True,
               diagnosis=[{"code": "POISON_MESSAGE", "evidence": {"offset": 500}}],
               reason="committed offset frozen at 500 while the consumer is alive",
               status_since=now - timedelta(minutes=4))  # fmt: skip
    _partition(world, billing, "payments", 0, 42, 42, owner="m-1", status="OK", complete=0.5,
               last_commit_at=commit_at, time_lag_s=0.0, alive=True)  # fmt: skip

    legacy = _group(world, "prod", "zookeeper", "legacy-zk", "OK", complete=1.0)
    _partition(world, legacy, "audit", 0, 10, 12, owner="legacy-zk_host-1-0", status="OK",
               complete=1.0, time_lag_s=1.0)  # fmt: skip

    spout = _group(world, "prod", "storm", "orders-spout", "WARN", complete=1.0,
                   owner="orders-topo", topology_id="orders-topo-1-1700000000")  # fmt: skip
    _partition(world, spout, "orders", 0, 7, 30, owner="orders-topo", status="WARN",
               complete=1.0, pending=3, failed=0, acked=100, time_lag_s=30.0,
               diagnosis=[{"code": "SLOW_CONSUMER", "evidence": {"eta_s": None}}])  # fmt: skip

    # The spout's whole figures: two cycles of the running topology (the newer one is the
    # latest), one of a killed instance 20 minutes ago (too old to be exported).
    prod_cluster = world.clusters["prod"]
    SpoutSample.objects.bulk_create([
        SpoutSample(cluster=prod_cluster, topology_id="orders-topo-1-1700000000",
                    spout_id="orders-spout", at=now - timedelta(seconds=10), emitted=900,
                    acked=880, failed=1, complete_latency_ms=12.0, pending=20,
                    max_spout_pending=20),
        SpoutSample(cluster=prod_cluster, topology_id="orders-topo-1-1700000000",
                    spout_id="orders-spout", at=now, emitted=1000, acked=975, failed=2,
                    complete_latency_ms=12.5, pending=20, max_spout_pending=20),
        SpoutSample(cluster=prod_cluster, topology_id="orders-topo-0-1600000000",
                    spout_id="orders-spout", at=now - timedelta(minutes=20), emitted=5,
                    acked=5, failed=0),
        SpoutSample(cluster=prod_cluster, topology_id="evil-topo", spout_id=HOSTILE, at=now,
                    emitted=1, acked=1, failed=0),
    ])  # fmt: skip

    hostile = _group(world, "prod", "kafka", HOSTILE, "UNKNOWN")
    _partition(world, hostile, HOSTILE_TOPIC, 0, None, 5, status="UNKNOWN")

    other = _group(world, "staging", "kafka", "billing", "OK", complete=1.0)
    _partition(world, other, "invoices", 0, 1, 1, status="OK", complete=1.0)

    # Raw history: every 10 s for the last 10 minutes; invoices/1 frozen at 500.
    samples = []
    for i in range(60):
        at = now - timedelta(seconds=10 * (59 - i))
        for (_group_name, topic, n), p in world.partitions.items():
            if p.committed is None:
                continue
            committed = p.committed if (topic, n) == ("invoices", 1) else p.committed - 59 + i
            latest = p.latest - 59 + i if p.latest is not None else None
            lag = None if latest is None else latest - committed
            samples.append((p.group_id, at, (topic, n, committed, latest, lag, p.time_lag_s,
                                             None, None, None, False)))  # fmt: skip
    GroupSample.objects.bulk_create(raw_history.group_samples(samples))

    # Hourly rollups of the last 3 days for invoices/1 and the billing group.
    rollups = []
    for h in range(72):
        start = (now - timedelta(hours=72 - h)).replace(minute=0, second=0)
        rollups.append(LagRollup(cluster="prod", level="partition", source="kafka",
                                 group="billing", topic="invoices", partition=1,
                                 resolution="1h", bucket_start=start, lag=h, max_lag=h + 1,
                                 avg_lag=h + 0.5))  # fmt: skip
        rollups.append(LagRollup(cluster="prod", level="group", source="kafka", group="billing",
                                 resolution="1h", bucket_start=start, lag=10 * h))  # fmt: skip
    for m in range(120):
        start = (now - timedelta(minutes=120 - m)).replace(second=0)
        rollups.append(LagRollup(cluster="prod", level="group", source="kafka", group="billing",
                                 resolution="1m", bucket_start=start, lag=m))  # fmt: skip
    LagRollup.objects.bulk_create(rollups)

    RebalanceEvent.objects.create(group=billing, at=now - timedelta(minutes=30), generation=6,
                                  cause="member_joined", detail={"member": "m-2"})  # fmt: skip
    RebalanceEvent.objects.create(group=billing, at=now - timedelta(minutes=2), generation=7,
                                  cause="member_left", detail={"member": "m-3"})  # fmt: skip
    StatusChange.objects.create(group=billing, topic="invoices", partition=1,
                                at=now - timedelta(minutes=4), old_status="OK",
                                new_status="STALL", diagnosis=billing_diag(),
                                reason="frozen")  # fmt: skip
    StatusChange.objects.create(group=billing, topic="", partition=None,
                                at=now - timedelta(minutes=4), old_status="OK",
                                new_status="ERR")  # fmt: skip

    prod = world.clusters["prod"]
    SourceHealth.objects.create(cluster=prod, source="kafka", reachable=True,
                                last_attempt_at=now, last_success_at=now - timedelta(seconds=5),
                                last_duration_s=0.25)  # fmt: skip
    SourceHealth.objects.create(cluster=prod, source="zookeeper", reachable=False,
                                last_attempt_at=now, last_success_at=now - timedelta(minutes=10),
                                last_error_at=now, last_error="connection refused",
                                last_duration_s=10.0, consecutive_failures=4)  # fmt: skip
    CollectionError.objects.create(cluster=prod, source="zookeeper", where="/spouts/x",
                                   error="not JSON", at=now)  # fmt: skip
    # Brokers' purgatory figures: one answered, one whose latest scrape failed.
    BrokerPurgatory.objects.create(cluster=prod, broker="b1:7071", url="http://b1:7071/metrics",
                                   fetch_purgatory=12, produce_purgatory=1, fetch_watched=40,
                                   produce_watched=1, fetch_expires_per_s=0.5,
                                   produce_expires_per_s=None, as_of=now, checked_at=now)  # fmt: skip
    BrokerPurgatory.objects.create(cluster=prod, broker="b2:7071", url="http://b2:7071/metrics",
                                   checked_at=now, error="Connection refused")  # fmt: skip
    SparkJobRun.objects.create(job="status", started_at=now - timedelta(minutes=2),
                               finished_at=now - timedelta(minutes=2) + timedelta(seconds=12),
                               duration_s=12.0, window_s=3600, input_rows=4321, output_rows=9,
                               outcome="ok")  # fmt: skip
    SparkJobRun.objects.create(job="status", started_at=now - timedelta(minutes=1),
                               finished_at=now - timedelta(seconds=50), duration_s=10.0,
                               window_s=3600, input_rows=4400, outcome="failed",
                               error="boom")  # fmt: skip
    SparkJobRun.objects.create(job="status", started_at=now, window_s=3600)  # running
    ServiceHeartbeat.objects.create(name="celery", at=now - timedelta(seconds=3))
    # A producer with delivery counts: some expired (PRODUCER_EXPIRY on invoices).
    doc = producer_doc()
    doc["time"] = int(now.timestamp())
    report = parse_librdkafka_stats(doc, None, int(now.timestamp() * 1000), host="10.0.0.5")
    deliveries = parse_deliveries(
        {"instance": "i-1", "counts": [
            {"topic": "invoices", "partition": 0, "delivered": 10,
             "failed": {"_MSG_TIMED_OUT": 2, "_MSG_SIZE_TOO_LARGE": 1}}]}
    )  # fmt: skip
    store_client_report(world.clusters["prod"], report, now, deliveries)
    # The groups' partition totals, as the store and the status run keep them.
    group_totals.refresh(ConsumerGroup.objects.values_list("id", flat=True))
    return world


def billing_diag() -> list[dict]:
    return [{"code": "POISON_MESSAGE", "evidence": {"offset": 500}}]

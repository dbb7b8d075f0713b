"""The demo world the lab runs by default: read this file to know what the dashboard shows."""

from __future__ import annotations

from lab.workload.spec import (
    CONSUMER,
    GroupSpec,
    Roles,
    TopicSpec,
    TopologySpec,
    WorldSpec,
    ZkConsumerSpec,
)

DEMO_WORLD = WorldSpec(
    topics=(
        TopicSpec("orders", partitions=6, rate=24),
        TopicSpec("payments", partitions=4, rate=12),
        TopicSpec("clicks", partitions=8, rate=40),
        TopicSpec("audit", partitions=3, rate=6),
        TopicSpec("quiet", partitions=2, rate=0),  # never produced to, on purpose
        TopicSpec("shipments", partitions=6, rate=18),
        TopicSpec("invoices", partitions=4, rate=8),
    ),
    groups=(
        # The classic protocol, one client-side assignor each.
        GroupSpec("orders-processor", "orders", members=3, assignor="range"),
        GroupSpec("payments-ledger", "payments", members=2, assignor="roundrobin"),
        GroupSpec("clicks-aggregator", "clicks", members=3, assignor="cooperative-sticky"),
        GroupSpec("quiet-reader", "quiet", members=1, assignor="range"),
        # KIP-848's consumer protocol: the broker assigns, with each of its assignors. Each
        # reads a topic of its own, so a scenario aimed at one (param `group`, or `topic` for
        # retention) touches nothing else.
        GroupSpec(
            "shipments-tracker", "shipments", members=3, assignor="uniform", protocol=CONSUMER
        ),
        GroupSpec("invoices-auditor", "invoices", members=2, assignor="range", protocol=CONSUMER),
    ),
    zk_consumers=(ZkConsumerSpec("legacy-audit", "audit"),),
    topologies=(
        TopologySpec("orders-enricher", spout_id="orders-spout", topic="orders"),
        TopologySpec("clicks-sessionizer", spout_id="clicks-spout", topic="clicks"),
        # The third spout exists for the retention scenario: once retention has moved the log
        # start of `audit` past its stored offsets, this spout jumps to the latest offset.
        # The backpressure scenario slows its bolt (no other scenario uses it by default).
        TopologySpec(
            "audit-archiver",
            spout_id="audit-spout",
            topic="audit",
            spout={"use_start_offset_time_if_offset_out_of_range": True},
        ),
    ),
    roles=Roles(
        slow_group="orders-processor",
        dead_group="payments-ledger",
        storm_group="clicks-aggregator",
        poison_topology="orders-enricher",
        leak_topology="clicks-sessionizer",
        backpressure_topology="audit-archiver",
        restart_topology="orders-enricher",
        collision_topology="orders-enricher",
        collision_topic="payments",
        retention_topic="audit",
        retention_risk_group="invoices-auditor",
        quiet_topic="quiet",
        quiet_group="quiet-reader",
        expiry_topic="orders",
    ),
)

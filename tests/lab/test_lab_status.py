"""The whole lab, end to end: the workload's scenarios as ``lagwatch_status --json`` shows them.

A stack of its own with every service (ZooKeeper, broker, Redis, the workload with its
consumers, ZooKeeper consumer and Storm spouts, web, worker, collector, beat). Nothing is
called in-process: beat dispatches the cycles, the collector stores them, the workload's
clients push their statistics and spout counts to the web's ingest endpoint, and the test
reads the result the way a user would, through ``manage.py lagwatch_status --json``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lab.stack import Stack
from lab.workload.control import start_scenario
from tests.lab_world import lagwatch_status
from tests.waiting import wait_for

pytestmark = pytest.mark.lab

SERVICES = ["zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "beat"]


def group(doc: dict, source: str, name: str) -> dict | None:
    return next((g for g in doc["groups"] if g["source"] == source and g["group"] == name), None)


def partitions(doc: dict, source: str, name: str) -> dict[tuple[str, int], dict]:
    return {
        (p["topic"], p["partition"]): p
        for p in doc["partitions"]
        if p["source"] == source and p["group"] == name
    }


def everyone_reported(doc: dict) -> bool:
    """Every demo consumer is collected with owners known (pushed statistics have arrived)."""
    kafka = partitions(doc, "kafka", "orders-processor")
    spouts = partitions(doc, "storm", "orders-spout")
    return (
        bool(kafka and spouts)
        and all(p["owner"] for p in kafka.values())
        and all(p["pending"] is not None for p in spouts.values())
    )


def test_scenarios_show_up_in_lagwatch_status(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    try:
        endpoints = stack.up(SERVICES)
        doc = wait_for(
            lambda: (d := lagwatch_status(tmp_path)) and everyone_reported(d) and d,
            120, "every source collected with pushed statistics",
        )  # fmt: skip

        # Healthy state: owners, liveness, spout counts, ZooKeeper consumers' generation.
        processor = partitions(doc, "kafka", "orders-processor")
        assert all(p["alive"] is True and p["lag"] is not None for p in processor.values())
        legacy = group(doc, "zookeeper", "legacy-audit")
        assert legacy is not None and legacy["generation"] is not None and legacy["members"] == 1
        assert all(p["owner"] for p in partitions(doc, "zookeeper", "legacy-audit").values())
        spout = group(doc, "storm", "orders-spout")
        assert spout is not None and spout["owner"] == "orders-enricher"
        assert doc["errors"] == []

        control = endpoints["control"]
        poison = start_scenario(control, "poison-message")["details"]
        for scenario in ("dead-consumer", "rebalance-storm"):
            start_scenario(control, scenario)

        def pinned_and_dead(d: dict) -> bool:
            """The spout's commit has reached the poison offset (it advances up to it first)
            and the dead group is seen Empty: the events themselves, not a clock."""
            spout = partitions(d, "storm", "orders-spout")[("orders", poison["partition"])]
            ledger = group(d, "kafka", "payments-ledger")
            return (
                spout["committed"] == poison["offset"]
                and (spout["failed"] or 0) > 0
                and ledger is not None
                and ledger["state"] == "Empty"
            )

        first = wait_for(
            lambda: (d := lagwatch_status(tmp_path)) and pinned_and_dead(d) and d,
            120, "the poison offset committed and the dead group seen Empty",
        )  # fmt: skip
        poisoned = partitions(first, "storm", "orders-spout")[("orders", 0)]
        time.sleep(25)  # two more cycles
        later = lagwatch_status(tmp_path)

        # Poison message: the spout's commit is pinned while its failures keep rising.
        still = partitions(later, "storm", "orders-spout")[("orders", 0)]
        assert still["committed"] == poisoned["committed"] == poison["offset"]
        assert still["failed"] > poisoned["failed"] >= 0
        assert still["lag"] > poisoned["lag"]

        # Dead consumer: nobody owns its partitions, its lag grows.
        dead = partitions(later, "kafka", "payments-ledger")
        assert all(p["alive"] is False and p["owner"] is None for p in dead.values())
        assert sum(p["lag"] for p in dead.values()) > sum(
            p["lag"] for p in partitions(first, "kafka", "payments-ledger").values()
        )
        # Rebalance storm: membership churn recorded as events with their causes.
        causes = {r["cause"] for r in later["rebalances"] if r["group"] == "clicks-aggregator"}
        assert causes & {"member_joined", "member_left"}, later["rebalances"]
        assert any(r["group"] == "payments-ledger" for r in later["rebalances"])
        assert later["errors"] == []
    finally:
        stack.down()

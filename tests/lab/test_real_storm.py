"""The product against a real Apache Storm 1.2.4 (``lab/storm/``): storm-kafka spouts reading a
Kafka 3.9 broker, committing to ZooKeeper, the real Storm UI; every fault made by Storm itself.

One stack for the module (ZooKeeper, the Kafka 3.9 broker, Nimbus, a supervisor with four
workers, the UI, and the product polling every 5 s with a status run every 15 s and a window of
10 commits, as ``tests/lab_world.py``). The faults on different topologies run at once, so the
module costs about one verdict's wait per phase:

1. poison-message (payments-ledger), backpressure (audit-archiver), retention
   (orders-enricher) and worker-restart (clicks-sessionizer) together;
2. then topology-restart (clicks-sessionizer) and dead-topology (orders-enricher).

Each verdict is due within the window plus two status periods of its fault (``TARGET_S``);
the waits allow three times that (the machine's load is not this test's clock) and print how
long it took. Heavy (a Storm cluster beside the product): marked ``storm`` and run by
``scripts/test-storm``, not by the 20-minute suite (README, "Tests").
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from lab.stack import Stack
from lab.storm.world import TOPOLOGIES
from lab.workload.control import start_scenario, stop_scenario
from tests.lab_world import JOB_S, POLL_S, WINDOW, LabWorld, environment

pytestmark = [pytest.mark.lab, pytest.mark.storm]

SERVICES = ["zookeeper", "storm", "redis", "web", "worker", "collector", "beat"]
TARGET_S = WINDOW * POLL_S + 2 * JOB_S
DEADLINE_S = 3 * TARGET_S
CLUSTER = "storm"


def spout_partitions(doc: dict[str, Any], spout: str) -> list[dict[str, Any]]:
    return sorted(
        (p for p in doc["partitions"]
         if p["cluster"] == CLUSTER and p["source"] == "storm" and p["group"] == spout),
        key=lambda p: p["partition"],
    )  # fmt: skip


def codes(p: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["code"]: d.get("evidence") or {} for d in p["diagnosis"] or []}


class StormWorld(LabWorld):
    def __init__(self, stack: Stack, endpoints: dict[str, str]) -> None:
        super().__init__(stack, endpoints)
        self.control = endpoints["real_storm_control"]

    def start(self, name: str, **params: Any) -> dict[str, Any]:
        return start_scenario(self.control, name, **params)["details"]

    def stop(self, name: str) -> None:
        stop_scenario(self.control, name)

    def verdict(self, predicate: Any, what: str, started: float) -> Any:
        seen: list[dict[str, Any]] = []

        def check(doc: dict[str, Any]) -> Any:
            seen[:] = [doc]
            return predicate(doc)

        try:
            found = self.wait_for_verdict(check, DEADLINE_S, what)
        except AssertionError as exc:
            last = [(p["group"], p["partition"], p["status"], list(codes(p)), p["reason"])
                    for p in (seen[0]["partitions"] if seen else []) if p["cluster"] == CLUSTER]  # fmt: skip
            raise AssertionError(f"{exc}; the storm cluster's spouts at the last read: {last}")
        print(f"real storm: {what} after {time.time() - started:.0f} s (target {TARGET_S} s)")
        return found


@pytest.fixture(scope="module")
def storm_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StormWorld]:
    stack = Stack(tmp_path_factory.mktemp("real-storm"))
    try:
        with environment(
            LAGWATCH_LAB_POLL_S=str(POLL_S),
            LAGWATCH_STATUS_EVERY_S=str(JOB_S),
            LAGWATCH_STATUS_WINDOW_COMMITS=str(WINDOW),
        ):
            world = StormWorld(stack, stack.up(SERVICES))
        world.wait_for_verdict(everyone_ok, 480, "every real spout collected and judged OK")
        yield world
    finally:
        stack.down()


def everyone_ok(doc: dict[str, Any]) -> bool:
    return all(
        (parts := spout_partitions(doc, t.spout_id)) and all(p["status"] == "OK" for p in parts)
        for t in TOPOLOGIES
    )


@pytest.fixture(scope="module")
def first_faults(storm_world: StormWorld) -> dict[str, Any]:
    """The four faults of the first phase, started together once every spout is OK."""
    started = time.time()
    faults = {
        "poison": storm_world.start("poison-message", partition=0),
        "backpressure": storm_world.start("backpressure"),
        "retention": storm_world.start("retention"),
        "worker": storm_world.start("worker-restart"),
        "started": started,
    }
    return faults


def test_the_spouts_znodes_and_ui_figures_are_read_as_real_storm_writes_them(
    storm_world: StormWorld,
) -> None:
    doc = storm_world.status()
    for topology in TOPOLOGIES:
        (group,) = [g for g in doc["groups"] if g["cluster"] == CLUSTER and g["group"] == topology.spout_id]
        assert group["topology_id"].startswith(topology.name + "-"), group
        parts = spout_partitions(doc, topology.spout_id)
        assert [p["partition"] for p in parts] == [0, 1]
        assert all(p["topic"] == topology.topic and p["alive"] for p in parts), parts
        # Storm has no per-partition pending: none is shown.
        assert all(p["pending"] is None for p in parts), parts
    spouts = {s["spout_id"]: s for s in doc["spouts"] if s["cluster"] == CLUSTER}
    assert set(spouts) == {t.spout_id for t in TOPOLOGIES}
    audit = spouts["audit-spout"]
    assert audit["max_spout_pending"] == 20 and audit["emitted"] and audit["acked"]
    assert spouts["payments-spout"]["max_spout_pending"] == 1000


def test_a_poison_record_stalls_its_partition_with_its_offset(
    storm_world: StormWorld, first_faults: dict[str, Any]
) -> None:
    poison = first_faults["poison"]

    def stalled(doc: dict[str, Any]) -> Any:
        parts = spout_partitions(doc, "payments-spout")
        hit = [p for p in parts if p["partition"] == 0 and p["status"] == "STALL"
               and "POISON_MESSAGE" in codes(p)]  # fmt: skip
        return hit and parts

    parts = storm_world.verdict(stalled, "payments-spout/0 STALL POISON_MESSAGE", first_faults["started"])
    zero, one = parts
    assert codes(zero)["POISON_MESSAGE"]["offset"] == poison["offset"]
    # storm-kafka commits the smallest offset still pending: the poison record's.
    assert zero["committed"] == poison["offset"]
    assert zero["alive"] is True  # stalled, not stopped: the spout keeps failing it
    assert one["status"] == "OK", one


def test_a_slow_bolt_holds_the_spout_at_its_cap(
    storm_world: StormWorld, first_faults: dict[str, Any]
) -> None:
    def pressed(doc: dict[str, Any]) -> Any:
        parts = spout_partitions(doc, "audit-spout")
        return parts if parts and all("BACKPRESSURE" in codes(p) for p in parts) else None

    parts = storm_world.verdict(pressed, "audit-spout BACKPRESSURE", first_faults["started"])
    for p in parts:
        evidence = codes(p)["BACKPRESSURE"]
        assert evidence["max_spout_pending"] == 20
        assert evidence["share_at_cap"] >= 0.8
    others = [p for t in TOPOLOGIES if t.name != "audit-archiver"
              for p in spout_partitions(storm_world.status(), t.spout_id)
              if "BACKPRESSURE" in codes(p)]  # fmt: skip
    assert others == []
    storm_world.stop("backpressure")


def test_retention_past_a_deactivated_spout_is_skipped_data(
    storm_world: StormWorld, first_faults: dict[str, Any]
) -> None:
    marks = first_faults["retention"]["partitions"]

    def skipped(doc: dict[str, Any]) -> Any:
        parts = spout_partitions(doc, "orders-spout")
        return parts if parts and all("SKIPPED_DATA" in codes(p) for p in parts) else None

    parts = storm_world.verdict(skipped, "orders-spout SKIPPED_DATA", first_faults["started"])
    for p in parts:
        evidence = codes(p)["SKIPPED_DATA"]
        # Real storm-kafka 1.2.4 resumes at the log start on OFFSET_OUT_OF_RANGE.
        assert evidence["earliest"] == marks[str(p["partition"])]["log_start"], evidence
        assert evidence["skipped"] >= 0


def test_a_worker_restart_is_neither_a_stop_nor_a_new_topology(
    storm_world: StormWorld, first_faults: dict[str, Any]
) -> None:
    killed = first_faults["worker"]
    # By the time the other faults of the phase have their verdicts, a window has passed.
    deadline = first_faults["started"] + TARGET_S
    while time.time() < deadline:
        time.sleep(5)
    doc = storm_world.status()
    parts = spout_partitions(doc, "clicks-spout")
    assert parts and all(p["status"] == "OK" for p in parts), parts
    assert all("TOPOLOGY_RESTARTED" not in codes(p) for p in parts), parts
    (group,) = [g for g in doc["groups"] if g["cluster"] == CLUSTER and g["group"] == "clicks-spout"]
    assert group["topology_id"] == killed["topology_id"]


def test_a_resubmitted_topology_and_a_killed_one(
    storm_world: StormWorld, first_faults: dict[str, Any]
) -> None:
    storm_world.stop("poison-message")
    started = time.time()
    restarted = storm_world.start("topology-restart")
    killed = storm_world.start("dead-topology")
    assert restarted["from"] != restarted["to"]

    def judged(doc: dict[str, Any]) -> Any:
        clicks = spout_partitions(doc, "clicks-spout")
        orders = spout_partitions(doc, "orders-spout")
        ok = (clicks and all("TOPOLOGY_RESTARTED" in codes(p) for p in clicks)
              and orders and all(p["status"] == "STOP" for p in orders))  # fmt: skip
        return (clicks, orders) if ok else None

    clicks, orders = storm_world.verdict(
        judged, "clicks-spout TOPOLOGY_RESTARTED and orders-spout STOP", started
    )
    for p in clicks:
        evidence = codes(p)["TOPOLOGY_RESTARTED"]
        assert (evidence["from"], evidence["to"]) == (restarted["from"], restarted["to"])
    for p in orders:
        assert p["alive"] is False, p  # the UI no longer lists its topology
        assert "DEAD_CONSUMER" in codes(p), p
    assert killed["killed"]

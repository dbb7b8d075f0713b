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
``scripts/test-storm``, not by the 20-minute suite (docs/DEVELOPMENT.md, "The test suite").
"""

from __future__ import annotations

import html
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lab.stack import Stack
from lab.storm.world import TOPOLOGIES
from lab.workload.control import start_scenario, stop_scenario
from tests.lab_world import JOB_S, POLL_S, WINDOW, Browser, LabWorld, environment
from tests.waiting import wait_for_verdict

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


class Watch:
    """Reads the status document every few seconds in a thread and keeps, per registered
    verdict, the first document that showed it. An event diagnosis (SKIPPED_DATA,
    TOPOLOGY_RESTARTED) lives one window: a test waiting on another verdict meanwhile must
    not miss it, and the faults of a phase run at once."""

    def __init__(self, world: StormWorld) -> None:
        self.world = world
        self.wanted: dict[str, tuple[Callable[[dict[str, Any]], Any], float]] = {}
        self.found: dict[str, tuple[Any, float]] = {}
        self.last: dict[str, Any] | None = None
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="storm-watch", daemon=True)
        self.thread.start()

    def expect(self, name: str, predicate: Callable[[dict[str, Any]], Any]) -> None:
        with self.lock:
            self.wanted[name] = (predicate, time.time())

    def _run(self) -> None:
        while not self.stopping.wait(3.0):
            try:
                doc = self.world.status()
            except (AssertionError, ValueError, OSError, subprocess.SubprocessError):
                continue  # a command that failed under load: the next read
            with self.lock:
                self.last = doc
                for name, (predicate, _) in list(self.wanted.items()):
                    if name not in self.found and (value := predicate(doc)):
                        self.found[name] = (value, time.time())

    def wait(self, name: str, deadline_s: float = DEADLINE_S) -> Any:
        """The verdict's first showing, ``deadline_s`` from when it was expected at most
        (counted in status runs too: ``tests.waiting.wait_for_verdict``)."""
        _, since = self.wanted[name]
        try:
            value = wait_for_verdict(
                lambda: self.found.get(name),
                max(30.0, deadline_s - (time.time() - since)),
                name,
                self.world.status_runs,
            )
        except AssertionError as exc:
            last = [
                (p["group"], p["partition"], p["status"], list(codes(p)), p["reason"])
                for p in (self.last or {}).get("partitions", []) if p["cluster"] == CLUSTER
            ]  # fmt: skip
            raise AssertionError(
                f"{exc}; the storm cluster's spouts at the last read: {last}"
            ) from None
        found, at = value
        print(f"real storm: {name} after {at - since:.0f} s (target {TARGET_S} s)", flush=True)
        return found

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)


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


def poisoned(doc: dict[str, Any]) -> Any:
    parts = spout_partitions(doc, "payments-spout")
    hit = [p for p in parts if p["partition"] == 0 and p["status"] == "STALL"
           and "POISON_MESSAGE" in codes(p)]  # fmt: skip
    return hit and parts


def pressed(doc: dict[str, Any]) -> Any:
    """audit-spout's partitions once one is judged not OK with BACKPRESSURE, and every one not
    OK carries it. storm-kafka serves one partition while its fetch has messages left, so at
    the cap the spout works through one partition's backlog while the other waits: the one
    waiting is STALL with BACKPRESSURE, the one served OK (docs/DOMAIN.md §2)."""
    parts = spout_partitions(doc, "audit-spout")
    not_ok = [p for p in parts if p["status"] != "OK"]
    return parts if not_ok and all("BACKPRESSURE" in codes(p) for p in not_ok) else None


def with_code(spout: str, code: str) -> Callable[[dict[str, Any]], Any]:
    def found(doc: dict[str, Any]) -> Any:
        parts = spout_partitions(doc, spout)
        return parts if parts and all(code in codes(p) for p in parts) else None

    return found


def stopped(doc: dict[str, Any]) -> Any:
    parts = spout_partitions(doc, "orders-spout")
    return parts if parts and all(p["status"] == "STOP" for p in parts) else None


def others_with_backpressure(doc: dict[str, Any]) -> Any:
    return [f"{p['group']}/{p['partition']}" for t in TOPOLOGIES if t.name != "audit-archiver"
            for p in spout_partitions(doc, t.spout_id) if "BACKPRESSURE" in codes(p)]  # fmt: skip


@pytest.fixture(scope="module")
def watch(storm_world: StormWorld) -> Iterator[Watch]:
    watcher = Watch(storm_world)
    watcher.expect("no other spout with BACKPRESSURE", others_with_backpressure)
    yield watcher
    watcher.close()


@pytest.fixture(scope="module")
def first_faults(storm_world: StormWorld, watch: Watch) -> dict[str, Any]:
    """The four faults of the first phase, started together once every spout is OK."""
    watch.expect("payments-spout/0 STALL POISON_MESSAGE", poisoned)
    watch.expect("audit-spout BACKPRESSURE", pressed)
    watch.expect("orders-spout SKIPPED_DATA", with_code("orders-spout", "SKIPPED_DATA"))
    return {
        "poison": storm_world.start("poison-message", partition=0),
        "backpressure": storm_world.start("backpressure"),
        "retention": storm_world.start("retention"),
        "worker": storm_world.start("worker-restart"),
        "started": time.time(),
    }


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


def test_the_pages_show_the_real_topologies(storm_world: StormWorld) -> None:
    browser = Browser(storm_world.web_url)
    browser.login(*storm_world.login)
    status, body, _ = browser.get("/groups/?cluster=storm&source=storm")
    page = body.decode()
    assert status == 200
    assert all(t.spout_id in page for t in TOPOLOGIES), page[:2000]
    doc = storm_world.status()
    (group,) = [g for g in doc["groups"]
                if g["cluster"] == CLUSTER and g["group"] == "audit-spout"]  # fmt: skip
    group_id = _group_pk(storm_world, "audit-spout")
    status, body, _ = browser.get(f"/groups/{group_id}/")
    page = body.decode()
    assert status == 200
    assert f"topology audit-archiver ({group['topology_id']})" in page
    # The spout's own figures from the real UI are charted (in flight against the cap).
    assert "audit-spout" in page and "max" in page


def _group_pk(world: StormWorld, spout: str) -> int:
    out = world.manage(
        "shell", "-c",
        "from dashboard.monitoring.models import ConsumerGroup; "
        f"print(ConsumerGroup.objects.get(cluster__name={CLUSTER!r}, source='storm', "
        f"name={spout!r}).pk)",
    )  # fmt: skip
    return int(out.stdout.strip().splitlines()[-1])


def test_a_poison_record_stalls_its_partition_with_its_offset(
    watch: Watch, first_faults: dict[str, Any]
) -> None:
    poison = first_faults["poison"]
    zero, one = watch.wait("payments-spout/0 STALL POISON_MESSAGE")
    assert codes(zero)["POISON_MESSAGE"]["offset"] == poison["offset"]
    # storm-kafka commits the smallest offset still pending: the poison record's.
    assert zero["committed"] == poison["offset"]
    assert zero["alive"] is True  # stalled, not stopped: the spout keeps failing it
    assert one["status"] == "OK", one


def test_a_slow_bolt_holds_the_spout_at_its_cap(
    storm_world: StormWorld, watch: Watch, first_faults: dict[str, Any]
) -> None:
    # The first stall waits for a partition to sit out a window while the other is served.
    parts = watch.wait("audit-spout BACKPRESSURE", DEADLINE_S + 120)
    for p in parts:
        if p["status"] != "OK":
            evidence = codes(p)["BACKPRESSURE"]
            assert evidence["max_spout_pending"] == 20
            assert evidence["share_at_cap"] >= 0.8
    (spout,) = [s for s in storm_world.status()["spouts"]
                if s["cluster"] == CLUSTER and s["spout_id"] == "audit-spout"]  # fmt: skip
    assert spout["max_spout_pending"] == 20 and spout["pending"] == 20, spout
    storm_world.stop("backpressure")
    assert "no other spout with BACKPRESSURE" not in watch.found, watch.found


def test_retention_past_a_deactivated_spout_is_skipped_data(
    watch: Watch, first_faults: dict[str, Any]
) -> None:
    marks = first_faults["retention"]["partitions"]
    for p in watch.wait("orders-spout SKIPPED_DATA"):
        evidence = codes(p)["SKIPPED_DATA"]
        # Real storm-kafka 1.2.4 resumes at the log start on OFFSET_OUT_OF_RANGE.
        assert evidence["earliest"] == marks[str(p["partition"])]["log_start"], evidence
        assert evidence["skipped"] >= 0


def test_a_worker_restart_is_neither_a_stop_nor_a_new_topology(
    storm_world: StormWorld, watch: Watch, first_faults: dict[str, Any]
) -> None:
    killed = first_faults["worker"]
    # A window and two status runs after the restart, the spout is as it was.
    while time.time() < first_faults["started"] + TARGET_S:
        time.sleep(5)
    doc = storm_world.status()
    parts = spout_partitions(doc, "clicks-spout")
    assert parts and all(p["status"] == "OK" for p in parts), parts
    assert all("TOPOLOGY_RESTARTED" not in codes(p) for p in parts), parts
    (group,) = [g for g in doc["groups"]
                if g["cluster"] == CLUSTER and g["group"] == "clicks-spout"]  # fmt: skip
    assert group["topology_id"] == killed["topology_id"]


def test_a_resubmitted_topology_and_a_killed_one(
    storm_world: StormWorld, watch: Watch, first_faults: dict[str, Any]
) -> None:
    storm_world.stop("poison-message")
    watch.expect("clicks-spout TOPOLOGY_RESTARTED", with_code("clicks-spout", "TOPOLOGY_RESTARTED"))
    watch.expect("orders-spout STOP", stopped)
    restarted = storm_world.start("topology-restart")
    killed = storm_world.start("dead-topology")
    assert restarted["from"] != restarted["to"] and killed["killed"]
    for p in watch.wait("clicks-spout TOPOLOGY_RESTARTED"):
        evidence = codes(p)["TOPOLOGY_RESTARTED"]
        assert (evidence["from"], evidence["to"]) == (restarted["from"], restarted["to"])
    for p in watch.wait("orders-spout STOP"):
        assert p["alive"] is False, p  # the UI no longer lists its topology
        assert "DEAD_CONSUMER" in codes(p), p


def test_nimbus_down_is_a_source_down_not_a_stuck_spout(
    storm_world: StormWorld, watch: Watch, first_faults: dict[str, Any]
) -> None:
    """With Nimbus stopped the workers go on, and the UI, which asks Nimbus for everything,
    answers 500 (``NimbusLeaderNotFoundException``) once its own retries give up, which takes
    longer than the collector waits: either way the Storm source is down on the sources page,
    and the spouts, still committing, are never judged stopped for it (their liveness is
    unknown, not false)."""
    running = ("payments-spout", "audit-spout", "clicks-spout")

    def storm_down(doc: dict[str, Any]) -> Any:
        return [e["error"] for e in doc["errors"]
                if e["cluster"] == CLUSTER and e["source"] == "storm"
                and ("NimbusLeaderNotFoundException" in e["error"] or "timed out" in e["error"])]  # fmt: skip

    def judged_stopped(doc: dict[str, Any]) -> Any:
        return [f"{p['group']}/{p['partition']}: {p['status']}" for spout in running
                for p in spout_partitions(doc, spout) if p["status"] == "STOP"]  # fmt: skip

    watch.expect("the Storm source down", storm_down)
    watch.expect("a running spout judged STOP", judged_stopped)
    started = time.time()
    storm_world.start("nimbus-down")
    try:
        (error, *_) = watch.wait("the Storm source down")
        browser = Browser(storm_world.web_url)
        browser.login(*storm_world.login)
        page = browser.get("/sources/?cluster=storm")[1].decode()
        assert html.escape(error[:80]) in page, error
        while time.time() < started + TARGET_S:  # a window and two status runs
            time.sleep(5)
        doc = storm_world.status()
        for spout in running:
            for p in spout_partitions(doc, spout):
                assert p["alive"] is not False, p
        assert "a running spout judged STOP" not in watch.found, watch.found
    finally:
        storm_world.stop("nimbus-down")

"""Network faults between the product and what it talks to, made by a real Toxiproxy
(``lab/toxiproxy.py``): 2 s of latency, a 10 KB/s link, connections that hang, connections
reset, and a 60-s cut, on Kafka and on ZooKeeper; the cut on Redis and on PostgreSQL.

One stack for the module, on PostgreSQL, every product process reaching Kafka, ZooKeeper,
Redis and the database through Toxiproxy; the lab cluster polled every 3 s, a status run
after every stored cycle, a window of 6 commits. No scenario runs: every partition is OK
before each fault, so any STALL, STOP or ERR is a false one. For each fault:

- while it lasts, collection degrades to what the product calls an unreachable source: the
  source's health says unreachable with its error, and every partition it feeds is UNKNOWN
  with ``SOURCE_UNREACHABLE`` and a reason. A fault that leaves the source answering in
  time (the slow link: the lab's requests are small) is collected on: the source stays
  reachable and nothing goes UNKNOWN for it;
- no partition or group is ever STALL, STOP or ERR (``/api/v1/status/changes/`` since the
  fault began);
- once it ends, the source is collected again within two polls (at most one failed attempt
  begins after the end), and every partition is judged again;
- no process was restarted: every service has the pid it had.

Heavy (Toxiproxy beside a whole stack, minutes of faults): marked ``faults`` and run by
``scripts/test-faults``, not by the 20-minute suite (docs/DEVELOPMENT.md).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from lab.stack import Stack
from lab.toxiproxy import ToxiproxyClient, injected
from tests.lab_world import LabWorld, environment
from tests.waiting import wait_for

pytestmark = [pytest.mark.lab, pytest.mark.faults]

SERVICES = [
    "postgres", "toxiproxy", "zookeeper", "kafka", "redis", "workload", "web", "worker",
    "collector", "beat",
]  # fmt: skip
POLL_S, JOB_S, WINDOW = 3, 10, 6
CUT_S = 60
STUCK = ("STALL", "STOP", "ERR")
# The partitions a source feeds (by the group's source), as collectors/cycle/stale.py hides
# them: a broker down also leaves the ZooKeeper-read partitions without log-end offsets.
FEEDS = {"kafka": ("kafka", "zookeeper", "storm"), "zookeeper": ("zookeeper", "storm")}
# What each fault does to collection here: True, the source is unreachable while it lasts.
UNREACHABLE = {"latency": True, "slow-link": False, "hang": True, "reset": True, "cut": True}


def _t(text: str | None) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else 0.0


@dataclass
class Look:
    """One read of the API: each source's health and each partition's verdict."""

    at: float
    health: dict[str, dict[str, Any]]
    partitions: list[dict[str, Any]]


class FaultWorld(LabWorld):
    """The stack, a read token for ``/api/v1``, and a thread reading it every second."""

    def __init__(self, stack: Stack, endpoints: dict[str, str]) -> None:
        super().__init__(stack, endpoints)
        self.toxiproxy = ToxiproxyClient(endpoints["toxiproxy"])
        self.token = self.manage("api_token", "create", "faults", "--scope", "read").stdout
        self.token = self.token.strip().splitlines()[-1]
        self.looks: list[Look] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="fault-watch", daemon=True)
        self._thread.start()

    def api(self, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.web_url}/api/v1{path}", headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            return json.loads(response.read())

    def look(self) -> Look:
        health = self.api("/clusters/lab/")["source_health"]
        parts = self.api("/partitions/?cluster=lab&page_size=500")["results"]
        return Look(time.time(), {h["source"]: h for h in health}, parts)

    def _watch(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.looks.append(self.look())
            except (OSError, ValueError):
                continue  # the web is down with its database, or slow under load

    def since(self, t: float) -> list[Look]:
        return [lk for lk in list(self.looks) if lk.at >= t]

    def pids(self) -> dict[str, int | None]:
        return {n: s["pid"] for n, s in self.stack.status()["services"].items()}

    def stuck_changes(self, since: float) -> list[dict[str, Any]]:
        at = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        query = "&".join(f"status={s}" for s in STUCK)
        return self.api(f"/status/changes/?cluster=lab&since={at}&{query}&page_size=100")["results"]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


def all_judged(look: Look | None) -> bool:
    """Every partition judged and none UNKNOWN, every source reachable: the fault's start."""
    return bool(
        look and look.partitions
        and all(p["evaluated_at"] and p["status"] != "UNKNOWN" for p in look.partitions)
        and all(h["reachable"] for h in look.health.values())
    )  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultWorld]:
    stack = Stack(tmp_path_factory.mktemp("faults"))
    world = None
    try:
        with environment(
            LAGWATCH_LAB_POLL_S=str(POLL_S),
            LAGWATCH_STATUS_EVERY_S=str(JOB_S),
            LAGWATCH_STATUS_WINDOW_COMMITS=str(WINDOW),
        ):
            world = FaultWorld(stack, stack.up(SERVICES))
        wait_for(lambda: all_judged(world.looks[-1] if world.looks else None), 300,
                 "every partition judged, every source reachable", every=2.0)  # fmt: skip
        yield world
    finally:
        if world is not None:
            world.close()
        stack.down()


def degraded(look: Look, source: str) -> bool:
    """The source unreachable with its error, its partitions UNKNOWN with the diagnosis."""
    health = look.health.get(source, {})
    fed = [p for p in look.partitions if p["source"] in FEEDS.get(source, ())]
    return bool(
        not health.get("reachable", True) and health.get("last_error")
        and fed and all(
            p["status"] == "UNKNOWN" and p["reason"]
            and any(d["code"] == "SOURCE_UNREACHABLE" for d in p["diagnosis"])
            for p in fed
        )
    )  # fmt: skip


def recovered_within_two_polls(world: FaultWorld, source: str, ended: float) -> int:
    """Waits for a successful attempt begun after ``ended``; returns how many attempts begun
    after it failed first (from the failures counted at each read)."""
    failures_at_end = None
    failed_after = 0

    def back() -> bool:
        nonlocal failures_at_end, failed_after
        look = world.look()
        h = look.health[source]
        if failures_at_end is None:
            failures_at_end = h["consecutive_failures"] if not h["reachable"] else 0
        if h["reachable"] and _t(h["last_success_at"]) >= ended - 0.5:
            return True
        if not h["reachable"] and _t(h["last_attempt_at"]) > ended:
            failed_after = max(failed_after, h["consecutive_failures"] - failures_at_end)
        return False

    wait_for(back, 60, f"{source} collected again after the fault", every=0.5)
    return failed_after


def run_fault(world: FaultWorld, proxy: str, fault: str, source: str | None) -> None:
    """One fault on one proxy, held until its effect shows (a cut: ``CUT_S``), then undone;
    the checks of the module's docstring. ``source``: the source the proxy carries (None for
    a store: then collection as a whole pauses, and the Kafka source shows it resumed)."""
    wait_for(lambda: all_judged(world.look()), 180, "every partition judged before the fault", 2)
    pids = world.pids()
    started = time.time()
    with injected(world.toxiproxy, proxy, fault):
        if source and UNREACHABLE[fault]:
            wait_for(lambda: any(degraded(lk, source) for lk in world.since(started)), 120,
                     f"{fault} on {proxy}: {source} unreachable, its partitions UNKNOWN", 1)  # fmt: skip
        else:
            time.sleep(min(CUT_S, 10 * POLL_S))  # the fault's length: nothing to wait on
        shown = time.time() - started
        if fault == "cut":
            time.sleep(max(0.0, CUT_S - (time.time() - started)))
    ended = time.time()
    print(f"{fault} on {proxy}: effect after {shown:.0f} s, held {ended - started:.0f} s")
    if source and not UNREACHABLE[fault]:
        during = world.since(started)
        assert any(_t(lk.health[source]["last_success_at"]) > started + POLL_S for lk in during)
    failed = recovered_within_two_polls(world, source or "kafka", ended)
    assert failed <= 1, f"{failed} attempts failed after {fault} on {proxy} ended"
    wait_for(lambda: all_judged(world.look()), 180, f"every partition judged after {fault}", 2)
    print(f"{fault} on {proxy}: judged again {time.time() - ended:.0f} s after its end")
    assert world.stuck_changes(started) == []
    seen = {(p["group"], p["topic"], p["partition"], p["status"])
            for lk in world.since(started) for p in lk.partitions if p["status"] in STUCK}  # fmt: skip
    assert not seen, f"stuck verdicts during {fault} on {proxy}: {sorted(seen)[:10]}"
    assert world.pids() == pids, "a process was restarted"


@pytest.mark.parametrize("fault", list(UNREACHABLE))
@pytest.mark.parametrize("proxy", ["kafka", "zookeeper"])
def test_a_source_fault_is_unknown_never_stuck_and_recovers(
    world: FaultWorld, proxy: str, fault: str
) -> None:
    run_fault(world, proxy, fault, proxy)


@pytest.mark.parametrize("proxy", ["redis", "postgres"])
def test_a_cut_store_pauses_collection_and_it_resumes(world: FaultWorld, proxy: str) -> None:
    run_fault(world, proxy, "cut", None)

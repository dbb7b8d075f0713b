"""A cluster rebuilt under the same name, in the lab: the broker stopped and started again on
empty storage (a new cluster id, every topic, record and commit gone), under the same cluster
name; then, where the spouts and ZooKeeper consumers commit, the ZooKeeper ensemble wiped the
same way. Each time the workload's clients are restarted around it, as their operators must
(librdkafka's consumers can fetch nothing more once the id changed, and ZooKeeper refuses
clients of the old ensemble): they rejoin and commit again on the new offsets within a few
polls, the spouts from the offsets they had left in ZooKeeper.

Read as one history, the new offsets would be rewinds and jumps over deleted data (ERR with
SKIPPED_DATA and REWIND on every group, TOPOLOGY_RESTARTED on the spouts, in a run before the
product knew its clusters' identity). The product sees the new identity, puts a "cluster
rebuilt" event on the cluster's timeline and judges the cluster from the samples since then
only: no group is ERR or REWIND and no partition has SKIPPED_DATA, OUT_OF_RANGE or REWIND in
any ``lagwatch_status`` read from the rebuild on, and every group is judged again from its new
offsets. The status runs after the rebuild are timed from their as-of time to their finish
(printed; a run two and a half minutes late was the sign of whole-window reads).

Marked ``faults`` (scripts/test-faults): a stack of its own for several minutes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.services import LAB_CLUSTER
from lab.stack import REPO, Stack
from tests.lab_world import Browser, lagwatch_status
from tests.waiting import StatusRuns, wait_for, wait_for_verdict

pytestmark = [pytest.mark.lab, pytest.mark.faults]

SERVICES = ["zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "beat"]
POLL_S = 5
JOB_S = 15
WINDOW = 10
BAD_GROUP = {"ERR"}
BAD_PARTITION = {"REWIND"}
BAD_CODES = {"SKIPPED_DATA", "OUT_OF_RANGE"}

Doc = dict[str, Any]


class Reader:
    """``lagwatch_status`` every few seconds in the background; every answer kept."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.reads: list[tuple[float, Doc]] = []
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lagwatch-status", daemon=True)

    def __enter__(self) -> Reader:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=90)
        with open(self.run_dir / "lagwatch_status.jsonl", "w") as out:
            for at, doc in self.reads:
                out.write(json.dumps({"at": at, "doc": doc}) + "\n")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                doc = lagwatch_status(self.run_dir)
                self.reads.append((time.time(), doc))
            except BaseException as exc:  # noqa: BLE001 - the test reports it
                self.failure = exc
                return
            self._stop.wait(3.0)

    def newest(self) -> Doc:
        if self.failure is not None:
            raise self.failure
        return self.reads[-1][1] if self.reads else {"groups": [], "partitions": []}


def rebuilt_events(doc: Doc) -> list[Doc]:
    return [
        e
        for e in doc.get("cluster_events", [])
        if e["cluster"] == LAB_CLUSTER and e["kind"] == "cluster_rebuilt"
    ]


def false_alarms(doc: Doc) -> list[str]:
    """What a rebuild must never produce, in one status document."""
    found = [
        f"group {g['source']}/{g['group']} {g['status']}"
        for g in doc["groups"]
        if g["cluster"] == LAB_CLUSTER and g["status"] in BAD_GROUP
    ]
    for p in doc["partitions"]:
        codes = {d["code"] for d in p["diagnosis"] or []}
        if p["cluster"] == LAB_CLUSTER and (p["status"] in BAD_PARTITION or codes & BAD_CODES):
            where = f"{p['source']}/{p['group']}/{p['topic']}/{p['partition']}"
            found.append(f"{where} {p['status']} {sorted(codes)}: {p['reason']}")
    return found


def wall(iso: str | None) -> float:
    from datetime import datetime

    return 0.0 if iso is None else datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def newest_judgement(doc: Doc) -> float:
    """When the newest status run applied to the lab cluster was as of."""
    return max(
        (wall(g["evaluated_at"]) for g in doc["groups"] if g["cluster"] == LAB_CLUSTER),
        default=0.0,
    )


def status_runs_after(env: dict[str, str], since_ms: int) -> list[Doc]:
    """The status runs whose as-of time is after ``since_ms``: when each was as of, when it
    finished, and whether it read from the previous run's state."""
    code = (
        "import json; from dashboard.monitoring.models import SparkJobRun as R; "
        f"print(json.dumps([dict(as_of_ms=r.as_of_ms, finished=r.finished_at.timestamp(), "
        f"outcome=r.outcome, duration_s=r.duration_s, path=r.output_path) for r in "
        f"R.objects.filter(job='status', as_of_ms__gte={since_ms}, finished_at__isnull=False)"
        f".order_by('as_of_ms')]))"
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    monkeypatch.setenv("LAGWATCH_LAB_POLL_S", str(POLL_S))
    monkeypatch.setenv("LAGWATCH_STATUS_EVERY_S", str(JOB_S))
    monkeypatch.setenv("LAGWATCH_STATUS_WINDOW_COMMITS", str(WINDOW))
    lab = Stack(tmp_path)
    try:
        lab.up(SERVICES)
        yield lab
    finally:
        lab.down()


def rebuild(lab: Stack, reader: Reader, service: str, restart_workload: bool = False) -> float:
    """Stop ``service``, start it on empty storage; wait for the product to see the rebuild
    and judge a window's worth of the new history. Returns when the event was stored."""
    runs = StatusRuns(lab.run_dir / "data")
    before = len(rebuilt_events(reader.newest()))
    lab.stop_service(service)
    if restart_workload:
        # Clients that saw the old cluster are restarted, as they must be: on a new cluster
        # id librdkafka warns that "a client must not be simultaneously connected to
        # multiple clusters" and its consumers fetched nothing more (left running, the lab's
        # stood still for a minute with records waiting, until the workload's watchdog
        # recreated them: a real STALL); the new ensemble refuses clients that saw the old
        # one's zxids (ZooKeeper's own rule). They are stopped before the new cluster starts:
        # an old spout still running on it rewrites its old offset there, beyond the new
        # log's end, and is rightly OUT_OF_RANGE until it is restarted (seen when stopping
        # the workload took longer than two polls).
        lab.stop_service("workload")
    lab.start_service(service, fresh=True)
    if restart_workload:
        lab.start_service("workload")
    started = time.time()
    events = wait_for(
        lambda: len(rebuilt_events(reader.newest())) > before and rebuilt_events(reader.newest()),
        180, f"the cluster rebuilt event after {service} started empty", every=1.0,
    )  # fmt: skip
    event_at = wall(events[-1]["at"])
    print(f"{service}: rebuilt event {events[-1]['at']} ({event_at - started:.1f} s after start)")
    print(f"  {events[-1]['text']}")
    wait_for_verdict(
        lambda: newest_judgement(reader.newest()) >= event_at + WINDOW * POLL_S,
        240, f"a window of polls after {service}'s rebuild judged", runs,
    )  # fmt: skip
    return event_at


def test_a_rebuilt_broker_and_a_wiped_zookeeper_raise_no_false_alarm(stack: Stack) -> None:
    lab = stack
    env = lab.django_env()
    with Reader(lab.run_dir) as reader:
        wait_for_verdict(
            lambda: newest_judgement(reader.newest()) > 0 and not false_alarms(reader.newest()),
            240, "the demo judged", StatusRuns(lab.run_dir / "data"),
        )  # fmt: skip
        kafka_at = rebuild(lab, reader, "kafka", restart_workload=True)
        zk_at = rebuild(lab, reader, "zookeeper", restart_workload=True)
        alarms = [
            (at, alarm)
            for at, doc in reader.reads
            if at >= kafka_at - POLL_S
            for alarm in false_alarms(doc)
        ]
        assert not alarms, alarms[:20]
        doc = reader.newest()
    texts = [e["text"] for e in rebuilt_events(doc)]
    # The broker's rebuild, then the ZooKeeper roots': a root the restarted workload creates
    # again while the product watches is recreated once more, and that is an event too.
    assert len(texts) >= 2 and "cluster id" in texts[0], texts
    assert all("znode" in t for t in texts[1:]), texts

    browser = Browser(env_web_url(lab))
    user, password = login(env)
    browser.login(user, password)
    _, page, _ = browser.get("/sources/")
    assert b'data-cluster="rebuilt"' in page
    _, page, _ = browser.get(f"/clusters/{LAB_CLUSTER}/")
    assert page.count(b'data-event="cluster_rebuilt"') == len(texts)

    late = []
    for run in status_runs_after(env, int(kafka_at * 1000)):
        lateness = run["finished"] - run["as_of_ms"] / 1000
        late.append(lateness)
        print(f"status run as of {run['as_of_ms']}: {run['outcome']}, finished {lateness:.1f} s "
              f"after its as-of time ({run['duration_s']:.1f} s)")  # fmt: skip
    assert late and max(late) < 120, late
    assert zk_at > kafka_at


def env_web_url(lab: Stack) -> str:
    return lab.endpoints()["web"].rstrip("/")


def login(env: dict[str, str]) -> tuple[str, str]:
    out = subprocess.run(
        [sys.executable, "manage.py", "demo_user", "rebuilt"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return "rebuilt", out.stdout.strip()

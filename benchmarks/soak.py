"""The soak under faults: a whole lab stack for ``--minutes`` with the
workload's scenarios cycling and one of each fault injected, spaced out over the run.

Why: every fault here is survived by some test on its own (Redis under beat, PostgreSQL
restarted, a collector SIGKILLed, a master down); what no test shows is the product running
for half an hour through all of them while the scenarios keep producing real stuck
partitions, and whether it then still collects every slot, alerts on what is stuck and on
nothing else, keeps its memory flat and tells the user, on the sources page, what is down.

The stack is the lab tests' (``tests/lab_world.py``): ZooKeeper, the Kafka 4 broker, Redis,
the workload, web, worker (queues ``celery`` and ``spark`` on threads, Spark in local mode
in one driver JVM the jobs share), the collector and beat; the lab cluster polled every 5 s,
the status job every 15 s, a window of 10 commits. Alerts are the product's default rule
(any STALL, STOP or ERR lasting two evaluations).

Scenarios, in turn (``ACTIVE_S`` on, ``REST_S`` off): ``poison-message`` on ``orders-spout``
(a new partition each round: STALL, an alert expected), ``dead-consumer`` on
``payments-ledger`` (STOP, an alert expected), ``slow-consumer`` and ``rebalance-storm`` (WARN
or OK: nothing stuck, no alert expected).

Faults, one each, at even spacing: ZooKeeper stopped ``OUTAGE_S`` and started; the broker the
same; Redis the same; the collector SIGKILLed while it holds the lab cluster's lease (mid
cycle) and started again; every Spark JVM of the worker SIGKILLed while a status run is
going (the worker's next run starts a new one: ``spark_jobs.session``); the SQLite database
held by ``BEGIN EXCLUSIVE`` for 10 s from this process; then the network's faults through
Toxiproxy, which the product reaches Kafka, ZooKeeper and Redis through (2 s latency, a
10 KB/s link, hung connections, resets, a 60-s cut on Kafka and on ZooKeeper; Redis cut 60 s:
``benchmarks/soak_network.py``). ``--faults a,b`` runs only those.

Figures (printed as JSON, and written to ``--json``):

- samples lost: every poll slot of the run against the ``CollectedCycle`` rows (a row is
  written in the cycle's transaction, and a cycle is stored only when both the database and
  the Parquet sample log took it: ``collectors/cycle/write.py``), cross-checked against the
  distinct ``ts_ms`` of the Parquet sample log; slots missing while Redis or the collector was
  deliberately down are excused, any other is lost; gaps over two polls listed with the fault
  active then;
- stuck alerts for partitions no scenario made stuck, and stuck statuses (``StatusChange`` to
  STALL/STOP/ERR) for them, with the fault active in the two minutes before;
- alerts missed: each scenario round that should fire one, and whether it did;
- each service's memory (RSS of its process tree, ``/proc``) at the start and the end, and
  its growth after the first 15 minutes, also per process life where a fault restarted it;
- each fault: whether the sources page (logged in as a ``demo_user``) showed the source down
  while it lasted (ZooKeeper, Kafka) and whether it was served at all (every fault).
- alert notices sent twice and lost, at a webhook receiver in this process on the rules'
  channel (``benchmarks/soak_deliveries.py``), and those still pending at the end.

    .venv/bin/python -m benchmarks.soak [--minutes 30] [--json FILE] [--faults a,b]
        [--database sqlite|postgresql]

``--database postgresql`` runs the stack on the lab's PostgreSQL (``lab/postgres.py``, reached
through Toxiproxy) and adds its faults: the server restarted (``OUTAGE_S``) and its network cut;
the writers' lock is then PostgreSQL's table locks (``benchmarks/soak_db.py``). Memory is read
every five minutes: the figures give each process tree's growth after the first 15.

**Why some 690 lines in one module**: the faults, the scenario rounds and the figures that
judge them read each other's records (a gap is excused by the fault active then, an alert by
the round that made the partition stuck); what stands apart is in ``soak_network`` (the
network's faults), ``soak_watch`` (memory, the sources page) and ``soak_deliveries`` (the
alert notices, counted at a receiver).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.soak_db import DATABASES, SoakDatabase, db_time  # noqa: E402
from benchmarks.soak_deliveries import NoticeReceiver  # noqa: E402
from benchmarks.soak_network import EXCUSED as NETWORK_EXCUSED  # noqa: E402
from benchmarks.soak_network import network_faults  # noqa: E402
from benchmarks.soak_watch import (  # noqa: E402
    MemoryWatch,
    PageWatcher,
    cmdline,
    descendants,
    iso,
    memory,
    now,
    page_figures,
    restart_times,
)
from lab.postgres import stack_database_url  # noqa: E402
from lab.services import LAB_CLUSTER  # noqa: E402
from lab.stack import Stack  # noqa: E402
from lab.workload.control import start_scenario, stop_scenario  # noqa: E402
from tests.lab_world import Browser  # noqa: E402
from tests.waiting import wait_for  # noqa: E402

POLL_S, JOB_S, WINDOW = 5, 15, 10
SERVICES = [
    "toxiproxy", "zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "beat",
]  # fmt: skip
PRODUCT = ("web", "worker", "collector", "beat", "workload")
WATCHED = (*PRODUCT, "zookeeper", "kafka", "redis", "postgres")  # whose memory is followed
OUTAGE_S = 30  # ZooKeeper, the broker, Redis
COLLECTOR_DOWN_S = 5
DB_LOCK_S = 10
ACTIVE_S, REST_S = 180, 60
# An alert may fire after its scenario stopped: the window still holds the stuck samples.
GRACE_S = WINDOW * POLL_S + 3 * JOB_S + 25
STUCK = ("STALL", "STOP", "ERR")
# Slots missing while these were down are not counted lost: nothing could collect them.
EXCUSED = {"redis", "collector-kill", "postgres", *NETWORK_EXCUSED}
USER = "soak"
# The service whose process (for the worker: its Spark JVMs) a fault starts anew.
RESTARTED = {"zookeeper": "zookeeper", "kafka": "kafka", "redis": "redis", "postgres": "postgres",
             "collector-kill": "collector", "spark-kill": "worker"}  # fmt: skip


def loadavg() -> list[float]:
    """The machine is shared: the load says how much of a figure is other people's work."""
    return [round(x, 2) for x in os.getloadavg()]


# --- the stack ---------------------------------------------------------------------------------


class Lab:
    """The soak's stack and what the script reads of it: its database (``soak_db``), the
    control endpoint, a logged-in browser on the pages."""

    def __init__(self, run_dir: Path, database: str = "sqlite") -> None:
        self.stack = Stack(run_dir)
        self.db = SoakDatabase(database, run_dir)
        self.services = SERVICES + (["postgres"] if database == "postgresql" else [])
        self.endpoints: dict[str, str] = {}
        self.browser: Browser | None = None

    def up(self) -> None:
        """Start every service with the lab tests' fast periods, then log in."""
        os.environ.update(
            LAGWATCH_LAB_POLL_S=str(POLL_S),
            LAGWATCH_STATUS_EVERY_S=str(JOB_S),
            LAGWATCH_STATUS_WINDOW_COMMITS=str(WINDOW),
            SPARK_LOCAL_IP="127.0.0.1",
        )
        self.endpoints = self.stack.up(self.services)
        if "postgres" in self.endpoints:
            self.db.connect_postgres(
                stack_database_url(self.stack.run_dir, self.endpoints["postgres"])
            )
        password = self.manage("demo_user", USER).strip().splitlines()[-1]
        self.browser = Browser(self.endpoints["web"].rstrip("/"))
        self.browser.login(USER, password)

    def manage(self, *args: str, timeout: float = 120) -> str:
        """``manage.py ARGS`` against this stack's database and Redis."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=self.stack.django_env(),
            capture_output=True, text=True, timeout=timeout, check=True,
        )  # fmt: skip
        return done.stdout

    def rows(self, sql: str, *args: object) -> list[tuple]:
        """Rows of the stack's database; none while it cannot answer."""
        return self.db.rows(sql, *args)

    def pid(self, service: str) -> int | None:
        """The service's current process (a restarted one has a new pid)."""
        return self.stack.status()["services"].get(service, {}).get("pid")

    def judged(self) -> bool:
        """Every partition collected and evaluated once: the warm-up is over."""
        (row,) = self.rows(
            "SELECT COUNT(*), SUM(CASE WHEN evaluated_at IS NULL THEN 1 ELSE 0 END) "
            "FROM monitoring_partitionstate"
        ) or [(0, 0)]
        groups = self.rows("SELECT COUNT(*) FROM monitoring_consumergroup")
        return bool(row[0]) and not row[1] and groups[0][0] >= 8


# --- faults ------------------------------------------------------------------------------------


@dataclass
class Fault:
    """One injected fault: when it began and ended, what was done, what the page showed."""

    name: str
    started: float = 0.0
    ended: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    page: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    acted: bool = False  # it did what it injects (a failure may come before or after that)


def restart_service(lab: Lab, service: str, fault: Fault) -> None:
    """Stopped for ``OUTAGE_S``, then started on the same port (ready when it returns)."""
    fault.started = now()
    fault.details["stop"] = lab.stack.stop_service(service)
    time.sleep(OUTAGE_S)
    t = now()
    lab.stack.start_service(service)
    fault.details["start_s"] = round(now() - t, 1)
    fault.ended = now()


def kill_collector_mid_cycle(lab: Lab, fault: Fault) -> None:
    """SIGKILL the collector while it holds the lab cluster's lease, i.e. in a cycle."""
    import redis

    client = redis.Redis.from_url(lab.endpoints["redis"])
    pid = lab.pid("collector")
    try:
        holder = wait_for(
            lambda: (v := client.get(f"lagwatch:collecting:{LAB_CLUSTER}")) and v.decode(),
            60, "the collector in a cycle", 0.005,
        )  # fmt: skip
    finally:
        client.close()
    fault.started = now()
    fault.details.update(pid=pid, lease_holder=holder, kill=lab.stack.kill_service("collector"))
    time.sleep(COLLECTOR_DOWN_S)
    t = now()
    lab.stack.start_service("collector")
    fault.details["start_s"] = round(now() - t, 1)
    fault.ended = now()


def spark_jvms(worker_pid: int) -> list[int]:
    """The Spark JVMs under the worker: one, the session its threads share, once a job ran."""
    return [
        p for p in descendants(worker_pid)
        if "org.apache.spark.deploy.SparkSubmit" in cmdline(p)
    ]  # fmt: skip


def running_status_run(lab: Lab) -> tuple[int, float] | None:
    """(id, start) of the status run in progress: a kill must land inside one."""
    rows = lab.rows(
        "SELECT id, started_at FROM monitoring_sparkjobrun WHERE job = 'status' "
        "AND outcome = 'running' ORDER BY id DESC LIMIT 1"
    )
    return (rows[0][0], db_time(rows[0][1])) if rows else None


def run_outcome(lab: Lab, run_id: int) -> str | None:
    """What the product recorded for a run: the cut one must not stay "running"."""
    rows = lab.rows("SELECT outcome FROM monitoring_sparkjobrun WHERE id = ?", run_id)
    return rows[0][0] if rows else None


def kill_spark_mid_run(lab: Lab, fault: Fault) -> None:
    """SIGKILL every Spark JVM of the worker while a status run is going (the one running it
    is among them), then wait for a status run that succeeds: the worker starts a new JVM."""
    worker = lab.pid("worker")
    assert worker is not None

    def in_a_run() -> tuple[int, float] | None:
        # A lab status run takes 0.5-1 s: 0.2 s after its start it is in Spark's hands.
        run = running_status_run(lab)
        return run if run and now() - run[1] >= 0.2 and spark_jvms(worker) else None

    run_id, _ = wait_for(in_a_run, 180, "a status run going", 0.05)
    jvms = spark_jvms(worker)
    fault.started = now()
    for pid in jvms:
        os.kill(pid, signal.SIGKILL)
    fault.details.update(run=run_id, jvms_killed=len(jvms))
    wait_for(lambda: run_outcome(lab, run_id) not in (None, "running"), 300, "the cut run", 1)
    fault.details["cut_run_outcome"] = run_outcome(lab, run_id)
    ok = wait_for(
        lambda: lab.rows(
            "SELECT id, finished_at FROM monitoring_sparkjobrun WHERE job = 'status' AND "
            "outcome = 'ok' AND id > ? ORDER BY id LIMIT 1", run_id,
        ),
        300, "a status run after the kill that succeeds", 2,
    )  # fmt: skip
    between = lab.rows(
        "SELECT outcome, COUNT(*) FROM monitoring_sparkjobrun WHERE job = 'status' "
        "AND id > ? AND id < ? GROUP BY outcome", run_id, ok[0][0],
    )  # fmt: skip
    fault.ended = now()
    fault.details.update(
        next_ok_after_s=round(db_time(ok[0][1]) - fault.started, 1),
        runs_between=dict(between),
        jvms_after=len(spark_jvms(worker)),
    )


def lock_database(lab: Lab, fault: Fault) -> None:
    """Every writer of the stack's database held ``DB_LOCK_S`` (``soak_db``: SQLite's
    ``BEGIN EXCLUSIVE``, PostgreSQL's table locks)."""
    asked, fault.started, fault.ended = lab.db.hold_writers(DB_LOCK_S)
    fault.details["acquired_after_s"] = round(fault.started - asked, 2)


# name -> (how, which source the sources page must show down, or None)
FAULTS: list[tuple[str, Callable[[Lab, Fault], None], str | None]] = [
    ("zookeeper", lambda lab, f: restart_service(lab, "zookeeper", f), "ZooKeeper"),
    ("kafka", lambda lab, f: restart_service(lab, "kafka", f), "Kafka"),
    # Beat dispatches nothing while Redis is away: the page says collection stopped.
    ("redis", lambda lab, f: restart_service(lab, "redis", f), "collection"),
    ("collector-kill", kill_collector_mid_cycle, None),
    ("spark-kill", kill_spark_mid_run, None),
    ("db-lock", lock_database, None),
    # The network's faults through Toxiproxy, each kind on Kafka and ZooKeeper, the Redis cut.
    *network_faults(with_postgres=False),
]
# On PostgreSQL (``--database postgresql``): the server restarted, and its network cut.
POSTGRES_FAULTS: list[tuple[str, Callable[[Lab, Fault], None], str | None]] = [
    ("postgres", lambda lab, f: restart_service(lab, "postgres", f), None),
    *[f for f in network_faults(with_postgres=True) if f[0] == "postgres-cut"],
]


def inject(lab: Lab, name: str, how: Callable[[Lab, Fault], None], shows: str | None) -> Fault:
    """One fault, with the sources page watched from its start to a few polls after its end
    (the page shows what the latest cycle found)."""
    fault = Fault(name)
    assert lab.browser is not None
    watcher = PageWatcher(lab.browser)
    t0 = now()
    with watcher.watching():
        try:
            how(lab, fault)
        except Exception as exc:  # noqa: BLE001 - recorded; the soak goes on
            fault.error = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            fault.ended = fault.ended or now()
        fault.acted = bool(fault.started)  # each fault sets it as it acts
        fault.started = fault.started or t0
    during = [lk for lk in watcher.looks if fault.started <= lk.at <= fault.ended + 2 * POLL_S]
    fault.page = page_figures(during, shows, fault.started)
    print(json.dumps({"fault": asdict(fault) | {"at": iso(fault.started)}}), flush=True)
    return fault


# --- scenarios ---------------------------------------------------------------------------------


@dataclass
class Round:
    """One scenario round and the partitions it makes stuck (its alerts are expected)."""

    scenario: str
    params: dict[str, Any]
    stuck: list[tuple[str, str, str, int | None]]  # (source, group, topic, partition or any)
    started: float = 0.0
    stopped: float = 0.0
    error: str | None = None


def plan(index: int) -> Round:
    """The ``index``-th round: the four scenarios in turn, the poison on a new partition."""
    kind = index % 4
    if kind == 0:
        p = (index // 4) % 6
        return Round("poison-message", {"partition": p}, [("storm", "orders-spout", "orders", p)])
    if kind == 1:
        return Round("dead-consumer", {}, [("kafka", "payments-ledger", "payments", None)])
    if kind == 2:
        return Round("slow-consumer", {}, [])
    return Round("rebalance-storm", {}, [])


def retried(call: Callable[[], Any], what: str, tries: int = 10) -> Any:
    """A control call, retried: a scenario started during a broker outage fails at first."""
    for attempt in range(tries):
        try:
            return call()
        except Exception as exc:  # noqa: BLE001
            if attempt == tries - 1:
                raise
            print(f"{what}: {exc}; again in 5 s", flush=True)
            time.sleep(5)
    return None


class Cycler:
    """Runs the scenario rounds in a thread until ``end``: none starts unless it can run its
    whole ``ACTIVE_S`` and be judged before the end."""

    def __init__(self, control: str, end: float) -> None:
        self.control = control
        self.end = end
        self.rounds: list[Round] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        index = 0
        while not self._stop.is_set() and now() + ACTIVE_S + GRACE_S <= self.end:
            self._one(plan(index))
            index += 1
            self._stop.wait(REST_S)

    def _one(self, r: Round) -> None:
        self.rounds.append(r)
        try:
            retried(lambda: start_scenario(self.control, r.scenario, **r.params), r.scenario)
            r.started = now()
            print(f"{iso(r.started)} scenario {r.scenario} {r.params}", flush=True)
            self._stop.wait(ACTIVE_S)
        except Exception as exc:  # noqa: BLE001 - recorded; the soak goes on
            r.error = f"{type(exc).__name__}: {exc}"
        finally:
            try:
                retried(lambda: stop_scenario(self.control, r.scenario), r.scenario)
            except Exception as exc:  # noqa: BLE001
                r.error = (r.error or "") + f" stop: {exc}"
            r.stopped = now()

    def join(self) -> None:
        self._stop.set()
        self._thread.join(ACTIVE_S + 120)


# --- figures -----------------------------------------------------------------------------------


def active_faults(faults: list[Fault], start: float, end: float) -> list[str]:
    """The faults that overlapped [start, end]: what a gap or an alert is set against."""
    return [f.name for f in faults if f.started <= end and f.ended >= start]


def stored_slots(lab: Lab) -> list[int]:
    """The lab cluster's stored cycles (slot ms): a row exists only for a whole cycle."""
    return sorted(
        int(round(db_time(at) * 1000))
        for (at,) in lab.rows(
            "SELECT cc.at FROM monitoring_collectedcycle cc JOIN monitoring_cluster c "
            "ON c.id = cc.cluster_id WHERE c.name = ?", LAB_CLUSTER,
        )
    )  # fmt: skip


def parquet_slots(run_dir: Path) -> set[int] | None:
    """The distinct cycle times of the lab cluster in the Parquet sample log."""
    try:
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        data = ds.dataset(str(run_dir / "data" / "samples"), format="parquet")
        table = data.to_table(columns=["ts_ms"], filter=pc.field("cluster") == LAB_CLUSTER)
        return set(pc.unique(table["ts_ms"]).to_pylist())
    except Exception as exc:  # noqa: BLE001 - the cross-check is optional
        print(f"parquet cross-check failed: {exc}", flush=True)
        return None


def samples_lost(
    stored: list[int], parquet: set[int] | None, start: float, end: float, faults: list[Fault]
) -> dict[str, Any]:
    """Every slot from ``start`` to ``end``: stored, excused (Redis or the collector down), or
    lost; and the gaps over two polls between stored slots."""
    step = POLL_S * 1000
    first = (int(start * 1000) // step + 1) * step
    expected = list(range(first, int(end * 1000) - 2 * step, step))
    have = set(stored)
    excused_windows = [
        (f.started - POLL_S, f.ended + 2 * POLL_S) for f in faults if f.name in EXCUSED
    ]
    missing = [s for s in expected if s not in have]
    excused = [s for s in missing if any(a <= s / 1000 <= b for a, b in excused_windows)]
    lost = [s for s in missing if s not in excused]
    in_range = [s for s in stored if first <= s <= expected[-1]] if expected else []
    gaps = [
        {"from": iso(a / 1000), "to": iso(b / 1000), "s": (b - a) / 1000,
         "faults": active_faults(faults, a / 1000, b / 1000)}
        for a, b in zip(in_range, in_range[1:], strict=False) if b - a > 2 * step
    ]  # fmt: skip
    out: dict[str, Any] = {
        "counted": "CollectedCycle rows of the lab cluster (one per stored cycle)",
        "slots_expected": len(expected),
        "slots_stored": len(expected) - len(missing),
        "missing_excused": len(excused),
        "lost": len(lost),
        "lost_at": [
            {"at": iso(s / 1000), "faults": active_faults(faults, s / 1000 - POLL_S, s / 1000)}
            for s in lost
        ][:50],
        "gaps_over_2_polls": gaps,
    }
    if parquet is not None:
        stored_in = [s for s in expected if s in have]
        out["parquet_missing_of_stored"] = sum(1 for s in stored_in if s not in parquet)
        out["parquet_only"] = sum(1 for s in expected if s in parquet and s not in have)
    return out


def justified(rounds: list[Round], key: tuple, at: float) -> bool:
    """Did a scenario make this partition stuck around ``at``? A group's own status (no
    topic: Burrow's ERR for a group with a STALL or STOP partition) counts with its group."""
    source, group, topic, partition = key
    for r in rounds:
        if not r.started or not (r.started <= at <= r.stopped + GRACE_S):
            continue
        for s, g, t, p in r.stuck:
            if (s, g) != (source, group):
                continue
            if not topic or (t == topic and (p is None or p == partition)):
                return True
    return False


def alerts(lab: Lab) -> list[dict[str, Any]]:
    """Every alert of the lab cluster as stored (``dashboard.alerts`` ``Alert`` rows)."""
    return [
        {"rule": rule, "key": (source, group, topic, partition), "status": status,
         "started": db_time(started), "fired": db_time(fired),
         "resolved": db_time(resolved) if resolved else None}
        for rule, source, group, topic, partition, status, started, fired, resolved in lab.rows(
            'SELECT rule_name, source, "group", topic, partition, status, started_at, fired_at, '
            "resolved_at FROM alerts_alert WHERE cluster = ? ORDER BY fired_at", LAB_CLUSTER,
        )
    ]  # fmt: skip


def false_alerts(
    all_alerts: list[dict[str, Any]], rounds: list[Round], faults: list[Fault], start: float
) -> dict[str, Any]:
    """Alerts of the run for partitions no scenario made stuck then, with the faults of the
    two minutes before each (a source outage must never read as STALL/STOP)."""
    mine = [a for a in all_alerts if a["fired"] >= start]
    wrong = [a for a in mine if not justified(rounds, a["key"], a["started"])]
    return {
        "alerts_fired": len(mine),
        "alerts_before_start": len(all_alerts) - len(mine),
        "not_stuck": len(wrong),
        "list": [
            {"at": iso(a["fired"]), "subject": "/".join(map(str, a["key"])), "status": a["status"],
             "faults_before": active_faults(faults, a["started"] - 120, a["fired"])}
            for a in wrong
        ],
    }  # fmt: skip


def stuck_statuses(lab: Lab, rounds: list[Round], faults: list[Fault], start: float) -> dict:
    """Every change to STALL/STOP/ERR in the run for a partition no scenario made stuck."""
    rows = lab.rows(
        "SELECT g.source, g.name, s.topic, s.partition, s.at, s.new_status "
        "FROM monitoring_statuschange s JOIN monitoring_consumergroup g ON g.id = s.group_id "
        "JOIN monitoring_cluster c ON c.id = g.cluster_id WHERE c.name = ? "
        "AND s.new_status IN ('STALL', 'STOP', 'ERR') ORDER BY s.at", LAB_CLUSTER,
    )  # fmt: skip
    wrong = [
        (src, grp, topic, part, db_time(at), new)
        for src, grp, topic, part, at, new in rows
        if db_time(at) >= start and not justified(rounds, (src, grp, topic, part), db_time(at))
    ]
    return {
        "changes": len(wrong),
        "list": [
            {"at": iso(at), "subject": f"{s}/{g}/{t}/{p}", "status": new,
             "faults_before": active_faults(faults, at - 120, at)}
            for s, g, t, p, at, new in wrong
        ][:40],
    }  # fmt: skip


def missed_alerts(all_alerts: list[dict[str, Any]], rounds: list[Round]) -> dict[str, Any]:
    """Each round that should fire an alert: did one fire (or was one firing) for it?"""
    out = []
    for r in rounds:
        if not r.stuck or not r.started:
            continue
        hits = [
            a for a in all_alerts
            if justified([r], a["key"], a["fired"])
            or (justified([r], a["key"], r.started) and a["fired"] <= r.started
                and (a["resolved"] is None or a["resolved"] >= r.started))
        ]  # fmt: skip
        out.append({
            "scenario": r.scenario, "params": r.params, "at": iso(r.started),
            "fired": bool(hits),
            "after_s": round(min(a["fired"] for a in hits) - r.started, 1) if hits else None,
            "error": r.error,
        })  # fmt: skip
    return {"expected": len(out), "missed": sum(1 for r in out if not r["fired"]), "rounds": out}


# --- the run -----------------------------------------------------------------------------------


def warm_up(lab: Lab, notices: NoticeReceiver) -> float:
    """Start the stack, attach the notices' receiver, wait for every group's first verdict:
    the run is counted after."""
    t = now()
    lab.up()
    notices.attach(lab)
    wait_for(lab.judged, 420, "every demo group collected and judged once", 3)
    return round(now() - t, 1)


def run_faults(lab: Lab, start: float, span_s: float, only: list[str] | None) -> list[Fault]:
    """The faults (``only``: those named) at even spacing over the run, each in the middle of
    its share; PostgreSQL's own when the stack runs on it."""
    faults = []
    every = FAULTS + (POSTGRES_FAULTS if lab.db.kind == "postgresql" else [])
    chosen = [f for f in every if only is None or f[0] in only]
    for i, (name, how, shows) in enumerate(chosen):
        due = start + (i + 0.5) * span_s / len(chosen)
        time.sleep(max(0.0, due - now()))
        faults.append(inject(lab, name, how, shows))
    return faults


def figures(
    lab: Lab, cycler: Cycler, faults: list[Fault], start: float, notices: NoticeReceiver
) -> dict:
    """The alert and status figures, read while the stack still runs (the samples are
    counted after it stopped, when the sample log is whole)."""
    all_alerts = alerts(lab)
    return {
        "alerts_not_stuck": false_alerts(all_alerts, cycler.rounds, faults, start),
        "stuck_statuses_not_stuck": stuck_statuses(lab, cycler.rounds, faults, start),
        "alerts_missed": missed_alerts(all_alerts, cycler.rounds),
        "notices": notices.figures(lab),
        "faults": [asdict(f) | {"at": iso(f.started)} for f in faults],
        "rounds": [asdict(r) | {"at": iso(r.started)} for r in cycler.rounds],
    }


def soak(minutes: float, only: list[str] | None = None, database: str = "sqlite") -> dict:
    """One soak of ``minutes`` after the warm-up; the stack is always stopped at the end."""
    run_dir = Path(tempfile.mkdtemp(prefix="soak-"))
    lab = Lab(run_dir, database)
    notices = NoticeReceiver()
    out: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "minutes": minutes,
        "database": database,
        "nproc": os.cpu_count(), "kernel": os.uname().release, "load_start": loadavg(),
        "poll_s": POLL_S, "job_s": JOB_S, "window_commits": WINDOW, "run_dir": str(run_dir),
    }  # fmt: skip
    faults: list[Fault] = []
    stored: list[int] = []
    start = end = 0.0
    try:
        out["warm_up_s"] = warm_up(lab, notices)
        out["memory_start"] = memory(lab, WATCHED)
        start = now()
        end = start + minutes * 60
        cycler = Cycler(lab.endpoints["control"], end)
        cycler.start()
        watch = MemoryWatch(lab, WATCHED)
        watch.start()
        faults = run_faults(lab, start, end - start, only)
        time.sleep(max(0.0, end - now()))
        cycler.join()
        watch.stop()
        out["memory_end"] = memory(lab, WATCHED)
        restarts = restart_times(faults, RESTARTED)
        out["memory_after_15_min"] = watch.figures(start, restarts=restarts)
        out.update(figures(lab, cycler, faults, start, notices))
        out["states_end"] = {n: s["state"] for n, s in lab.stack.status()["services"].items()}
        stored = stored_slots(lab)  # while PostgreSQL still runs
    finally:
        lab.stack.down()
        notices.close()
    # Once stopped, the sample log is whole: the cross-check reads it then.
    out["samples"] = samples_lost(stored, parquet_slots(run_dir), start, end, faults)
    out["load_end"] = loadavg()
    return out


def main() -> None:
    """``--minutes`` and ``--json``: the figures go to stdout and, if asked, to the file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--faults", help="only these faults, comma-separated (default: all)")
    parser.add_argument("--database", choices=DATABASES, default="sqlite")
    args = parser.parse_args()
    only = args.faults.split(",") if args.faults else None
    result = soak(args.minutes, only, args.database)
    text = json.dumps(result, indent=1, default=str)
    print(text, flush=True)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()

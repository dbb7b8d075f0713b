"""Detection times beside Burrow: the same lab broker, the same faults, both judging at once.

A lab stack (``lab.stack.Stack``: ZooKeeper, the Kafka broker, Redis, the workload, web,
worker, collector, beat) at the lab's defaults, as a new user runs it: a poll every 10 s, a
status run after every stored cycle, a window of 10 commits. Beside it, Burrow reads the same
broker's ``__consumer_offsets`` at its own defaults (in-memory storage of 10 offsets a
partition, the caching evaluator, ``kafka-version`` 2.8.0, ZooKeeper for its coordination:
the lab's). Both answer the same request, ``GET /v3/kafka/lab/consumer/<group>/status``
(Lagwatch's Burrow-compatible API), read once a second.

Each fault is a lab scenario on one Kafka group (docs/SCENARIOS.md): started at t0, then the
first second at which each monitor's group status is not OK; stopped once both judged it (or
at the deadline: a monitor that never judged it is "never"), then the first second at which
each is OK again. Before the first fault and between faults both must show every group OK
on a full window (``complete`` 1).

Burrow is not built here: pass a Burrow binary (``--burrow``; e.g. v1.9.5 built with
``go build`` from its source). Its configuration is written by ``burrow_config`` below, so
how it was run is in this file.

    .venv/bin/python -m benchmarks.bench_burrow --burrow PATH [--faults poison-classic,...]
        [--reps 1] [--deadline-s 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SERVICES = ["zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "beat"]
CLUSTER = "lab"


@dataclass(frozen=True)
class Fault:
    """A lab scenario aimed at one Kafka group, and the statuses that count as judging it."""

    name: str
    scenario: str
    group: str

    @property
    def params(self) -> dict[str, Any]:
        return {"group": self.group}


FAULTS = {
    f.name: f
    for f in (
        Fault("poison-classic", "poison-message", "orders-processor"),
        Fault("poison-kip848", "poison-message", "shipments-tracker"),
        Fault("slow-classic", "slow-consumer", "orders-processor"),
        Fault("slow-kip848", "slow-consumer", "shipments-tracker"),
        Fault("dead-classic", "dead-consumer", "payments-ledger"),
        Fault("dead-kip848", "dead-consumer", "invoices-auditor"),
    )
}
GROUPS = sorted({f.group for f in FAULTS.values()})


def burrow_config(run_dir: Path, zookeeper: str, kafka: str, port: int) -> str:
    """Burrow's documented example configuration with its defaults kept, pointed at the lab."""
    return f"""
[general]
pidfile="{run_dir}/burrow.pid"
stdout-logfile="{run_dir}/burrow.out"

[logging]
filename="{run_dir}/burrow.log"
level="info"

[zookeeper]
servers=["{zookeeper}"]
timeout=6
root-path="/burrow"

[client-profile.lab]
client-id="burrow-bench"

[cluster.{CLUSTER}]
class-name="kafka"
servers=["{kafka}"]
client-profile="lab"

[consumer.{CLUSTER}]
class-name="kafka"
cluster="{CLUSTER}"
servers=["{kafka}"]
client-profile="lab"

[httpserver.default]
address="127.0.0.1:{port}"

[storage.default]
class-name="inmemory"

[evaluator.default]
class-name="caching"
"""


def status_doc(base: str, group: str) -> dict[str, Any]:
    """The group's ``status`` object of a Burrow-shaped ``/v3`` answer ({} when none)."""
    url = f"{base}/v3/kafka/{CLUSTER}/consumer/{group}/status"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.load(resp).get("status") or {}
    except (urllib.error.URLError, OSError, ValueError):
        return {}


def group_status(base: str, group: str) -> str | None:
    """The group's status; None when not known."""
    status = status_doc(base, group).get("status")
    return None if status in (None, "NOTFOUND") else status


def not_ok_partitions(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The partitions a status object judges other than OK, as it gives them."""
    return [p for p in doc.get("partitions") or [] if p.get("status") != "OK"]


def first_time(samples: list[tuple[float, dict[str, str | None]]], who: str, ok: bool,
               since: float) -> float | None:  # fmt: skip
    """Seconds after ``since`` of the first sample where ``who``'s status is (not) OK."""
    for at, statuses in samples:
        status = statuses.get(who)
        if at >= since and status is not None and (status == "OK") == ok:
            return round(at - since, 1)
    return None


def run_fault(fault: Fault, monitors: dict[str, str], control: str, deadline_s: float,
              stop_after_s: float) -> dict[str, Any]:  # fmt: skip
    from lab.workload.control import start_scenario, stop_scenario

    first_docs: dict[str, list[dict[str, Any]]] = {}

    def read() -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for who, base in monitors.items():
            doc = status_doc(base, fault.group)
            status = doc.get("status")
            out[who] = None if status in (None, "NOTFOUND") else status
            if status not in (None, "NOTFOUND", "OK") and who not in first_docs:
                first_docs[who] = not_ok_partitions(doc)
        return out

    samples: list[tuple[float, dict[str, str | None]]] = []
    t0 = time.time()
    start_scenario(control, fault.scenario, **fault.params)
    while time.time() < t0 + deadline_s:
        samples.append((time.time(), read()))
        judged = [first_time(samples, who, False, t0) for who in monitors]
        if all(j is not None for j in judged) and time.time() > t0 + stop_after_s:
            break
        time.sleep(1)
    t_stop = time.time()
    stop_scenario(control, fault.scenario)
    while time.time() < t_stop + deadline_s:
        samples.append((time.time(), read()))
        if all(first_time(samples, who, True, t_stop) is not None for who in monitors):
            break
        time.sleep(1)
    out: dict[str, Any] = {"fault": fault.name, "group": fault.group, "load": os.getloadavg()[0]}
    for who in monitors:
        out[f"{who}_first_non_ok_s"] = first_time(samples, who, False, t0)
        statuses = [s[who] for _, s in samples if s.get(who) not in (None, "OK")]
        out[f"{who}_statuses"] = sorted(set(statuses))
        out[f"{who}_back_to_ok_s"] = first_time(samples, who, True, t_stop)
        out[f"{who}_first_not_ok_partitions"] = first_docs.get(who)
    return out


def settled(doc: dict[str, Any]) -> bool:
    """OK on a full window: not the OK of a window too young to judge."""
    return doc.get("status") == "OK" and float(doc.get("complete") or 0) >= 1.0


def all_ok(monitors: dict[str, str]) -> bool:
    return all(settled(status_doc(base, g)) for base in monitors.values() for g in GROUPS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burrow", required=True, help="a Burrow binary (e.g. v1.9.5)")
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma-separated")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--deadline-s", type=float, default=300.0)
    parser.add_argument("--stop-after-s", type=float, default=0.0,
                        help="keep a fault at least this long, though both judged it")  # fmt: skip
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    faults = [FAULTS[name] for name in args.faults.split(",")]

    from lab import ports
    from lab.stack import Stack
    from tests.waiting import wait_for

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    run_dir = Path(tempfile.mkdtemp(prefix="bench-burrow-"))
    stack = Stack(run_dir)
    burrow: subprocess.Popen[bytes] | None = None
    results: list[dict[str, Any]] = []
    try:
        endpoints = stack.up(SERVICES)
        burrow_port = ports.pick_free_ports(1)[0]
        conf_dir = run_dir / "burrow"
        conf_dir.mkdir()
        (conf_dir / "burrow.toml").write_text(
            burrow_config(conf_dir, endpoints["zookeeper"], endpoints["kafka"], burrow_port)
        )
        log = open(conf_dir / "burrow.stderr", "wb")  # noqa: SIM115 (closed with the process)
        burrow = subprocess.Popen(
            [args.burrow, "--config-dir", str(conf_dir)], cwd=conf_dir, stdout=log, stderr=log
        )
        monitors = {
            "lagwatch": endpoints["web"].rstrip("/"),
            "burrow": f"http://127.0.0.1:{burrow_port}",
        }
        t_up = time.time()
        wait_for(lambda: all_ok(monitors), 600, "every target group OK in both monitors", 2)
        print(f"both monitors judge every group OK after {time.time() - t_up:.0f} s", flush=True)
        for rep in range(args.reps):
            for fault in faults:
                result = {"rep": rep, **run_fault(fault, monitors, endpoints["control"],
                                                  args.deadline_s, args.stop_after_s)}  # fmt: skip
                results.append(result)
                print(json.dumps(result), flush=True)
                wait_for(lambda: all_ok(monitors), 600, "every group OK again in both", 2)
    finally:
        if burrow is not None:
            burrow.terminate()
            try:
                burrow.wait(15)
            except subprocess.TimeoutExpired:
                burrow.kill()
        stack.down()
    if args.json:
        args.json.write_text(json.dumps({"results": results}, indent=2))


if __name__ == "__main__":
    main()

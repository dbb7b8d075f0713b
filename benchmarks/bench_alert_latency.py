"""Alert latency in the lab, and the cost of one evaluation at 20,000 partitions.

**Latency**: a lab stack (``lab.stack.Stack``: ZooKeeper, the Kafka-protocol broker, Redis, the
workload, web, worker, collector, beat) polling the lab cluster every 5 s, the status job every
15 s, a window of 10 commits (so about 50 s), as the lab tests run it. A webhook channel points
at an HTTP server in this process and one rule is scoped to the ``orders-spout`` spout (the
default "STALL, STOP or ERR lasting two evaluations"). Each repetition starts the
``poison-message`` scenario on partition ``rep % 6`` (the injection, t0; a fresh partition
each time), then records when ``lagwatch_status`` first shows that partition STALL, the
alert's ``fired_at``, and when the webhook arrives;
then stops the scenario and waits for the resolve notice. Target: injection → webhook ≤ status
window + two evaluation periods (50 + 2 × 15 = 80 s).

**Verdict times** (``--verdicts``): from the stored history (``StatusChange``, one read after
each repetition), when the partition's first non-OK verdict and, after the scenario stopped,
its first OK were made (the run's time) and applied (the run's end, when the pages, the API
and the alerts have it): fault → first non-OK against the window's span + one poll, fault
over → OK against one poll + 5 s. ``--status-every-s`` sets beat's period; the runs after
each stored cycle (``LAGWATCH_STATUS_AFTER_CYCLE``) follow ``--after-cycle``.

**Evaluation cost**: a throw-away SQLite database migrated from scratch, 20,000 partitions (500
groups × 40) of which 5 % are stuck, the default rule plus a group-level rule; the receiver of
``status_applied`` (``dashboard.alerts.evaluation.evaluate``) timed over repetitions, the first
(which creates the pending matches) and the steady state apart.

    .venv/bin/python -m benchmarks.bench_alert_latency [--reps 3] [--only latency|eval]
        [--status-every-s 15] [--[no-]after-cycle] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

POLL_S, JOB_S, WINDOW = 5, 15, 10
TARGET_S = WINDOW * POLL_S + 2 * JOB_S
# The window's span at a commit each poll (10 commits: 9 intervals), and the targets of the
# verdicts themselves.
SPAN_S = (WINDOW - 1) * POLL_S
FIRST_NON_OK_TARGET_S = SPAN_S + POLL_S
BACK_TO_OK_TARGET_S = POLL_S + 5
_HISTORY = """
import json
from dashboard.monitoring.models import SparkJobRun, StatusChange
runs = {r.as_of_ms: r.finished_at.timestamp() for r in SparkJobRun.objects.filter(
    job="status", outcome="ok", finished_at__isnull=False)}
rows = StatusChange.objects.filter(group__name="orders-spout", topic="orders", partition=%d,
                                   at__gte=__import__("datetime").datetime.fromtimestamp(%f,
                                   __import__("datetime").UTC)).order_by("at")
out = []
for c in rows:
    made = c.at.timestamp()
    out.append([made, runs.get(round(made * 1000)), c.old_status, c.new_status])
print("HISTORY " + json.dumps(out))
"""
SERVICES = ["zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "beat"]
RULE = "bench: orders-spout stuck"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def iso_to_epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# --- latency ----------------------------------------------------------------------------------


def verdict_times(history: list[list[Any]], t0: float, t_stop: float) -> dict[str, float | None]:
    """From the partition's changes (made, applied, old, new): the first non-OK after the
    injection and the first OK after the fault ended, made and applied, in seconds."""
    bad = next((h for h in history if h[0] >= t0 and h[3] != "OK"), None)
    good = next((h for h in history if h[0] >= t_stop and h[3] == "OK"), None)

    def after(row: list[Any] | None, index: int, since: float) -> float | None:
        return None if row is None or row[index] is None else round(row[index] - since, 1)

    return {
        "first_non_ok_made_s": after(bad, 0, t0), "first_non_ok_applied_s": after(bad, 1, t0),
        "first_non_ok": bad[3] if bad else None,
        "ok_made_after_stop_s": after(good, 0, t_stop),
        "ok_applied_after_stop_s": after(good, 1, t_stop),
    }  # fmt: skip


def bench_latency(reps: int, every_s: int = JOB_S, after_cycle: bool = True) -> dict[str, Any]:
    from lab.stack import Stack
    from lab.workload.control import start_scenario, stop_scenario
    from tests.alerts.receivers import HookReceiver
    from tests.waiting import wait_for

    os.environ.update(
        LAGWATCH_LAB_POLL_S=str(POLL_S),
        LAGWATCH_STATUS_EVERY_S=str(every_s),
        LAGWATCH_STATUS_AFTER_CYCLE="1" if after_cycle else "0",
        LAGWATCH_STATUS_WINDOW_COMMITS=str(WINDOW),
        SPARK_LOCAL_IP="127.0.0.1",
    )
    hook = HookReceiver()
    run_dir = Path(tempfile.mkdtemp(prefix="bench-alerts-"))
    stack = Stack(run_dir)
    runs: list[dict[str, Any]] = []
    try:
        t_up = time.time()
        endpoints = stack.up(SERVICES)
        env = stack.django_env()
        control = endpoints["control"]

        def manage(*args: str, input: str | None = None) -> str:
            done = subprocess.run(
                [sys.executable, "manage.py", *args], cwd=REPO, env=env, input=input,
                capture_output=True, text=True, timeout=120, check=True,
            )  # fmt: skip
            return done.stdout

        def poisoned(partition: int) -> dict[str, Any] | None:
            doc = json.loads(manage("lagwatch_status", "--json"))
            for p in doc["partitions"]:
                key = (p["source"], p["group"], p["topic"], p["partition"])
                if key == ("storm", "orders-spout", "orders", partition):
                    return p
            return None

        def all_judged() -> bool:
            doc = json.loads(manage("lagwatch_status", "--json"))
            return len(doc["groups"]) >= 8 and all(p["evaluated_at"] for p in doc["partitions"])

        wait_for(all_judged, 300, "every demo group judged once", 3)
        print(f"stack up and judged in {time.time() - t_up:.0f} s (load {load()})", flush=True)
        manage("alerts_config", "import", "-", input=json.dumps({
            "channels": [{"name": "bench-hook", "kind": "webhook", "url": hook.url}],
            "rules": [{"name": RULE, "group_pattern": "orders-spout",
                       "statuses": ["STALL", "STOP", "ERR"], "min_evaluations": 2,
                       "channels": ["bench-hook"]}],
        }))  # fmt: skip

        def mine(notice: str) -> list[dict[str, Any]]:
            return [
                r for r in hook.requests
                if r["body"]["notice"] == notice and r["body"]["alert"]["rule"] == RULE
            ]  # fmt: skip

        for rep in range(reps):
            fired_before, resolved_before = len(mine("firing")), len(mine("resolved"))
            load_before = load()
            t0 = time.time()
            # A fresh partition each time: the last one's window still holds its recovery.
            partition = rep % 6
            start_scenario(control, "poison-message", partition=partition)
            stall_at = None
            deadline = t0 + 300
            while time.time() < deadline and len(mine("firing")) == fired_before:
                if stall_at is None:
                    p = poisoned(partition)
                    if p and p["status"] == "STALL":
                        stall_at = time.time()
                # Every poll interval: each read is a manage.py process (~1.5 CPU-s), and read
                # back to back they took a third of the two cores from the stack being timed.
                time.sleep(POLL_S)
            if len(mine("firing")) == fired_before:
                raise SystemExit(f"rep {rep}: no webhook within 300 s")
            req = mine("firing")[-1]
            alert = req["body"]["alert"]
            t_stop = time.time()
            stop_scenario(control, "poison-message")
            wait_for(lambda n=resolved_before: len(mine("resolved")) > n, 300, "resolve notice", 1)
            resolved = mine("resolved")[-1]
            printed = manage("shell", "-c", _HISTORY % (partition, t0 - 1)).splitlines()
            history = json.loads(next(x for x in printed if x.startswith("HISTORY "))[8:])
            run = {
                "rep": rep,
                "partition": partition,
                "load_before": load_before,
                "status_stall_s": None if stall_at is None else round(stall_at - t0, 1),
                "fired_at_s": round(iso_to_epoch(alert["fired_at"]) - t0, 1),
                "webhook_s": round(req["at"] - t0, 1),
                "resolve_webhook_after_stop_s": round(resolved["at"] - t_stop, 1),
                **verdict_times(history, t0, t_stop),
                "load_after": load(),
            }
            runs.append(run)
            print(json.dumps(run), flush=True)
            time.sleep(JOB_S)  # one quiet evaluation between repetitions
    finally:
        hook.close()
        stack.down()
    webhook = [r["webhook_s"] for r in runs]

    def spread(key: str) -> list[float] | None:
        values = [r[key] for r in runs if r.get(key) is not None]
        return [min(values), statistics.median(values), max(values)] if values else None

    return {
        "poll_s": POLL_S, "job_s": every_s, "after_cycle": after_cycle, "window_commits": WINDOW,
        "target_s": TARGET_S, "runs": runs, "webhook_median_s": statistics.median(webhook),
        "webhook_max_s": max(webhook),
        "first_non_ok_applied_s (min, median, max)": spread("first_non_ok_applied_s"),
        "first_non_ok_target_s": FIRST_NON_OK_TARGET_S,
        "ok_applied_after_stop_s (min, median, max)": spread("ok_applied_after_stop_s"),
        "back_to_ok_target_s": BACK_TO_OK_TARGET_S,
    }  # fmt: skip


# --- evaluation cost --------------------------------------------------------------------------


def bench_eval(reps: int = 5) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-alerts-eval-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'db.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings.base")
    import django

    django.setup()
    from django.core.management import call_command
    from django.utils import timezone

    from dashboard.alerts.evaluation import evaluate
    from dashboard.alerts.models import Rule
    from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState

    call_command("migrate", verbosity=0)
    Rule.objects.create(name="groups", statuses=["STOP"], level="group")
    now = timezone.now()
    cluster = Cluster.objects.create(name="big")
    groups = ConsumerGroup.objects.bulk_create(
        ConsumerGroup(
            cluster=cluster, source="kafka", name=f"group-{g}", first_seen_at=now, last_seen_at=now
        )  # fmt: skip
        for g in range(500)
    )
    rows = []
    for i in range(20_000):
        stuck = i % 20 == 0
        rows.append(PartitionState(
            group=groups[i // 40], topic=f"topic-{(i // 40) % 25}", partition=i % 40,
            status=("STOP" if i % 40 == 0 else "STALL") if stuck else "OK", lag=i,
            diagnosis=[{"code": "DEAD_CONSUMER", "evidence": {}}] if stuck else [],
            sampled_at=now, status_since=now,
        ))  # fmt: skip
    PartitionState.objects.bulk_create(rows, batch_size=2000)
    times, reports = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        report = evaluate()
        times.append(time.perf_counter() - t0)
        reports.append(report.__dict__)
    return {
        "partitions": 20_000, "non_ok": sum(1 for r in rows if r.status != "OK"),
        "first_s": round(times[0], 3), "second_s (fires)": round(times[1], 3),
        "steady_median_s": round(statistics.median(times[2:]), 3) if reps > 2 else None,
        "reports": reports, "load": load(),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", choices=["latency", "eval"])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--status-every-s", type=int, default=JOB_S, help="beat's period")
    parser.add_argument("--after-cycle", action=argparse.BooleanOptionalAction, default=True,
                        help="a status run after every stored cycle")  # fmt: skip
    args = parser.parse_args()
    out: dict[str, Any] = {"date": datetime.now(UTC).isoformat(), "load_start": load(),
                           "cpus": os.cpu_count()}  # fmt: skip
    if args.only in (None, "eval"):
        # In a child process: it sets its own DATABASE_URL and Django settings.
        done = subprocess.run(
            [sys.executable, "-c", "import benchmarks.bench_alert_latency as b, json; "
             "print(json.dumps(b.bench_eval()))"],
            cwd=REPO, capture_output=True, text=True, check=True,
        )  # fmt: skip
        out["eval"] = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(out["eval"], indent=1), flush=True)
    if args.only in (None, "latency"):
        out["latency"] = bench_latency(args.reps, args.status_every_s, args.after_cycle)
        print(json.dumps(out["latency"], indent=1), flush=True)
    out["load_end"] = load()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""API benchmark: the Burrow-compatible status of a 50-partition group, and
``/metrics``, served by gunicorn from a SQLite file holding 1,000 groups, under 32 concurrent
connections from a second process (``wrk``).

Data (generated in a child process with bulk inserts, not timed): one cluster, ``--groups``
Kafka groups (default 1,000): one ``target`` group of ``--target-partitions`` (50) partitions
and the others of ``--partitions`` (20) each, about 20,000 partitions in all; every group has
members, every partition an owner, a status (10 % non-OK, with a diagnosis), and ``--samples``
raw samples (60: ten minutes at 10 s polls) in the raw history (``GroupSample``): where
Burrow's ``start`` offsets are looked up.

Server: ``gunicorn dashboard.wsgi`` with ``--workers`` × ``--threads`` (default 3 × 2, gthread:
two cores, SQLite reads release the GIL), ``DJANGO_DEBUG=0``, the project's settings. Load:
``wrk -t2 -c32 --latency`` for ``--duration`` seconds per URL (``--metrics-duration`` for
``/metrics``, whose requests take seconds) after a short warm-up and once the server is idle
again (requests wrk gave up on are still being served); wrk runs
on the same two cores as the server (its own CPU time is reported). Each URL's response is
checked once before the load (the target group, 50 partitions, the expected series), and
timed alone (best of three) to separate the cost of a request from the effect of the load.
The server's own CPU time per request (gunicorn master and workers, from /proc) is reported
too: on a shared machine it says what the throughput would be with the two cores to itself.
``/metrics?partitions=false`` (group series only) is measured too.

``/metrics``: before the server starts, the exposition is built and published as
the Celery task does after each stored cycle (its build time reported); ``/metrics`` is then
measured as served from it, plain and gzipped (as Prometheus asks), and, in the same run, by a
second server with ``LAGWATCH_METRICS_PREBUILT=0`` where every scrape builds everything (the
baseline; ``--no-inline`` skips it).

    .venv/bin/python -m benchmarks.bench_api [--groups 1000] [--partitions 20]
        [--target-partitions 50] [--samples 60] [--duration 20] [--metrics-duration 60]
        [--connections 32] [--database sqlite|postgresql]
        [--workers 3] [--threads 2] [--keep DIR] [--json FILE] [--no-inline]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
CLUSTER = "bench"
TARGET = "target"


def _env(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        LAGWATCH_DATA_DIR=str(data_dir),
        DJANGO_SETTINGS_MODULE="dashboard.settings.base",
        DJANGO_DEBUG="0",
        LAGWATCH_LOG_LEVEL="WARNING",
        LAGWATCH_OPEN_ENDPOINTS_AUTH="none",
        PYTHONPATH=str(ROOT),
    )
    return env


# --- data ---------------------------------------------------------------------------------


def populate(groups: int, partitions: int, target_partitions: int, samples: int) -> dict:
    """Runs in the child process, with Django set up on the benchmark's database."""
    import django

    django.setup()
    from django.db import transaction

    from dashboard.monitoring import group_totals
    from dashboard.monitoring.models import (
        Cluster,
        ConsumerGroup,
        GroupSample,
        PartitionState,
    )
    from dashboard.store import raw_history

    now = datetime.now(UTC).replace(microsecond=0)
    started = time.perf_counter()
    with transaction.atomic():
        cluster = Cluster.objects.create(name=CLUSTER, kafka_bootstrap_servers="k:9092",
                                         poll_interval_s=10)  # fmt: skip
        rows = []
        for i in range(groups):
            name = TARGET if i == 0 else f"group-{i:04d}"
            members = [
                {
                    "member_id": f"{name}-m{k}",
                    "client_id": f"{name}-app",
                    "host": f"/10.0.{k}.{i % 250}",
                    "assignment": [],
                }
                for k in range(5)
            ]
            rows.append(ConsumerGroup(cluster=cluster, source="kafka", name=name, state="Stable",
                                      generation=3, members=members, status="OK", complete=1.0,
                                      first_seen_at=now - timedelta(days=1), last_seen_at=now,
                                      evaluated_at=now))  # fmt: skip
        created = ConsumerGroup.objects.bulk_create(rows, batch_size=500)
        parts = []
        for g in created:
            n = target_partitions if g.name == TARGET else partitions
            for p in range(n):
                bad = p % 10 == 3
                parts.append(PartitionState(
                    group=g, topic=f"topic-{p % 3}", partition=p, committed=10_000 + p,
                    earliest=0, latest=10_000 + p + (500 if bad else 5), lag=500 if bad else 5,
                    time_lag_s=120.0 if bad else 1.0, owner=f"{g.name}-m{p % 5}", alive=True,
                    last_commit_at=now - timedelta(seconds=30), status="STALL" if bad else "OK",
                    diagnosis=[{"code": "POISON_MESSAGE", "evidence": {"offset": 10_000 + p}}]
                    if bad else [], reason="frozen" if bad else "", complete=1.0,
                    evaluated_at=now, sampled_at=now,
                ))  # fmt: skip
        PartitionState.objects.bulk_create(parts, batch_size=2000)
        # The groups' partition totals, as the store keeps them.
        group_totals.refresh(ConsumerGroup.objects.values_list("id", flat=True))
        ids = list(
            PartitionState.objects.values_list("group_id", "topic", "partition", "committed",
                                               "latest")
        )  # fmt: skip
        for s in range(samples):
            at = now - timedelta(seconds=10 * (samples - 1 - s))
            back = samples - 1 - s
            GroupSample.objects.bulk_create(raw_history.group_samples(
                (g, at, (t, n, committed - back, latest - back, latest - committed, 1.0, None,
                         None, None, False))
                for g, t, n, committed, latest in ids
            ), batch_size=500)  # fmt: skip
    return {
        "groups": groups,
        "partitions": len(ids),
        "offset_samples": len(ids) * samples,
        "populate_s": round(time.perf_counter() - started, 1),
    }


# --- server and load ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


GZIP = "Accept-Encoding: gzip"


def _get(url: str, timeout: float = 60, headers: tuple[str, ...] = ()) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=dict(h.split(": ", 1) for h in headers))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def start_server(
    env: dict, workers: int, threads: int, worker_class: str
) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen(
        [GUNICORN, "dashboard.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--threads", str(threads), "--worker-class", worker_class,
         "--log-level", "warning", "--timeout", "120"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            _get(f"{base}/health/", timeout=2)
            return proc, base
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("gunicorn did not answer within 60 s")


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * _UNITS[unit]


def wrk(url: str, connections: int, duration: int, headers: tuple[str, ...] = ()) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    header_args = [arg for header in headers for arg in ("-H", header)]
    done = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "30s", "--latency",
         *header_args, url],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = done.stdout
    result = {
        "requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),
        "wrk_cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
    }
    for pct in ("50", "75", "90", "99"):
        result[f"p{pct}_ms"] = round(_ms(re.search(rf"\s{pct}%\s+(\S+)", out).group(1)), 1)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    result["non_2xx"] = int(non_2xx.group(1)) if non_2xx else 0
    result["socket_errors"] = errors.group(1).strip() if errors else ""
    return result


def check_responses(base: str, target_partitions: int) -> dict:
    status, body = _get(f"{base}/v3/kafka/{CLUSTER}/consumer/{TARGET}/lag")
    doc = json.loads(body)
    assert status == 200 and doc["status"]["partition_count"] == target_partitions, doc
    assert len(doc["status"]["partitions"]) == target_partitions
    status, body = _get(f"{base}/v3/kafka/{CLUSTER}/consumer/{TARGET}/status")
    doc = json.loads(body)
    assert status == 200 and doc["status"]["status"] == "OK"
    bad = len(doc["status"]["partitions"])
    status, body = _get(f"{base}/metrics")
    assert status == 200 and b'lagwatch_partition_lag{cluster="bench"' in body
    age = re.search(rb"^lagwatch_metrics_exposition_age_seconds (\S+)$", body, re.M)
    published = float(age.group(1)) > 0

    def single(url: str, headers: tuple[str, ...] = ()) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            _get(url, headers=headers)
            times.append(time.perf_counter() - started)
        return round(min(times), 3)

    gzipped = _get(f"{base}/metrics", headers=(GZIP,))[1]
    return {
        "status_body_bytes": len(_get(f"{base}/v3/kafka/{CLUSTER}/consumer/{TARGET}/status")[1]),
        "status_partitions_listed": bad,
        "metrics_from_published_exposition": published,
        "metrics_bytes": len(body),
        "metrics_gzip_bytes": len(gzipped),
        "metrics_series": body.count(b"\n") - body.count(b"\n#"),
        "metrics_single_scrape_s": single(f"{base}/metrics"),
        "metrics_gzip_single_scrape_s": single(f"{base}/metrics", (GZIP,)),
        "metrics_groups_only_single_scrape_s": single(f"{base}/metrics?partitions=false"),
        "burrow_status_single_request_ms": round(
            single(f"{base}/v3/kafka/{CLUSTER}/consumer/{TARGET}/status") * 1000, 1
        ),
    }


def publish_exposition(env: dict) -> float:
    """What the Celery task does after a stored cycle, timed: the bulk of /metrics built and
    published under the data directory (dashboard/api/metrics/exposition.py)."""
    code = (
        "import time, django; django.setup(); from dashboard.api.metrics.exposition import build; "
        "t = time.perf_counter(); build(); print(time.perf_counter() - t)"
    )
    done = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True)  # fmt: skip
    return round(float(done.stdout.strip().splitlines()[-1]), 2)


def server_cpu_s(master: int) -> float:
    """CPU seconds (user + system) of gunicorn's master and workers so far, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    pids = [master]
    children = Path(f"/proc/{master}/task/{master}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / tick


def wait_idle(master: int, timeout_s: float = 300) -> float:
    """Wait until the server has finished what a run left queued (requests wrk gave up on
    are still served): its CPU time stops rising. Returns the seconds waited."""
    started = time.monotonic()
    last = server_cpu_s(master)
    while time.monotonic() - started < timeout_s:
        time.sleep(1.0)
        now = server_cpu_s(master)
        if now - last < 0.05:
            break
        last = now
    return round(time.monotonic() - started, 1)


def measure_urls(urls: dict, args: argparse.Namespace, server: subprocess.Popen,
                 results: dict) -> None:  # fmt: skip
    for name, (url, headers) in urls.items():
        if args.only and name not in args.only:
            continue
        duration = args.metrics_duration if name.startswith("metrics") else args.duration
        wrk(url, args.connections, 3, headers)  # warm-up
        wait_idle(server.pid)
        load = load_average()
        cpu_before = server_cpu_s(server.pid)
        run = wrk(url, args.connections, duration, headers)
        cpu = server_cpu_s(server.pid) - cpu_before
        run["server_cpu_s"] = round(cpu, 2)
        run["server_cpu_ms_per_request"] = round(1000 * cpu / max(run["requests"], 1), 2)
        run["load_average_before"] = load
        run["duration_s"] = duration
        run["drain_after_s"] = wait_idle(server.pid)
        results["runs"][name] = run
        print(name, run, flush=True)


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--target-partitions", type=int, default=50)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--metrics-duration", type=int, default=60)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker-class", default="gthread", choices=("gthread", "sync"))
    parser.add_argument("--only", nargs="*", help="measure only these runs (names as printed)")
    parser.add_argument("--keep", type=Path, help="data directory to create or reuse")
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite",
                        help="SQLite in the data directory, or a private PostgreSQL server")
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument("--no-inline", action="store_true",
                        help="skip the baseline: /metrics built by every scrape")  # fmt: skip
    parser.add_argument("--populate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.populate:  # the child process
        print(json.dumps(populate(args.groups, args.partitions, args.target_partitions,
                                  args.samples)))  # fmt: skip
        return
    if shutil.which("wrk") is None:
        sys.exit("wrk not found: apt-get install -y wrk")

    data_dir = args.keep or Path(tempfile.mkdtemp(prefix="bench-api-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    env = _env(data_dir)
    db = data_dir / "lagwatch.sqlite3"
    data: dict = {"reused": True}
    fresh = not db.exists()
    if args.database == "postgresql":
        # A private PostgreSQL server for this run (lab/postgres.py), stopped at exit.
        from benchmarks.bench_cycle import start_postgres

        env["DATABASE_URL"] = start_postgres(data_dir / "postgres")
        fresh = True
    if fresh:
        subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        done = subprocess.run(
            [PYTHON, "-m", "benchmarks.bench_api", "--populate", "--groups", str(args.groups),
             "--partitions", str(args.partitions), "--target-partitions",
             str(args.target_partitions), "--samples", str(args.samples)],
            cwd=ROOT, env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        data = json.loads(done.stdout.strip().splitlines()[-1])
    data["database"] = args.database
    if db.exists() and args.database == "sqlite":
        data["db_mb"] = round(db.stat().st_size / 2**20, 1)
    print("data:", data, flush=True)

    results: dict = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_before": load_average(),
        },  # fmt: skip
        "server": {
            "workers": args.workers,
            "threads": args.threads,
            "class": args.worker_class,
        },  # fmt: skip
        "load": {"tool": "wrk -t2", "connections": args.connections, "duration_s": args.duration},
        "data": data,
        "runs": {},
    }
    # The bench runs no collector to rebuild it each cycle: the published set stays valid.
    env["LAGWATCH_METRICS_MAX_AGE_S"] = "86400"
    results["exposition_build_s"] = publish_exposition(env)
    print("exposition built in", results["exposition_build_s"], "s", flush=True)
    server, base = start_server(env, args.workers, args.threads, args.worker_class)
    try:
        results["checks"] = check_responses(base, args.target_partitions)
        print("checks:", results["checks"], flush=True)
        urls = {
            "burrow_status": (f"{base}/v3/kafka/{CLUSTER}/consumer/{TARGET}/status", ()),
            "burrow_lag": (f"{base}/v3/kafka/{CLUSTER}/consumer/{TARGET}/lag", ()),
            "metrics": (f"{base}/metrics", ()),
            "metrics_gzip": (f"{base}/metrics", (GZIP,)),
            "metrics_groups_only": (f"{base}/metrics?partitions=false", ()),
        }
        measure_urls(urls, args, server, results)
    finally:
        stop_server(server)
    if not args.no_inline and (not args.only or "metrics_inline" in args.only):
        # The baseline in the same run: every scrape builds everything (as before the exposition
        # was published by the Celery task).
        env["LAGWATCH_METRICS_PREBUILT"] = "0"
        server, base = start_server(env, args.workers, args.threads, args.worker_class)
        try:
            results["checks_inline"] = check_responses(base, args.target_partitions)
            print("checks (inline):", results["checks_inline"], flush=True)
            measure_urls({"metrics_inline": (f"{base}/metrics", ())}, args, server, results)
        finally:
            stop_server(server)
    results["machine"]["load_average_after"] = load_average()
    if args.keep is None:
        shutil.rmtree(data_dir, ignore_errors=True)
    text = json.dumps(results, indent=2)
    if args.json:
        args.json.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

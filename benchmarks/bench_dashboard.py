"""Dashboard server times and page weights at 1,000 groups and 20,000 partitions, or any size
(``--groups 5000 --partitions 100000``).

Populates a temporary SQLite database with bulk inserts: 1,000 groups (one with 1,000
partitions, the others ~19 each: 20,000 partitions), 15 minutes of raw history per partition
(an hour for the big group) at a 10 s poll, an hour of group rollups per group, a day of
minute and 30 days of hour rollups for the big group, rebalances, status changes, source
health, Spark runs. Then times each page in-process with Django's test client (the whole
request: middleware, session, queries, templates) and reports medians over repeated requests,
with the query count and the HTML size; and the static assets' sizes (raw and gzip).

    .venv/bin/python benchmarks/bench_dashboard.py [--repeat 15] [--json]
        [--groups 1000] [--partitions 20000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GROUPS = 1000
PARTITIONS = 20_000
BIG = 1000
POLL_S = 10
RAW_MIN = 15
BIG_RAW_MIN = 60
TARGET_PAGE_MS = 200
TARGET_LIVE_MS = 50


def setup_django(tmp: Path) -> None:
    os.environ["LAGWATCH_DATA_DIR"] = str(tmp / "data")
    os.environ["DJANGO_STATIC_ROOT"] = str(tmp / "static")
    os.environ.pop("DATABASE_URL", None)
    os.environ["DJANGO_DEBUG"] = "0"  # on, Django keeps every query's SQL in memory
    os.environ["DJANGO_SETTINGS_MODULE"] = "dashboard.settings.base"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def populate(now: datetime) -> dict:
    """Bulk inserts through one cursor; returns ids the requests need."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.db.models import Sum

    from dashboard.monitoring import group_totals
    from dashboard.monitoring.models import (
        Cluster,
        CollectionError,
        ConsumerGroup,
        GroupSample,
        LagRollup,
        PartitionState,
        RebalanceEvent,
        SourceHealth,
        SparkJobRun,
        StatusChange,
    )
    from dashboard.store import raw_history

    rnd = random.Random(5)
    t0 = time.perf_counter()
    statuses = ["OK"] * 90 + ["WARN"] * 4 + ["STALL"] * 2 + ["STOP"] * 2 + ["ERR"] * 2
    sources = ["kafka"] * 6 + ["zookeeper"] * 2 + ["storm"] * 2
    with transaction.atomic():
        clusters = [Cluster.objects.create(name=f"cluster-{i}") for i in range(2)]
        for c in clusters:
            for s in ("kafka", "zookeeper", "storm"):
                SourceHealth.objects.create(
                    cluster=c, source=s, reachable=s != "storm", last_attempt_at=now,
                    last_success_at=now if s != "storm" else now - timedelta(minutes=3),
                    last_error="" if s != "storm" else "timed out", last_duration_s=0.3,
                )  # fmt: skip
            CollectionError.objects.bulk_create(
                CollectionError(cluster=c, source="zookeeper", where=f"/spouts/s/partition_{i}",
                                error="not valid JSON", at=now)
                for i in range(50)
            )  # fmt: skip
        groups = []
        for i in range(GROUPS):
            source = "kafka" if i == 0 else rnd.choice(sources)
            members = (
                [{"member_id": f"consumer-{i}-{m}", "client_id": f"app-{i}", "host": "/10.0.0.1",
                  "assignment": []} for m in range(3)]
                if source == "kafka" else []
            )  # fmt: skip
            groups.append(
                ConsumerGroup(
                    cluster=clusters[i % 2],
                    source=source,
                    name=f"group-{i:04d}",
                    state="Stable" if source == "kafka" else "",
                    generation=rnd.randint(1, 50),
                    members=members,
                    members_known=source == "kafka",
                    status="ERR" if i == 0 else rnd.choice(statuses),
                    complete=1.0,
                    evaluated_at=now,
                    first_seen_at=now,
                    last_seen_at=now,
                )  # fmt: skip
            )
        groups = ConsumerGroup.objects.bulk_create(groups)
        small = (PARTITIONS - BIG) // (GROUPS - 1)
        rows = []
        for gi, g in enumerate(groups):
            n = BIG if gi == 0 else small + (1 if gi <= (PARTITIONS - BIG) % (GROUPS - 1) else 0)
            for p in range(n):
                status = g.status if p % 3 == 0 else "OK"
                lag = rnd.randint(0, 5000) if status != "OK" else rnd.randint(0, 20)
                diag = [{"code": "DEAD_CONSUMER", "evidence": {"owner": None}}] if status in (
                    "STOP", "ERR") else []  # fmt: skip
                rows.append(
                    PartitionState(
                        group=g,
                        topic=f"topic-{p // 50}",
                        partition=p % 50,
                        committed=10_000,
                        earliest=0,
                        latest=10_000 + lag,
                        lag=lag,
                        time_lag_s=lag / 10,
                        owner=f"consumer-{gi}-{p % 3}",
                        alive=True,
                        status=status,
                        diagnosis=diag,
                        reason="",
                        complete=1.0,
                        evaluated_at=now,
                        sampled_at=now,
                        last_commit_at=now - timedelta(seconds=20),
                        pending=5 if g.source == "storm" else None,
                        failed=0 if g.source == "storm" else None,
                        acked=100 if g.source == "storm" else None,
                    )  # fmt: skip
                )
        PartitionState.objects.bulk_create(rows, batch_size=2000)
        assert PartitionState.objects.count() == PARTITIONS
    t1 = time.perf_counter()

    big = groups[0]
    parts = list(PartitionState.objects.values_list("group_id", "topic", "partition"))

    def points(gid: int, minutes: int):
        for k in range(minutes * 60 // POLL_S):
            at = now - timedelta(seconds=k * POLL_S)
            for g, topic, n in by_group[gid]:
                yield g, at, (topic, n, 10_000, 10_000 + k, k, float(k), None, None, None, False)

    by_group: dict[int, list] = {}
    for row in parts:
        by_group.setdefault(row[0], []).append(row)
    with transaction.atomic():
        for gid in by_group:
            minutes = BIG_RAW_MIN if gid == big.id else RAW_MIN
            GroupSample.objects.bulk_create(
                raw_history.group_samples(points(gid, minutes)), batch_size=500
            )
    t2 = time.perf_counter()

    with transaction.atomic():
        rollups = []
        for g in groups:
            for m in range(60):
                rollups.append(
                    LagRollup(
                        cluster=g.cluster.name,
                        level="group",
                        source=g.source,
                        group=g.name,
                        resolution="1m",
                        bucket_start=now - timedelta(minutes=m),
                        lag=m * 3,
                    )
                )
        for m in range(60, 24 * 60):
            rollups.append(
                LagRollup(
                    cluster=big.cluster.name,
                    level="group",
                    source="kafka",
                    group=big.name,
                    resolution="1m",
                    bucket_start=now - timedelta(minutes=m),
                    lag=m,
                )
            )
        for h in range(30 * 24):
            rollups.append(
                LagRollup(
                    cluster=big.cluster.name,
                    level="group",
                    source="kafka",
                    group=big.name,
                    resolution="1h",
                    bucket_start=now - timedelta(hours=h),
                    lag=h,
                )
            )
        LagRollup.objects.bulk_create(rollups, batch_size=5000)
        RebalanceEvent.objects.bulk_create(
            RebalanceEvent(group=big, at=now - timedelta(minutes=3 * i), generation=100 - i,
                           cause="member_joined", detail={"causes": ["member_joined"]})
            for i in range(30)
        )  # fmt: skip
        StatusChange.objects.bulk_create(
            StatusChange(group=big, topic="topic-0", partition=i % 50,
                         at=now - timedelta(minutes=i), old_status="OK", new_status="STOP",
                         reason="no commit")
            for i in range(100)
        )  # fmt: skip
        for i in range(40):
            SparkJobRun.objects.create(
                job="status" if i % 4 else "rollups", started_at=now - timedelta(minutes=i),
                finished_at=now - timedelta(minutes=i), duration_s=8.0, window_s=3600,
                input_rows=200_000, output_rows=20_000, outcome="ok",
            )  # fmt: skip
        user = get_user_model().objects.create_user("bench", password="bench-pass-123")
        # The partitions went in by bulk SQL: their groups' totals as the store keeps them.
        group_totals.refresh(ConsumerGroup.objects.values_list("id", flat=True))
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    t3 = time.perf_counter()
    big_partition = PartitionState.objects.filter(group=big).order_by("id").first()
    return {
        "user": user,
        "big": big.id,
        "partition": big_partition.id,
        "populate_s": {"state": round(t1 - t0, 1), "samples": round(t2 - t1, 1),
                       "rest": round(t3 - t2, 1)},
        "samples": GroupSample.objects.aggregate(n=Sum("partitions"))["n"],
        "rollups": LagRollup.objects.count(),
    }  # fmt: skip


class QueryLog:
    """Counts (and times) the queries of one request, whatever DEBUG says."""

    def __init__(self) -> None:
        self.queries: list[tuple[float, str]] = []

    def __call__(self, execute, sql, params, many, context):
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.queries.append(((time.perf_counter() - t) * 1000, sql))


def measure(client, url: str, repeat: int, show_queries: bool = False) -> dict:
    from django.db import connection

    for _ in range(2):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - t) * 1000)
    log = QueryLog()
    with connection.execute_wrapper(log):
        client.get(url)
    if show_queries:
        for ms, sql in log.queries:
            print(f"    {ms:7.1f} ms  {sql[:160]}")
    return {
        "url": url,
        "median_ms": round(statistics.median(times), 1),
        "p90_ms": round(sorted(times)[int(len(times) * 0.9) - 1], 1),
        "queries": len(log.queries),
        "query_ms": round(sum(ms for ms, _ in log.queries), 1),
        "bytes": len(response.content),
        "gzip_bytes": len(gzip.compress(response.content, 6)),
        "assets": sorted(set(re.findall(rb'(?:src|href)="(/static/[^"]+)"', response.content))),
    }


def asset_sizes(paths: set[bytes]) -> dict[str, tuple[int, int]]:
    from django.contrib.staticfiles import finders

    out = {}
    for raw in sorted(paths):
        path = raw.decode()[len("/static/") :]
        data = Path(finders.find(path)).read_bytes()
        out[path] = (len(data), len(gzip.compress(data, 6)))
    return out


def set_scale(groups: int, partitions: int) -> None:
    """The world's size (module constants, read by ``populate``)."""
    global GROUPS, PARTITIONS
    GROUPS, PARTITIONS = groups, partitions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", metavar="DIR", help="keep (or reuse) the populated database")
    parser.add_argument("--only", help="only the pages whose name contains this")
    parser.add_argument("--queries", action="store_true", help="print each page's queries")
    parser.add_argument("--groups", type=int, default=GROUPS)
    parser.add_argument("--partitions", type=int, default=PARTITIONS,
                        help="in all (e.g. 100,000 over 5,000 groups)")  # fmt: skip
    args = parser.parse_args(argv)
    set_scale(args.groups, args.partitions)
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as tmp:
        base = Path(args.keep) if args.keep else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        reuse = (base / "world.json").exists()
        setup_django(base)
        from django.contrib.auth import get_user_model
        from django.test import Client
        from django.urls import reverse
        from django.utils import timezone

        if reuse:
            world = json.loads((base / "world.json").read_text())
            world["user"] = get_user_model().objects.get(username="bench")
        else:
            world = populate(timezone.now())
            saved = {k: v for k, v in world.items() if k != "user"}
            (base / "world.json").write_text(json.dumps(saved))
        client = Client(HTTP_HOST="localhost")
        client.force_login(world["user"])
        group = reverse("ui:group", args=[world["big"]])
        partition = reverse("ui:partition", args=[world["partition"]])
        overview, groups = reverse("ui:overview"), reverse("ui:groups")
        pages = [
            ("overview", overview, TARGET_PAGE_MS),
            ("overview live JSON", overview + "?live=1", TARGET_LIVE_MS),
            ("overview charts JSON", overview + "?live=charts", TARGET_PAGE_MS),
            ("groups list", groups, TARGET_PAGE_MS),
            ("groups list, sort by lag", groups + "?sort=lag", TARGET_PAGE_MS),
            ("groups list, search + status", groups + "?q=group-01&status=OK", TARGET_PAGE_MS),
            ("groups list, 200 per page", groups + "?per_page=200", TARGET_PAGE_MS),
            ("groups live JSON", groups + "?live=1", TARGET_LIVE_MS),
            ("group 1,000 partitions (1 h raw)", group, TARGET_PAGE_MS),
            ("group, 15 min raw", group + "?range=15m", TARGET_PAGE_MS),
            ("group, 24 h rollups", group + "?range=24h", TARGET_PAGE_MS),
            ("group, 30 d rollups", group + "?range=30d", TARGET_PAGE_MS),
            ("group live JSON", group + "?live=1", TARGET_LIVE_MS),
            ("group charts JSON (1 h raw)", group + "?live=charts", TARGET_PAGE_MS),
            ("partition (1 h raw)", partition, TARGET_PAGE_MS),
            ("partition live JSON", partition + "?live=1", TARGET_LIVE_MS),
            ("sources", reverse("ui:sources"), TARGET_PAGE_MS),
            ("sources live JSON", reverse("ui:sources") + "?live=1", TARGET_LIVE_MS),
            ("Spark jobs", reverse("ui:jobs"), TARGET_PAGE_MS),
        ]
        results = []
        for name, url, target in pages:
            if args.only and args.only not in name:
                continue
            if args.queries:
                print(name)
            r = measure(client, url, args.repeat, args.queries)
            r.update(name=name, target_ms=target)
            results.append(r)
        assets = asset_sizes({a for r in results for a in r["assets"]})
    doc = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}",
        "world": {k: v for k, v in world.items() if k != "user"},
        "pages": results,
        "assets": assets,
    }
    if args.json:
        print(json.dumps(doc, indent=2, default=str))
        return 0
    print(f"{doc['date']} · {doc['machine']}")
    print(f"world: {GROUPS} groups, {PARTITIONS} partitions, {world['samples']:,} raw samples, "
          f"{world['rollups']:,} rollups; populated in {world['populate_s']}")  # fmt: skip
    print(f"{'page':38} {'median':>8} {'p90':>8} {'target':>7} {'ratio':>6} {'queries':>7} "
          f"{'in SQL':>8} {'HTML/JSON':>10} {'gzip':>8}")  # fmt: skip
    for r in results:
        ratio = r["median_ms"] / r["target_ms"]
        print(f"{r['name']:38} {r['median_ms']:>6.1f}ms {r['p90_ms']:>6.1f}ms "
              f"{r['target_ms']:>5}ms {ratio:>6.2f} {r['queries']:>7} {r['query_ms']:>6.1f}ms "
              f"{r['bytes']:>10,} {r['gzip_bytes']:>8,}")  # fmt: skip
    print("static assets (raw / gzip bytes):")
    for path, (raw, gz) in assets.items():
        print(f"  {path:40} {raw:>10,} {gz:>10,}")
    print("page weight, first load (HTML + its assets; gzip as WhiteNoise serves them):")
    for r in results:
        if "JSON" in r["name"]:
            continue
        own = [assets[a.decode()[len("/static/") :]] for a in r["assets"]]
        raw = r["bytes"] + sum(a[0] for a in own)
        gz = r["gzip_bytes"] + sum(a[1] for a in own)
        print(f"  {r['name']:38} {raw:>10,} raw {gz:>10,} gzip")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

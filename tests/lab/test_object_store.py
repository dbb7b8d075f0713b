"""The sample log on a real S3-compatible store (SeaweedFS, ``lab/object_store.py``), read by
the lab's Spark standalone cluster, gives the figures the same log in a local folder gives.

A stack of its own: the object store, and a Spark master and worker. The scenario is the
standalone cluster test's (three groups of four partitions, Kafka and a Storm spout, keeping
up, falling behind, stuck and stopped: 90 minutes of 30 s polls), written the way the
collectors write it, one micro-batch per cycle, with the open hour compacted every minute and
the closed hour once it is past its grace, into both logs, plus an hour 40 days old that the
retention sweep must remove from both. Then one driver process runs, on the cluster, the
status job incrementally (three runs, each from the previous one's state) and the rollups job
over each log: the tables must hold the same rows.

Run by ``scripts/test-object-store`` (marker ``object_store``), apart from the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from collectors.sample_log import HOUR_MS, SampleLog
from collectors.sample_log.object_store import S3Options
from lab.object_store import BUCKET, PREFIX
from lab.services import REPO
from lab.stack import Stack
from tests.spark_jobs.samples import HOUR, MIN, T0
from tests.spark_jobs.test_standalone_cluster import _master_state, rows_of, same, workload

pytestmark = pytest.mark.object_store

NOWS = (T0 + 60 * MIN, T0 + 75 * MIN, T0 + 90 * MIN)
STATUS_WINDOW_MS = 30 * MIN
ROLLUPS_WINDOW_MS = 2 * HOUR
OLD_MS = T0 - 40 * 24 * HOUR
STORE_VARS = ("LAGWATCH_SAMPLE_LOG_URL", "LAGWATCH_S3_ENDPOINT", "LAGWATCH_S3_REGION",
              "LAGWATCH_S3_PATH_STYLE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
              "LAGWATCH_SPARK_JARS")  # fmt: skip


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("object-store"))
    try:
        stack.up(["object-store", "spark-worker"])
        yield stack
    finally:
        stack.down()


@pytest.fixture(scope="module")
def store_env(stack: Stack) -> dict[str, str]:
    """The store's settings and credentials as the stack gives the product's processes."""
    env = stack.django_env()
    missing = [name for name in STORE_VARS if name not in env]
    assert not missing, f"{missing}: scripts/setup dev fetches the s3a jars (lab/spark_jars.py)"
    return {name: env[name] for name in STORE_VARS}


def write_like_the_collectors(log: SampleLog, rows: list[dict[str, Any]]) -> dict[str, int]:
    """One micro-batch per poll, the open hour compacted every minute and closed hours after
    their grace, as the collector and beat's upkeep do; an old hour, then retention."""
    by_cycle: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_cycle.setdefault(row["ts_ms"], []).append(row)
    counts = {"batches": 0, "chunks": 0, "closed": 0}
    old = [{**row, "ts_ms": OLD_MS} for row in by_cycle[min(by_cycle)]]
    log.write_batch("lab", f"lab@{OLD_MS}", old)
    for ts, cycle in sorted(by_cycle.items()):
        counts["batches"] += len(log.write_batch("lab", f"lab@{ts}", cycle))
        if (ts - T0) % MIN == 0:
            counts["chunks"] += len(log.compact_open_hours(ts))
            counts["closed"] += len(log.compact_closed_hours(ts))
    removed = log.apply_retention(NOWS[-1] - timedelta(days=30) // timedelta(milliseconds=1))
    counts["removed"] = len(removed)
    return counts


def test_the_status_tables_from_the_store_equal_the_local_ones(
    stack: Stack, store_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in store_env.items():
        monkeypatch.setenv(name, value)
    store_url = store_env["LAGWATCH_SAMPLE_LOG_URL"]
    assert store_url == f"s3a://{BUCKET}/{PREFIX}"
    on_store = SampleLog.from_url(store_url, S3Options.from_environ())
    local = SampleLog(tmp_path / "samples")
    rows = workload()
    written = {"store": write_like_the_collectors(on_store, rows),
               "local": write_like_the_collectors(local, rows)}  # fmt: skip
    assert written["store"] == written["local"], written
    # The old hour and the first hour of the scenario were closed and compacted.
    assert written["store"]["chunks"] > 0 and written["store"]["closed"] == 2, written
    assert written["store"]["removed"] == 1, written

    # The objects are in the bucket, laid out as in the folder; the old hour is gone from both.
    fs = on_store.fs
    objects = [i.path for i in fs.get_file_info(pafs.FileSelector(on_store.base, recursive=True))
               if i.type == pafs.FileType.File]  # fmt: skip
    files = [p.relative_to(local.base).as_posix() for p in Path(local.base).rglob("*.parquet")]
    assert len(objects) == len(files) > 0
    assert sorted(o.split("/", 2)[2].rsplit("/", 1)[0] for o in objects) == sorted(
        f.rsplit("/", 1)[0] for f in files
    )
    assert [p.start_ms for p in on_store.hours()] == [T0, T0 + HOUR_MS]
    assert on_store.read().equals(local.read())

    master = stack.endpoints()["spark_master"]
    done = subprocess.run(
        [
            sys.executable, "-m", "tests.lab.object_store_driver", "--master", master,
            "--log", store_url, str(tmp_path / "results-store"),
            "--log", local.base, str(tmp_path / "results-local"),
            *[arg for now in NOWS for arg in ("--now-ms", str(now))],
            "--status-window-ms", str(STATUS_WINDOW_MS),
            "--rollups-window-ms", str(ROLLUPS_WINDOW_MS),
        ],
        cwd=REPO, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
                       "PYSPARK_PYTHON": sys.executable},
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert store_env["AWS_SECRET_ACCESS_KEY"] not in done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["master"] == master
    print("status runs (s): store", report["logs"][0]["status_s"],
          "local", report["logs"][1]["status_s"])  # fmt: skip
    apps = [a for a in _master_state(stack)["completedapps"]
            if a["name"] == "lagwatch-object-store-test"]  # fmt: skip
    assert apps and apps[-1]["cores"] > 0  # the cluster ran it, not a local fallback

    store_runs, local_runs = report["logs"][0], report["logs"][1]
    assert [r["input_rows"] for r in store_runs["status"]] == [
        r["input_rows"] for r in local_runs["status"]
    ]
    pairs = [(a["path"], b["path"], ("partitions", "groups"))
             for a, b in zip(store_runs["status"], local_runs["status"], strict=True)]  # fmt: skip
    pairs.append((store_runs["rollups"], local_runs["rollups"],
                  ("partitions", "topics", "groups", "clusters")))  # fmt: skip
    for there_run, here_run, tables in pairs:
        for table in tables:
            here, there = rows_of(here_run, table), rows_of(there_run, table)
            assert here, (here_run, table)
            assert len(here) == len(there), (here_run, table)
            unlike = [(a, b) for a, b in zip(here, there, strict=True) if not same(a, b)]
            assert not unlike, (table, unlike[:3])
    statuses = {r["status"] for r in rows_of(local_runs["status"][-1]["path"], "partitions")}
    assert {"OK", "STALL"} <= statuses

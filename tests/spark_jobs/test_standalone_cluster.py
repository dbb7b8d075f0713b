"""The status and rollups jobs on a real Spark standalone cluster give what local mode gives.

The lab starts a master and a worker from pyspark's own distribution (``lab/spark_cluster.py``);
a driver process of its own (``cluster_driver``) runs both jobs with ``spark://…`` over a
sample log both see, and this process runs them in its local session over the same log. The
results must be the same rows: the jobs' outputs depend on the samples, not on where or in how
many tasks they ran (the cluster run uses 7 shuffle partitions, local mode 4).
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from collectors.sample_log import SampleLog
from lab.services import REPO
from lab.stack import Stack
from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.jobs import run_rollups_job, run_status_job
from tests.spark_jobs.samples import HOUR, MIN, SEC, T0, sample

pytestmark = pytest.mark.lab

NOW = T0 + 90 * MIN
STATUS_WINDOW_MS = 30 * MIN
ROLLUPS_WINDOW_MS = 2 * HOUR
POLL = 30 * SEC
# Not local mode's 4, so the rows are shown not to depend on how the work was split; not the
# cluster default of 32 either, whose empty tasks cost minutes on a loaded 2-core CI machine.
CLUSTER_SHUFFLE_PARTITIONS = 7


def workload(seed: int = 7) -> list[dict[str, Any]]:
    """90 minutes of 30 s polls over 3 groups × 4 partitions (Kafka and a Storm spout), with
    partitions keeping up, falling behind, stuck and stopped, so every rule and every rollup
    level has something to say."""
    rng = random.Random(seed)
    rows = []
    kinds = ["ok", "behind", "stuck", "stopped"]
    for g, (source, group) in enumerate(
        [("kafka", "orders"), ("kafka", "billing"), ("storm", "clicks-spout")]
    ):
        for p in range(4):
            kind = kinds[(g + p) % 4]
            latest = committed = 1000 * (p + 1)
            for i in range(180):
                ts = T0 + i * POLL
                produced = rng.randint(50, 150)
                latest += produced
                if kind == "ok":
                    committed = latest - rng.randint(0, 20)
                elif kind == "behind":
                    committed += produced // 2
                elif kind == "stuck" and i < 60:
                    committed = latest - 5
                elif kind == "stopped":
                    latest -= produced
                    committed = latest
                spout = (
                    {"pending": rng.randint(0, 50), "failed": i // 3, "acked": 10 * i}
                    if source == "storm"
                    else {}
                )
                rows.append(
                    sample(
                        ts,
                        committed,
                        cluster="lab",
                        source=source,
                        group=group,
                        topic="events",
                        partition=p,
                        earliest=0,
                        latest=latest,
                        time_lag_s=float(max(0, latest - committed)) / 100,
                        owner=f"m-{p % 2}",
                        alive=True,
                        **spout,
                    )  # fmt: skip
                )
    return rows


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, dict[str, str]]]:
    stack = Stack(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield stack, stack.up(["spark-worker"])
    finally:
        stack.down()


def rows_of(run: str, table: str) -> list[dict[str, Any]]:
    """Every row of a result table, in a canonical order (the files' order is the tasks')."""
    data = pq.read_table(f"{run}/{table}").to_pylist()
    return sorted(data, key=lambda r: repr([(k, v) for k, v in sorted(r.items())
                                            if not isinstance(v, float)]))  # fmt: skip


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal, floats to 1e-9 relative: a rate is a sum divided by a time, and a sum's last bit
    depends on the order Spark adds it in, which follows the tasks (8.6 vs
    8.600000000000001 in the rollups). Everything else must be exactly equal."""
    if a.keys() != b.keys():
        return False
    for k, x in a.items():
        y = b[k]
        if isinstance(x, float) and isinstance(y, float):
            if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
                return False
        elif x != y:
            return False
    return True


def test_both_jobs_on_the_cluster_equal_local_mode(
    spark: SparkSession, cluster: tuple[Stack, dict[str, str]], tmp_path: Path
) -> None:
    stack, endpoints = cluster
    master = endpoints["spark_master"]
    log = SampleLog(stack.run_dir / "samples")  # under the run dir: both drivers see it
    log.write_batch("lab", "cycles", workload())

    local_results = str(tmp_path / "local")
    config = EvaluatorConfig(window=10)
    local = {
        "status": run_status_job(
            spark, log.base, local_results, NOW, STATUS_WINDOW_MS, config=config
        ).output_path,
        "rollups": run_rollups_job(
            spark, log.base, local_results, NOW, ROLLUPS_WINDOW_MS
        ).output_path,
    }

    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [
            sys.executable, "-m", "tests.spark_jobs.cluster_driver",
            "--master", master, "--samples", str(log.base),
            "--results", str(stack.run_dir / "results"), "--now-ms", str(NOW),
            "--status-window-ms", str(STATUS_WINDOW_MS),
            "--rollups-window-ms", str(ROLLUPS_WINDOW_MS), "--evaluator-window", "10",
            "--shuffle-partitions", str(CLUSTER_SHUFFLE_PARTITIONS),
        ],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    remote = json.loads(done.stdout.strip().splitlines()[-1])
    assert remote["master"] == master

    # The master ran the driver's application on its worker (not a local fallback).
    master_json = _master_state(stack)
    apps = [a for a in master_json["completedapps"] if a["name"] == "lagwatch-cluster-test"]
    assert apps and apps[-1]["cores"] > 0, master_json
    assert master_json["aliveworkers"] == 1

    for job, tables in (
        ("status", ["partitions", "groups"]),
        ("rollups", ["partitions", "topics", "groups", "clusters"]),
    ):
        for table in tables:
            here, there = rows_of(local[job], table), rows_of(remote[job], table)
            assert here, (job, table)  # something to compare
            assert len(here) == len(there), (job, table)
            unlike = [(a, b) for a, b in zip(here, there, strict=True) if not same(a, b)]
            assert not unlike, (job, table, unlike[:3])
    statuses = {r["status"] for r in rows_of(local["status"], "partitions")}
    assert {"OK", "STALL"} <= statuses  # the workload exercised more than one rule


def _master_state(stack: Stack) -> dict[str, Any]:
    state = json.loads((stack.run_dir / "stack.json").read_text())
    (master,) = [s for s in state["services"] if s["name"] == "spark-master"]
    url = f"http://127.0.0.1:{master['ports']['spark_master_ui']}/json/"
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())

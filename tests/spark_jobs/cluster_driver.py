"""Runs the status and rollups jobs once against ``--master``, as a driver process of its own.

The test process already holds a local Spark session (``spark_session`` returns the active one),
so a run on the standalone cluster needs its own driver: this module, started as
``python -m tests.spark_jobs.cluster_driver``. Prints one JSON line: the runs' paths and row
counts, and the master the session really used.
"""

from __future__ import annotations

import argparse
import json

from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.jobs import run_rollups_job, run_status_job
from spark_jobs.session import spark_session


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--app", default="lagwatch-cluster-test")
    ap.add_argument("--samples", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--now-ms", type=int, required=True)
    ap.add_argument("--status-window-ms", type=int, required=True)
    ap.add_argument("--rollups-window-ms", type=int, required=True)
    ap.add_argument("--evaluator-window", type=int, default=10)
    ap.add_argument("--shuffle-partitions", type=int, help="instead of the session's")
    a = ap.parse_args()
    spark = spark_session(a.app, a.master)
    if a.shuffle_partitions:
        spark.conf.set("spark.sql.shuffle.partitions", str(a.shuffle_partitions))
    try:
        config = EvaluatorConfig(window=a.evaluator_window)
        status = run_status_job(
            spark, a.samples, a.results, a.now_ms, a.status_window_ms, config=config
        )
        rollups = run_rollups_job(spark, a.samples, a.results, a.now_ms, a.rollups_window_ms)
        print(
            json.dumps(
                {
                    "master": spark.sparkContext.master,
                    "status": status.output_path,
                    "rollups": rollups.output_path,
                    "status_tables": status.tables,
                    "rollups_tables": rollups.tables,
                }
            )
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

"""Runs the status job (as the product runs it: incrementally, one run after another) and the
rollups job on ``--master`` over each sample log given, as a driver process of its own.

``python -m tests.lab.object_store_driver --master spark://… --log URL RESULTS [--log …]
--now-ms T1 --now-ms T2 …``. The object store's settings and credentials come from the
environment, as the product's worker takes them (``LAGWATCH_S3_*``, ``AWS_*``), and the
``s3a`` connector's jars from ``LAGWATCH_SPARK_JARS``. One application for every log, so the
jars are shipped to the executors once. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from collectors.sample_log.object_store import S3Options
from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.jobs import run_rollups_job, run_status_job
from spark_jobs.session import spark_session


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--app", default="lagwatch-object-store-test")
    ap.add_argument("--log", nargs=2, action="append", metavar=("SAMPLES", "RESULTS"))
    ap.add_argument("--now-ms", type=int, action="append", required=True)
    ap.add_argument("--status-window-ms", type=int, required=True)
    ap.add_argument("--rollups-window-ms", type=int, required=True)
    ap.add_argument("--shuffle-partitions", type=int, default=7)
    a = ap.parse_args()
    spark = spark_session(
        a.app, a.master, s3=S3Options.from_environ(), jars=os.environ.get("LAGWATCH_SPARK_JARS", "")
    )
    spark.conf.set("spark.sql.shuffle.partitions", str(a.shuffle_partitions))
    config = EvaluatorConfig(window=10)
    out = []
    try:
        for samples, results in a.log:
            status, seconds = [], []
            for now_ms in a.now_ms:
                started = time.monotonic()
                run = run_status_job(
                    spark, samples, results, now_ms, a.status_window_ms, config=config,
                    incremental=True,
                )  # fmt: skip
                seconds.append(time.monotonic() - started)
                status.append({"path": run.output_path, "input_rows": run.input_rows})
            rollups = run_rollups_job(spark, samples, results, a.now_ms[-1], a.rollups_window_ms)
            out.append({"samples": samples, "status": status, "status_s": seconds,
                        "rollups": rollups.output_path})  # fmt: skip
        print(json.dumps({"master": spark.sparkContext.master, "logs": out}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

"""The lab broker's CPU by JVM options: to ready, and over the next seconds (idle, or under the
lab workload). Why: the test suite starts ~25 short-lived brokers, and it runs them with
``LAGWATCH_KAFKA_JAVA_OPTIONS`` (tests/conftest.py) on the strength of these figures
(benchmarks/RESULTS.md, "The test suite's wall time", "The brokers' JIT").

    .venv/bin/python -m benchmarks.bench_broker_jvm [--reps 2] [--seconds 120] [--workload]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_status_run import jvm_cpu  # noqa: E402 - after the path

VARIANTS = {
    "kafka-default": "-XX:+UseG1GC",
    "c1-serial": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}


def measure(options: str, services: list[str], seconds: float) -> dict[str, float]:
    """One stack's broker: CPU-s when ready, and over ``seconds`` after."""
    from lab.stack import Stack

    os.environ["LAGWATCH_KAFKA_JAVA_OPTIONS"] = options
    stack = Stack(Path(tempfile.mkdtemp(prefix="bench-broker-jvm-")))
    started = time.monotonic()
    stack.up(services)
    try:
        ready_s = time.monotonic() - started
        pid = stack.status()["services"]["kafka"]["pid"]
        at_ready = jvm_cpu(pid)
        time.sleep(seconds)
        return {"ready_s": round(ready_s, 1), "cpu_to_ready": round(at_ready, 2),
                "cpu_after": round(jvm_cpu(pid) - at_ready, 2)}  # fmt: skip
    finally:
        stack.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--workload", action="store_true", help="the lab workload running too")
    args = parser.parse_args()
    services = ["zookeeper", "kafka", "workload"] if args.workload else ["kafka"]
    for rep in range(args.reps):  # the variants interleaved, rep by rep
        for name, options in VARIANTS.items():
            figures = measure(options, services, args.seconds)
            load = Path("/proc/loadavg").read_text().split()[:3]
            print(json.dumps({"rep": rep, "variant": name, **figures, "load": load}), flush=True)


if __name__ == "__main__":
    main()

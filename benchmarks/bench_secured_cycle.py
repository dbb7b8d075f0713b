"""Benchmark: one Kafka collection cycle over the secured listeners against the same cycle
over PLAINTEXT, on the same broker and groups. The target: at most 1.2 x PLAINTEXT.

Runs self-contained: it starts the lab's secured broker and OIDC issuer (lab/secured_kafka.py)
in a temporary run directory, fills it as bench_kafka does (200 groups x 50 partitions by
default, committed through the PLAINTEXT listener), then times ``KafkaSource.collect`` with
sources kept across cycles (connections, sessions and tokens reused, as the collector keeps
them), interleaved listener by listener so that load from elsewhere hits all alike. The
broker re-authenticates sessions every 15 s (``connections.max.reauth.ms``): runs longer
than that include re-authentications. Usage::

    .venv/bin/python benchmarks/bench_secured_cycle.py [--groups 200] [--reps 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kafka import PARTITIONS, TOPICS, TOPICS_PER_GROUP, populate  # noqa: E402
from collectors.kafka import KafkaSource  # noqa: E402
from lab.secured_kafka import admin_bootstrap, client_config  # noqa: E402

VARIANTS = {
    "PLAINTEXT (super user)": None,
    "SASL_SSL SCRAM-SHA-512": ("SASL_SSL", "SCRAM-SHA-512"),
    "SASL_PLAINTEXT SCRAM-SHA-512": ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    "mTLS": ("MTLS", None),
    "SASL_SSL OAUTHBEARER": ("OAUTH", None),
}
TARGET = 1.2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    from lab.stack import Stack

    with tempfile.TemporaryDirectory(prefix="bench-secured-") as tmp:
        stack = Stack(Path(tmp))
        t0 = time.perf_counter()
        stack.up(["kafka-secured"])
        print(f"secured broker and issuer ready in {time.perf_counter() - t0:.1f} s")
        try:
            ctx = stack._context(stack._read_state())
            populate(admin_bootstrap(ctx), args.groups, "bench")
            sources: dict[str, KafkaSource] = {}
            for name, variant in VARIANTS.items():
                if variant is None:
                    sources[name] = KafkaSource(admin_bootstrap(ctx), timeout_s=10)
                else:
                    config = client_config(ctx, *variant)
                    sources[name] = KafkaSource(config.pop("bootstrap.servers"), config, 10)
            want = args.groups * TOPICS_PER_GROUP * PARTITIONS
            for name, source in sources.items():  # every figure read, before timing
                result = source.collect(int(time.time() * 1000))
                if (
                    result.errors
                    or len(result.commits) != want
                    or len(result.offsets) != (TOPICS * PARTITIONS)
                ):
                    print(f"{name}: incomplete: {len(result.commits)} commits, {result.errors[:3]}")
                    return 1
            times: dict[str, list[float]] = {name: [] for name in sources}
            for _ in range(args.reps):
                for name, source in sources.items():
                    t0 = time.perf_counter()
                    source.collect(int(time.time() * 1000))
                    times[name].append(time.perf_counter() - t0)
            for source in sources.values():
                source.close()
        finally:
            stack.down()

    base = statistics.median(times["PLAINTEXT (super user)"])
    print(f"\n{'listener':<30}{'runs':>5}{'median s':>10}{'min s':>8}{'max s':>8}{'x plain':>9}")
    worst = 0.0
    for name, values in times.items():
        med = statistics.median(values)
        worst = max(worst, med / base)
        print(f"{name:<30}{len(values):>5}{med:>10.3f}{min(values):>8.3f}{max(values):>8.3f}"
              f"{med / base:>9.2f}")  # fmt: skip
    verdict = "met" if worst <= TARGET else "NOT met"
    print(f"\ntarget (every listener <= {TARGET} x PLAINTEXT): {verdict}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

"""The lab's ``storm2`` service: a real Storm 2.8 topology whose storm-kafka-client KafkaSpout
reads the lab's own broker (``lab/storm2/world.py``). Optional: ``python -m lab up --services
zookeeper,kafka,storm2`` starts it. Its spout is a consumer group of the lab cluster, which the
product links to the topology by the spout's commit metadata (docs/DASHBOARD.md, "Storm 2
spouts").

No port: a LocalCluster runs Nimbus, the supervisor and the worker in one JVM that listens on
nothing, and Storm 2's UI is not served here. Readiness is the world's ready line, logged once
the spout's group has committed under this run's topology instance.
"""

from __future__ import annotations

import shutil

from lab.services import Context, ServiceSpec
from lab.storm2 import dist
from lab.storm2.world import READY_LINE


def _run_dir(ctx: Context) -> str:
    return str(ctx.run_dir / "storm2")


def _reset(ctx: Context) -> None:
    """A new stack's Storm 2 starts from nothing (its local folders under the run dir)."""
    shutil.rmtree(_run_dir(ctx), ignore_errors=True)


def _argv(ctx: Context) -> list[str]:
    dist.installed()  # a clear error before anything starts when the cache is not filled
    return [ctx.python, "-m", "lab.storm2.world", "--run-dir", _run_dir(ctx),
            "--zookeeper", ctx.addr("zookeeper"), "--kafka", ctx.addr("kafka")]  # fmt: skip


def _ready(ctx: Context, log: str) -> bool:
    if "Traceback" in log:
        raise RuntimeError(log[log.index("Traceback") :][-1500:])
    return READY_LINE in log


STORM2_SERVICES = (
    ServiceSpec(
        name="storm2",
        requires=("zookeeper", "kafka"),
        reset=_reset,
        argv=_argv,
        ready=_ready,
        ready_timeout_s=300.0,
        stop_grace_s=30.0,
        optional=True,
    ),
)

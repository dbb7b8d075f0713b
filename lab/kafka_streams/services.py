"""The lab's ``streams-app`` service: two instances of a Kafka Streams application on the
streams rebalance protocol reading the lab's own broker (``lab/kafka_streams/world.py``), a
streams group (KIP-1071) of the lab cluster. Optional: ``python -m lab up --services
zookeeper,kafka,streams-app,…`` starts it. No port; ready once the group has committed on every
input partition.
"""

from __future__ import annotations

import shutil

from lab.kafka_streams import dist
from lab.kafka_streams.world import READY_LINE
from lab.services import Context, ServiceSpec

__all__ = ["STREAMS_APP_SERVICES"]


def _run_dir(ctx: Context) -> str:
    return str(ctx.run_dir / "streams-app")


def _reset(ctx: Context) -> None:
    """A new stack's application starts from nothing (its state stores under the run dir)."""
    shutil.rmtree(_run_dir(ctx), ignore_errors=True)


def _argv(ctx: Context) -> list[str]:
    dist.installed()  # a clear error before anything starts when the cache is not filled
    return [ctx.python, "-m", "lab.kafka_streams.world", "--run-dir", _run_dir(ctx),
            "--kafka", ctx.addr("kafka")]  # fmt: skip


def _ready(ctx: Context, log: str) -> bool:
    if "Traceback" in log:
        raise RuntimeError(log[log.index("Traceback") :][-1500:])
    return READY_LINE in log


STREAMS_APP_SERVICES = (
    ServiceSpec(
        name="streams-app",
        requires=("kafka",),
        reset=_reset,
        argv=_argv,
        ready=_ready,
        ready_timeout_s=240.0,
        stop_grace_s=45.0,
        optional=True,
    ),
)

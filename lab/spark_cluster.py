"""A real Spark standalone cluster for the lab: one master and one worker, from pyspark's own
distribution, so that the jobs run on a cluster as well as in local mode.

pyspark's wheel is a whole Spark: ``bin/spark-class`` and every jar the daemons need. Starting
the daemons through ``spark-class`` (not ``java -cp``) keeps Spark's launcher in charge of the
JVM options Spark 4 needs on Java 17 (its ``--add-opens`` list), as ``start-master.sh`` would;
the scripts in ``sbin/`` are not shipped in the wheel and would daemonize anyway, and the lab
must own the process it started (``lab.stack``).

The services are optional: ``python -m lab up`` without ``--services`` leaves them out (a
cluster costs ~1 GiB and most lab runs do not need one); ``--services spark-worker`` starts the
master too. With the master in the stack, the product's processes get
``SPARK_MASTER=spark://…`` (``services.django_env``) and the jobs run on the cluster, reading
the sample log under the run directory, a path every process here sees.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from lab.ports import LOOPBACK
from lab.services import Context, ServiceSpec

# The lab's worker offers both cores of a small machine and enough memory for one executor of
# Spark's default size (1 GiB) plus its Python workers.
WORKER_CORES = int(os.environ.get("LAGWATCH_SPARK_WORKER_CORES", "2"))
WORKER_MEMORY = os.environ.get("LAGWATCH_SPARK_WORKER_MEMORY", "2g")


def spark_home() -> Path:
    """pyspark's installed directory, which is a Spark distribution (``bin``, ``jars``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pyspark is not installed: it provides Spark's daemons")
    home = Path(next(iter(spec.submodule_search_locations)))
    if not (home / "bin" / "spark-class").exists():
        raise FileNotFoundError(f"no bin/spark-class in {home}")
    return home


def master_url(ctx: Context) -> str:
    return f"spark://{LOOPBACK}:{ctx.ports['spark_master']}"


def _env(ctx: Context) -> dict[str, str]:
    """Loopback everywhere (LAB.md), logs and scratch space under the run directory, and the
    executors' Python workers started as this interpreter, which has the project's packages."""
    home = spark_home()
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOCAL_DIRS=str(ctx.run_dir / "spark" / "local"),
        SPARK_LOG_DIR=str(ctx.run_dir / "spark" / "logs"),
        SPARK_NO_DAEMONIZE="1",
        PYSPARK_PYTHON=sys.executable,
    )
    # Daemons are small: Spark's own default (1 GiB) for each is more than the lab needs.
    env.setdefault("SPARK_DAEMON_MEMORY", "384m")
    return env


def _prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    for sub in ("local", "logs", "work"):
        (ctx.run_dir / "spark" / sub).mkdir(parents=True, exist_ok=True)


def _master_argv(ctx: Context) -> list[str]:
    return [
        str(spark_home() / "bin" / "spark-class"),
        "org.apache.spark.deploy.master.Master",
        "--host", LOOPBACK,
        "--port", str(ctx.ports["spark_master"]),
        "--webui-port", str(ctx.ports["spark_master_ui"]),
    ]  # fmt: skip


def _worker_argv(ctx: Context) -> list[str]:
    return [
        str(spark_home() / "bin" / "spark-class"),
        "org.apache.spark.deploy.worker.Worker",
        "--host", LOOPBACK,
        "--port", str(ctx.ports["spark_worker"]),
        "--webui-port", str(ctx.ports["spark_worker_ui"]),
        "--cores", str(WORKER_CORES),
        "--memory", WORKER_MEMORY,
        "--work-dir", str(ctx.run_dir / "spark" / "work"),
        master_url(ctx),
    ]  # fmt: skip


def _master_ready(ctx: Context, log: str) -> bool:
    # Logged once the master accepts registrations (a standalone master elects itself).
    return "I have been elected leader! New state: ALIVE" in log


def _worker_ready(ctx: Context, log: str) -> bool:
    return "Successfully registered with master" in log


SPARK_SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec(
        name="spark-master",
        ports=("spark_master", "spark_master_ui"),
        env=_env,
        prepare=_prepare,
        argv=_master_argv,
        ready=_master_ready,
        endpoints=lambda ctx: {"spark_master": master_url(ctx)},
        ready_timeout_s=90.0,
        optional=True,
    ),
    ServiceSpec(
        name="spark-worker",
        ports=("spark_worker", "spark_worker_ui"),
        requires=("spark-master",),
        env=_env,
        prepare=_prepare,
        argv=_worker_argv,
        ready=_worker_ready,
        endpoints=lambda ctx: {"spark_worker": f"http://{LOOPBACK}:{ctx.ports['spark_worker_ui']}"},
        ready_timeout_s=90.0,
        optional=True,
    ),
)

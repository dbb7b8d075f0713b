"""What each lab service is: how to start it, what it needs, and how to tell it is ready.

Descriptions only: starting, tracking and stopping the processes is ``lab.stack``'s job. Every
function takes a ``Context`` holding the stack's ports and paths, so the same description
gives the same command line on a restart, and so on the same port.

**Why one module of some 700 lines**: the core services' descriptions side by side (42 small
functions, one per service and aspect), so ports, paths and readiness checks read alike; the
optional stacks (Storm, Spark, PostgreSQL) have their own modules.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from lab.ports import LOOPBACK, four_letter_word

REPO = Path(__file__).resolve().parents[1]

# The lab's one cluster, as ``lab.stack.clusters_yaml`` declares it to the product; the
# workload pushes its clients' statistics to this cluster's ingest endpoint.
LAB_CLUSTER = "lab"
INGEST_TOKEN_VAR = "LAGWATCH_INGEST_TOKEN"


@dataclass(frozen=True)
class Context:
    """Everything a service description may depend on: one stack's run dir, ports and URLs."""

    run_dir: Path
    ports: Mapping[str, int]
    redis_url: str | None = None
    python: str = sys.executable
    repo: Path = REPO
    # ``up --production``: the product's processes run as a deployment would (docs/LAB.md,
    # "Production mode"); recorded in stack.json, so a restarted service keeps the mode.
    production: bool = False

    def addr(self, port_name: str) -> str:
        return f"{LOOPBACK}:{self.ports[port_name]}"

    def url(self, port_name: str) -> str:
        return f"http://{LOOPBACK}:{self.ports[port_name]}"

    @property
    def data_dir(self) -> Path:
        return self.run_dir / "data"


def _inherit_env(ctx: Context) -> dict[str, str]:
    return dict(os.environ)


def _no_endpoints(ctx: Context) -> dict[str, str]:
    return {}


# A readiness check gets the context and the log text written since the start; it returns
# True when ready, False or raises when not yet (the exception text is kept for the error).
ReadyCheck = Callable[[Context, str], bool]


@dataclass(frozen=True)
class ServiceSpec:
    """One service. ``ports`` names the ports it listens on; the first is checked to be ours.

    ``prepare`` runs before every start (``up`` and ``start_service``); ``reset`` only before
    ``up``, to drop what a fresh stack must not inherit from the previous one.
    """

    name: str
    argv: Callable[[Context], list[str]]
    ready: ReadyCheck
    ports: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    env: Callable[[Context], dict[str, str]] = _inherit_env
    prepare: Callable[[Context, dict[str, str], Path], None] | None = None
    reset: Callable[[Context], None] | None = None
    endpoints: Callable[[Context], dict[str, str]] = _no_endpoints
    ready_timeout_s: float = 30.0
    stop_grace_s: float = 10.0
    stop_signal: int = signal.SIGTERM  # what asks the service to stop (then SIGKILL after grace)
    cleanup: Callable[[Context], None] | None = None  # after ``down`` stopped it, not a restart
    optional: bool = False  # started only when named (or required), never by a bare ``up``


# --- ZooKeeper -------------------------------------------------------------------------------

LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
"""


def _zk_dir(ctx: Context) -> Path:
    return ctx.run_dir / "zookeeper"


def java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home, "bin", "java")) if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise FileNotFoundError(
            "java not found (set JAVA_HOME or install one: apt-get install -y "
            "openjdk-17-jre-headless)"
        )
    return java


def _pyspark_jars() -> Path:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pyspark is not installed: its jars provide ZooKeeper")
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("zookeeper-*.jar")):
        raise FileNotFoundError(f"no zookeeper-*.jar in {jars}")
    return jars


def _zk_reset(ctx: Context) -> None:
    """A new stack's broker starts empty, so ZooKeeper must too: spout offsets left from the
    last stack would point beyond the new, empty logs."""
    shutil.rmtree(_zk_dir(ctx) / "data", ignore_errors=True)


def _zk_prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    """Data lives in the run dir, so a restarted ZooKeeper keeps its znodes (outage tests)."""
    zk_dir = _zk_dir(ctx)
    (zk_dir / "data").mkdir(parents=True, exist_ok=True)
    (zk_dir / "zoo.cfg").write_text(
        "tickTime=2000\n"
        f"dataDir={zk_dir / 'data'}\n"
        f"clientPort={ctx.ports['zookeeper']}\n"
        f"clientPortAddress={LOOPBACK}\n"
        "admin.enableServer=false\n"
        "4lw.commands.whitelist=*\n"
    )
    (zk_dir / "log4j2.properties").write_text(LOG4J2)


def _zk_argv(ctx: Context) -> list[str]:
    zk_dir = _zk_dir(ctx)
    return [
        java(),
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        f"-Dlog4j2.configurationFile={zk_dir / 'log4j2.properties'}",
        "-cp",
        f"{_pyspark_jars()}/*",
        "org.apache.zookeeper.server.ZooKeeperServerMain",
        str(zk_dir / "zoo.cfg"),
    ]


def _zk_ready(ctx: Context, log: str) -> bool:
    return four_letter_word(ctx.addr("zookeeper"), "ruok") == "imok"


# --- Apache Kafka (KRaft, one process as broker and controller) -------------------------------

# Broker settings of the lab (docs/LAB.md says what differs from a production cluster). Topics
# are created by the workload with the partition count it declares, never by a client's first
# use; one replica of everything, as there is one broker. The session timeouts of KIP-848
# groups come down from 45 s to the lab's pace; users' brokers keep their own.
# The settings of a one-broker lab cluster, whatever its version or mode (the Storm lab's
# Kafka 3.9 in ZooKeeper mode shares them: lab/storm/services.py).
ONE_BROKER_SETTINGS = {
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.retention.check.interval.ms": "5000",
}
_KAFKA_SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    **ONE_BROKER_SETTINGS,
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "2000",
}


def _kafka_dir(ctx: Context) -> Path:
    return ctx.run_dir / "kafka"


def kafka_properties(ctx: Context) -> str:
    """``server.properties`` of the lab broker on the stack's two ports."""
    settings = {
        **_KAFKA_SETTINGS,
        "controller.quorum.voters": f"1@{ctx.addr('kafka_controller')}",
        "listeners": f"PLAINTEXT://{ctx.addr('kafka')},CONTROLLER://{ctx.addr('kafka_controller')}",
        "advertised.listeners": f"PLAINTEXT://{ctx.addr('kafka')}",
        "log.dirs": str(_kafka_dir(ctx) / "data"),
    }
    from lab.toxiproxy import proxied_listener  # the optional fault proxy (lab/toxiproxy.py)

    settings = proxied_listener(ctx, settings)
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _kafka_reset(ctx: Context) -> None:
    """A new stack starts with an empty cluster (a restart keeps its data, as Kafka does)."""
    shutil.rmtree(_kafka_dir(ctx) / "data", ignore_errors=True)


def _kafka_java(ctx: Context) -> list[str]:
    from lab.kafka_dist import broker_libs

    kafka_dir = _kafka_dir(ctx)
    heap = os.environ.get("LAGWATCH_KAFKA_HEAP", "512m")
    # G1 and the whole JIT by default, as Kafka's own start script runs it;
    # $LAGWATCH_KAFKA_JAVA_OPTIONS replaces them (the test suite's short-lived brokers).
    options = os.environ.get("LAGWATCH_KAFKA_JAVA_OPTIONS", "-XX:+UseG1GC").split()
    return [
        java(),
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *options,
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={kafka_dir / 'log4j2.properties'}",
        "-cp",
        f"{broker_libs()}/*",
    ]


def _kafka_prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    """Write the configuration for this stack's ports; format the storage once (KRaft needs a
    cluster id in ``meta.properties`` before the first start)."""
    kafka_dir = _kafka_dir(ctx)
    data = kafka_dir / "data"
    kafka_dir.mkdir(parents=True, exist_ok=True)
    (kafka_dir / "server.properties").write_text(kafka_properties(ctx))
    (kafka_dir / "log4j2.properties").write_text(LOG4J2)
    if (data / "meta.properties").exists():
        return
    cluster_id = base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode()
    with open(log, "ab") as out:
        subprocess.run(
            # "--cluster-id=…": an id starting with "-" would read as an option otherwise.
            [*_kafka_java(ctx), "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
             "-c", str(kafka_dir / "server.properties")],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            timeout=120, check=True,
        )  # fmt: skip


JMX_EXPORTER_CONFIG = REPO / "lab" / "kafka" / "jmx-exporter.yaml"


def broker_metrics_url(ctx: Context) -> str:
    """The lab broker's Prometheus JMX exporter endpoint (its purgatory figures)."""
    return f"{ctx.url('kafka_metrics')}/metrics"


def _kafka_argv(ctx: Context) -> list[str]:
    """The broker with the Prometheus JMX exporter agent on the stack's ``kafka_metrics`` port
    (bound to loopback: ``host:port`` in the agent's argument)."""
    from lab.kafka_dist import installed_agent

    java = _kafka_java(ctx)
    agent = f"-javaagent:{installed_agent()}={ctx.addr('kafka_metrics')}:{JMX_EXPORTER_CONFIG}"
    return [java[0], agent, *java[1:], "kafka.Kafka", str(_kafka_dir(ctx) / "server.properties")]


def _kafka_ready(ctx: Context, log: str) -> bool:
    """Started (the log says so), a client gets metadata naming this broker, and the group
    coordinator answers for groups: the first group request creates ``__consumer_offsets``,
    and until its partitions are loaded group requests answer COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. Tests and the workload start right after
    ``up``, so "ready" means ready for groups too.

    The probe: ConsumerGroupDescribe (DescribeGroups before Kafka 4.0) of a group that does
    not exist, by the product's wire client; "not found" (or "Dead") means a loaded coordinator.
    Not an AdminClient OffsetFetch: librdkafka 2.16 was seen to crash (in its OffsetFetch
    handler) when a short-lived client asks a coordinator still loading, and this check runs
    inside the caller's process (pytest, the lab command)."""
    if "Kafka Server started" not in log:
        return False
    from confluent_kafka.admin import AdminClient

    from collectors.kafka_wire import EpochReader

    admin = AdminClient({"bootstrap.servers": ctx.addr("kafka"), "socket.timeout.ms": 2000})
    if not admin.list_topics(timeout=2).brokers:
        return False
    with EpochReader(ctx.addr("kafka")) as reader:
        answer = reader.describe(["lagwatch-lab-ready"], timeout_s=5)["lagwatch-lab-ready"]
        if answer.error_name == "UNSUPPORTED_VERSION":  # no KIP-848: Kafka 3.x
            answer = reader.describe_classic([answer.group], timeout_s=5)[answer.group]
    return answer.error_name in {"GROUP_ID_NOT_FOUND", "NONE"}


# --- Redis -----------------------------------------------------------------------------------


def _redis_argv(ctx: Context) -> list[str]:
    server = shutil.which("redis-server")
    if server is None:
        raise FileNotFoundError("redis-server not found (apt-get install -y redis-server)")
    redis_dir = ctx.run_dir / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    # Not --daemonize: the server must stay the process we started, or we could not own it.
    return [
        server,
        "--port", str(ctx.ports["redis"]),
        "--bind", LOOPBACK,
        "--save", "",
        "--appendonly", "no",
        "--daemonize", "no",
        "--pidfile", str(redis_dir / "redis.pid"),
        "--logfile", str(ctx.run_dir / "logs" / "redis.log"),
        "--dir", str(redis_dir),
    ]  # fmt: skip


def redis_ping(url: str, timeout: float = 2.0) -> bool:
    """PING through redis-py, so URLs with a password or a database number work too."""
    import redis

    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        return bool(client.ping())
    finally:
        client.close()


def private_redis_url(port: int) -> str:
    return f"redis://{LOOPBACK}:{port}/0"


def _redis_ready(ctx: Context, log: str) -> bool:
    return redis_ping(private_redis_url(ctx.ports["redis"]))


# --- Django and Celery -----------------------------------------------------------------------


def ingest_token(ctx: Context) -> str:
    """The bearer token the web server accepts and the workload pushes with.

    ``$LAGWATCH_INGEST_TOKEN`` if set; otherwise one generated for the run directory and
    kept in ``<run_dir>/ingest-token`` (mode 0600), so both services, started separately
    and restarted separately, read the same one.
    """
    if token := os.environ.get(INGEST_TOKEN_VAR):
        return token
    return run_secret(ctx, "ingest-token")


def run_secret(ctx: Context, name: str, *, nbytes: int = 32) -> str:
    """A secret generated once for the run directory and kept in ``<run_dir>/<name>`` (mode
    0600): services started and restarted separately read the same one. ``nbytes`` of
    randomness, in URL-safe base64 (4 characters per 3 bytes)."""
    path = ctx.run_dir / name
    ctx.run_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        secret = path.read_text().strip()
        if secret:
            return secret
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    secret = secrets.token_urlsafe(nbytes)
    with os.fdopen(fd, "w") as out:
        out.write(secret + "\n")
    return secret


# What a TLS-terminating proxy in front of the web server tells it (docker-compose.yml trusts
# it with DJANGO_SECURE_PROXY_SSL_HEADER=1, and so does the production mode): the lab has no
# proxy, so its clients (the workload, the smoke test) send the header themselves.
FORWARDED_PROTO_HEADER = ("X-Forwarded-Proto", "https")
SECRET_KEY_FILE = "django-secret-key"


def production_env(ctx: Context) -> dict[str, str]:
    """The settings docker-compose.yml gives the product, with the lab's secret and hosts.

    The secret key is generated once for the run directory (``run_secret``), so the web
    server, the workers and ``manage.py`` run from outside sign sessions with the same key.
    Static files are collected into the run directory, never into the checkout.
    """
    if "postgres" not in ctx.ports:
        raise ValueError("the production mode runs on PostgreSQL: the postgres service is missing")
    return {
        "DJANGO_SETTINGS_MODULE": "dashboard.settings.production",
        # 64 characters: Django's deployment check wants 50 or more (security.W009).
        "DJANGO_SECRET_KEY": run_secret(ctx, SECRET_KEY_FILE, nbytes=48),
        "DJANGO_ALLOWED_HOSTS": f"{LOOPBACK},localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "1",
        "DJANGO_SECURE_PROXY_SSL_HEADER": "1",
        "DJANGO_STATIC_ROOT": str(ctx.run_dir / "static"),
        # Links in alert notices point at this stack's web server (compose: the public URL).
        "LAGWATCH_BASE_URL": ctx.url("web"),
    }


def django_env(ctx: Context, *, direct: bool = False) -> dict[str, str]:
    """The product's processes find the lab through these variables (see docs/CONTRACTS.md);
    with Toxiproxy in the stack, its Redis and database through their proxies unless
    ``direct`` (``manage.py`` run from outside the product: lab/toxiproxy.py)."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings.base",
        LAGWATCH_DATA_DIR=str(ctx.data_dir),
        PYTHONUNBUFFERED="1",
    )
    if ctx.production:
        env.update(production_env(ctx))
    env[INGEST_TOKEN_VAR] = ingest_token(ctx)
    if ctx.redis_url:
        env["REDIS_URL"] = ctx.redis_url
    for port_name, var in (("zookeeper", "LAGWATCH_LAB_ZK"), ("kafka", "LAGWATCH_LAB_BOOTSTRAP")):
        if port_name in ctx.ports:
            env[var] = ctx.addr(port_name)
    if "storm_ui" in ctx.ports:
        env["LAGWATCH_LAB_STORM_UI"] = ctx.url("storm_ui")
    if "postgres" in ctx.ports:  # the optional private server (lab/postgres.py)
        env["DATABASE_URL"] = import_module("lab.postgres").database_url(ctx)
    if "oidc" in ctx.ports:  # the optional OIDC issuer (lab/oidc_issuer.py): single sign-on
        env.update(import_module("lab.oidc_issuer").product_env(ctx))
    if "s3" in ctx.ports:  # the sample log on the optional object store (lab/object_store.py)
        env.update(import_module("lab.object_store").store_env(ctx))
    if "spark_master" in ctx.ports:
        # The stack's Spark cluster runs the jobs; its executors find this interpreter.
        env["SPARK_MASTER"] = f"spark://{LOOPBACK}:{ctx.ports['spark_master']}"
        env["PYSPARK_PYTHON"] = sys.executable
    from lab.toxiproxy import product_env

    return env if direct else product_env(ctx, env)


def _prepare_web(ctx: Context, env: dict[str, str], log: Path) -> None:
    """Migrate, or the first page fails on an empty database; import the lab cluster, or the
    dashboard (and the collectors, which read clusters from the database) would not know it.
    The import is idempotent, so it also runs on a restart."""
    ctx.data_dir.mkdir(parents=True, exist_ok=True)
    commands = [["migrate", "--noinput"]]
    if ctx.production:
        # What the image does at build time (Dockerfile): the manifest storage of production
        # settings serves only collected files. Then the deployment check, so a mode whose
        # settings would fail it never starts.
        commands += [
            ["collectstatic", "--noinput", "-v", "0"],
            ["check", "--deploy", "--fail-level", "WARNING"],
        ]
    clusters = ctx.run_dir / "clusters.yaml"
    if clusters.exists():
        commands.append(["lagwatch_config", "import", str(clusters)])
    with open(log, "ab") as out:
        for command in commands:
            subprocess.run(
                [ctx.python, "manage.py", *command],
                cwd=ctx.repo,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=300,
                check=True,
            )


def http_ok(url: str, timeout: float = 2.0) -> bool:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status == 200


# gunicorn's workers in the production mode: the Dockerfile's three.
GUNICORN_WORKERS = 3


def _web_argv(ctx: Context) -> list[str]:
    if ctx.production:  # as the image runs it (Dockerfile CMD), on the stack's port
        return [
            ctx.python, "-m", "gunicorn", "dashboard.wsgi", "--bind", ctx.addr("web"),
            "--workers", str(GUNICORN_WORKERS), "--access-logfile", "-",
        ]  # fmt: skip
    return [ctx.python, "manage.py", "runserver", ctx.addr("web"), "--noreload"]


def _web_ready(ctx: Context, log: str) -> bool:
    return http_ok(ctx.url("web") + "/health/")


def _worker_argv(ctx: Context) -> list[str]:
    # Three threads in one process: the two Spark jobs (queue "spark") may run at once, and the
    # small tasks of the default queue (alert deliveries) must not wait behind them. The jobs
    # share the process's one Spark session, so after the first run none pays a JVM's start
    # (with prefork children, a status run that landed on a child without a JVM took 57 s
    # instead of ~2 s: benchmarks/RESULTS.md, "10 of 10 again").
    return [
        ctx.python, "-m", "celery", "-A", "dashboard", "worker", "-Q", "celery,spark",
        "-l", "info", "--pool", "threads", "--concurrency", "3",
        "-n", "lagwatch-lab@%h", "--without-gossip", "--without-mingle",
    ]  # fmt: skip


def _collector_argv(ctx: Context, node: str = "lagwatch-collector") -> list[str]:
    # One process, a thread per cluster: the adapters' connections and each cluster's offset
    # history stay in this process between cycles (collectors/cycle/runner.py). A second one
    # (``collector2``) shares the clusters' cycles with it (docs/ARCHITECTURE.md).
    return [
        ctx.python, "-m", "celery", "-A", "dashboard", "worker", "-Q", "collectors",
        "-l", "info", "--pool", "threads", "--concurrency", "4",
        "-n", f"{node}@%h", "--without-gossip", "--without-mingle",
    ]  # fmt: skip


_WORKER_READY = re.compile(r"\S+@\S+ ready\.")


def _worker_ready(ctx: Context, log: str) -> bool:
    return bool(_WORKER_READY.search(log))


def _beat_argv(ctx: Context) -> list[str]:
    return [
        ctx.python, "-m", "celery", "-A", "dashboard", "beat",
        "-l", "info", "-s", str(ctx.run_dir / "celerybeat-schedule"),
    ]  # fmt: skip


def _beat_ready(ctx: Context, log: str) -> bool:
    return "beat: Starting" in log


# --- Workload (producers, consumers, Storm spout simulator) ----------------------------------


def _workload_argv(ctx: Context) -> list[str]:
    return [
        ctx.python, "-m", "lab.workload",
        "--bootstrap", ctx.addr("kafka"),
        "--zk", ctx.addr("zookeeper"),
        "--control-port", str(ctx.ports["control"]),
        "--storm-ui-port", str(ctx.ports["storm_ui"]),
        "--run-dir", str(ctx.run_dir),
    ] + _ingest_args(ctx)  # fmt: skip


def ingest_url(ctx: Context) -> str:
    return f"{ctx.url('web')}/api/v1/ingest/{LAB_CLUSTER}"


def _ingest_args(ctx: Context) -> list[str]:
    """Where the workload pushes its clients' librdkafka statistics and its spouts' figures
    (SPEC §2.3): the broker lists members and assignments; the clients' statistics add what
    only they know (fetch state, client-side lag, rebalance counts, producer queues)."""
    # The token reaches it as $LAGWATCH_INGEST_TOKEN (see _workload_env), never on the
    # command line, which stack.json records and `ps` shows.
    if "web" not in ctx.ports:
        return []
    args = ["--ingest-url", ingest_url(ctx)]
    if ctx.production:  # the production web redirects plain HTTP: push as through the proxy
        args += ["--ingest-header", "=".join(FORWARDED_PROTO_HEADER)]
    return args


def _workload_env(ctx: Context) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if "web" in ctx.ports:
        env[INGEST_TOKEN_VAR] = ingest_token(ctx)
    return env


def _workload_ready(ctx: Context, log: str) -> bool:
    return http_ok(ctx.url("control") + "/lab/status")


# --- The table -------------------------------------------------------------------------------

# Start order: sources first, then the workload feeding them, then the product reading them.
SERVICES: dict[str, ServiceSpec] = {
    spec.name: spec
    for spec in (
        ServiceSpec(
            name="zookeeper",
            ports=("zookeeper",),
            reset=_zk_reset,
            prepare=_zk_prepare,
            argv=_zk_argv,
            ready=_zk_ready,
            endpoints=lambda ctx: {"zookeeper": ctx.addr("zookeeper")},
        ),
        ServiceSpec(
            name="kafka",
            ports=("kafka", "kafka_controller", "kafka_metrics"),
            reset=_kafka_reset,
            prepare=_kafka_prepare,
            argv=_kafka_argv,
            ready=_kafka_ready,
            endpoints=lambda ctx: {
                "kafka": ctx.addr("kafka"),
                "kafka_metrics": broker_metrics_url(ctx),
            },
            ready_timeout_s=90.0,
            stop_grace_s=30.0,  # a controlled shutdown: logs flushed, leadership handed over
        ),
        ServiceSpec(
            name="redis",
            ports=("redis",),
            argv=_redis_argv,
            ready=_redis_ready,
            endpoints=lambda ctx: {"redis": ctx.redis_url or ""},
            ready_timeout_s=10.0,
        ),
        ServiceSpec(
            name="workload",
            ports=("control", "storm_ui"),
            requires=("zookeeper", "kafka"),
            env=_workload_env,
            argv=_workload_argv,
            ready=_workload_ready,
            endpoints=lambda ctx: {"control": ctx.url("control"), "storm_ui": ctx.url("storm_ui")},
            ready_timeout_s=60.0,
            stop_grace_s=15.0,
        ),
        ServiceSpec(
            name="web",
            ports=("web",),
            requires=("redis",),
            env=django_env,
            prepare=_prepare_web,
            argv=_web_argv,
            ready=_web_ready,
            endpoints=lambda ctx: {"web": ctx.url("web") + "/"},
            ready_timeout_s=60.0,
        ),
        ServiceSpec(
            name="worker",
            requires=("redis",),
            env=django_env,
            argv=_worker_argv,
            ready=_worker_ready,
            ready_timeout_s=60.0,
            stop_grace_s=15.0,
        ),
        ServiceSpec(
            name="collector",
            requires=("redis",),
            env=django_env,
            argv=_collector_argv,
            ready=_worker_ready,
            ready_timeout_s=60.0,
            stop_grace_s=15.0,
        ),
        ServiceSpec(
            name="collector2",
            requires=("redis",),
            env=django_env,
            argv=lambda ctx: _collector_argv(ctx, "lagwatch-collector2"),
            ready=_worker_ready,
            ready_timeout_s=60.0,
            stop_grace_s=15.0,
            optional=True,
        ),
        ServiceSpec(
            name="beat",
            requires=("redis",),
            env=django_env,
            argv=_beat_argv,
            ready=_beat_ready,
            ready_timeout_s=60.0,
        ),
    )
}

"""Fixtures shared by the whole suite: the real lab services, started once per session.

ZooKeeper and Apache Kafka (KRaft, one process; ``docs/LAB.md``) run as real processes on free
local ports in a temporary run directory; they start only when a test asks for them, and are
stopped at the end of the session. Tests share them, so each test uses its own topic, znode root and group names.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from pytest_django.fixtures import validate_django_db

from lab.stack import Stack
from tests.lab_world import lab_world, shut_down_early  # noqa: F401 - the shared end-to-end stack
from tests.scheduling import LAB_WORLD_MODULES, StackAwareScheduling, module_of, tier

# Spark must not bind to whatever interface the hostname resolves to (docs/LAB.md).
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
# The suite runs hundreds of tiny Spark jobs: a C1-only JIT starts each faster (docs/LAB.md).
os.environ.setdefault("LAGWATCH_SPARK_JAVA_OPTIONS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
# The suite starts ~25 brokers, each living minutes under the lab's light load: with the C1
# JIT and the serial collector a broker took 5 CPU-s to be ready instead of 9-10, and 19-20
# CPU-s instead of 33-36 over its next 2 minutes under the lab workload (benchmarks/RESULTS.md,
# "The test suite's wall time", "The brokers' JIT"). The lab and demo keep Kafka's own choices.
os.environ.setdefault("LAGWATCH_KAFKA_JAVA_OPTIONS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")

LAB_SERVICES = ("zookeeper", "kafka")
# How many collected tests use the shared stack and have not run yet (in this process).
_LAB_WORLD_LEFT = pytest.StashKey[int]()


@pytest.hookimpl(trylast=True)  # after pytest-django's ordering, which it keeps within a tier
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The end-to-end tests first, for the parallel workers of ``scripts/test``
    (``tests/scheduling.py``); without xdist only the order changes."""
    strays = sorted(
        {
            module_of(item.nodeid)
            for item in items
            if "lab_world" in getattr(item, "fixturenames", ())
            and module_of(item.nodeid) not in LAB_WORLD_MODULES
        }
    )
    if strays:
        raise pytest.UsageError(
            f"{', '.join(strays)} use lab_world: list them in tests/scheduling.py"
        )
    items.sort(key=lambda item: tier(item.nodeid))  # stable
    config.stash[_LAB_WORLD_LEFT] = sum(
        "lab_world" in getattr(item, "fixturenames", ()) for item in items
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own answer
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> StackAwareScheduling | None:
    """``-n N`` alone (``--dist load``) schedules with ``tests/scheduling.py``; an explicit
    other ``--dist`` is left to pytest-xdist."""
    return StackAwareScheduling(config, log) if config.getvalue("dist") == "load" else None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Name a failure when it happens, not only in the summary: a run that later hangs or is
    cut by CI's clock would otherwise leave an anonymous ``F`` among the dots.

    With ``LAGWATCH_TEST_TIMELINE`` set to a file, every phase of every test is also appended
    to it as a JSON line (run, worker, test, phase, start, stop): ``benchmarks/suite_timeline.py``
    shows from it which units kept which worker busy when, which ``--durations`` cannot."""
    node = getattr(report, "node", None)  # a worker's report, on the controller
    if report.failed and node is not None:
        reporter = node.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"FAILED (as it happened, {report.when}) {report.nodeid}")
    timeline = os.environ.get("LAGWATCH_TEST_TIMELINE")
    if timeline and (node is not None or not os.environ.get("PYTEST_XDIST_WORKER")):
        worker = node.gateway.id if node is not None else "main"
        line = {"run": os.getpid(), "worker": worker, "test": report.nodeid, "when": report.when,
                "start": report.start, "stop": report.stop, "outcome": report.outcome}  # fmt: skip
        with open(timeline, "a") as out:
            out.write(json.dumps(line) + "\n")


class LabServices:
    """What tests need of the session's stack: addresses, and a way to stage an outage.

    ``stop``/``start`` keep the port, so clients configured with the address reconnect to the
    restarted service. Both keep their data across a restart, as the real services do.
    """

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        endpoints = stack.endpoints()
        self.zk_hosts: str = endpoints["zookeeper"]
        self.bootstrap: str = endpoints["kafka"]
        # The broker's Prometheus JMX exporter agent (purgatory figures).
        self.broker_metrics_url: str = endpoints["kafka_metrics"]

    @property
    def run_dir(self) -> Path:
        return self.stack.run_dir

    def stop(self, name: str) -> None:
        self.stack.stop_service(name)

    def start(self, name: str) -> None:
        self.stack.start_service(name)

    def restore(self) -> None:
        """Start again whatever a test left stopped, so one test's outage cannot fail the next."""
        services = self.stack.status()["services"]
        for name in LAB_SERVICES:
            if services[name]["state"] != "running":
                self.stack.start_service(name)


@pytest.fixture(scope="session")
def lab_services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServices]:
    stack = Stack(tmp_path_factory.mktemp("lab"))
    stack.up(list(LAB_SERVICES))
    try:
        yield LabServices(stack)
    finally:
        stack.down()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kafka-version",
        default=None,
        help="the Apache Kafka version the lab broker runs (default: lab/kafka/pom.xml's; "
        "another is fetched with `python -m lab.kafka_dist --other VERSION`): the "
        "compatibility run, scripts/test-compat (docs/LAB.md)",
    )
    parser.addoption(
        "--database",
        choices=("sqlite", "postgresql"),
        default=os.environ.get("LAGWATCH_TEST_DATABASE", "sqlite"),
        help="the database the Django tests run on: SQLite (the embedded default) or a private "
        "PostgreSQL server this session starts (lab/postgres.py; scripts/test runs both)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """``--kafka-version`` reaches the lab through the environment, so that every stack this
    process (or an xdist worker, which gets the same options) starts runs that broker."""
    from lab.kafka_dist import VERSION_ENV

    if version := config.getoption("--kafka-version"):
        os.environ[VERSION_ENV] = version


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.kafka_since("4.2", "share groups")``: skipped on an older lab broker
    (the compatibility run), saying what needs the newer one."""
    from lab.kafka_dist import broker_version, version_at_least

    for marker in item.iter_markers("kafka_since"):
        minimum, *why = marker.args
        if not version_at_least(minimum):
            needed = f", needed for {why[0]}" if why else ""
            pytest.skip(f"Apache Kafka {broker_version()} < {minimum}{needed}")


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """pytest-django's place to change the test database's settings, before it creates it.

    On ``--database postgresql`` this session (each xdist worker its own) starts a private
    PostgreSQL server, and pytest-django creates and drops ``test_lagwatch`` there: the same
    tests, on the production database's engine. On SQLite, pytest-django's own behaviour.
    """
    if request.config.getoption("--database") != "postgresql":
        request.getfixturevalue("django_db_modify_db_settings_parallel_suffix")
        yield
        return
    import dj_database_url
    from django.conf import settings
    from django.db import connections

    from lab.postgres import stack_database_url

    stack = Stack(tmp_path_factory.mktemp("postgres"))
    endpoints = stack.up(["postgres"])
    try:
        db = settings.DATABASES["default"]
        db.clear()
        db.update(dj_database_url.parse(stack_database_url(stack.run_dir, endpoints["postgres"])))
        db["TEST"] = {"NAME": "test_lagwatch"}
        # A connection made before this point (an import that touched the ORM) would keep
        # SQLite's backend class: drop it, so the next use builds PostgreSQL's.
        connections.__dict__.pop("settings", None)
        with contextlib.suppress(AttributeError):
            del connections["default"]
        yield
    finally:
        connections.close_all()
        stack.down()


# The data migrations (RunPython), whose rows a transactional test's flush deletes.
_DATA_MIGRATIONS = (
    ("dashboard.accounts.migrations.0001_roles", "create_roles"),
    ("dashboard.alerts.migrations.0002_default_rule", "create_default_rule"),
)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """A transactional test empties every table when it ends, the rows data migrations made
    included (the role groups, the default alert rule). pytest-django runs such tests last
    for that reason, but parallel workers take modules in any order: once its fixtures are
    torn down (the flush done), the data migrations run again, as on a fresh database."""
    result = yield
    if "lab_world" in getattr(item, "fixturenames", ()):
        # The shared stack's tests are one unit of one worker (tests/scheduling.py): after
        # the last of them (as many as were collected), stop it rather than at the session's
        # end. Under another --dist no worker runs them all, and it stops at the end as before.
        left = item.config.stash.get(_LAB_WORLD_LEFT, 0) - 1
        item.config.stash[_LAB_WORLD_LEFT] = left
        if left == 0:
            shut_down_early()
    if nextitem is None:
        return result  # the session is over: its database is gone with it
    marker = item.get_closest_marker("django_db")
    fixtures = set(getattr(item, "fixturenames", ()))
    if {"transactional_db", "live_server"} & fixtures or (
        marker is not None and validate_django_db(marker)[0]
    ):
        import importlib

        from django.apps import apps
        from django.db import connection
        from pytest_django.plugin import blocking_manager_key

        with item.config.stash[blocking_manager_key].unblock(), connection.schema_editor() as e:
            for module, function in _DATA_MIGRATIONS:
                getattr(importlib.import_module(module), function)(apps, e)
    return result


@pytest.fixture(autouse=True)
def _restore_lab_services(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "lab_services" in request.fixturenames:
        request.getfixturevalue("lab_services").restore()


@pytest.fixture(scope="session")
def zk_hosts(lab_services: LabServices) -> str:
    return lab_services.zk_hosts


@pytest.fixture(scope="session")
def kafka_bootstrap(lab_services: LabServices) -> str:
    return lab_services.bootstrap


@pytest.fixture
def zk(zk_hosts: str) -> Iterator[KazooClient]:
    """A ZooKeeper client of the test's own, standing for topologies and consumers."""
    client = KazooClient(hosts=zk_hosts)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def admin(kafka_bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The suite's one local Spark session (``local[2]``: the machine has two cores).

    One for the whole session, whatever the test order (pytest-django runs database tests
    first): a module that stopped its own session would stop everyone's, as ``getOrCreate``
    hands out the active one. Started only when a test asks, a JVM costs 4-9 s.
    """
    from spark_jobs.session import spark_session

    # py4j logs "closing" from a finalizer after pytest has closed the log streams.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    session = spark_session("lagwatch-tests", master="local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session
    session.stop()


@pytest.fixture(autouse=True, scope="session")
def _metrics_scrapes_build_inline() -> Iterator[None]:
    """Tests write rows and scrape at once: their scrapes build /metrics themselves. The
    published exposition is tested where a test turns it on (tests/api/test_metrics_exposition.py)
    and in the lab stacks' processes, which keep the product's default."""
    from django.conf import settings

    settings.LAGWATCH_METRICS_PREBUILT = False
    yield


@pytest.fixture(autouse=True, scope="session")
def _stored_cycles_ask_for_no_status_run() -> Iterator[None]:
    """Tests store cycles in-process and run the status job when they mean to: a stored cycle
    asking for a run through Redis and Celery is tested where a test turns it on
    (tests/spark_jobs/test_spark_runs.py) and in the lab stacks' processes, which keep the
    product's default."""
    from django.conf import settings

    settings.LAGWATCH_STATUS_AFTER_CYCLE = False
    yield


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``redis-server`` of a private lab stack, for the module's tests."""
    stack = Stack(tmp_path_factory.mktemp("redis"))
    stack.up(["redis"])
    try:
        yield stack.endpoints()["redis"]
    finally:
        stack.down()

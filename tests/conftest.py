"""Fixtures shared by the whole suite: the real lab services, started once per session.

ZooKeeper and Apache Kafka (KRaft, one process; ``docs/LAB.md``) run as real processes on free
local ports in a temporary run directory; they start only when a test asks for them, and are
stopped at the end of the session. Tests share them, so each test uses its own topic, znode root and group names.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from lab.stack import Stack
from tests.lab_world import lab_world  # noqa: F401 - the shared end-to-end stack

# Spark must not bind to whatever interface the hostname resolves to (docs/LAB.md).
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
# The suite runs hundreds of tiny Spark jobs: a C1-only JIT starts each faster (docs/LAB.md).
os.environ.setdefault("LAGWATCH_SPARK_JAVA_OPTIONS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")

LAB_SERVICES = ("zookeeper", "kafka")


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

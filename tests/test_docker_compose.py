"""docker-compose.yml cannot be run here (no Docker engine): check it is valid and coherent."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lab.kafka_dist import kafka_version

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
LAGWATCH_SERVICES = {
    "web",
    "worker",
    "collector",
    "beat",
    "migrate",
    "spark-master",
    "spark-worker",
}
EXTERNAL_SERVICES = {"kafka", "zookeeper", "redis", "postgres"}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_validates_against_the_compose_specification() -> None:
    exe = shutil.which("check-jsonschema") or str(
        Path(sys.executable).with_name("check-jsonschema")
    )
    result = subprocess.run(
        [exe, "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_has_every_service_of_a_deployment(compose: dict) -> None:
    assert set(compose["services"]) == LAGWATCH_SERVICES | EXTERNAL_SERVICES


def test_external_images_are_pinned_to_a_version(compose: dict) -> None:
    for name in EXTERNAL_SERVICES:
        image = compose["services"][name]["image"]
        repo, _, tag = image.partition(":")
        assert tag and tag != "latest", f"{name}: image {image!r} is not pinned"
        assert re.match(r"\d+\.\d+", tag), f"{name}: tag {tag!r} is not a full version"


def test_lagwatch_services_share_one_built_image(compose: dict) -> None:
    images = {compose["services"][n]["image"] for n in LAGWATCH_SERVICES}
    assert images == {"lagwatch:0.1.0"}
    for name in LAGWATCH_SERVICES:
        assert compose["services"][name]["build"] == "."
    assert (ROOT / "Dockerfile").exists()


def test_depends_on_names_defined_services_and_waits_for_health(compose: dict) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dep, cond in service.get("depends_on", {}).items():
            assert dep in services, f"{name} depends on undefined {dep}"
            assert cond["condition"] in {"service_healthy", "service_completed_successfully"}
            if cond["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], f"{dep} has no healthcheck"
    assert set(services["worker"]["depends_on"]) >= {"redis", "kafka", "zookeeper", "migrate"}
    assert set(services["collector"]["depends_on"]) >= {"redis", "kafka", "zookeeper", "migrate"}
    assert "collectors" in services["collector"]["command"]
    # The worker runs the Spark jobs (queue "spark") besides the default queue's tasks.
    worker = services["worker"]["command"]
    assert set(worker[worker.index("-Q") + 1].split(",")) == {"celery", "spark"}
    assert set(services["web"]["depends_on"]) >= {"redis", "migrate"}
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_long_running_services_have_health_checks(compose: dict) -> None:
    for name, service in compose["services"].items():
        if name != "migrate":
            assert "test" in service.get("healthcheck", {}), f"{name} has no healthcheck"


def test_named_volumes_are_declared(compose: dict) -> None:
    declared = set(compose["volumes"])
    used = set()
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith((".", "/")):
                used.add(source)
    assert used <= declared, f"undeclared volumes: {used - declared}"
    assert {"postgres-data", "kafka-data", "zookeeper-data", "lagwatch-data"} <= used


def test_ports_and_environment(compose: dict) -> None:
    services = compose["services"]
    assert "8000:8000" in services["web"]["ports"]
    assert "9092:9092" in services["kafka"]["ports"]
    # The broker users get is the one the lab, the tests and the benchmarks ran against.
    assert services["kafka"]["image"] == f"apache/kafka:{kafka_version()}"
    env = services["web"]["environment"]
    assert env["DJANGO_SETTINGS_MODULE"] == "dashboard.settings.production"
    assert env["DATABASE_URL"].startswith("postgres://")
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    assert env["SPARK_MASTER"] == "spark://spark-master:7077"
    # Secrets are required from the environment, never written in the file.
    assert "${DJANGO_SECRET_KEY:?" in COMPOSE.read_text()
    assert "${POSTGRES_PASSWORD:?" in COMPOSE.read_text()

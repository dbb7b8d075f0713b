"""docker-compose.yml cannot be run here (no Docker engine): check it is valid and coherent.

Beyond its structure: every process that loads Django's settings gets every variable the code
requires in production (found by reading the settings modules, not listed by hand), no variable
the code never reads, the user's values from ``.env`` with required ones stopping ``docker
compose up``; the environment compose builds really loads the production settings; and the
cluster file it mounts imports with the real command.
"""

import ast
import json
import os
import re
import secrets
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from dashboard.monitoring.config_file import parse_config
from lab.kafka_dist import kafka_version

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / "deploy" / "env.example"
CLUSTERS_EXAMPLE = ROOT / "deploy" / "clusters.example.yaml"
# Services that load Django's settings, and Spark's daemons (same image, no settings).
DJANGO_SERVICES = {"web", "worker", "collector", "beat", "migrate"}
SPARK_SERVICES = {"spark-master", "spark-worker"}
LAGWATCH_SERVICES = DJANGO_SERVICES | SPARK_SERVICES
EXTERNAL_SERVICES = {"kafka", "zookeeper", "redis", "postgres"}
# The code the image runs (the lab, the tests and the benchmarks are not deployed).
DEPLOYED_CODE = ("dashboard", "spark_jobs", "collectors", "manage.py")
SETTINGS_DIR = "dashboard/settings/"

# Variables with a default the code accepts but a deployment cannot live with, for reasons no
# reading of the default shows. Each must be read by the code (checked), so none goes stale.
DEPLOYMENT_NEEDS = {
    "DJANGO_SETTINGS_MODULE": "the default is the local settings (DEBUG on, a known key)",
    "LAGWATCH_DATA_DIR": "the default is inside the image: lost at restart and not shared "
    "by the collector (writes the sample log) and the worker (Spark reads it)",
    "LAGWATCH_INGEST_TOKEN": "without it the ingest endpoint answers 503",
    "EMAIL_PORT": "alert emails: the default is a local relay's port 25",
    "EMAIL_HOST_USER": "alert emails: SMTP login",
    "EMAIL_HOST_PASSWORD": "alert emails: SMTP login",
    "EMAIL_USE_TLS": "alert emails: the default sends in clear",
}
# A default naming one of these is this machine: in compose, that is another container.
LOCAL_ONLY = ("127.0.0.1", "localhost", "[::1]", "local[", "sqlite:")
SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN")


# --- What the code reads ------------------------------------------------------------------


@dataclass(frozen=True)
class EnvRead:
    name: str
    path: str  # relative to the checkout
    how: str  # env_str, env_required, os.environ.get, ...
    default: ast.expr | None


ENV_HELPERS = {"env_str", "env_int", "env_bool", "env_list", "env_required"}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _name_arg(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


READ_CALLS = ENV_HELPERS | {
    "os.environ.get",
    "os.environ.setdefault",
    "os.environ.pop",
    "os.getenv",
}


def _env_read(node: ast.AST, rel: str) -> EnvRead | None:
    if isinstance(node, ast.Call) and node.args and (name := _name_arg(node.args[0])):
        func = _dotted(node.func)
        if func in READ_CALLS:
            return EnvRead(name, rel, func, node.args[1] if len(node.args) > 1 else None)
    if isinstance(node, ast.Subscript) and _dotted(node.value) == "os.environ":
        name = _name_arg(node.slice)
        return EnvRead(name, rel, "os.environ[]", None) if name else None
    if isinstance(node, ast.Compare) and any(_dotted(c) == "os.environ" for c in node.comparators):
        name = _name_arg(node.left)
        return EnvRead(name, rel, "in os.environ", None) if name else None
    return None


def env_reads_in(path: Path) -> Iterator[EnvRead]:
    """Every environment variable ``path`` reads by a literal name: through the settings'
    helpers (``dashboard.env``) or ``os.environ`` / ``os.getenv`` directly."""
    rel = path.relative_to(ROOT).as_posix()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
        if read := _env_read(node, rel):
            yield read


def deployed_env_reads() -> list[EnvRead]:
    reads: list[EnvRead] = []
    for entry in DEPLOYED_CODE:
        base = ROOT / entry
        files = [base] if base.is_file() else sorted(base.rglob("*.py"))
        for path in files:
            reads.extend(env_reads_in(path))
    return reads


def _strings(node: ast.expr) -> Iterator[str]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


def _empty(node: ast.expr | None) -> bool:
    return (isinstance(node, ast.Constant) and node.value in ("", None)) or (
        isinstance(node, ast.List | ast.Tuple) and not node.elts
    )


def required_in_production(reads: list[EnvRead]) -> dict[str, str]:
    """The settings' variables a compose deployment must set, with why: no default at all,
    an empty default in the production settings (nothing is served), or a default that
    names this machine (another container in compose)."""
    required: dict[str, str] = {}
    for read in reads:
        if not read.path.startswith(SETTINGS_DIR):
            continue
        if read.how == "env_required":
            required[read.name] = f"{read.path}: no default, the settings refuse to start"
        elif read.path.endswith("production.py") and _empty(read.default):
            required[read.name] = f"{read.path}: the production default is empty"
        elif read.default is not None and any(
            marker in text for text in _strings(read.default) for marker in LOCAL_ONLY
        ):
            required[read.name] = f"{read.path}: the default names this machine"
    return required


# --- What compose gives ------------------------------------------------------------------

_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_]\w*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|(?P<named>[A-Za-z_]\w*))"
)


class Unset(Exception):
    """A ``${NAME:?message}`` whose variable is missing: compose refuses to start."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        super().__init__(f"{name}: {message}")


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """The Compose specification's interpolation: ``$$``, ``$NAME``, ``${NAME}`` and the
    ``-``/``?``/``+`` forms, with and without ``:`` (which also treats empty as unset)."""

    def one(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["named"]
        value, op, arg = env.get(name), match["op"], match["arg"] or ""
        if op is None:
            return value or ""
        missing = value is None or (op.startswith(":") and value == "")
        if op.endswith("-"):
            return arg if missing else value
        if op.endswith("?"):
            if missing:
                raise Unset(name, arg)
            return value
        return "" if missing else arg  # "+"

    return _VARIABLE.sub(one, text)


def _walk(value: Any, leaf: Any) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, leaf) for v in value]
    return leaf(value) if isinstance(value, str) else value


def compose_variables(raw: dict) -> dict[str, set[str]]:
    """Each variable the file takes from the user's environment, with the operators used."""
    found: dict[str, set[str]] = {}

    def leaf(text: str) -> str:
        for match in _VARIABLE.finditer(text):
            if name := match["braced"] or match["named"]:
                found.setdefault(name, set()).add(match["op"] or "")
        return text

    _walk(raw, leaf)
    return found


def read_env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    return env


_SECRET_KEY = secrets.token_urlsafe(50)  # check --deploy refuses a weak one


def filled_env() -> dict[str, str]:
    """The example .env with its empty values filled, as a user would."""
    env = read_env_file(ENV_EXAMPLE)
    env.update(
        DJANGO_SECRET_KEY=_SECRET_KEY,
        POSTGRES_PASSWORD="pg-pass-for-the-test",
        LAGWATCH_INGEST_TOKEN="ingest-token-for-the-test",
    )
    return env


def service_env(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def mounts(service: dict) -> dict[str, dict]:
    """Each volume of a service by its target, in the long syntax's terms."""
    out = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            source, target, *mode = volume.split(":")
            volume = {
                "type": "bind" if source.startswith((".", "/")) else "volume",
                "source": source,
                "target": target,
                "read_only": mode == ["ro"],
            }
        out[volume["target"]] = volume
    return out


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def compose(raw: dict) -> dict:
    """The file as compose runs it with a filled-in .env."""
    return _walk(raw, lambda text: interpolate(text, filled_env()))


@pytest.fixture(scope="module")
def reads() -> list[EnvRead]:
    return deployed_env_reads()


# --- The tests ----------------------------------------------------------------------------


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


def test_the_settings_scan_finds_what_production_requires(reads: list[EnvRead]) -> None:
    """The reading of the settings is not vacuous: it finds the variables known to matter."""
    required = required_in_production(reads)
    assert {"DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL",
            "SPARK_MASTER", "EMAIL_HOST", "LAGWATCH_ALERTS_EMAIL_FROM"} <= set(required)  # fmt: skip
    assert "no default" in required["DJANGO_SECRET_KEY"]
    read_names = {r.name for r in reads}
    assert set(DEPLOYMENT_NEEDS) <= read_names, set(DEPLOYMENT_NEEDS) - read_names


@pytest.mark.parametrize("name", sorted(DJANGO_SERVICES))
def test_every_django_service_gets_every_setting_production_needs(
    raw: dict, reads: list[EnvRead], name: str
) -> None:
    needed = {**required_in_production(reads), **DEPLOYMENT_NEEDS}
    env = service_env(raw["services"][name])
    missing = {var: why for var, why in needed.items() if var not in env}
    assert not missing, f"{name} lacks {missing}"
    assert env["DJANGO_SETTINGS_MODULE"] == "dashboard.settings.production"


@pytest.mark.parametrize("name", sorted(LAGWATCH_SERVICES))
def test_compose_sets_no_variable_the_code_does_not_read(
    raw: dict, reads: list[EnvRead], name: str
) -> None:
    read_names = {r.name for r in reads}
    env = service_env(raw["services"][name])
    assert set(env) <= read_names, f"{name} sets what nothing reads: {set(env) - read_names}"


def test_spark_daemons_get_no_django_secrets(raw: dict) -> None:
    """They load no settings: the database password and the secret key stay out of them."""
    for name in SPARK_SERVICES:
        assert not service_env(raw["services"][name]), name


def test_user_values_come_from_the_env_file(raw: dict) -> None:
    used = compose_variables(raw)
    example = read_env_file(ENV_EXAMPLE)
    # Every variable the file takes from .env is in the example, and the example has no other.
    assert set(used) == set(example)
    # No secret is committed: the example leaves them empty, and compose requires them.
    for var in example:
        if SECRET_NAME.search(var) and used[var] == {":?"}:
            assert example[var] == "", f"{var} has a value in {ENV_EXAMPLE.name}"
    # A secret in a service's environment is an interpolation, never a literal.
    for name in LAGWATCH_SERVICES:
        for var, value in service_env(raw["services"][name]).items():
            if SECRET_NAME.search(var):
                assert re.fullmatch(r"\$\{\w+:[?-][^}]*\}", value), f"{name}: {var}={value!r}"
    assert "${POSTGRES_PASSWORD:?" in service_env(raw["services"]["web"])["DATABASE_URL"]


def test_required_values_stop_compose_when_missing(raw: dict) -> None:
    required = {var for var, ops in compose_variables(raw).items() if ":?" in ops}
    assert {"DJANGO_SECRET_KEY", "POSTGRES_PASSWORD", "LAGWATCH_INGEST_TOKEN",
            "LAGWATCH_ALLOWED_HOSTS", "EMAIL_HOST", "LAGWATCH_ALERTS_EMAIL_FROM"} <= required  # fmt: skip
    for var in sorted(required):
        for env in ({k: v for k, v in filled_env().items() if k != var}, {**filled_env(), var: ""}):
            with pytest.raises(Unset) as caught:
                _walk(raw, lambda text, env=env: interpolate(text, env))
            assert caught.value.name == var
    # The example as committed (secrets empty) does not start either.
    with pytest.raises(Unset):
        _walk(raw, lambda text: interpolate(text, read_env_file(ENV_EXAMPLE)))


def _django_env_for_a_local_run(compose: dict, tmp_path: Path) -> dict[str, str]:
    """A service's environment as compose builds it, run on this machine: the data directory
    is the container's /data, so it moves to a temporary one (and so does the sample log in
    it); nothing else changes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    env.update(service_env(compose["services"]["web"]))
    env["LAGWATCH_DATA_DIR"] = str(tmp_path / "data")
    if env.get("LAGWATCH_SAMPLE_LOG_URL", "").startswith("/data/"):
        env["LAGWATCH_SAMPLE_LOG_URL"] = str(tmp_path) + env["LAGWATCH_SAMPLE_LOG_URL"]
    env["DJANGO_STATIC_ROOT"] = str(tmp_path / "static")
    return env


def test_the_compose_environment_loads_the_production_settings(
    compose: dict, tmp_path: Path
) -> None:
    envs = [service_env(compose["services"][n]) for n in sorted(DJANGO_SERVICES)]
    assert all(env == envs[0] for env in envs), "the Django services' environments differ"
    code = (
        "import json, django; django.setup();"
        "from django.conf import settings as s; from django.core.management import call_command;"
        "call_command('check', deploy=True, fail_level='WARNING');"
        "print(json.dumps({'debug': s.DEBUG, 'hosts': s.ALLOWED_HOSTS,"
        " 'db': [s.DATABASES['default'][k] for k in ('ENGINE', 'HOST', 'NAME', 'USER')],"
        " 'broker': s.CELERY_BROKER_URL, 'spark': s.SPARK_MASTER,"
        " 'token': s.LAGWATCH_INGEST_TOKEN, 'mail': [s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_USE_TLS],"
        " 'from': s.LAGWATCH_ALERTS_EMAIL_FROM, 'samples': s.LAGWATCH_SAMPLE_LOG_URL}))"
    )
    env = _django_env_for_a_local_run(compose, tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env,
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["debug"] is False
    assert got["hosts"] == ["lagwatch.example.com", "localhost"]
    assert got["db"] == ["django.db.backends.postgresql", "postgres", "lagwatch", "lagwatch"]
    assert got["broker"] == "redis://redis:6379/0"
    assert got["spark"] == "spark://spark-master:7077"
    assert got["token"] == "ingest-token-for-the-test"
    assert got["mail"] == ["smtp.example.com", 587, True]
    assert got["from"] == "lagwatch@example.com"
    assert got["samples"] == str(tmp_path / "data" / "samples")


def test_one_data_volume_for_every_process_that_reads_or_writes_it(compose: dict) -> None:
    """The collector writes the sample log, Spark's executors (the worker service drives
    them) read it and write results, the worker builds reports the web serves."""
    data_dir = service_env(compose["services"]["web"])["LAGWATCH_DATA_DIR"]
    volumes = set()
    for name in DJANGO_SERVICES | {"spark-worker"}:
        mount = mounts(compose["services"][name]).get(data_dir)
        assert mount and mount["type"] == "volume", f"{name} does not mount {data_dir}"
        volumes.add(mount["source"])
    assert volumes == {"lagwatch-data"}


def _migrate_steps(compose: dict) -> list[list[str]]:
    command = compose["services"]["migrate"]["command"]
    assert command[:2] == ["sh", "-c"]
    return [shlex.split(step) for step in command[2].split("&&")]


def test_the_cluster_file_is_mounted_where_migrate_imports_it(compose: dict) -> None:
    steps = _migrate_steps(compose)
    assert steps[0] == ["python", "manage.py", "migrate", "--noinput"]
    assert steps[1][:4] == ["python", "manage.py", "lagwatch_config", "import"]
    target = steps[1][4]
    mount = mounts(compose["services"]["migrate"])[target]
    assert mount["type"] == "bind" and mount["read_only"] is True
    assert (ROOT / mount["source"]).resolve() == CLUSTERS_EXAMPLE
    # The collector and the web start after the import: the clusters are known at once.
    for name in ("collector", "worker", "web", "beat"):
        dep = compose["services"][name]["depends_on"]["migrate"]
        assert dep["condition"] == "service_completed_successfully"


def test_the_cluster_file_imports_with_the_migrate_command(compose: dict, tmp_path: Path) -> None:
    """The migrate service's own commands, run here on a temporary SQLite database."""
    clusters = parse_config(CLUSTERS_EXAMPLE.read_text(encoding="utf-8"))
    assert clusters
    target = _migrate_steps(compose)[1][4]
    env = _django_env_for_a_local_run(compose, tmp_path)
    database = tmp_path / "lagwatch.sqlite3"
    env["DATABASE_URL"] = f"sqlite:///{database}"
    for step in _migrate_steps(compose):
        argv = [sys.executable if a == "python" else a for a in step]
        argv = [str(CLUSTERS_EXAMPLE) if a == target else a for a in argv]
        result = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr
    assert "created: " + ", ".join(c.name for c in clusters) in result.stdout
    with sqlite3.connect(database) as db:
        rows = db.execute(
            "SELECT name, kafka_bootstrap_servers, zk_hosts FROM monitoring_cluster"
        ).fetchall()
    assert sorted(rows) == sorted((c.name, c.kafka_bootstrap_servers, c.zk_hosts) for c in clusters)
    # It names the stack's own services, at the addresses they listen on.
    services = compose["services"]
    kafka_listeners = services["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    for cluster in clusters:
        for server in cluster.kafka_bootstrap_servers.split(","):
            assert f"PLAINTEXT://{server}" in kafka_listeners.split(",")
        for host in cluster.zk_hosts.split(","):
            name, _, port = host.partition(":")
            assert name == "zookeeper" and port == "2181"


def test_spark_runs_the_pinned_pyspark_from_the_lagwatch_image(compose: dict) -> None:
    services = compose["services"]
    master, worker = services["spark-master"]["command"], services["spark-worker"]["command"]
    assert master[:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert worker[:2] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
    host, port = master[master.index("--host") + 1], master[master.index("--port") + 1]
    url = f"spark://{host}:{port}"
    assert worker[-1] == url
    for name in DJANGO_SERVICES:
        assert service_env(services[name])["SPARK_MASTER"] == url
    # The image installs requirements.txt, whose pyspark brings spark-class onto PATH.
    pins = dict(
        line.split("==", 1)
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert re.search(r"pip install .*-r requirements\.txt", (ROOT / "Dockerfile").read_text())
    assert metadata.version("pyspark") == pins["pyspark"]
    scripts = [str(f) for f in metadata.files("pyspark") or []]
    assert any(f.endswith("bin/spark-class") and not f.startswith("pyspark/") for f in scripts)
    # The image's user cannot write into pyspark's own directory (the default work dir).
    assert "--work-dir" in worker
    # SPARK_LOCAL_IP=0.0.0.0 made the driver advertise 0.0.0.0 to the executors.
    for name in LAGWATCH_SERVICES:
        assert "SPARK_LOCAL_IP" not in service_env(services[name])


def test_depends_on_names_defined_services_and_waits_for_health(compose: dict) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dep, cond in service.get("depends_on", {}).items():
            assert dep in services, f"{name} depends on undefined {dep}"
            assert cond["condition"] in {"service_healthy", "service_completed_successfully"}
            if cond["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], f"{dep} has no healthcheck"
            else:  # a one-shot: restarted, it would never complete
                assert services[dep]["restart"] == "no", dep
    assert set(services["worker"]["depends_on"]) >= {
        "redis", "kafka", "zookeeper", "migrate", "spark-master", "spark-worker"
    }  # fmt: skip
    assert set(services["collector"]["depends_on"]) >= {"redis", "kafka", "zookeeper", "migrate"}
    assert "collectors" in services["collector"]["command"]
    # The worker runs the Spark jobs (queue "spark") besides the default queue's tasks.
    worker = services["worker"]["command"]
    assert set(worker[worker.index("-Q") + 1].split(",")) == {"celery", "spark"}
    assert worker[worker.index("--pool") + 1] == "threads"
    assert set(services["web"]["depends_on"]) >= {"redis", "migrate"}
    assert set(services["beat"]["depends_on"]) >= {"redis", "migrate"}
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_health_checks_ask_what_the_services_answer(compose: dict) -> None:
    services = compose["services"]
    for name, service in services.items():
        if name != "migrate":
            assert "test" in service.get("healthcheck", {}), f"{name} has no healthcheck"
    # The web's probe reaches /health/ as localhost, which its allowed hosts must accept.
    probe = " ".join(services["web"]["healthcheck"]["test"])
    assert "http://localhost:8000/health/" in probe
    hosts = service_env(services["web"])["DJANGO_ALLOWED_HOSTS"].split(",")
    assert "localhost" in hosts
    # Each Celery worker's probe pings its own node name (-n), not any worker's.
    for name in ("worker", "collector"):
        command = services[name]["command"]
        node = command[command.index("-n") + 1].replace("%h", "$HOSTNAME")
        assert f"-d {node} " in services[name]["healthcheck"]["test"][1], name


def test_named_volumes_are_declared(compose: dict) -> None:
    declared = set(compose["volumes"])
    used = {
        mount["source"]
        for service in compose["services"].values()
        for mount in mounts(service).values()
        if mount["type"] == "volume"
    }
    assert used <= declared, f"undeclared volumes: {used - declared}"
    assert {"postgres-data", "kafka-data", "zookeeper-data", "lagwatch-data"} <= used


def test_ports_and_environment(compose: dict) -> None:
    services = compose["services"]
    assert "8000:8000" in services["web"]["ports"]
    assert "9092:9092" in services["kafka"]["ports"]
    # The broker users get is the one the lab, the tests and the benchmarks ran against.
    assert services["kafka"]["image"] == f"apache/kafka:{kafka_version()}"
    env = service_env(services["web"])
    assert env["DATABASE_URL"].startswith("postgres://")
    assert env["REDIS_URL"] == "redis://redis:6379/0"


def test_secrets_stay_out_of_the_image_and_the_repository() -> None:
    dockerignore = (ROOT / ".dockerignore").read_text().split()
    assert {".env", ".venv", "var"} <= set(dockerignore)
    assert ".env" in (ROOT / ".gitignore").read_text().split()

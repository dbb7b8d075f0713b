"""deploy/helm/lagwatch: linted and rendered by a real helm, and held to the product's settings.

There is no Kubernetes here, so, as tests/test_docker_compose.py does for compose, the chart is
checked by what it renders (``helm template``, helm built from its Go module:
tests/deploy/tools.py), each manifest decoded strictly into its Kubernetes type (client-go,
tests/deploy/kubecheck): every Lagwatch container gets every variable the production settings
require, exactly the variables compose gives its Django services (plus the extra settings asked
for), none the code does not read, and every secret from a Secret, never a ConfigMap; the
environment it renders loads the production settings (``check --deploy``); the processes are
compose's (web, the workers on their queues, one beat, migrations then the clusters import); the
probes ask /health/ as a host Django accepts; values the deployment cannot do without stop the
render, naming themselves.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.deploy.tools import helm_binary, kubecheck_binary
from tests.test_docker_compose import (
    COMPOSE,
    DEPLOYMENT_NEEDS,
    DJANGO_SERVICES,
    SECRET_NAME,
    deployed_env_reads,
    required_in_production,
    service_env,
)

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "lagwatch"
TEST_VALUES = CHART / "ci" / "test-values.yaml"
RELEASE, NAMESPACE = "rel", "monitoring"
NAME = f"{RELEASE}-lagwatch"
WORKERS = {"default": "celery", "collectors": "collectors", "spark": "spark"}
LAGWATCH_WORKLOADS = {"web", *(f"worker-{w}" for w in WORKERS), "beat", "migrate"}
# Beyond what compose sets: what the test values add (settings.extra).
EXTRA = {"LAGWATCH_OPEN_ENDPOINTS_AUTH"}
# Secret by what they hold, though their names do not say so.
SECRET_URLS = {"DATABASE_URL", "REDIS_URL"}
# The settings without which nothing renders, for a render without the test values.
REQUIRED_SETTINGS = (
    "settings.allowedHosts={lagwatch.example.com}",
    "settings.email.host=smtp.example.com",
    "settings.email.from=lagwatch@example.com",
)


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm), *args], capture_output=True, text=True, check=False, timeout=120,
        env={**os.environ, "HELM_CACHE_HOME": "/nonexistent", "HELM_CONFIG_HOME": "/nonexistent"},
    )  # fmt: skip


def render_text(helm: Path, *sets: str, values: Path | None = TEST_VALUES) -> str:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    if values:
        args += ["-f", str(values)]
    for item in sets:
        args += ["--set", item]
    result = run_helm(helm, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def render(helm: Path, *sets: str, values: Path | None = TEST_VALUES) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(render_text(helm, *sets, values=values)) if doc]


@pytest.fixture(scope="module")
def manifests(helm: Path) -> list[dict]:
    return render(helm)


def by_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def workloads(docs: list[dict]) -> dict[str, dict]:
    """Component -> its pod spec (Deployments, StatefulSets, Jobs)."""
    found = {}
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet", "Job"):
            template = doc["spec"]["template"]
            found[template["metadata"]["labels"]["app.kubernetes.io/component"]] = template["spec"]
    return found


def container(docs: list[dict], component: str) -> dict:
    (only,) = workloads(docs)[component]["containers"]
    return only


def environment(docs: list[dict], box: dict) -> dict[str, str | None]:
    """A container's variables, resolved: ConfigMap values as they are, Secret values from the
    chart's own Secret (None for one it does not create), each with where it came from."""
    config_maps, secrets = by_kind(docs, "ConfigMap"), by_kind(docs, "Secret")
    env: dict[str, str | None] = {}
    for source in box.get("envFrom", []):
        if ref := source.get("configMapRef"):
            env.update(config_maps[ref["name"]]["data"])
    for var in box.get("env", []):
        ref = var.get("valueFrom", {}).get("secretKeyRef")
        if ref is None:
            env[var["name"]] = var.get("value", "")
        elif ref["name"] in secrets:
            env[var["name"]] = secrets[ref["name"]]["stringData"].get(ref["key"])
        else:
            env[var["name"]] = None
    return env


def compose_django_env() -> dict[str, str]:
    raw = yaml.safe_load(COMPOSE.read_text())
    (env,) = {json.dumps(service_env(raw["services"][n]), sort_keys=True) for n in DJANGO_SERVICES}
    return json.loads(env)


def lagwatch_containers(docs: list[dict]) -> Iterator[tuple[str, dict]]:
    for component, spec in workloads(docs).items():
        if component in LAGWATCH_WORKLOADS:
            yield component, spec["containers"][0]


# --- helm lint, and what stops a render ---------------------------------------------------


def test_helm_lint(helm: Path) -> None:
    result = run_helm(helm, "lint", str(CHART), "-f", str(TEST_VALUES), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("unset", "named"),
    [
        ("settings.allowedHosts=null", "settings.allowedHosts"),
        ("settings.email.host=", "settings.email.host"),
        ("settings.email.from=", "settings.email.from"),
        ("secrets.djangoSecretKey=", "secrets.djangoSecretKey"),
        ("secrets.ingestToken=", "secrets.ingestToken"),
        ("postgresql.password=", "postgresql.password"),
        ("postgresql.enabled=false", "externalDatabase.url"),
        ("redis.enabled=false", "externalRedis.url"),
        ("settings.extra.EMAIL_HOST_PASSWORD=x", "settings.extra.EMAIL_HOST_PASSWORD"),
    ],
)
def test_a_value_a_deployment_needs_stops_the_render(helm: Path, unset: str, named: str) -> None:
    """As compose's ``${VAR:?}``: nothing is installed that could not run, or would put a
    secret in a ConfigMap."""
    result = run_helm(helm, "template", RELEASE, str(CHART), "-f", str(TEST_VALUES),
                      "--set", unset)  # fmt: skip
    assert result.returncode != 0 and named in result.stderr, result.stderr


def test_the_default_values_name_what_to_fill_in(helm: Path) -> None:
    result = run_helm(helm, "template", RELEASE, str(CHART))
    assert result.returncode != 0 and "settings.allowedHosts" in result.stderr


@pytest.mark.parametrize("variant", ["test values", "existing secret, external services"])
def test_every_manifest_decodes_strictly_into_its_kubernetes_type(helm: Path, variant: str) -> None:
    """What the API server would refuse (a misspelt field, a string for a number) and helm
    renders without a word: tests/deploy/kubecheck decodes each document with client-go."""
    if variant == "test values":
        text = render_text(helm, "persistence.storageClass=nfs", "postgresql.storageClass=ssd")
    else:
        text = render_text(helm, *REQUIRED_SETTINGS, "secrets.existingSecret=lagwatch-prod",
                           "postgresql.enabled=false", "redis.enabled=false",
                           "persistence.enabled=false", values=None)  # fmt: skip
    result = subprocess.run(
        [str(kubecheck_binary())], input=text, capture_output=True, text=True, check=False,
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok ") == text.count("\nkind: "), result.stdout


# --- The processes ------------------------------------------------------------------------


def test_compose_s_processes(manifests: list[dict]) -> None:
    """web (gunicorn), a worker per queue (compose's worker takes celery and spark together;
    here each has its own Deployment, sized apart), beat, migrations, PostgreSQL, Redis."""
    assert set(workloads(manifests)) == LAGWATCH_WORKLOADS | {"postgresql", "redis"}
    assert container(manifests, "web")["command"][:2] == ["gunicorn", "dashboard.wsgi"]
    for name, queue in WORKERS.items():
        command = container(manifests, f"worker-{name}")["command"]
        assert command[:4] == ["celery", "-A", "dashboard", "worker"]
        assert command[command.index("-Q") + 1] == queue
        assert command[command.index("--pool") + 1] == "threads"
        # The probe pings this worker's own node, not any worker's.
        node = command[command.index("-n") + 1].replace("%h", "$HOSTNAME")
        probe = container(manifests, f"worker-{name}")["livenessProbe"]["exec"]["command"]
        assert f"-d {node} " in probe[-1], name
    queues = {q for name in WORKERS for q in WORKERS[name].split(",")}
    compose = yaml.safe_load(COMPOSE.read_text())["services"]
    compose_queues = set()
    for name in ("worker", "collector"):
        command = compose[name]["command"]
        compose_queues |= set(command[command.index("-Q") + 1].split(","))
    assert queues == compose_queues


def test_exactly_one_beat(manifests: list[dict]) -> None:
    beat = by_kind(manifests, "Deployment")[f"{NAME}-beat"]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"]["type"] == "Recreate"  # the old one stops first
    assert container(manifests, "beat")["command"][:4] == ["celery", "-A", "dashboard", "beat"]


def test_migrations_are_a_hook_running_compose_s_migrate_commands(manifests: list[dict]) -> None:
    job = by_kind(manifests, "Job")[f"{NAME}-migrate"]
    hooks = job["metadata"]["annotations"]
    assert set(hooks["helm.sh/hook"].split(",")) == {"post-install", "pre-upgrade"}
    compose = yaml.safe_load(COMPOSE.read_text())["services"]["migrate"]["command"]
    box = container(manifests, "migrate")
    assert box["command"] == compose  # migrate, then import /etc/lagwatch/clusters.yaml
    target = shlex.split(compose[2].split("&&")[1])[-1]
    (mount,) = [m for m in box["volumeMounts"] if target.startswith(m["mountPath"] + "/")]
    assert mount["readOnly"] is True
    volume = {v["name"]: v for v in workloads(manifests)["migrate"]["volumes"]}[mount["name"]]
    clusters = by_kind(manifests, "ConfigMap")[volume["configMap"]["name"]]
    values = yaml.safe_load(TEST_VALUES.read_text())
    assert clusters["data"][Path(target).name] == values["clusters"]["file"]
    # Made just before the Job at an upgrade too, so the new file is the one imported.
    assert clusters["metadata"]["annotations"]["helm.sh/hook-weight"] == "-1"
    assert int(job["metadata"]["annotations"]["helm.sh/hook-weight"]) > -1
    # The {env: VAR} references of the file, from the Secret named for them, for the Job only.
    refs = [s["secretRef"]["name"] for s in box["envFrom"] if "secretRef" in s]
    assert refs == [values["clusters"]["envFromSecret"]]
    for component, other in lagwatch_containers(manifests):
        if component != "migrate":
            assert not [s for s in other["envFrom"] if "secretRef" in s], component


def test_without_a_clusters_file_the_job_only_migrates(helm: Path) -> None:
    docs = render(helm, "clusters.file=")
    assert container(docs, "migrate")["command"] == [
        "sh", "-c", "python manage.py migrate --noinput"
    ]  # fmt: skip
    assert f"{NAME}-clusters" not in by_kind(docs, "ConfigMap")


# --- The environment ----------------------------------------------------------------------


def test_every_lagwatch_container_gets_compose_s_settings(manifests: list[dict]) -> None:
    reads = deployed_env_reads()
    needed = {**required_in_production(reads), **DEPLOYMENT_NEEDS}
    read_names = {r.name for r in reads}
    compose = compose_django_env()
    for component, box in lagwatch_containers(manifests):
        env = environment(manifests, box)
        missing = {var: why for var, why in needed.items() if var not in env}
        assert not missing, f"{component} lacks {missing}"
        assert set(env) <= read_names, (
            f"{component} sets what nothing reads: {set(env) - read_names}"
        )
        assert set(env) == set(compose) | EXTRA, f"{component}: {set(env) ^ (set(compose) | EXTRA)}"
        assert env["DJANGO_SETTINGS_MODULE"] == "dashboard.settings.production"
        # The same values as compose where the deployment, not the user, decides them.
        for var in ("LAGWATCH_DATA_DIR", "DJANGO_SECURE_PROXY_SSL_HEADER", "EMAIL_PORT"):
            assert env[var] == compose[var].split(":-")[-1].rstrip("}"), (component, var)
        assert env["REDIS_URL"] == f"redis://{NAME}-redis:6379/0"
        assert env["DATABASE_URL"].endswith(f"@{NAME}-postgresql:5432/lagwatch")
    environments = {json.dumps(environment(manifests, box), sort_keys=True)
                    for _, box in lagwatch_containers(manifests)}  # fmt: skip
    assert len(environments) == 1, "the Lagwatch containers' environments differ"


def test_secrets_come_from_a_secret_never_a_config_map(manifests: list[dict]) -> None:
    for name, config_map in by_kind(manifests, "ConfigMap").items():
        for key, value in config_map["data"].items():
            assert not (SECRET_NAME.search(key) or key == "DATABASE_URL"), f"{name}: {key}"
            assert "not-a-real" not in value, f"{name}: {key} holds a secret value"
    for component, box in lagwatch_containers(manifests):
        for var in box["env"]:
            if SECRET_NAME.search(var["name"]) or var["name"] in SECRET_URLS:
                assert "secretKeyRef" in var.get("valueFrom", {}), f"{component}: {var['name']}"
    postgres = container(manifests, "postgresql")["env"]
    (password,) = [v for v in postgres if v["name"] == "POSTGRES_PASSWORD"]
    assert password["valueFrom"]["secretKeyRef"]["name"] == f"{NAME}-secrets"


def test_an_existing_secret_and_external_services(helm: Path) -> None:
    """existingSecret: the chart makes no Secret and asks that one for every secret; external
    PostgreSQL and Redis: no StatefulSet, and both URLs (which hold passwords) from it."""
    docs = render(helm, *REQUIRED_SETTINGS, "secrets.existingSecret=lagwatch-prod",
                  "postgresql.enabled=false", "redis.enabled=false", values=None)  # fmt: skip
    assert not by_kind(docs, "Secret") and not by_kind(docs, "StatefulSet")
    for component, box in lagwatch_containers(docs):
        refs = {v["name"]: v["valueFrom"]["secretKeyRef"] for v in box["env"]}
        assert {"DJANGO_SECRET_KEY", "LAGWATCH_INGEST_TOKEN", "DATABASE_URL", "REDIS_URL",
                "EMAIL_HOST_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "LAGWATCH_OIDC_CLIENT_SECRET"} == set(refs), (
            component)  # fmt: skip
        assert {ref["name"] for ref in refs.values()} == {"lagwatch-prod"}
        for optional in ("EMAIL_HOST_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                         "LAGWATCH_OIDC_CLIENT_SECRET"):  # fmt: skip
            assert refs[optional].get("optional") is True  # may be absent
    (settings,) = by_kind(docs, "ConfigMap").values()
    assert "REDIS_URL" not in settings["data"]


def test_the_chart_environment_loads_the_production_settings(
    manifests: list[dict], tmp_path: Path
) -> None:
    """What the pods get, run here as compose's environment is (tests/test_docker_compose.py):
    the production settings load and pass ``check --deploy``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    env.update(environment(manifests, container(manifests, "web")))
    env["LAGWATCH_DATA_DIR"] = str(tmp_path / "data")  # the pod's /data
    env["DJANGO_STATIC_ROOT"] = str(tmp_path / "static")
    code = (
        "import json, django; django.setup();"
        "from django.conf import settings as s; from django.core.management import call_command;"
        "call_command('check', deploy=True, fail_level='WARNING');"
        "print(json.dumps({'debug': s.DEBUG, 'hosts': s.ALLOWED_HOSTS,"
        " 'db': [s.DATABASES['default'][k] for k in ('ENGINE', 'HOST', 'NAME', 'USER')],"
        " 'broker': s.CELERY_BROKER_URL, 'spark': s.SPARK_MASTER, 'auth': s.LAGWATCH_OPEN_ENDPOINTS_AUTH,"
        " 'mail': [s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_USE_TLS, s.EMAIL_HOST_PASSWORD]}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env,
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["debug"] is False
    assert got["hosts"] == ["lagwatch.example.com", "localhost", f"{NAME}-web",
                            f"{NAME}-web.{NAMESPACE}.svc"]  # fmt: skip
    assert got["db"] == ["django.db.backends.postgresql", f"{NAME}-postgresql", "lagwatch",
                         "lagwatch"]  # fmt: skip
    assert got["broker"] == f"redis://{NAME}-redis:6379/0"
    assert got["spark"] == "local[*]"
    assert got["auth"] == "token"
    assert got["mail"] == ["smtp.example.com", 587, True, "not-a-real-smtp-password"]



def test_single_sign_on_settings_reach_every_pod(helm: Path, tmp_path: Path) -> None:
    """settings.sso and secrets.oidcClientSecret: the issuer and the role map in the ConfigMap,
    the client's secret from the Secret; the production settings load with single sign-on on."""
    docs = render(helm, "settings.sso.issuer=https://id.example.com/realms/ops",
                  "settings.sso.clientId=lagwatch", "settings.sso.groupRoles=sre=operator\\,leads=admin",
                  "settings.sso.requireGroup=true",
                  "secrets.oidcClientSecret=not-a-real-oidc-secret")  # fmt: skip
    env = environment(docs, container(docs, "web"))
    assert env["LAGWATCH_OIDC_ISSUER"] == "https://id.example.com/realms/ops"
    assert env["LAGWATCH_OIDC_GROUP_ROLES"] == "sre=operator,leads=admin"
    assert env["LAGWATCH_OIDC_REQUIRE_GROUP"] == "1"
    assert env["LAGWATCH_OIDC_CLIENT_SECRET"] == "not-a-real-oidc-secret"
    for config_map in by_kind(docs, "ConfigMap").values():
        assert "LAGWATCH_OIDC_CLIENT_SECRET" not in config_map["data"]
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    run_env.update({k: v for k, v in env.items() if v is not None})
    run_env["LAGWATCH_DATA_DIR"] = str(tmp_path / "data")
    code = (
        "import json, django; django.setup(); from django.conf import settings as s;"
        "print(json.dumps([s.SSO_ENABLED, s.OIDC_RP_CLIENT_ID, s.LAGWATCH_OIDC_GROUP_ROLES]))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=run_env,
                            capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    sso, client_id, roles = json.loads(result.stdout.strip().splitlines()[-1])
    assert (sso, client_id) == (True, "lagwatch")
    assert roles == {"sre": "operator", "leads": "admin"}

# --- Probes, volumes, resources, images -----------------------------------------------------


def test_web_probes_ask_health_as_an_allowed_host(manifests: list[dict]) -> None:
    web = container(manifests, "web")
    hosts = environment(manifests, web)["DJANGO_ALLOWED_HOSTS"].split(",")
    for probe in ("readinessProbe", "livenessProbe"):
        get = web[probe]["httpGet"]
        assert get["path"] == "/health/" and get["port"] == "http"
        (host,) = [h["value"] for h in get["httpHeaders"] if h["name"] == "Host"]
        assert host in hosts, probe
    service = by_kind(manifests, "Service")[f"{NAME}-web"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_every_lagwatch_pod_mounts_the_one_shared_data_volume(manifests: list[dict]) -> None:
    (claim,) = by_kind(manifests, "PersistentVolumeClaim").values()
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]  # pods on several nodes
    for component, box in lagwatch_containers(manifests):
        data_dir = environment(manifests, box)["LAGWATCH_DATA_DIR"]
        (mount,) = [m for m in box["volumeMounts"] if m["mountPath"] == data_dir]
        volumes = {v["name"]: v for v in workloads(manifests)[component]["volumes"]}
        claim_name = volumes[mount["name"]]["persistentVolumeClaim"]["claimName"]
        assert claim_name == claim["metadata"]["name"], component


def test_every_container_has_resources(manifests: list[dict]) -> None:
    for component, spec in workloads(manifests).items():
        for box in spec["containers"]:
            assert box["resources"]["requests"]["memory"], component
            assert box["resources"]["limits"]["memory"], component


def test_the_lagwatch_pods_run_as_the_image_s_user(manifests: list[dict]) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    for component, spec in workloads(manifests).items():
        if component in LAGWATCH_WORKLOADS:
            assert spec["securityContext"]["runAsNonRoot"] is True
            assert f"--uid {spec['securityContext']['runAsUser']} " in dockerfile, component
            assert spec["automountServiceAccountToken"] is False


def test_images_are_compose_s(manifests: list[dict]) -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert container(manifests, "postgresql")["image"] == services["postgres"]["image"]
    assert container(manifests, "redis")["image"] == services["redis"]["image"]
    for _, box in lagwatch_containers(manifests):
        assert box["image"] == services["web"]["image"]  # lagwatch:<appVersion>

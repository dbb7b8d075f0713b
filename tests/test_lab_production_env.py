"""The lab's production mode (``python -m lab up --production``) without starting it: the
environment, command lines and ``lab env`` line it gives. The running stack is smoke-tested by
``tests/lab/test_production_run.py``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from lagwatch_client import IngestSender, StatsForwarder

from lab.__main__ import manage_exports
from lab.services import (
    SECRET_KEY_FILE,
    Context,
    _web_argv,
    _workload_argv,
    django_env,
    production_env,
)
from lab.stack import Stack
from lab.workload.__main__ import parse_args
from tests.alerts.receivers import HookReceiver
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
PORTS = {"postgres": 25432, "redis": 26379, "web": 28000, "zookeeper": 22181, "kafka": 29092,
         "control": 28100, "storm_ui": 28200}  # fmt: skip
# What compose sets that the lab's production mode leaves out, and why: the lab runs Spark in
# local mode unless its Spark cluster is in the stack (then SPARK_MASTER is set, as compose
# does), and it has no SMTP server (its alerts go to webhooks).
NOT_IN_THE_LAB = {"SPARK_MASTER", "SPARK_LOCAL_IP"}
# The sample log's object store: given only with the optional object-store service (the last
# test below), like SPARK_MASTER with the Spark cluster.
NOT_IN_THE_LAB |= {"LAGWATCH_SAMPLE_LOG_URL", "LAGWATCH_S3_ENDPOINT", "LAGWATCH_S3_REGION",
                   "LAGWATCH_S3_PATH_STYLE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                   "LAGWATCH_SPARK_JARS"}  # fmt: skip
# Single sign-on: given only with the optional OIDC issuer (lab/oidc_issuer.py), as the
# object store's settings are; compose passes them through empty (single sign-on off).
NOT_IN_THE_LAB |= {"LAGWATCH_OIDC_ISSUER", "LAGWATCH_OIDC_CLIENT_ID", "LAGWATCH_OIDC_CLIENT_SECRET",
                   "LAGWATCH_OIDC_GROUPS_CLAIM", "LAGWATCH_OIDC_GROUP_ROLES",
                   "LAGWATCH_OIDC_REQUIRE_GROUP"}  # fmt: skip
# Mail: the mode sends no email (webhooks only), so no mail server nor sender address.
MAIL = {"LAGWATCH_ALERTS_EMAIL_FROM"}


def production_ctx(run_dir: Path, **ports: int) -> Context:
    redis_url = f"redis://127.0.0.1:{PORTS['redis']}/0"
    return Context(run_dir=run_dir, ports={**PORTS, **ports}, redis_url=redis_url, production=True)


def test_the_product_gets_what_compose_gives_it(tmp_path: Path) -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    wanted = {
        key for key in compose["x-lagwatch-env"]
        if key not in NOT_IN_THE_LAB | MAIL and not key.startswith("EMAIL_")
    }  # fmt: skip
    env = django_env(production_ctx(tmp_path))
    assert wanted <= env.keys(), sorted(wanted - env.keys())
    assert env["DJANGO_SETTINGS_MODULE"] == "dashboard.settings.production"
    assert env["DJANGO_SECURE_PROXY_SSL_HEADER"] == "1"  # as compose: TLS ends at a proxy
    assert env["DJANGO_SECURE_SSL_REDIRECT"] == "1"
    assert env["DATABASE_URL"].startswith("postgres://lagwatch:")
    assert env["DATABASE_URL"].endswith(f"@127.0.0.1:{PORTS['postgres']}/lagwatch")


def test_the_secret_key_is_long_kept_private_and_shared(tmp_path: Path) -> None:
    ctx = production_ctx(tmp_path)
    key = production_env(ctx)["DJANGO_SECRET_KEY"]
    assert len(key) >= 50 and len(set(key)) >= 5  # Django's security.W009
    assert production_env(ctx)["DJANGO_SECRET_KEY"] == key  # every process, every restart
    assert (tmp_path / SECRET_KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert production_env(production_ctx(tmp_path / "other"))["DJANGO_SECRET_KEY"] != key


def test_there_is_no_production_mode_without_postgresql(tmp_path: Path) -> None:
    ports = {k: v for k, v in PORTS.items() if k != "postgres"}
    with pytest.raises(ValueError, match="PostgreSQL"):
        django_env(Context(run_dir=tmp_path, ports=ports, production=True))
    assert "DATABASE_URL" not in django_env(Context(run_dir=tmp_path, ports=ports))


def test_gunicorn_serves_the_production_mode_and_runserver_the_other(tmp_path: Path) -> None:
    argv = _web_argv(production_ctx(tmp_path))
    assert argv[1:4] == ["-m", "gunicorn", "dashboard.wsgi"]
    assert argv[argv.index("--bind") + 1] == f"127.0.0.1:{PORTS['web']}"
    assert "runserver" in _web_argv(Context(run_dir=tmp_path, ports=PORTS))


def test_the_workload_pushes_through_the_pretend_tls_front(tmp_path: Path) -> None:
    argv = _workload_argv(production_ctx(tmp_path))
    assert argv[argv.index("--ingest-header") + 1] == "X-Forwarded-Proto=https"
    assert "--ingest-header" not in _workload_argv(Context(run_dir=tmp_path, ports=PORTS))
    args = parse_args([*argv[3:]])  # after "python -m lab.workload"
    assert dict(args.ingest_header) == {"X-Forwarded-Proto": "https"}
    with pytest.raises(SystemExit):
        parse_args(["--bootstrap", "b", "--zk", "z", "--control-port", "1",
                    "--storm-ui-port", "2", "--ingest-header", "no-equals-sign"])  # fmt: skip


def test_a_push_carries_the_extra_headers() -> None:
    hook = HookReceiver()
    sender = IngestSender(hook.url, "tok", headers={"X-Forwarded-Proto": "https"})
    try:
        StatsForwarder(sender, group="g")(json.dumps({"name": "c#consumer-1"}))
        sender.flush()
        (request,) = wait_for(lambda: hook.requests, 10, "the push")
    finally:
        sender.close()
        hook.close()
    assert request["headers"]["X-Forwarded-Proto"] == "https"
    assert request["headers"]["Authorization"] == "Bearer tok"
    assert request["path"].endswith("/librdkafka?group=g")


def test_the_env_line_reads_the_secrets_without_printing_them(tmp_path: Path) -> None:
    state = {
        "version": 1, "id": "x", "run_dir": str(tmp_path), "boot_id": "", "production": True,
        "redis_url": f"redis://127.0.0.1:{PORTS['redis']}/0",
        "services": [
            {"name": name, "ports": {name: PORTS[name]}, "log": ""}
            for name in ("postgres", "redis", "web")
        ],
    }  # fmt: skip
    (tmp_path / "stack.json").write_text(json.dumps(state))
    stack = Stack.load(tmp_path)
    env = stack.django_env()
    line = manage_exports(stack)
    assert env["DJANGO_SECRET_KEY"] not in line
    assert env["DATABASE_URL"].split(":")[2].split("@")[0] not in line  # the password
    shown = subprocess.run(
        ["bash", "-c", f'{line}; printf "%s\\n%s\\n%s" "$DJANGO_SETTINGS_MODULE" '
         '"$DJANGO_SECRET_KEY" "$DATABASE_URL"'],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")  # fmt: skip
    assert shown == [
        "dashboard.settings.production", env["DJANGO_SECRET_KEY"], env["DATABASE_URL"],
    ]  # fmt: skip


def test_the_env_line_reads_the_object_store_s_credentials_from_their_files(
    tmp_path: Path,
) -> None:
    state = {
        "version": 1, "id": "x", "run_dir": str(tmp_path), "boot_id": "", "production": False,
        "redis_url": f"redis://127.0.0.1:{PORTS['redis']}/0",
        "services": [{"name": "object-store", "ports": {"s3": PORTS["web"] + 1}, "log": ""}],
    }  # fmt: skip
    (tmp_path / "stack.json").write_text(json.dumps(state))
    stack = Stack.load(tmp_path)
    env = stack.django_env()
    assert env["LAGWATCH_SAMPLE_LOG_URL"] == "s3a://lagwatch/samples"
    assert env["LAGWATCH_S3_ENDPOINT"] == f"http://127.0.0.1:{PORTS['web'] + 1}"
    line = manage_exports(stack)
    assert env["AWS_SECRET_ACCESS_KEY"] not in line and env["AWS_ACCESS_KEY_ID"] not in line
    shown = subprocess.run(
        ["bash", "-c", f'{line}; printf "%s\\n%s\\n%s\\n%s" "$LAGWATCH_SAMPLE_LOG_URL" '
         '"$LAGWATCH_S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"'],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")  # fmt: skip
    assert shown == [env["LAGWATCH_SAMPLE_LOG_URL"], env["LAGWATCH_S3_ENDPOINT"],
                     env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]]  # fmt: skip

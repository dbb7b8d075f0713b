"""LAGWATCH_OPEN_ENDPOINTS_AUTH: /metrics and /v3 open, behind a token, or behind basic auth."""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dashboard.api.tokens import revoke_token

pytestmark = pytest.mark.django_db

OPEN = ("/metrics", "/v3/kafka")


def basic(user: str, password: str) -> dict[str, str]:
    raw = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {raw}"}


@pytest.mark.parametrize("url", OPEN)
def test_none_is_open(client: Client, settings, url: str) -> None:
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "none"
    assert client.get(url).status_code == 200


@pytest.mark.parametrize("url", OPEN)
def test_token_mode(client: Client, settings, read_secret: str, url: str) -> None:
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "token"
    refused = client.get(url)
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == 'Bearer realm="lagwatch"'
    assert client.get(url, headers={"Authorization": f"Bearer {read_secret}"}).status_code == 200
    assert client.get(url, headers=basic("u", "p")).status_code == 401
    revoke_token("reader")
    assert client.get(url, headers={"Authorization": f"Bearer {read_secret}"}).status_code == 401


@pytest.mark.parametrize("url", OPEN)
def test_basic_mode(client: Client, settings, read_secret: str, url: str) -> None:
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "basic"
    settings.LAGWATCH_OPEN_ENDPOINTS_USER = "prom"
    settings.LAGWATCH_OPEN_ENDPOINTS_PASSWORD = "sc:rape-pass"
    refused = client.get(url)
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == 'Basic realm="lagwatch", charset="UTF-8"'
    assert client.get(url, headers=basic("prom", "sc:rape-pass")).status_code == 200
    for user, password in (("prom", "wrong"), ("other", "sc:rape-pass"), ("prom", "")):
        assert client.get(url, headers=basic(user, password)).status_code == 401
    garbage = {"Authorization": "Basic !!!not-base64"}
    assert client.get(url, headers=garbage).status_code == 401
    assert client.get(url, headers={"Authorization": f"Bearer {read_secret}"}).status_code == 200


def test_refusals_keep_each_endpoints_format(client: Client, settings) -> None:
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "token"
    body = client.get("/v3/kafka").json()
    assert body["error"] is True and body["request"]["url"] == "/v3/kafka"
    response = client.get("/metrics")
    assert response["Content-Type"].startswith("text/plain")


def test_a_logged_in_session_passes_any_mode(client: Client, settings) -> None:
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "basic"
    settings.LAGWATCH_OPEN_ENDPOINTS_USER = "prom"
    settings.LAGWATCH_OPEN_ENDPOINTS_PASSWORD = "pw"
    client.force_login(get_user_model().objects.create_user("sre"))
    assert client.get("/metrics").status_code == 200


def test_misconfigured_modes_fail_closed(client: Client, settings) -> None:
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "basic"
    settings.LAGWATCH_OPEN_ENDPOINTS_USER = ""
    settings.LAGWATCH_OPEN_ENDPOINTS_PASSWORD = ""
    assert client.get("/metrics", headers=basic("", "")).status_code == 401
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "sometimes"
    assert client.get("/v3/kafka").status_code == 503


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LAGWATCH_OPEN_ENDPOINTS_AUTH": "sometimes"}, "must be none, token or basic"),
        ({"LAGWATCH_OPEN_ENDPOINTS_AUTH": "basic"}, "needs LAGWATCH_OPEN_ENDPOINTS_USER"),
    ],
)
def test_settings_refuse_a_bad_value_at_start(env: dict, message: str, tmp_path) -> None:
    import os

    run_env = {**os.environ, **env, "LAGWATCH_DATA_DIR": str(tmp_path)}
    run_env.pop("LAGWATCH_OPEN_ENDPOINTS_USER", None)
    done = subprocess.run(
        [sys.executable, "-c", "import dashboard.settings.base"],
        env=run_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0 and message in done.stderr


def test_the_api_itself_is_never_opened_by_the_setting(client: Client, settings) -> None:
    settings.LAGWATCH_OPEN_ENDPOINTS_AUTH = "none"
    assert client.get("/api/v1/groups/").status_code == 401

"""Token management: ``manage.py api_token`` and the Django admin."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from dashboard.api.models import ApiToken
from dashboard.api.tokens import TokenError, authenticate, create_token

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("api_token", *args, stdout=out)
    return out.getvalue()


def test_create_prints_the_secret_once_and_it_authenticates() -> None:
    out = run("create", "grafana")
    lines = out.splitlines()
    assert lines[0] == "created read token 'grafana'; its secret (shown once):"
    secret = lines[1]
    token = authenticate(secret)
    assert token is not None and token.name == "grafana" and token.scope == "read"
    assert secret not in run("list")  # never shown again


def test_create_write_quiet_prints_only_the_secret() -> None:
    secret = run("create", "ci", "--write", "--quiet").strip()
    assert authenticate(secret).scope == "write"


def test_list_json_and_revoke() -> None:
    run("create", "a")
    run("create", "b", "--write")
    rows = json.loads(run("list", "--json"))
    assert [(r["name"], r["scope"], r["revoked_at"]) for r in rows] == [
        ("a", "read", None), ("b", "write", None),
    ]  # fmt: skip
    assert "revoked token 'a'" in run("revoke", "a")
    rows = json.loads(run("list", "--json"))
    assert rows[0]["revoked_at"] is not None
    assert "revoked" in run("list").splitlines()[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("create", "dup"), "a token named 'dup' already exists"),
        (("create", "   "), "a token needs a name"),
        (("create", "x" * 101), "at most 100 characters"),
        (("revoke", "ghost"), "no token named 'ghost'"),
    ],
)
def test_bad_input_exits_2_and_changes_nothing(args: tuple, message: str) -> None:
    create_token("dup")
    before = list(ApiToken.objects.values_list("name", "secret_hash", "revoked_at"))
    with pytest.raises(CommandError, match=message) as caught:
        call_command("api_token", *args, stdout=io.StringIO())
    assert caught.value.returncode == 2
    assert list(ApiToken.objects.values_list("name", "secret_hash", "revoked_at")) == before


def test_create_token_refuses_an_unknown_scope() -> None:
    with pytest.raises(TokenError, match="scope must be one of read, operate, write"):
        create_token("x", "admin")


@pytest.fixture
def admin_client(db: None) -> Client:
    user = get_user_model().objects.create_superuser("root", "r@example.com")
    client = Client()
    client.force_login(user)
    return client


def test_admin_creates_a_token_and_shows_the_secret_once(admin_client: Client) -> None:
    response = admin_client.post(
        "/admin/api/apitoken/add/", {"name": "from-admin", "scope": "write"}, follow=True
    )
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    secret = next(m for m in shown if "Copy its secret now" in m).rsplit(" ", 1)[-1]
    token = authenticate(secret)
    assert token.name == "from-admin" and token.scope == "write"
    assert token.created_by.username == "root"
    page = admin_client.get(f"/admin/api/apitoken/{token.pk}/change/").content.decode()
    assert secret not in page and token.prefix in page


def test_admin_revoke_action(admin_client: Client) -> None:
    token, secret = create_token("old")
    admin_client.post(
        "/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}, follow=True
    )
    assert authenticate(secret) is None

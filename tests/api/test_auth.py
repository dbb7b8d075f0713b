"""Who may call /api/v1/: tokens and their scopes, revoked tokens, browser sessions, CSRF."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dashboard.accounts.roles import Role
from dashboard.api.models import ApiToken
from dashboard.api.tokens import create_token, revoke_token
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db

URL = "/api/v1/groups/"


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_anonymous_gets_401_with_a_bearer_challenge(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="lagwatch"'
    assert response.json() == {
        "error": {"message": "authentication required: Authorization: Bearer <token>"}
    }


def test_anonymous_is_not_redirected_to_the_login_page(client: Client) -> None:
    # the login middleware would answer 302 to /accounts/login/: a script wants 401
    assert client.get("/api/v1/status/").status_code == 401


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer   ", "Basic dXNlcjpwYXNz", "Token abc", "bearer"],
)
def test_malformed_authorization_is_401(client: Client, header: str) -> None:
    response = client.get(URL, headers={"Authorization": header})
    assert response.status_code == 401
    assert 'error="invalid_request"' in response["WWW-Authenticate"]


def test_unknown_token_is_401_invalid_token(client: Client, read_secret: str) -> None:
    response = client.get(URL, headers=bearer(read_secret + "x"))
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]
    assert response.json()["error"]["message"] == "invalid or revoked token"


def test_read_token_reads(client: Client, read_secret: str) -> None:
    assert client.get(URL, headers=bearer(read_secret)).status_code == 200


def test_scheme_is_case_insensitive(client: Client, read_secret: str) -> None:
    assert client.get(URL, headers={"Authorization": f"bearer {read_secret}"}).status_code == 200


def test_revoked_token_is_refused(client: Client, read_secret: str) -> None:
    revoke_token("reader")
    response = client.get(URL, headers=bearer(read_secret))
    assert response.status_code == 401


def test_read_token_cannot_write_403(client: Client, read_secret: str) -> None:
    response = client.post("/api/v1/reports/", "{}", content_type="application/json",
                           headers=bearer(read_secret))  # fmt: skip
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response["WWW-Authenticate"]
    assert response.json()["error"]["message"] == (
        "a read token may not build reports; needs scope operate or write"
    )


def test_write_token_also_reads(client: Client, write_secret: str) -> None:
    assert client.get(URL, headers=bearer(write_secret)).status_code == 200


def test_method_not_taken_is_405_with_allow(client: Client, write_secret: str) -> None:
    response = client.delete(URL, headers=bearer(write_secret))
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert response.json()["error"]["message"] == "method DELETE not allowed here"


def test_last_used_is_recorded_without_a_write_per_request(
    client: Client, read_secret: str, django_assert_num_queries
) -> None:
    assert ApiToken.objects.get(name="reader").last_used_at is None
    client.get(URL, headers=bearer(read_secret))
    first = ApiToken.objects.get(name="reader").last_used_at
    assert first is not None
    client.get(URL, headers=bearer(read_secret))
    assert ApiToken.objects.get(name="reader").last_used_at == first  # within the minute


def test_secret_is_stored_only_as_a_hash(db: None) -> None:
    token, secret = create_token("hashing")
    stored = ApiToken.objects.filter(pk=token.pk).values()[0]
    assert secret not in {str(v) for v in stored.values()}
    assert stored["secret_hash"] != secret and len(stored["secret_hash"]) == 64
    assert secret.startswith(stored["prefix"])


# --- browser sessions ----------------------------------------------------------------------


@pytest.fixture
def user(db: None):
    return get_user_model().objects.create_user("sre")


def test_logged_in_session_reads(client: Client, user) -> None:
    client.force_login(user)
    assert client.get(URL).status_code == 200
    assert client.get("/api/v1/").json()["you"] == {
        "actor": "sre",
        "scope": "session",
        "role": "viewer",
    }


def test_session_write_without_csrf_token_is_refused() -> None:
    user = user_with_role("ops", Role.OPERATOR)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/api/v1/reports/", "{}", content_type="application/json")
    assert response.status_code == 403
    assert response.json()["error"]["message"].startswith("CSRF check failed")


def test_session_write_with_csrf_token_passes_authentication() -> None:
    user = user_with_role("ops", Role.OPERATOR)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/accounts/login/")  # sets the CSRF cookie, as any page would
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/api/v1/reports/", "{}", content_type="application/json",
        headers={"X-CSRFToken": token},
    )  # fmt: skip
    assert response.status_code == 400  # past authentication; the empty spec is refused


def test_unknown_endpoints_are_json_404s_and_missing_slashes_are_served(
    client: Client, read_secret: str, write_secret: str
) -> None:
    response = client.get("/api/v1/nothing-here/", headers=bearer(read_secret))
    assert response.status_code == 404
    assert response.json() == {
        "error": {"message": "no such endpoint: /api/v1/nothing-here/ (see /api/v1/)"}
    }
    # Both forms answer alike, query string and authentication included (no empty 301).
    slashed = client.get("/api/v1/groups/?source=kafka", headers=bearer(read_secret))
    bare = client.get("/api/v1/groups?source=kafka", headers=bearer(read_secret))
    assert bare.status_code == slashed.status_code == 200
    assert bare.json() == slashed.json()
    assert client.get("/api/v1/groups").status_code == 401
    assert client.get("/api/v1/clusters/nope", headers=bearer(read_secret)).status_code == 404
    # A POST without the slash keeps its body: the empty spec is refused past authentication.
    response = client.post(
        "/api/v1/reports", "{}", content_type="application/json", headers=bearer(write_secret)
    )
    assert response.status_code == 400 and "error" in response.json()
    response = client.get("/api/v1/nothing-here", headers=bearer(read_secret))
    assert response.status_code == 404 and "nothing-here" in response.json()["error"]["message"]

"""The lab's OIDC issuer (lab/oidc_issuer.py) for real: its discovery document, and a
client-credentials access token that verifies against its JWKS as a broker would check it
(RS256, the `kafka` audience, the issuer, a lifetime of the configured length), while a
wrong secret gets none and the secrets stay out of the record and the log."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import jwt
import jwt.utils
import pytest
import requests

from lab import oidc_issuer
from lab.stack import Stack

pytestmark = pytest.mark.lab
TTL_S = 60


@pytest.fixture(scope="module")
def issuer(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Stack, dict[str, str]]]:
    stack = Stack(tmp_path_factory.mktemp("oidc-lab"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(oidc_issuer.TOKEN_TTL_VAR, str(TTL_S))
        endpoints = stack.up(["oidc"])
    try:
        yield stack, endpoints
    finally:
        stack.down()


def context(stack: Stack):  # noqa: ANN201 - lab.services.Context
    return stack._context(stack._read_state())


def client_credentials(token_url: str, secret: str, **form: str) -> requests.Response:
    return requests.post(
        token_url,
        data={"grant_type": "client_credentials", **form},
        auth=(oidc_issuer.MACHINE_CLIENT_ID, secret),
        timeout=10,
    )


def test_discovery_names_the_endpoints_and_grants(issuer: tuple[Stack, dict[str, str]]) -> None:
    stack, endpoints = issuer
    with urllib.request.urlopen(oidc_issuer.discovery_url(context(stack)), timeout=10) as r:
        doc = json.load(r)
    assert doc["issuer"] == endpoints["oidc_issuer"]
    assert doc["jwks_uri"] == endpoints["oidc_jwks"]
    assert doc["token_endpoint"] == endpoints["oidc_token"]
    assert {"authorization_code", "client_credentials"} <= set(doc["grant_types_supported"])
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert "groups" in doc["scopes_supported"] and "groups" in doc["claims_supported"]


def test_client_credentials_token_verifies_against_the_jwks(
    issuer: tuple[Stack, dict[str, str]],
) -> None:
    stack, endpoints = issuer
    answer = client_credentials(
        endpoints["oidc_token"], oidc_issuer.machine_client_secret(context(stack))
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == TTL_S
    token = body["access_token"]
    key = jwt.PyJWKClient(endpoints["oidc_jwks"]).get_signing_key_from_jwt(token)
    claims = jwt.decode(
        token,
        key.key,
        algorithms=["RS256"],
        audience=oidc_issuer.AUDIENCE,
        issuer=endpoints["oidc_issuer"],
        options={"require": ["exp", "iat", "sub", "aud", "iss"]},
    )
    assert claims["sub"] == oidc_issuer.MACHINE_CLIENT_ID
    assert claims["exp"] - claims["iat"] == TTL_S
    assert abs(claims["iat"] - time.time()) < 30
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    # A token altered on the way (another subject, the same signature) does not verify.
    head, _, signature = token.split(".")
    forged = jwt.utils.base64url_encode(json.dumps({**claims, "sub": "intruder"}).encode())
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(f"{head}.{forged.decode()}.{signature}", key.key, algorithms=["RS256"],
                   audience=oidc_issuer.AUDIENCE)  # fmt: skip
    # A scope the resource server knows is granted and carried in the token.
    scoped = client_credentials(
        endpoints["oidc_token"], oidc_issuer.machine_client_secret(context(stack)), scope="kafka"
    )
    assert jwt.decode(scoped.json()["access_token"], key.key, algorithms=["RS256"],
                      audience="kafka")["scope"] == "kafka"  # fmt: skip


def test_a_wrong_secret_gets_no_token_and_secrets_are_never_written_out(
    issuer: tuple[Stack, dict[str, str]],
) -> None:
    stack, endpoints = issuer
    answer = client_credentials(endpoints["oidc_token"], "not-the-secret")
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_client"
    ctx = context(stack)
    secrets = [
        oidc_issuer.machine_client_secret(ctx),
        oidc_issuer.web_client_secret(ctx),
        *(oidc_issuer.password(ctx, user) for user in oidc_issuer.USERS),
    ]
    record = stack.state_path.read_text()
    log = Path(stack.status()["services"]["oidc"]["log"]).read_text()
    shown = json.dumps(stack.endpoints())
    for secret in secrets:
        assert secret not in record and secret not in log and secret not in shown
    # A restart keeps the signing key: tokens issued before it still verify.
    before = requests.get(endpoints["oidc_jwks"], timeout=10).json()
    stack.stop_service("oidc")
    stack.start_service("oidc")
    assert requests.get(endpoints["oidc_jwks"], timeout=10).json() == before

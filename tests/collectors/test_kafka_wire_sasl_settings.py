"""Which SASL mechanism a cluster's settings ask for (every refusal naming the setting),
OAUTHBEARER's client message, and the OIDC token provider's caching and errors, pure: the
token endpoint's HTTP call is a function given to the provider. The real issuer and broker:
tests/lab/test_secured_oauth.py.
"""

from __future__ import annotations

import base64
import json

import pytest

from collectors.kafka_wire.connection import BrokerConnections
from collectors.kafka_wire.sasl import TokenUnavailable, UnsupportedSecurity, sasl_mechanism
from collectors.kafka_wire.sasl.oauthbearer import (
    OAuthBearer,
    UnsecuredTokens,
    client_message,
    jwt_claims,
    parse_extensions,
)
from collectors.kafka_wire.sasl.token_provider import OidcTokenProvider

SCRAM = {"sasl.username": "mon", "sasl.password": "pw"}
OIDC = {
    "sasl.mechanism": "OAUTHBEARER",
    "sasl.oauthbearer.method": "oidc",
    "sasl.oauthbearer.token.endpoint.url": "https://issuer.example/token",
    "sasl.oauthbearer.client.id": "lagwatch",
    "sasl.oauthbearer.client.secret": "s3cret-value",
}


@pytest.mark.parametrize(
    ("config", "name"),
    [
        ({}, None),
        ({"security.protocol": "PLAINTEXT"}, None),
        ({"security.protocol": "SSL"}, None),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", **SCRAM}, "PLAIN"),
        ({"security.protocol": "sasl_plaintext", "sasl.mechanism": "plain", **SCRAM}, "PLAIN"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256", **SCRAM},
         "SCRAM-SHA-256"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", **SCRAM},
         "SCRAM-SHA-512"),
        ({"security.protocol": "SASL_SSL", **OIDC}, "OAUTHBEARER"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
          "enable.sasl.oauthbearer.unsecure.jwt": "true",
          "sasl.oauthbearer.config": "principal=mon"}, "OAUTHBEARER"),
    ],
)  # fmt: skip
def test_mechanism_of_the_settings(config: dict[str, str], name: str | None) -> None:
    mechanism = sasl_mechanism(config)
    assert (mechanism.name if mechanism else None) == name


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"security.protocol": "SASL_SSL"}, "GSSAPI \\(Kerberos\\) is not supported"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"}, "AWS_MSK_IAM"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-1", **SCRAM},
         "sasl.mechanism SCRAM-SHA-1 is not supported"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
         "PLAIN needs sasl.username and sasl.password"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
          "sasl.username": "mon", "sasl.password": ""}, "needs sasl.username and sasl.password"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
         "needs sasl.oauthbearer.method=oidc"),
        ({"security.protocol": "SASL_SSL", **OIDC, "sasl.oauthbearer.method": "aws"},
         "sasl.oauthbearer.method aws is not supported"),
        ({"security.protocol": "SASL_SSL", **OIDC, "sasl.oauthbearer.token.endpoint.url": ""},
         "must be an http\\(s\\) URL"),
        ({"security.protocol": "SASL_SSL", **OIDC, "sasl.oauthbearer.client.secret": None},
         "client.secret are required"),
        ({"security.protocol": "SASL_SSL", **OIDC,
          "sasl.oauthbearer.grant.type": "urn:ietf:params:oauth:grant-type:jwt-bearer"},
         "grant.type .* is not supported"),
        ({"security.protocol": "SASL_SSL", **OIDC, "sasl.oauthbearer.extensions": "auth=x"},
         "extensions entry 'auth'"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
          "enable.sasl.oauthbearer.unsecure.jwt": "true"}, "needs principal=NAME"),
    ],
)  # fmt: skip
def test_settings_the_client_cannot_honour_are_named(config: dict, message: str) -> None:
    with pytest.raises(UnsupportedSecurity, match=message):
        sasl_mechanism(config)
    with pytest.raises(UnsupportedSecurity, match=message):
        BrokerConnections("localhost:9092", config)  # before any connection


def test_no_error_ever_shows_the_secret() -> None:
    bad = {"security.protocol": "SASL_SSL", **OIDC, "sasl.oauthbearer.token.endpoint.url": "x"}
    with pytest.raises(UnsupportedSecurity) as caught:
        sasl_mechanism(bad)
    assert "s3cret" not in str(caught.value)


# --- OAUTHBEARER -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extensions", "expected"),
    [
        ({}, b"n,,\x01auth=Bearer tok.en.x\x01\x01"),
        ({"traceId": "abc", "logicalCluster": "lkc-1"},
         b"n,,\x01auth=Bearer tok.en.x\x01traceId=abc\x01logicalCluster=lkc-1\x01\x01"),
    ],
)  # fmt: skip
def test_client_message_as_rfc_7628_and_kafka_read_it(extensions: dict, expected: bytes) -> None:
    assert client_message("tok.en.x", extensions) == expected


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("", {}), ("a=1", {"a": "1"}), ("a=1, b=x=y", {"a": "1", "b": "x=y"}), (None, {})],
)
def test_extensions_setting(text: str | None, parsed: dict[str, str]) -> None:
    assert parse_extensions(text) == parsed


@pytest.mark.parametrize("text", ["a", "a1=x", "=x", "auth=x", "a=\x01"])
def test_bad_extensions(text: str) -> None:
    with pytest.raises(ValueError, match="sasl.oauthbearer.extensions"):
        parse_extensions(text)


def test_unsecured_tokens_as_kafkas_unsecured_validator_wants_them() -> None:
    tokens = UnsecuredTokens(
        "principal=mon scope=a,b lifeSeconds=60 extension_traceId=t", clock=lambda: 1000.0
    )
    token = tokens.token(5)
    header, payload, signature = token.value.split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "none"}
    assert signature == ""
    assert jwt_claims(token.value) == {"sub": "mon", "iat": 1000.0, "exp": 1060.0,
                                       "scope": ["a", "b"]}  # fmt: skip
    assert (token.expires_at, token.principal, tokens.extensions) == (
        1060.0,
        "mon",
        {"traceId": "t"},
    )


@pytest.mark.parametrize(
    ("answer", "message"),
    [(b'{"status":"invalid_token"}', "invalid_token"), (b"not json", "not json")],
)
def test_a_refused_token_ends_the_conversation_with_the_status(answer: bytes, message: str) -> None:
    talk = OAuthBearer(UnsecuredTokens("principal=mon")).conversation()
    assert next(talk).startswith(b"n,,\x01auth=Bearer ")
    with pytest.raises(ConnectionError, match=f"refused the token \\({message}\\)"):
        talk.send(answer)


# --- the OIDC token provider -------------------------------------------------------------------


def jwt(**claims: object) -> str:
    part = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJSUzI1NiJ9.{part}.c2ln"


class Endpoint:
    """The token endpoint's answers, in order; what each request carried."""

    def __init__(self, *answers: tuple[int, bytes]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, bytes, dict[str, str]]] = []

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout: float):  # noqa: ANN204
        self.requests.append((url, body, headers))
        if not self.answers:
            raise ConnectionRefusedError("connection refused")
        return self.answers.pop(0)


def provider(
    endpoint: Endpoint, clock: list[float], scope: str | None = "kafka"
) -> OidcTokenProvider:
    return OidcTokenProvider(
        "https://issuer.example/token?x=1", "lagwatch", "s3cret-value", scope,
        clock=lambda: clock[0], post=endpoint,
    )  # fmt: skip


def answer(token: str, **extra: object) -> tuple[int, bytes]:
    return 200, json.dumps({"access_token": token, "token_type": "Bearer", **extra}).encode()


def test_a_client_credentials_grant_with_basic_authentication() -> None:
    endpoint = Endpoint(answer(jwt(sub="svc", exp=1100)))
    token = provider(endpoint, [1000.0]).token(5)
    assert (token.principal, token.expires_at) == ("svc", 1100.0)
    [(url, body, headers)] = endpoint.requests
    assert url == "https://issuer.example/token?x=1"
    assert body == b"grant_type=client_credentials&scope=kafka"
    assert (
        headers["Authorization"] == "Basic " + base64.b64encode(b"lagwatch:s3cret-value").decode()
    )
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert provider(Endpoint(answer(jwt(exp=1))), [0.0], scope=None).token(5).expires_at == 1.0


def test_the_token_is_kept_until_80_percent_of_its_life_then_fetched_again() -> None:
    clock = [1000.0]
    endpoint = Endpoint(
        answer(jwt(exp=1100)), answer(jwt(exp=1200)), answer("opaque", expires_in=50)
    )
    tokens = provider(endpoint, clock)
    first = tokens.token(5)
    clock[0] = 1079.9
    assert tokens.token(5) is first and tokens.fetches == 1
    clock[0] = 1080.0
    second = tokens.token(5)
    assert second.expires_at == 1200.0 and tokens.fetches == 2
    clock[0] = 1176.0  # 80% of 1080..1200
    third = tokens.token(5)
    assert (third.value, third.expires_at) == ("opaque", 1226.0)  # no JWT: expires_in


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ([(401, b'{"error":"invalid_client","error_description":"bad secret"}')],
         "answered HTTP 401: invalid_client \\(bad secret\\)"),
        ([(500, b"<html>oops</html>")], "HTTP 500: no OAuth error"),
        ([(200, b"{}")], "no access_token"),
        ([(200, b"[1]")], "no access_token"),
        ([(200, b'{"access_token": ""}')], "an empty access_token"),
        ([answer("opaque")], "no exp claim nor expires_in"),
        ([], "connection refused"),
    ],
)  # fmt: skip
def test_token_endpoint_failures(answers: list, message: str) -> None:
    with pytest.raises(TokenUnavailable, match=message) as caught:
        provider(Endpoint(*answers), [0.0]).token(5)
    text = str(caught.value)
    assert "s3cret" not in text and "x=1" not in text
    assert text.startswith("token endpoint https://issuer.example/token")

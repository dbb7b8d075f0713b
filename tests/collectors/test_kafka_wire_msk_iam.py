"""Amazon MSK IAM over OAUTHBEARER, as far as a machine without AWS allows: the token AWS's
signer (``aws-msk-iam-sasl-signer-python``) makes from static credentials, its shape and its
SigV4 signature recomputed here from the AWS documentation's algorithm; the settings that ask
for it; its cache; and librdkafka given the same tokens through an ``oauth_cb``. No MSK
cluster answers here: that the broker accepts the token is not tested (docs/SECURITY.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote, urlsplit

import pytest

from collectors.kafka import KafkaSource
from collectors.kafka_wire.sasl import (
    TokenUnavailable,
    UnsupportedSecurity,
    librdkafka_config,
    sasl_mechanism,
)
from collectors.kafka_wire.sasl.msk_iam import MskIamTokenProvider
from collectors.kafka_wire.sasl.oauthbearer import client_message

KEY_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS's documentation example credentials
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
MSK = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "OAUTHBEARER",
    "sasl.oauthbearer.method": "aws_msk_iam",
    "sasl.oauthbearer.aws.region": "eu-west-1",
}


@pytest.fixture
def static_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    """Only these credentials: no profile file, no instance metadata."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sigv4_query_signature(url: str, secret: str) -> str:
    """SigV4 for a presigned GET (AWS's "Signature Version 4 signing process"), written from
    the documentation, not from botocore: canonical request, string to sign, derived key."""
    parts = urlsplit(url)
    params = [
        (k, v) for k, v in parse_qsl(parts.query) if k not in ("X-Amz-Signature", "User-Agent")
    ]
    query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(params))
    canonical = "\n".join(
        ["GET", parts.path or "/", query, f"host:{parts.hostname}", "", "host",
         hashlib.sha256(b"").hexdigest()]
    )  # fmt: skip
    fields = dict(params)
    day, region, service, _ = fields["X-Amz-Credential"].split("/")[1:]
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", fields["X-Amz-Date"], scope,
         hashlib.sha256(canonical.encode()).hexdigest()]
    )  # fmt: skip
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), day), region), service), "aws4_request")
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


@pytest.mark.usefixtures("static_credentials")
def test_the_signers_token_for_static_credentials() -> None:
    before = time.time()
    token = MskIamTokenProvider("eu-west-1").token(5)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", token.value)  # base64url without padding
    url = base64.urlsafe_b64decode(token.value + "=" * (-len(token.value) % 4)).decode()
    parts = urlsplit(url)
    assert (parts.scheme, parts.hostname, parts.path) == (
        "https",
        "kafka.eu-west-1.amazonaws.com",
        "/",
    )
    query = dict(parse_qsl(parts.query))
    signed_at = datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert query["Action"] == "kafka-cluster:Connect"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-Credential"] == (
        f"{KEY_ID}/{signed_at:%Y%m%d}/eu-west-1/kafka-cluster/aws4_request"
    )
    assert (query["X-Amz-Expires"], query["X-Amz-SignedHeaders"]) == ("900", "host")
    assert query["User-Agent"] == "aws-msk-iam-sasl-signer-python/1.0.2"
    assert "X-Amz-Security-Token" not in query
    assert query["X-Amz-Signature"] == sigv4_query_signature(url, SECRET)
    assert int(before) - 1 <= signed_at.timestamp() <= time.time()
    assert token.expires_at == signed_at.timestamp() + 900
    assert SECRET not in url
    # What the broker receives (RFC 7628), as for any bearer token.
    assert client_message(token.value) == f"n,,\x01auth=Bearer {token.value}\x01\x01".encode()


@pytest.mark.usefixtures("static_credentials")
def test_a_session_token_is_signed_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLE")
    token = MskIamTokenProvider("us-east-1").token(5).value
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    query = dict(parse_qsl(urlsplit(url).query))
    assert query["X-Amz-Security-Token"] == "FwoGZXIvYXdzEXAMPLE"
    assert query["X-Amz-Signature"] == sigv4_query_signature(url, SECRET)


def test_no_credentials_is_a_named_token_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def unsigned(region: str, profile: str | None) -> tuple[str, int]:
        raise ValueError("AWS Credentials can not be empty")

    with pytest.raises(TokenUnavailable, match="eu-west-1: ValueError: AWS Credentials can not"):
        MskIamTokenProvider("eu-west-1", sign=unsigned).token(5)


def test_tokens_are_kept_until_80_percent_of_their_life() -> None:
    clock, signed = [1000.0], []

    def sign(region: str, profile: str | None) -> tuple[str, int]:
        signed.append((region, profile))
        return f"t{len(signed)}", int((clock[0] + 900) * 1000)

    tokens = MskIamTokenProvider("eu-west-1", "monitoring", clock=lambda: clock[0], sign=sign)
    assert tokens.token(5).value == "t1"
    clock[0] = 1000 + 719
    assert tokens.token(5).value == "t1"
    clock[0] = 1000 + 720
    assert tokens.token(5).value == "t2"
    assert signed == [("eu-west-1", "monitoring")] * 2


def test_settings_and_librdkafkas_oauth_cb() -> None:
    mechanism = sasl_mechanism(MSK)
    assert mechanism is not None and mechanism.name == "OAUTHBEARER"
    tokens = mechanism.tokens
    assert isinstance(tokens, MskIamTokenProvider) and tokens.region == "eu-west-1"
    tokens._sign = lambda region, profile: ("signed-token", 1_900_000_000_000)
    config = librdkafka_config({**MSK, "sasl.oauthbearer.aws.profile": "p"}, mechanism)
    assert "sasl.oauthbearer.method" not in config
    assert not any(k.startswith("sasl.oauthbearer.aws.") for k in config)
    assert config["sasl.mechanism"] == "OAUTHBEARER"
    assert config["oauth_cb"](None) == ("signed-token", 1_900_000_000.0)
    # Any other mechanism's settings go to librdkafka as they are.
    scram = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
             "sasl.username": "u", "sasl.password": "p"}  # fmt: skip
    assert librdkafka_config(scram, sasl_mechanism(scram)) == scram
    with pytest.raises(UnsupportedSecurity, match="aws.region is required"):
        sasl_mechanism({**MSK, "sasl.oauthbearer.aws.region": ""})
    with pytest.raises(UnsupportedSecurity, match="sasl.oauthbearer.method=aws_msk_iam"):
        sasl_mechanism({"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"})


@pytest.mark.usefixtures("static_credentials")
def test_a_source_builds_librdkafkas_clients_with_the_signers_tokens() -> None:
    """librdkafka accepts the configuration (it has no aws_msk_iam of its own) and the source
    answers an unreachable cluster as any other: no AWS is needed to build the clients."""
    with KafkaSource("127.0.0.1:9", dict(MSK), timeout_s=1) as source:
        assert source.unsupported is None
        result = source.collect(int(time.time() * 1000))
    assert result.reachable is False

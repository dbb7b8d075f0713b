"""Which SASL mechanism a cluster's librdkafka-style settings ask for, built and checked
before any connection, so that a setting the wire client cannot honour is one clear error
naming it (``UnsupportedSecurity``), never a puzzling failure later.

Read as librdkafka reads them: ``security.protocol`` (``SASL_PLAINTEXT`` or ``SASL_SSL``),
``sasl.mechanism`` (or its alias ``sasl.mechanisms``; librdkafka's default is GSSAPI),
``sasl.username``/``sasl.password`` for PLAIN and SCRAM, and for OAUTHBEARER either
``sasl.oauthbearer.method=oidc`` with its ``sasl.oauthbearer.*`` settings or
``enable.sasl.oauthbearer.unsecure.jwt=true`` with ``sasl.oauthbearer.config``, or Lagwatch's
own ``sasl.oauthbearer.method=aws_msk_iam`` (``msk_iam``), which librdkafka does not know:
``librdkafka_config`` gives its clients the same tokens through an ``oauth_cb``.

Not spoken: GSSAPI (Kerberos needs a ticket cache, a keytab and a KDC round trip per
connection, a library of its own; docs/SECURITY.md) and AWS_MSK_IAM (the Java client's
mechanism name: MSK IAM is spoken as OAUTHBEARER with ``aws_msk_iam``).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, Protocol

from collectors.kafka_wire.sasl.errors import UnsupportedSecurity
from collectors.kafka_wire.sasl.msk_iam import MskIamTokenProvider
from collectors.kafka_wire.sasl.oauthbearer import OAuthBearer, UnsecuredTokens, parse_extensions
from collectors.kafka_wire.sasl.scram import MECHANISMS as SCRAM_MECHANISMS
from collectors.kafka_wire.sasl.scram import ScramClient
from collectors.kafka_wire.sasl.token_provider import OidcTokenProvider

__all__ = ["Mechanism", "Plain", "Scram", "librdkafka_config", "sasl_mechanism"]

AWS_MSK_IAM = "aws_msk_iam"
_AWS_KEYS = ("sasl.oauthbearer.aws.region", "sasl.oauthbearer.aws.profile")

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_NOT_SPOKEN = {
    "GSSAPI": "GSSAPI (Kerberos) is not supported by Lagwatch's Kafka client",
    "AWS_MSK_IAM": (
        "AWS_MSK_IAM is the Java client's mechanism: for MSK IAM set sasl.mechanism=OAUTHBEARER "
        "and sasl.oauthbearer.method=aws_msk_iam (docs/SECURITY.md)"
    ),
}


class Mechanism(Protocol):
    """A SASL mechanism: its name and a fresh conversation per authentication (client
    messages yielded, the broker's answers sent in; raising when the broker is wrong)."""

    name: str

    def conversation(self) -> Generator[bytes, bytes, None]: ...


class Plain:
    """PLAIN (RFC 4616): no authorization id, the name, the password; one message."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._message = b"\0" + username.encode() + b"\0" + password.encode()

    def conversation(self) -> Generator[bytes, bytes, None]:
        yield self._message


class Scram:
    name: str

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.name = mechanism
        self._username = username
        self._password = password

    def conversation(self) -> Generator[bytes, bytes, None]:
        return ScramClient(self.name, self._username, self._password).conversation()


def _text(config: Mapping[str, Any], key: str) -> str:
    value = config.get(key)
    return "" if value is None else str(value).strip()


def _truthy(value: str) -> bool:
    return value.lower() in ("true", "1", "yes", "on")


def _credentials(config: Mapping[str, Any], mechanism: str) -> tuple[str, str]:
    username, password = _text(config, "sasl.username"), config.get("sasl.password")
    if not username or password in (None, ""):
        raise UnsupportedSecurity(
            f"sasl.mechanism {mechanism} needs sasl.username and sasl.password"
        )
    return username, str(password)


def _oauthbearer(config: Mapping[str, Any]) -> OAuthBearer:
    try:
        extensions = parse_extensions(_text(config, "sasl.oauthbearer.extensions"))
    except ValueError as exc:
        raise UnsupportedSecurity(str(exc)) from None
    method = (_text(config, "sasl.oauthbearer.method") or "default").lower()
    if method == "oidc":
        grant = _text(config, "sasl.oauthbearer.grant.type") or "client_credentials"
        if grant != "client_credentials":
            raise UnsupportedSecurity(f"sasl.oauthbearer.grant.type {grant} is not supported")
        try:
            provider = OidcTokenProvider(
                _text(config, "sasl.oauthbearer.token.endpoint.url"),
                _text(config, "sasl.oauthbearer.client.id"),
                str(config.get("sasl.oauthbearer.client.secret") or ""),
                _text(config, "sasl.oauthbearer.scope") or None,
                ca_location=_text(config, "https.ca.location") or None,
            )
        except ValueError as exc:
            raise UnsupportedSecurity(f"sasl.oauthbearer.method oidc: {exc}") from None
        return OAuthBearer(provider, extensions)
    if method == AWS_MSK_IAM:
        try:
            tokens = MskIamTokenProvider(
                _text(config, "sasl.oauthbearer.aws.region"),
                _text(config, "sasl.oauthbearer.aws.profile") or None,
            )
        except ValueError as exc:
            raise UnsupportedSecurity(f"sasl.oauthbearer.method {AWS_MSK_IAM}: {exc}") from None
        return OAuthBearer(tokens, extensions)
    if method != "default":
        raise UnsupportedSecurity(f"sasl.oauthbearer.method {method} is not supported")
    if not _truthy(_text(config, "enable.sasl.oauthbearer.unsecure.jwt")):
        raise UnsupportedSecurity(
            "sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.method=oidc (a token endpoint), "
            "or enable.sasl.oauthbearer.unsecure.jwt=true for development brokers"
        )
    try:
        tokens = UnsecuredTokens(_text(config, "sasl.oauthbearer.config"))
    except ValueError as exc:
        raise UnsupportedSecurity(str(exc)) from None
    return OAuthBearer(tokens, {**tokens.extensions, **extensions})


def sasl_mechanism(config: Mapping[str, Any]) -> Mechanism | None:
    """The mechanism to authenticate with, None when ``security.protocol`` has no SASL."""
    protocol = (_text(config, "security.protocol") or "PLAINTEXT").upper()
    if protocol not in SASL_PROTOCOLS:
        return None
    name = (_text(config, "sasl.mechanism") or _text(config, "sasl.mechanisms") or "GSSAPI").upper()
    if name in _NOT_SPOKEN:
        raise UnsupportedSecurity(f"sasl.mechanism {_NOT_SPOKEN[name]}")
    if name == "PLAIN":
        return Plain(*_credentials(config, name))
    if name in SCRAM_MECHANISMS:
        return Scram(name, *_credentials(config, name))
    if name == "OAUTHBEARER":
        return _oauthbearer(config)
    raise UnsupportedSecurity(f"sasl.mechanism {name} is not supported by Lagwatch's Kafka client")


def librdkafka_config(config: Mapping[str, Any], mechanism: Mechanism | None) -> dict[str, Any]:
    """``config`` as librdkafka takes it: unchanged but for MSK IAM, whose settings librdkafka
    does not know, replaced by an ``oauth_cb`` giving the wire client's own tokens."""
    out = dict(config)
    tokens = getattr(mechanism, "tokens", None)
    if isinstance(tokens, MskIamTokenProvider):
        for key in ("sasl.oauthbearer.method", *_AWS_KEYS):
            out.pop(key, None)
        out["oauth_cb"] = tokens.oauth_cb
    return out

"""OAUTHBEARER's client message (RFC 7628) and the broker's answer to a token it refuses.

The client sends one message, ``n,,\\x01auth=Bearer <token>[\\x01key=value...]\\x01\\x01``
(Kafka's ``OAuthBearerClientInitialResponse``: no authorization id, SASL extensions as
further key=value pairs). A broker that accepts the token answers with empty bytes; one that
refuses it answers with a JSON error (RFC 7628 §3.2.2: ``{"status": "invalid_token"}``) and
expects the client to end the exchange. We end it by failing, naming the status: the
connection is dropped, as any failed one is.

Tokens come from a ``TokenSource``: ``OidcTokenProvider`` (a client-credentials grant, as
librdkafka's ``sasl.oauthbearer.method=oidc``) or ``UnsecuredTokens`` (librdkafka's
``enable.sasl.oauthbearer.unsecure.jwt``: an unsigned JWT, for brokers using Kafka's
unsecured validator, which is for development only).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Protocol

from collectors.kafka_wire.sasl.errors import SaslAuthenticationFailed

__all__ = [
    "BearerToken",
    "OAuthBearer",
    "TokenSource",
    "UnsecuredTokens",
    "client_message",
    "jwt_claims",
    "parse_extensions",
]

_SEP = "\x01"
# RFC 7628 §3.1: key = 1*(ALPHA); Kafka reserves "auth".
_EXTENSION_KEY = re.compile(r"^[A-Za-z]+$")
_EXTENSION_VALUE = re.compile(r"^[\x21-\x7E \t\r\n]+$")


@dataclass(frozen=True)
class BearerToken:
    value: str
    expires_at: float  # seconds since the epoch
    principal: str | None = None


class TokenSource(Protocol):
    def token(self, timeout_s: float) -> BearerToken: ...


def parse_extensions(text: str | None) -> dict[str, str]:
    """librdkafka's ``sasl.oauthbearer.extensions`` (``key=value,key2=value2``)."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.strip().partition("=")
        if not sep or not _EXTENSION_KEY.match(key) or key == "auth":
            raise ValueError(f"bad sasl.oauthbearer.extensions entry {key!r}")
        if not _EXTENSION_VALUE.match(value):
            raise ValueError(f"bad value of the sasl.oauthbearer.extensions entry {key!r}")
        out[key] = value
    return out


def client_message(token: str, extensions: Mapping[str, str] | None = None) -> bytes:
    """RFC 7628's client initial response, as Kafka reads it."""
    extra = "".join(f"{_SEP}{k}={v}" for k, v in (extensions or {}).items())
    return f"n,,{_SEP}auth=Bearer {token}{extra}{_SEP}{_SEP}".encode()


def jwt_claims(token: str) -> dict[str, object]:
    """The payload of a JWT (not verified: the broker verifies it), or {} if it is none."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except ValueError:
        return {}
    return claims if isinstance(claims, dict) else {}


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class UnsecuredTokens:
    """Unsigned JWTs (``alg: none``) from librdkafka's ``sasl.oauthbearer.config``
    (``principal=NAME [scope=a,b] [lifeSeconds=N] [extension_KEY=value]``)."""

    def __init__(self, config_text: str, clock: Callable[[], float] = time.time) -> None:
        fields: dict[str, str] = {}
        for item in (config_text or "").split():
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"bad sasl.oauthbearer.config entry {item!r}")
            fields[key] = value
        self.principal = fields.pop("principal", "")
        if not self.principal:
            raise ValueError("sasl.oauthbearer.config needs principal=NAME for unsecured tokens")
        self.scope = [s for s in fields.pop("scope", "").split(",") if s]
        self.life_s = int(fields.pop("lifeSeconds", "3600"))
        self.extensions = {
            k.removeprefix("extension_"): v for k, v in fields.items() if k.startswith("extension_")
        }
        self._clock = clock

    def token(self, timeout_s: float) -> BearerToken:
        now = self._clock()
        claims: dict[str, object] = {
            "sub": self.principal, "iat": now, "exp": now + self.life_s,
        }  # fmt: skip
        if self.scope:
            claims["scope"] = self.scope
        header = _b64url(json.dumps({"alg": "none"}).encode())
        payload = _b64url(json.dumps(claims).encode())
        return BearerToken(f"{header}.{payload}.", now + self.life_s, self.principal)


class OAuthBearer:
    """The OAUTHBEARER mechanism over a token source (a fresh token each authentication, so a
    re-authentication carries the refreshed one)."""

    name = "OAUTHBEARER"

    def __init__(
        self, tokens: TokenSource, extensions: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
    ) -> None:  # fmt: skip
        self.tokens = tokens
        self.extensions = dict(extensions or {})
        self._timeout_s = timeout_s

    def conversation(self) -> Generator[bytes, bytes, None]:
        token = self.tokens.token(self._timeout_s)
        answer = yield client_message(token.value, self.extensions)
        if answer:
            try:
                status = json.loads(answer).get("status", "?")
            except (ValueError, AttributeError):
                status = answer[:200].decode("utf-8", errors="replace")
            raise SaslAuthenticationFailed(f"OAUTHBEARER: the broker refused the token ({status})")

"""SaslHandshake and SaslAuthenticate, the two messages of Kafka's SASL exchange (pure).

From ``SaslHandshakeRequest.json``/``SaslHandshakeResponse.json`` (API 17, versions 0-1,
never flexible) and ``SaslAuthenticateRequest.json``/``SaslAuthenticateResponse.json`` (API
36, versions 0-2, flexible from 2) as released in Kafka 4.4.0 (``kafka-clients-4.4.0.jar``,
``common/message/``). SaslHandshake is spoken in v1 only: v0 was followed by the mechanism's
bytes unframed, outside Kafka's protocol, while v1 carries them in SaslAuthenticate.
SaslAuthenticate from v1, the first that says the session's lifetime (KIP-368), which is
when the client must authenticate again on the same connection.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.kafka_wire.codec.framing import (
    NO_TAGGED_FIELDS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    ErrorCoded,
    check_version,
    compact_bytes,
    is_flexible,
    legacy_bytes,
    legacy_string,
)
from collectors.kafka_wire.codec.reader import Reader

__all__ = [
    "HandshakeResult",
    "SaslAuthenticateResult",
    "decode_sasl_authenticate_response",
    "decode_sasl_handshake_response",
    "encode_sasl_authenticate_request",
    "encode_sasl_handshake_request",
]


@dataclass(frozen=True)
class HandshakeResult(ErrorCoded):
    """The broker's answer to a mechanism: UNSUPPORTED_SASL_MECHANISM (33) names the ones it
    has enabled on this listener instead."""

    error_code: int
    mechanisms: tuple[str, ...]


@dataclass(frozen=True)
class SaslAuthenticateResult(ErrorCoded):
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int = 0  # 0: the session never expires (no re-authentication)


def encode_sasl_handshake_request(version: int, mechanism: str) -> bytes:
    check_version(SASL_HANDSHAKE, version)
    return legacy_string(mechanism, "Mechanism")


def decode_sasl_handshake_response(body: bytes, version: int) -> HandshakeResult:
    check_version(SASL_HANDSHAKE, version)
    reader = Reader(body, f"SaslHandshake v{version} response")
    error_code = reader.int16("ErrorCode")
    mechanisms = reader.array("Mechanisms", lambda: reader.string("value"), 2)
    reader.end()
    return HandshakeResult(error_code, tuple(mechanisms))


def encode_sasl_authenticate_request(version: int, auth_bytes: bytes) -> bytes:
    check_version(SASL_AUTHENTICATE, version)
    if is_flexible(SASL_AUTHENTICATE, version):
        return compact_bytes(auth_bytes) + NO_TAGGED_FIELDS
    return legacy_bytes(auth_bytes)


def decode_sasl_authenticate_response(body: bytes, version: int) -> SaslAuthenticateResult:
    check_version(SASL_AUTHENTICATE, version)
    reader = Reader(body, f"SaslAuthenticate v{version} response")
    error_code = reader.int16("ErrorCode")
    if is_flexible(SASL_AUTHENTICATE, version):
        message = reader.compact_nullable_string("ErrorMessage")
        auth_bytes = reader.compact_bytes("AuthBytes")
    else:
        message = reader.nullable_string("ErrorMessage")
        auth_bytes = reader.legacy_bytes("AuthBytes")
    lifetime = reader.int64("SessionLifetimeMs")  # v1+, and we speak no v0
    if is_flexible(SASL_AUTHENTICATE, version):
        reader.tagged_fields()
    reader.end()
    return SaslAuthenticateResult(error_code, message, auth_bytes, lifetime)

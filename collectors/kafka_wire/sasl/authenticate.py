"""One SASL authentication over a connection: SaslHandshake, then SaslAuthenticate until the
mechanism's conversation ends; the same steps again to re-authenticate (KIP-368).

Kept apart from the sockets: ``exchange`` is any function that sends one request and returns
its answer's body, so the steps and every failure are tested without a broker, and the
connection module only says when to call it (after ApiVersions; again before the session the
broker granted runs out).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from collectors.kafka_wire.codec.framing import SASL_AUTHENTICATE, SASL_HANDSHAKE, choose_version
from collectors.kafka_wire.sasl.codec import (
    decode_sasl_authenticate_response,
    decode_sasl_handshake_response,
    encode_sasl_authenticate_request,
    encode_sasl_handshake_request,
)
from collectors.kafka_wire.sasl.errors import SaslAuthenticationFailed
from collectors.kafka_wire.sasl.settings import Mechanism

__all__ = ["Exchange", "authenticate"]

# (api key, version, request body) -> response body
Exchange = Callable[[int, int, bytes], bytes]
_UNSUPPORTED_SASL_MECHANISM = 33


def authenticate(
    exchange: Exchange, api_versions: Mapping[int, tuple[int, int]], mechanism: Mechanism,
    broker: str,
) -> int:  # fmt: skip
    """Authenticate with ``mechanism``; the session's lifetime in ms the broker granted (0:
    no limit). Raises ``SaslAuthenticationFailed`` naming the broker and why."""
    handshake_version = choose_version(SASL_HANDSHAKE, api_versions)
    auth_version = choose_version(SASL_AUTHENTICATE, api_versions)
    if handshake_version is None or auth_version is None:
        raise SaslAuthenticationFailed(
            f"{broker} offers no SaslHandshake v1 and SaslAuthenticate v1+ (a listener "
            "without SASL, or a broker older than Kafka 2.2?)"
        )
    body = exchange(
        SASL_HANDSHAKE, handshake_version,
        encode_sasl_handshake_request(handshake_version, mechanism.name),
    )  # fmt: skip
    handshake = decode_sasl_handshake_response(body, handshake_version)
    if handshake.error_code == _UNSUPPORTED_SASL_MECHANISM:
        offered = ", ".join(handshake.mechanisms) or "none"
        raise SaslAuthenticationFailed(
            f"{broker} does not enable {mechanism.name} on this listener (it offers {offered})"
        )
    if not handshake.ok:
        raise SaslAuthenticationFailed(f"{broker} refused SaslHandshake: {handshake.error_name}")
    conversation = mechanism.conversation()
    message = next(conversation)
    while True:
        body = exchange(
            SASL_AUTHENTICATE, auth_version,
            encode_sasl_authenticate_request(auth_version, message),
        )  # fmt: skip
        answer = decode_sasl_authenticate_response(body, auth_version)
        if not answer.ok:
            detail = f": {answer.error_message}" if answer.error_message else ""
            raise SaslAuthenticationFailed(
                f"{broker} refused {mechanism.name} authentication: {answer.error_name}{detail}"
            )
        try:
            message = conversation.send(answer.auth_bytes)
        except StopIteration:
            return max(0, answer.session_lifetime_ms)

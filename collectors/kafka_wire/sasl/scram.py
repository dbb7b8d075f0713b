"""The client side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), pure.

Three messages: the client's first (its name and a fresh nonce), its final one (the proof that
it knows the password, computed from the salt and iteration count the server sent), and the
check of the server's final message. That check matters as much as the proof: the server's
signature proves that the server knows the password's stored keys, so a broker that answers
without it, or with a wrong one, is refused (``ScramError``), never trusted.

As Kafka's own client (``org.apache.kafka.common.security.scram.internals``): no channel
binding (the GS2 header is ``n,,``); the password is used as its UTF-8 bytes, without RFC
4013 SASLprep, because that is how the broker salted it (``ScramFormatter.normalize``); at
least 4096 iterations; the user name escaped as RFC 5802's ``saslname`` (``=`` as ``=3D``,
``,`` as ``=2C``). The standard library's PBKDF2 and HMAC do the cryptography.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Generator

from collectors.kafka_wire.sasl.errors import SaslAuthenticationFailed

__all__ = ["MECHANISMS", "MIN_ITERATIONS", "ScramClient", "ScramError"]

# Mechanism name -> hashlib name (RFC 7677 for SHA-256; SHA-512 as Kafka names it).
MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's minimum for both mechanisms (ScramMechanism.minIterations): fewer is a downgrade.
MIN_ITERATIONS = 4096
_GS2_HEADER = "n,,"


class ScramError(SaslAuthenticationFailed):
    """The server's SCRAM messages are wrong: a bad nonce or signature, an ``e=`` error."""


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: str, what: str) -> dict[str, str]:
    """``a=value`` pairs of a SCRAM message, in order; a value may itself hold ``=``."""
    fields: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramError(f"{what} is not a SCRAM message: {message!r}")
        fields.setdefault(key, value)
    return fields


class ScramClient:
    """One SCRAM conversation. ``nonce`` is for tests (RFC 7677's example); leave it out."""

    def __init__(
        self, mechanism: str, username: str, password: str, *, nonce: str | None = None
    ) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self._hash = MECHANISMS[mechanism]
        self._password = password.encode("utf-8")
        self._nonce = nonce or secrets.token_urlsafe(24)  # printable, never a comma
        self._first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def first_message(self) -> bytes:
        return (_GS2_HEADER + self._first_bare).encode("utf-8")

    def final_message(self, server_first: bytes) -> bytes:
        """The client's proof, from the server's first message (its nonce, salt, count)."""
        text = server_first.decode("utf-8", errors="replace")
        fields = _attributes(text, "the server's first message")
        if "m" in fields:
            raise ScramError("the server asks for a SCRAM extension (m=) no client knows")
        if "e" in fields:
            raise ScramError(f"the server refused the first message: {fields['e']}")
        nonce, salt_text, count = fields.get("r"), fields.get("s"), fields.get("i")
        if nonce is None or salt_text is None or count is None:
            raise ScramError(f"the server's first message lacks r, s or i: {text!r}")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise ScramError("the server's nonce does not extend the client's")
        try:
            salt = base64.b64decode(salt_text, validate=True)
            iterations = int(count)
        except ValueError:
            raise ScramError(f"the server's salt or iteration count is garbled: {text!r}") from None
        if not salt:
            raise ScramError("the server sent an empty salt")
        if iterations < MIN_ITERATIONS:
            raise ScramError(f"{iterations} iterations, fewer than {MIN_ITERATIONS}")
        without_proof = f"c={base64.b64encode(_GS2_HEADER.encode()).decode()},r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def check_final(self, server_final: bytes) -> None:
        """Raise unless the server's final message carries the expected signature."""
        if self._server_signature is None:
            raise ScramError("the server's final message came before its first")
        text = server_final.decode("utf-8", errors="replace")
        fields = _attributes(text, "the server's final message")
        if "e" in fields:
            raise ScramError(f"the server refused the proof: {fields['e']}")
        try:
            got = base64.b64decode(fields.get("v", ""), validate=True)
        except ValueError:
            got = b""
        if not got or not hmac.compare_digest(got, self._server_signature):
            raise ScramError("the server's signature is wrong: it does not know the password")

    def conversation(self) -> Generator[bytes, bytes, None]:
        """Client messages out, server messages in (see ``sasl.authenticate``)."""
        server_first = yield self.first_message()
        server_final = yield self.final_message(server_first)
        self.check_final(server_final)

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash).digest()

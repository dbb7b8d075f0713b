"""SASL in the wire client, pure: SCRAM's messages (RFC 7677's example byte for byte, a
SCRAM-SHA-512 vector computed with ``openssl kdf``/``openssl dgst``), the two Kafka messages'
bytes, and the authentication steps against scripted broker answers, every failure named.

The secured lab broker runs the same code for real: tests/lab/test_secured_kafka.py.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable

import pytest

from collectors.kafka_wire.codec import WireError
from collectors.kafka_wire.codec.framing import SASL_AUTHENTICATE, SASL_HANDSHAKE
from collectors.kafka_wire.sasl import SaslAuthenticationFailed, authenticate
from collectors.kafka_wire.sasl.codec import (
    decode_sasl_authenticate_response,
    decode_sasl_handshake_response,
    encode_sasl_authenticate_request,
    encode_sasl_handshake_request,
)
from collectors.kafka_wire.sasl.scram import ScramClient, ScramError
from collectors.kafka_wire.sasl.settings import Plain, Scram

# --- SCRAM -----------------------------------------------------------------------------------

# RFC 7677 §3, and the same inputs through SHA-512 (computed with openssl, not with this code).
NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = NONCE + "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = f"r={SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
VECTORS = {
    "SCRAM-SHA-256": (
        "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    ),
    "SCRAM-SHA-512": (
        "gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ==",
        "ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw==",
    ),
}


def client(mechanism: str = "SCRAM-SHA-256", user: str = "user") -> ScramClient:
    return ScramClient(mechanism, user, "pencil", nonce=NONCE)


@pytest.mark.parametrize("mechanism", sorted(VECTORS))
def test_scram_exchange_byte_for_byte(mechanism: str) -> None:
    proof, signature = VECTORS[mechanism]
    scram = client(mechanism)
    assert scram.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert scram.final_message(SERVER_FIRST) == f"c=biws,r={SERVER_NONCE},p={proof}".encode()
    scram.check_final(f"v={signature}".encode())  # the right signature: no error


def test_scram_conversation_drives_the_three_messages() -> None:
    proof, signature = VECTORS["SCRAM-SHA-256"]
    talk = client().conversation()
    assert next(talk) == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert talk.send(SERVER_FIRST).endswith(f"p={proof}".encode())
    with pytest.raises(StopIteration):
        talk.send(f"v={signature}".encode())


@pytest.mark.parametrize(
    ("user", "first"),
    [("user", "n=user"), ("a=b", "n=a=3Db"), ("x,y", "n=x=2Cy"), ("é", "n=é")],
)
def test_scram_user_names_are_escaped(user: str, first: str) -> None:
    assert client(user=user).first_message() == f"n,,{first},r={NONCE}".encode()


def test_fresh_nonces_are_printable_and_differ() -> None:
    a, b = (ScramClient("SCRAM-SHA-512", "u", "p").first_message() for _ in range(2))
    assert a != b
    nonce = a.decode().split(",r=")[1]
    assert len(nonce) >= 24 and "," not in nonce and nonce.isprintable()


@pytest.mark.parametrize(
    ("server_first", "message"),
    [
        (f"r={NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),  # no server part
        ("r=other%abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (f"r=X{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (f"r={SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095", "fewer than 4096"),
        (f"r={SERVER_NONCE},s=,i=4096", "empty salt"),
        (f"r={SERVER_NONCE},s=!!!,i=4096", "garbled"),
        (f"r={SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=many", "garbled"),
        (f"r={SERVER_NONCE},i=4096", "lacks r, s or i"),
        (f"m=ext,r={SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "extension"),
        ("e=invalid-username", "refused the first message: invalid-username"),
        ("garbage", "not a SCRAM message"),
    ],
)
def test_bad_server_first_messages(server_first: str, message: str) -> None:
    with pytest.raises(ScramError, match=message):
        client().final_message(server_first.encode())


def _flipped(signature: str) -> str:
    raw = bytearray(base64.b64decode(signature))
    raw[0] ^= 1
    return base64.b64encode(bytes(raw)).decode()


@pytest.mark.parametrize(
    ("server_final", "message"),
    [
        (f"v={_flipped(VECTORS['SCRAM-SHA-256'][1])}", "signature is wrong"),
        (f"v={VECTORS['SCRAM-SHA-512'][1]}", "signature is wrong"),  # another hash's
        ("v=", "signature is wrong"),
        ("v=%%%", "signature is wrong"),
        ("x=1", "signature is wrong"),
        ("e=invalid-proof", "refused the proof: invalid-proof"),
        ("", "not a SCRAM message"),
    ],
)
def test_bad_server_final_messages(server_final: str, message: str) -> None:
    scram = client()
    scram.final_message(SERVER_FIRST)
    with pytest.raises(ScramError, match=message):
        scram.check_final(server_final.encode())


def test_a_final_message_before_the_first_is_refused() -> None:
    with pytest.raises(ScramError, match="before its first"):
        client().check_final(f"v={VECTORS['SCRAM-SHA-256'][1]}".encode())


def test_scram_errors_are_authentication_failures() -> None:
    assert issubclass(ScramError, SaslAuthenticationFailed)
    assert issubclass(SaslAuthenticationFailed, OSError)


# --- the Kafka messages ------------------------------------------------------------------------


def test_handshake_request_bytes() -> None:
    assert encode_sasl_handshake_request(1, "SCRAM-SHA-512") == b"\x00\x0dSCRAM-SHA-512"


@pytest.mark.parametrize(
    ("body", "error", "mechanisms"),
    [
        (b"\x00\x00" + b"\x00\x00\x00\x00", 0, ()),
        (b"\x00\x21" + b"\x00\x00\x00\x02" + b"\x00\x05PLAIN" + b"\x00\x0dSCRAM-SHA-256", 33,
         ("PLAIN", "SCRAM-SHA-256")),
    ],
)  # fmt: skip
def test_handshake_response(body: bytes, error: int, mechanisms: tuple[str, ...]) -> None:
    answer = decode_sasl_handshake_response(body, 1)
    assert (answer.error_code, answer.mechanisms) == (error, mechanisms)


@pytest.mark.parametrize(
    ("version", "payload", "expected"),
    [
        (1, b"abc", b"\x00\x00\x00\x03abc"),
        (1, b"", b"\x00\x00\x00\x00"),
        (2, b"abc", b"\x04abc\x00"),
        (2, b"", b"\x01\x00"),
    ],
)
def test_authenticate_request_bytes(version: int, payload: bytes, expected: bytes) -> None:
    assert encode_sasl_authenticate_request(version, payload) == expected


def authenticate_body(version: int, error: int, message: str | None, data: bytes,
                      lifetime: int) -> bytes:  # fmt: skip
    """A SaslAuthenticate response body, written from the schema (the decoder's mirror)."""
    out = struct.pack(">h", error)
    if version >= 2:
        text = b"\x00" if message is None else bytes([len(message) + 1]) + message.encode()
        out += text + bytes([len(data) + 1]) + data + struct.pack(">q", lifetime) + b"\x00"
    else:
        text = (
            b"\xff\xff" if message is None else struct.pack(">h", len(message)) + message.encode()
        )
        out += text + struct.pack(">i", len(data)) + data + struct.pack(">q", lifetime)
    return out


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(
    ("error", "message", "data", "lifetime"),
    [(0, None, b"v=abc", 15000), (58, "Authentication failed", b"", 0), (0, None, b"", 0)],
)
def test_authenticate_response_round_trip(
    version: int, error: int, message: str | None, data: bytes, lifetime: int
) -> None:
    answer = decode_sasl_authenticate_response(
        authenticate_body(version, error, message, data, lifetime), version
    )
    assert (answer.error_code, answer.error_message, answer.auth_bytes) == (error, message, data)
    assert answer.session_lifetime_ms == lifetime


@pytest.mark.parametrize("version", [1, 2])
def test_truncated_or_padded_answers_are_wire_errors(version: int) -> None:
    body = authenticate_body(version, 0, None, b"v=abc", 1000)
    with pytest.raises(WireError, match="SessionLifetimeMs|TaggedFields"):
        decode_sasl_authenticate_response(body[:-1], version)
    with pytest.raises(WireError, match="unexpected bytes"):
        decode_sasl_authenticate_response(body + b"\x00", version)
    with pytest.raises(WireError, match="Mechanisms"):
        decode_sasl_handshake_response(b"\x00\x00\x00\x00\x00\x09", 1)


@pytest.mark.parametrize(("api", "version"), [(SASL_HANDSHAKE, 0), (SASL_AUTHENTICATE, 0)])
def test_versions_we_do_not_speak_are_refused(api: int, version: int) -> None:
    encode = encode_sasl_handshake_request if api == SASL_HANDSHAKE else None
    with pytest.raises(ValueError, match="not implemented"):
        if encode is not None:
            encode(version, "PLAIN")
        else:
            encode_sasl_authenticate_request(version, b"")


# --- the steps against scripted answers --------------------------------------------------------

BROKER_APIS = {SASL_HANDSHAKE: (0, 1), SASL_AUTHENTICATE: (0, 2)}


def scripted(*answers: bytes) -> tuple[Callable[[int, int, bytes], bytes], list[tuple]]:
    """An exchange that records each request and gives the next scripted answer body."""
    sent: list[tuple] = []
    queue = list(answers)

    def exchange(api_key: int, version: int, body: bytes) -> bytes:
        sent.append((api_key, version, body))
        return queue.pop(0)

    return exchange, sent


HANDSHAKE_OK = b"\x00\x00\x00\x00\x00\x01\x00\x05PLAIN"


def ok(data: bytes = b"", lifetime: int = 0) -> bytes:
    return authenticate_body(2, 0, None, data, lifetime)


def test_plain_in_one_message_and_the_session_lifetime() -> None:
    exchange, sent = scripted(HANDSHAKE_OK, ok(lifetime=15000))
    assert authenticate(exchange, BROKER_APIS, Plain("mon", "pw"), "b:1") == 15000
    assert sent == [
        (SASL_HANDSHAKE, 1, b"\x00\x05PLAIN"),
        (SASL_AUTHENTICATE, 2, b"\x08\x00mon\x00pw\x00"),  # length 7 + 1
    ]


def test_scram_in_two_round_trips_with_the_signature_checked(monkeypatch) -> None:  # noqa: ANN001
    proof, signature = VECTORS["SCRAM-SHA-256"]
    mechanism = Scram("SCRAM-SHA-256", "user", "pencil")
    monkeypatch.setattr(mechanism, "conversation", lambda: client().conversation())
    exchange, sent = scripted(HANDSHAKE_OK, ok(SERVER_FIRST), ok(f"v={signature}".encode(), 9))
    assert authenticate(exchange, BROKER_APIS, mechanism, "b:1") == 9
    assert sent[2][2].endswith(f"p={proof}".encode() + b"\x00")

    exchange, _ = scripted(HANDSHAKE_OK, ok(SERVER_FIRST), ok(f"v={_flipped(signature)}".encode()))
    with pytest.raises(ScramError, match="signature is wrong"):
        authenticate(exchange, BROKER_APIS, mechanism, "b:1")


@pytest.mark.parametrize(
    ("apis", "answers", "message"),
    [
        ({SASL_AUTHENTICATE: (0, 2)}, [], "offers no SaslHandshake"),
        ({SASL_HANDSHAKE: (0, 0), SASL_AUTHENTICATE: (0, 2)}, [], "offers no SaslHandshake"),
        ({SASL_HANDSHAKE: (0, 1), SASL_AUTHENTICATE: (0, 0)}, [], "SaslAuthenticate v1"),
        (BROKER_APIS,
         [b"\x00\x21\x00\x00\x00\x02\x00\x0dSCRAM-SHA-512\x00\x05OTHER"],
         "b:1 does not enable PLAIN on this listener \\(it offers SCRAM-SHA-512, OTHER\\)"),
        (BROKER_APIS, [b"\x00\x21\x00\x00\x00\x00"], "it offers none"),
        (BROKER_APIS, [b"\x00\x22\x00\x00\x00\x00"], "refused SaslHandshake: ILLEGAL_SASL_STATE"),
        (BROKER_APIS, [HANDSHAKE_OK, authenticate_body(2, 58, "bad password", b"", 0)],
         "refused PLAIN authentication: SASL_AUTHENTICATION_FAILED: bad password"),
        (BROKER_APIS, [HANDSHAKE_OK, authenticate_body(2, 34, None, b"", 0)],
         "refused PLAIN authentication: ILLEGAL_SASL_STATE$"),
    ],
)  # fmt: skip
def test_refusals_name_the_broker_and_why(
    apis: dict[int, tuple[int, int]], answers: list[bytes], message: str
) -> None:
    exchange, _ = scripted(*answers)
    with pytest.raises(SaslAuthenticationFailed, match=message):
        authenticate(exchange, apis, Plain("mon", "pw"), "b:1")


def test_version_1_when_the_broker_has_no_flexible_authenticate() -> None:
    exchange, sent = scripted(HANDSHAKE_OK, authenticate_body(1, 0, None, b"", 0))
    apis = {SASL_HANDSHAKE: (0, 1), SASL_AUTHENTICATE: (0, 1)}
    assert authenticate(exchange, apis, Plain("m", "p"), "b:1") == 0
    assert sent[1][:2] == (SASL_AUTHENTICATE, 1)

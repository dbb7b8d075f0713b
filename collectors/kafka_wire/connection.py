"""Sockets to brokers: addresses, TLS, one connection's framing, and the kept connections.

Connections are kept between calls (one per broker address, versions negotiated once with
ApiVersions) because a collection cycle asks the same coordinators every few seconds, and a
TLS handshake plus ApiVersions would otherwise double each cycle's round trips. One that
failed in any way is dropped, as its stream may be mid-message; the next request to that
broker connects again, so a restarted broker costs one reconnect, not a call.

Security is read from the librdkafka-style settings the cluster already has, so one cluster
configuration serves both clients: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL, with the SASL
mechanisms of ``collectors.kafka_wire.sasl`` (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER). A SASL
connection authenticates right after ApiVersions, and again on the same connection before the
session lifetime the broker granted runs out (KIP-368: a broker with
``connections.max.reauth.ms`` closes a connection whose session expired), at a random point
between 85% and 95% of it, as Kafka's Java client does, so that many connections do not all
re-authenticate at once. A setting this client cannot honour (GSSAPI, a keystore) raises
``UnsupportedSecurity`` at construction, before any connection, naming it.
"""

from __future__ import annotations

import contextlib
import random
import selectors
import socket
import ssl
import time
from collections.abc import Iterator, Mapping
from typing import Any

from collectors.kafka_wire.codec import (
    API_VERSIONS,
    UNSUPPORTED_VERSION,
    WireError,
    decode_api_versions_response,
    decode_response_header,
    encode_api_versions_request,
    encode_request,
    error_name,
    response_header_version,
)
from collectors.kafka_wire.sasl import Mechanism, UnsupportedSecurity, authenticate, sasl_mechanism

__all__ = [
    "DEFAULT_CLIENT_ID",
    "Address",
    "BrokerConnections",
    "BrokerUnreachable",
    "Connection",
    "DeadlineExceeded",
    "UnsupportedSecurity",
    "parse_bootstrap",
    "wait_readable",
    "ssl_context",
]

Address = tuple[str, int]

DEFAULT_CLIENT_ID = "lagwatch-epochs"
_DEFAULT_PORT = 9092
_API_VERSIONS_VERSION = 3
# Larger than any describe answer; smaller than what a TLS record or an HTTP reply read as a
# size prefix gives ("HTTP" is 1.2 GB), so talking to the wrong kind of port is named as such.
_MAX_RESPONSE_BYTES = 128 * 1024 * 1024

# The librdkafka-style SSL settings understood here; any other ssl.* setting raises, rather
# than being ignored and failing later as a puzzling handshake error.
_SSL_KEYS = frozenset(
    {
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "ssl.cipher.suites",
    }
)


class BrokerUnreachable(ConnectionError):
    """No bootstrap broker could be asked; the message lists each address and why."""


class DeadlineExceeded(TimeoutError):
    """The call's ``timeout_s`` ran out before the brokers answered."""


def parse_bootstrap(servers: str) -> list[Address]:
    """``host:port`` pairs of a ``bootstrap.servers`` string (``PROTO://`` prefixes and
    ``[v6]:port`` allowed, port 9092 when absent), in the given order."""
    addresses: list[Address] = []
    for raw in servers.split(","):
        item = raw.strip()
        if "://" in item:
            item = item.split("://", 1)[1]
        if not item:
            continue
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
        elif item.count(":") == 1:
            host, port_text = item.split(":")
        else:
            host, port_text = item, ""
        try:
            port = int(port_text) if port_text else _DEFAULT_PORT
        except ValueError:
            raise ValueError(f"bad port in bootstrap server {raw.strip()!r}") from None
        if not host or not 0 < port < 65536:
            raise ValueError(f"bad bootstrap server {raw.strip()!r}")
        addresses.append((host, port))
    if not addresses:
        raise ValueError(f"no broker address in bootstrap servers {servers!r}")
    return addresses


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() not in ("false", "0", "no", "off")


def ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext | None:
    """None for PLAINTEXT and SASL_PLAINTEXT; for SSL and SASL_SSL a context from the
    librdkafka-style settings.

    As in librdkafka: the system's CA store unless ``ssl.ca.location``/``ssl.ca.pem``; the
    broker's name checked unless ``ssl.endpoint.identification.algorithm`` is ``none``;
    certificates not checked at all with ``enable.ssl.certificate.verification=false``.
    """
    protocol = str(config.get("security.protocol") or "plaintext").strip().upper()
    if protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        return None
    if protocol not in ("SSL", "SASL_SSL"):
        raise UnsupportedSecurity(f"unknown security.protocol {protocol!r}")
    unknown = sorted(
        key for key, value in config.items()
        if key.startswith("ssl.") and key not in _SSL_KEYS and value not in (None, "")
    )  # fmt: skip
    if unknown:
        raise UnsupportedSecurity(f"SSL settings not supported: {', '.join(unknown)}")
    ca_location = config.get("ssl.ca.location")
    context = ssl.create_default_context(
        cafile=ca_location if ca_location and ca_location != "probe" else None,
        cadata=config.get("ssl.ca.pem") or None,
    )
    if config.get("ssl.certificate.location"):
        context.load_cert_chain(
            config["ssl.certificate.location"],
            config.get("ssl.key.location") or None,
            config.get("ssl.key.password") or None,
        )
    if config.get("ssl.cipher.suites"):
        context.set_ciphers(config["ssl.cipher.suites"])
    algorithm = str(config.get("ssl.endpoint.identification.algorithm") or "https").lower()
    context.check_hostname = algorithm != "none"
    if not _truthy(config.get("enable.ssl.certificate.verification", True)):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _remaining(deadline: float, what: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded(f"deadline passed before {what}")
    return left


class Connection:
    """One socket to one broker: framing, correlation ids, the broker's API versions."""

    def __init__(self, address: Address, sock: socket.socket, client_id: str) -> None:
        self.address = address
        self.name = f"{address[0]}:{address[1]}"
        self.api_versions: Mapping[int, tuple[int, int]] = {}
        # When to authenticate again (monotonic seconds; None: never): KIP-368.
        self.reauth_at: float | None = None
        self._sock = sock
        self._client_id = client_id
        self._next_id = 0

    def fileno(self) -> int:
        return self._sock.fileno()

    def buffered(self) -> bool:
        """Whether TLS has already decrypted bytes that ``select`` cannot see."""
        return isinstance(self._sock, ssl.SSLSocket) and self._sock.pending() > 0

    def dropped(self) -> bool:
        """Whether the broker closed an idle connection: a healthy one has nothing to read."""
        try:
            return bool(_readable([self], 0))
        except (OSError, ValueError):
            return True

    def send(self, api_key: int, version: int, body: bytes, deadline: float) -> int:
        correlation_id = self._next_id
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        frame = encode_request(api_key, version, correlation_id, self._client_id, body)
        self._sock.settimeout(_remaining(deadline, f"sending to {self.name}"))
        try:
            self._sock.sendall(frame)
        except TimeoutError as exc:
            raise DeadlineExceeded(f"sending to {self.name} timed out") from exc
        return correlation_id

    def receive(self, api_key: int, version: int, correlation_id: int, deadline: float) -> bytes:
        """The body of the answer to ``correlation_id``, which must be the next one: Kafka
        answers a connection's requests in order, so any other id means we lost our place."""
        size = int.from_bytes(self._read(4, deadline), "big", signed=True)
        if not 0 < size <= _MAX_RESPONSE_BYTES:
            raise WireError(
                f"{self.name}: response size {size} is implausible (not a Kafka listener, "
                "or the wrong security.protocol?)"
            )
        frame = self._read(size, deadline)
        got, body = decode_response_header(frame, response_header_version(api_key, version))
        if got != correlation_id:
            raise WireError(f"{self.name}: answer to request {got}, expected {correlation_id}")
        return body

    def _read(self, n: int, deadline: float) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            self._sock.settimeout(_remaining(deadline, f"an answer from {self.name}"))
            try:
                count = self._sock.recv_into(view[got:])
            except TimeoutError as exc:
                raise DeadlineExceeded(f"no answer from {self.name} in time") from exc
            if not count:
                raise ConnectionError(f"{self.name} closed the connection")
            got += count
        return bytes(buf)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()


def wait_readable(conns: list[Connection], deadline: float) -> list[Connection]:
    """The connections with something to read, waiting at most until the deadline."""
    buffered = [conn for conn in conns if conn.buffered()]
    if buffered:
        return buffered
    return _readable(conns, max(0.0, deadline - time.monotonic()))


def _readable(conns: list[Connection], timeout: float) -> list[Connection]:
    # selectors (epoll), not select.select: a busy worker process may hold descriptors
    # numbered past select's limit of 1024.
    with selectors.DefaultSelector() as selector:
        for conn in conns:
            selector.register(conn, selectors.EVENT_READ)
        ready = {key.fd for key, _ in selector.select(timeout)}
    return [conn for conn in conns if conn.fileno() in ready]


class BrokerConnections:
    """The open connections of one client, by broker address, and how to get one."""

    def __init__(self, bootstrap_servers: str, config: Mapping[str, Any]) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self._ssl = ssl_context(config)
        self.sasl: Mechanism | None = sasl_mechanism(config)
        self._client_id = str(config.get("client.id") or DEFAULT_CLIENT_ID)
        self.open: dict[Address, Connection] = {}

    def close(self) -> None:
        for conn in self.open.values():
            conn.close()
        self.open.clear()

    def brokers(self, deadline: float, errors: list[str]) -> Iterator[Connection]:
        """Brokers to ask what any broker can answer: open connections first, then the
        bootstrap addresses (again, if their connection just failed)."""
        for conn in list(self.open.values()):
            if conn.dropped() or not self._reauthenticated(conn, deadline):
                self.drop(conn)
            else:
                yield conn
        for address in self.bootstrap:
            if address in self.open:
                continue  # still open: already asked above
            try:
                yield self._connect(address, deadline)
            except DeadlineExceeded:
                raise
            except OSError as exc:
                errors.append(f"{address[0]}:{address[1]}: {exc}")

    def connection(self, address: Address, deadline: float) -> Connection:
        conn = self.open.get(address)
        if conn is not None and (conn.dropped() or not self._reauthenticated(conn, deadline)):
            self.drop(conn)
            conn = None
        return conn or self._connect(address, deadline)

    def _connect(self, address: Address, deadline: float) -> Connection:
        name = f"{address[0]}:{address[1]}"
        try:
            sock = socket.create_connection(address, timeout=_remaining(deadline, name))
        except TimeoutError as exc:
            raise DeadlineExceeded(f"connecting to {name} timed out") from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:
                sock = self._ssl.wrap_socket(sock, server_hostname=address[0])
        except TimeoutError as exc:
            sock.close()
            raise DeadlineExceeded(f"TLS handshake with {name} timed out") from exc
        except OSError:
            sock.close()
            raise
        conn = Connection(address, sock, self._client_id)
        self.open[address] = conn
        version = _API_VERSIONS_VERSION
        answer = self.exchange(
            conn, API_VERSIONS, version, encode_api_versions_request(version), deadline
        )
        versions = self.guarded(conn, decode_api_versions_response, answer, version)
        # UNSUPPORTED_VERSION still lists the broker's APIs (KIP-511): a broker that old has
        # no API this client needs, which choose_version will say.
        if versions.error_code not in (0, UNSUPPORTED_VERSION):
            self.drop(conn)
            raise ConnectionError(f"{name} refused ApiVersions: {error_name(versions.error_code)}")
        conn.api_versions = versions.api_versions
        if self.sasl is not None:
            self._authenticate(conn, deadline)
        return conn

    def _authenticate(self, conn: Connection, deadline: float) -> None:
        """SaslHandshake and SaslAuthenticate; the connection is dropped if they fail."""
        assert self.sasl is not None

        def exchange(api_key: int, version: int, body: bytes) -> bytes:
            return self.exchange(conn, api_key, version, body, deadline)

        lifetime_ms = self.guarded(conn, authenticate, exchange, conn.api_versions,
                                   self.sasl, conn.name)  # fmt: skip
        conn.reauth_at = None
        if lifetime_ms > 0:
            share = 0.85 + 0.10 * random.random()  # noqa: S311 - jitter, not a secret
            conn.reauth_at = time.monotonic() + share * lifetime_ms / 1000

    def _reauthenticated(self, conn: Connection, deadline: float) -> bool:
        """Whether the connection may be used: its session has time left, or was renewed now
        (KIP-368). False if renewing failed; the caller drops it and connects afresh."""
        if conn.reauth_at is None or time.monotonic() < conn.reauth_at:
            return True
        try:
            self._authenticate(conn, deadline)
        except DeadlineExceeded:
            raise
        except (OSError, ValueError):
            return False
        return True

    def exchange(
        self, conn: Connection, api_key: int, version: int, body: bytes, deadline: float
    ) -> bytes:
        correlation_id = self.guarded(conn, conn.send, api_key, version, body, deadline)
        return self.guarded(conn, conn.receive, api_key, version, correlation_id, deadline)

    def guarded(self, conn: Connection, call: Any, *args: Any) -> Any:
        """``call(*args)``; on any failure the connection is dropped, as its stream may now
        be mid-message."""
        try:
            return call(*args)
        except BaseException:
            self.drop(conn)
            raise

    def drop(self, conn: Connection) -> None:
        if self.open.get(conn.address) is conn:
            del self.open[conn.address]
        conn.close()

    def bootstrap_text(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.bootstrap)

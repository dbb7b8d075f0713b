"""KIP-848 group epochs read from the brokers over Kafka's own protocol (the socket side).

confluent-kafka 2.16 describes KIP-848 ("consumer" protocol) groups but drops the group epoch,
the assignment epoch and the member epochs, which are what tell a finished rebalance from one
in progress. So this asks the coordinators directly, with the pure codec of ``codec.py``::

    FindCoordinator (every group, one request) ─► ConsumerGroupDescribe (one per coordinator,
                                                  all sent before any answer is read)

Two round trips per call once connected. Connections are kept between calls (one per broker
address, versions negotiated once with ApiVersions); one that failed is dropped, and the next
request to that broker connects again, so a restarted broker costs one reconnect, not a call.

Failures, and why they are shaped so: what concerns one group (a classic group's
GROUP_ID_NOT_FOUND, an unreachable or slow coordinator, a broker without API 69) is that
group's result, with Kafka's error code, because the caller reports per group and goes on.
What concerns the whole call raises: ``BrokerUnreachable`` (no bootstrap broker answers),
``DeadlineExceeded`` (finding coordinators outlived ``timeout_s``), ``WireError`` (a broker
sent bytes we cannot read: a bug to see, not to hide), ``UnsupportedSecurity`` (SASL; raised
by the constructor, before any connection). All are ``OSError`` or ``ValueError``.

Not thread-safe: one ``EpochReader`` per thread (the Kafka adapter keeps one per cluster).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import time
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from collectors.kafka_wire.codec import (
    API_VERSIONS,
    CONSUMER_GROUP_DESCRIBE,
    FIND_COORDINATOR,
    OUR_VERSIONS,
    ConsumerGroupEpochs,
    Coordinator,
    WireError,
    choose_version,
    decode_api_versions_response,
    decode_consumer_group_describe_response,
    decode_find_coordinator_response,
    decode_response_header,
    encode_api_versions_request,
    encode_consumer_group_describe_request,
    encode_find_coordinator_request,
    encode_request,
    error_name,
    response_header_version,
)

__all__ = [
    "BrokerUnreachable",
    "DeadlineExceeded",
    "EpochReader",
    "UnsupportedSecurity",
    "describe_consumer_group_epochs",
    "parse_bootstrap",
    "ssl_context",
]

Address = tuple[str, int]

DEFAULT_CLIENT_ID = "lagwatch-epochs"
_DEFAULT_PORT = 9092
_API_VERSIONS_VERSION = 3
# Larger than any describe answer; smaller than what a TLS record or an HTTP reply read as a
# size prefix gives ("HTTP" is 1.2 GB), so talking to the wrong kind of port is named as such.
_MAX_RESPONSE_BYTES = 128 * 1024 * 1024
# Errors after which a fresh FindCoordinator may well succeed: the group moved, its
# coordinator is loading it, or (FindCoordinator's own answer while __consumer_offsets is
# being created on a new cluster) there is none yet. Retried once, after Kafka's default
# retry.backoff.ms.
_RETRIABLE = frozenset({14, 15, 16})
_RETRY_BACKOFF_S = 0.1

_REQUEST_TIMED_OUT = 7
_COORDINATOR_NOT_AVAILABLE = 15
_UNSUPPORTED_VERSION = 35
_UNKNOWN_SERVER_ERROR = -1

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


class UnsupportedSecurity(ValueError):
    """A security setting this client does not implement (SASL, keystores): fall back."""


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
    """None for PLAINTEXT; for SSL a context from the librdkafka-style settings.

    As in librdkafka: the system's CA store unless ``ssl.ca.location``/``ssl.ca.pem``; the
    broker's name checked unless ``ssl.endpoint.identification.algorithm`` is ``none``;
    certificates not checked at all with ``enable.ssl.certificate.verification=false``.
    """
    protocol = str(config.get("security.protocol") or "plaintext").strip().upper()
    if protocol == "PLAINTEXT":
        return None
    if protocol.startswith("SASL"):
        raise UnsupportedSecurity(f"security.protocol {protocol} (SASL) is not supported")
    if protocol != "SSL":
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


class _Connection:
    """One socket to one broker: framing, correlation ids, the broker's API versions."""

    def __init__(self, address: Address, sock: socket.socket, client_id: str) -> None:
        self.address = address
        self.name = f"{address[0]}:{address[1]}"
        self.api_versions: Mapping[int, tuple[int, int]] = {}
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


def _ready(conns: list[_Connection], deadline: float) -> list[_Connection]:
    """The connections with something to read, waiting at most until the deadline."""
    buffered = [conn for conn in conns if conn.buffered()]
    if buffered:
        return buffered
    return _readable(conns, max(0.0, deadline - time.monotonic()))


def _readable(conns: list[_Connection], timeout: float) -> list[_Connection]:
    # selectors (epoll), not select.select: a busy worker process may hold descriptors
    # numbered past select's limit of 1024.
    with selectors.DefaultSelector() as selector:
        for conn in conns:
            selector.register(conn, selectors.EVENT_READ)
        ready = {key.fd for key, _ in selector.select(timeout)}
    return [conn for conn in conns if conn.fileno() in ready]


class EpochReader:
    """Describes KIP-848 groups with their epochs; keeps its broker connections between calls.

    ``config`` is the librdkafka-style client configuration the cluster already has: only
    ``security.protocol``, the ``ssl.*`` settings and ``client.id`` are read.
    """

    def __init__(self, bootstrap_servers: str, config: Mapping[str, Any] | None = None) -> None:
        config = config or {}
        self._bootstrap = parse_bootstrap(bootstrap_servers)
        self._ssl = ssl_context(config)
        self._client_id = str(config.get("client.id") or DEFAULT_CLIENT_ID)
        self._connections: dict[Address, _Connection] = {}

    def __enter__(self) -> EpochReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def describe(self, groups: Sequence[str], timeout_s: float) -> dict[str, ConsumerGroupEpochs]:
        """Every group's ``ConsumerGroupEpochs`` (in the order asked), within ``timeout_s``.

        NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE are
        asked again once, with a fresh FindCoordinator, if the deadline allows.
        """
        deadline = time.monotonic() + timeout_s
        wanted = list(dict.fromkeys(groups))
        if not wanted:
            return {}
        results = self._attempt(wanted, deadline, timeout_s)
        retry = [g for g in wanted if results[g].error_code in _RETRIABLE]
        if retry and deadline - time.monotonic() > 2 * _RETRY_BACKOFF_S:
            time.sleep(_RETRY_BACKOFF_S)
            # If the second try cannot even find the coordinators, the first answers stand.
            with contextlib.suppress(BrokerUnreachable, DeadlineExceeded):
                results.update(self._attempt(retry, deadline, timeout_s))
        return {g: results[g] for g in wanted}

    # --- one attempt ------------------------------------------------------------------------

    def _attempt(
        self, groups: list[str], deadline: float, timeout_s: float
    ) -> dict[str, ConsumerGroupEpochs]:
        results: dict[str, ConsumerGroupEpochs] = {}
        by_address: dict[Address, list[str]] = {}
        for group, found in self._find_coordinators(groups, deadline).items():
            if isinstance(found, ConsumerGroupEpochs):
                results[group] = found
            else:
                by_address.setdefault((found.host, found.port), []).append(group)
        results.update(self._describe_at(by_address, deadline, timeout_s))
        return results

    def _find_coordinators(
        self, groups: list[str], deadline: float
    ) -> dict[str, Coordinator | ConsumerGroupEpochs]:
        """Each group's coordinator, or its result already (an error), from any broker."""
        errors: list[str] = []
        for conn in self._brokers(deadline, errors):
            version = choose_version(FIND_COORDINATOR, conn.api_versions)
            if version is None:
                why = f"{conn.name} does not offer FindCoordinator v4+, so not API 69 either"
                return {g: ConsumerGroupEpochs.failed(g, _UNSUPPORTED_VERSION, why) for g in groups}
            body = encode_find_coordinator_request(version, groups)
            try:
                answer = self._exchange(conn, FIND_COORDINATOR, version, body, deadline)
            except DeadlineExceeded:
                raise
            except OSError as exc:
                errors.append(f"{conn.name}: {exc}")
                continue
            decoded = self._guarded(conn, decode_find_coordinator_response, answer, version)
            found = {c.key: c for c in decoded.coordinators}
            return {g: _coordinator_or_error(g, found.get(g), conn.name) for g in groups}
        tried = "; ".join(errors) or "no address"
        raise BrokerUnreachable(f"no broker of {self._bootstrap_text()} reachable: {tried}")

    def _describe_at(
        self, by_address: Mapping[Address, list[str]], deadline: float, timeout_s: float
    ) -> dict[str, ConsumerGroupEpochs]:
        """One ConsumerGroupDescribe per coordinator, all sent before any answer is read, so
        several coordinators cost one round trip, and a slow one fails only its groups."""
        results: dict[str, ConsumerGroupEpochs] = {}
        in_flight: list[tuple[_Connection, int, int, list[str]]] = []

        def fail(groups: list[str], name: str, exc: OSError) -> None:
            if isinstance(exc, DeadlineExceeded):
                code, why = _REQUEST_TIMED_OUT, f"no answer within {timeout_s:g} s"
            else:
                code, why = _COORDINATOR_NOT_AVAILABLE, f"unreachable: {exc}"
            results.update({g: ConsumerGroupEpochs.failed(g, code, f"coordinator {name} {why}")
                            for g in groups})  # fmt: skip

        for address, groups in by_address.items():
            try:
                conn = self._connection(address, deadline)
            except OSError as exc:
                fail(groups, f"{address[0]}:{address[1]}", exc)
                continue
            version = choose_version(CONSUMER_GROUP_DESCRIBE, conn.api_versions)
            if version is None:
                results.update({g: _unsupported(g, conn) for g in groups})
                continue
            body = encode_consumer_group_describe_request(version, groups)
            try:
                correlation_id = self._guarded(conn, conn.send, CONSUMER_GROUP_DESCRIBE,
                                               version, body, deadline)  # fmt: skip
            except OSError as exc:
                fail(groups, conn.name, exc)
                continue
            in_flight.append((conn, version, correlation_id, groups))

        # Answers are read as they arrive, so that one slow coordinator cannot make the
        # others' answers, already here, miss the deadline.
        while in_flight:
            ready = _ready([conn for conn, *_ in in_flight], deadline)
            if not ready:
                for conn, _, _, groups in in_flight:
                    self._drop(conn)  # its answer may still come: the stream is mid-message
                    fail(groups, conn.name, DeadlineExceeded())
                break
            for entry in [e for e in in_flight if e[0] in ready]:
                in_flight.remove(entry)
                conn, version, correlation_id, groups = entry
                try:
                    answer = self._guarded(conn, conn.receive, CONSUMER_GROUP_DESCRIBE,
                                           version, correlation_id, deadline)  # fmt: skip
                except OSError as exc:
                    fail(groups, conn.name, exc)
                    continue
                described = self._guarded(
                    conn, decode_consumer_group_describe_response, answer, version
                )
                results.update(_by_group(groups, described.groups, conn.name))
        return results

    # --- connections ------------------------------------------------------------------------

    def _brokers(self, deadline: float, errors: list[str]) -> Iterator[_Connection]:
        """Brokers to ask what any broker can answer: open connections first, then the
        bootstrap addresses (again, if their connection just failed)."""
        for conn in list(self._connections.values()):
            if conn.dropped():
                self._drop(conn)
            else:
                yield conn
        for address in self._bootstrap:
            if address in self._connections:
                continue  # still open: already asked above
            try:
                yield self._connect(address, deadline)
            except DeadlineExceeded:
                raise
            except OSError as exc:
                errors.append(f"{address[0]}:{address[1]}: {exc}")

    def _connection(self, address: Address, deadline: float) -> _Connection:
        conn = self._connections.get(address)
        if conn is not None and conn.dropped():
            self._drop(conn)
            conn = None
        return conn or self._connect(address, deadline)

    def _connect(self, address: Address, deadline: float) -> _Connection:
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
        conn = _Connection(address, sock, self._client_id)
        self._connections[address] = conn
        version = _API_VERSIONS_VERSION
        answer = self._exchange(
            conn, API_VERSIONS, version, encode_api_versions_request(version), deadline
        )
        versions = self._guarded(conn, decode_api_versions_response, answer, version)
        # UNSUPPORTED_VERSION still lists the broker's APIs (KIP-511): a broker that old has
        # no API this client needs, which choose_version will say.
        if versions.error_code not in (0, _UNSUPPORTED_VERSION):
            self._drop(conn)
            raise ConnectionError(f"{name} refused ApiVersions: {error_name(versions.error_code)}")
        conn.api_versions = versions.api_versions
        return conn

    def _exchange(
        self, conn: _Connection, api_key: int, version: int, body: bytes, deadline: float
    ) -> bytes:
        correlation_id = self._guarded(conn, conn.send, api_key, version, body, deadline)
        return self._guarded(conn, conn.receive, api_key, version, correlation_id, deadline)

    def _guarded(self, conn: _Connection, call: Any, *args: Any) -> Any:
        """``call(*args)``; on any failure the connection is dropped, as its stream may now
        be mid-message."""
        try:
            return call(*args)
        except BaseException:
            self._drop(conn)
            raise

    def _drop(self, conn: _Connection) -> None:
        if self._connections.get(conn.address) is conn:
            del self._connections[conn.address]
        conn.close()

    def _bootstrap_text(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self._bootstrap)


def _coordinator_or_error(
    group: str, found: Coordinator | None, asked: str
) -> Coordinator | ConsumerGroupEpochs:
    if found is None:
        return ConsumerGroupEpochs.failed(
            group, _UNKNOWN_SERVER_ERROR, f"{asked} left the group out of FindCoordinator"
        )
    if found.error_code:
        why = found.error_message or error_name(found.error_code)
        return ConsumerGroupEpochs.failed(group, found.error_code, f"FindCoordinator: {why}")
    return found


def _by_group(
    groups: list[str], answered: Sequence[ConsumerGroupEpochs], coordinator: str
) -> dict[str, ConsumerGroupEpochs]:
    found = {g.group: g for g in answered}
    missing = f"{coordinator} left the group out of its answer"
    return {
        g: found.get(g) or ConsumerGroupEpochs.failed(g, _UNKNOWN_SERVER_ERROR, missing)
        for g in groups
    }


def _unsupported(group: str, conn: _Connection) -> ConsumerGroupEpochs:
    theirs = conn.api_versions.get(CONSUMER_GROUP_DESCRIBE)
    low, high = OUR_VERSIONS[CONSUMER_GROUP_DESCRIBE]
    if theirs is None:
        why = f"{conn.name} does not offer ConsumerGroupDescribe (API 69): no KIP-848 groups there"
    else:
        offered = f"v{theirs[0]}-{theirs[1]}"
        why = f"{conn.name} offers ConsumerGroupDescribe {offered}, not v{low}-{high}"
    return ConsumerGroupEpochs.failed(group, _UNSUPPORTED_VERSION, why)


def describe_consumer_group_epochs(
    bootstrap_servers: str,
    groups: Sequence[str],
    *,
    config: Mapping[str, Any] | None = None,
    timeout_s: float,
) -> dict[str, ConsumerGroupEpochs]:
    """One-off ``EpochReader.describe`` (connects, describes, closes)."""
    with EpochReader(bootstrap_servers, config) as reader:
        return reader.describe(groups, timeout_s)

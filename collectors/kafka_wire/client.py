"""Group coordinators asked over Kafka's own protocol (the socket side of ``codec``).

Three questions confluent-kafka 2.16 cannot be trusted with:

* KIP-848 epochs (``GroupClient.describe``). confluent-kafka describes "consumer" protocol
  groups but drops the group epoch, the assignment epoch and the member epochs, which are what
  tell a finished rebalance from one in progress.
* Committed offsets (``GroupClient.fetch_committed``). ``list_consumer_group_offsets``
  crashes the whole process (NULL dereference in librdkafka's OffsetFetch handler, librdkafka
  issue #5040) when a coordinator answers NOT_COORDINATOR, i.e. whenever one moves.
* Classic group descriptions (``GroupClient.describe_classic``). ``describe_consumer_groups``,
  like every coordinator-targeted Admin API call, aborts the process (``Assertion
  eonce->refcnt > 0 failed`` in ``rd_kafka_enq_once_del_source_return``, librdkafka issues
  #4605/#3663, fix in PR #5397, unreleased) when the connection to the coordinator drops
  mid-call, as it does whenever a broker restarts during a collection cycle.

All ask the coordinators directly, the same way::

    FindCoordinator (every group, one request) ─► ConsumerGroupDescribe / OffsetFetch /
                                                  DescribeGroups (per coordinator, all sent
                                                  before any answer is read; OffsetFetch and
                                                  DescribeGroups in batches of groups)

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

Not thread-safe: one ``GroupClient`` per thread (the Kafka adapter keeps one per cluster).
``EpochReader`` is the same class under the name it had when it only described epochs.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

from collectors.kafka_wire.codec import (
    API_VERSIONS,
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    OFFSET_FETCH,
    OUR_VERSIONS,
    ClassicGroup,
    ConsumerGroupEpochs,
    Coordinator,
    GroupOffsets,
    WireError,
    choose_version,
    decode_api_versions_response,
    decode_consumer_group_describe_response,
    decode_describe_groups_response,
    decode_find_coordinator_response,
    decode_offset_fetch_response,
    decode_response_header,
    encode_api_versions_request,
    encode_consumer_group_describe_request,
    encode_describe_groups_request,
    encode_find_coordinator_request,
    encode_offset_fetch_request,
    encode_request,
    error_name,
    response_header_version,
)

__all__ = [
    "DESCRIBE_GROUPS_BATCH",
    "OFFSET_FETCH_BATCH",
    "BrokerUnreachable",
    "DeadlineExceeded",
    "EpochReader",
    "GroupClient",
    "UnsupportedSecurity",
    "describe_classic_groups",
    "describe_consumer_group_epochs",
    "fetch_committed_offsets",
    "parse_bootstrap",
    "ssl_context",
]

Address = tuple[str, int]
# A group's error code and why, where no coordinator could be asked about it.
_Failure = tuple[int, str]
R = TypeVar("R", ConsumerGroupEpochs, GroupOffsets, ClassicGroup)

DEFAULT_CLIENT_ID = "lagwatch-epochs"
_DEFAULT_PORT = 9092
_API_VERSIONS_VERSION = 3
# Groups per OffsetFetch request. It bounds one answer (500 groups of 50 partitions is about
# 700 kB) and one coordinator's work per request; a coordinator's batches are all in flight
# at once anyway, on one connection.
OFFSET_FETCH_BATCH = 500
# Groups per DescribeGroups request, for the same reasons (an answer carries every member's
# subscription and assignment bytes: 500 groups of 10 members is a few hundred kB).
DESCRIBE_GROUPS_BATCH = 500
# Requests sent to one connection and not answered yet (as Kafka's clients'
# max.in.flight.requests.per.connection): see GroupClient._ask_coordinators.
_MAX_IN_FLIGHT = 5
# Larger than any describe answer; smaller than what a TLS record or an HTTP reply read as a
# size prefix gives ("HTTP" is 1.2 GB), so talking to the wrong kind of port is named as such.
_MAX_RESPONSE_BYTES = 128 * 1024 * 1024
# Errors after which a fresh FindCoordinator may well succeed: the group moved, its
# coordinator is loading it, or (FindCoordinator's own answer while __consumer_offsets is
# being created on a new cluster) there is none yet. Retried after Kafka's default
# retry.backoff.ms, doubling up to its retry.backoff.max.ms.
_RETRIABLE = frozenset({14, 15, 16})
_RETRY_BACKOFF_S = 0.1
_MAX_RETRY_BACKOFF_S = 1.0

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


@dataclass(frozen=True)
class _GroupApi(Generic[R]):
    """What differs between the per-group APIs asked of coordinators; the rest is shared."""

    api_key: int
    name: str
    encode: Callable[[int, list[str]], bytes]
    decode: Callable[[bytes, int], Sequence[R]]
    failed: Callable[[str, int, str | None], R]
    # Groups per request (None: all of a coordinator's groups in one).
    batch: int | None
    # Said of a broker that lacks the API altogether.
    absent: str
    # The result kept for a group the broker answered, given the coordinator's name.
    annotate: Callable[[R, str], R] = lambda result, _coordinator: result


def _describe_body(version: int, groups: list[str]) -> bytes:
    return encode_consumer_group_describe_request(version, groups)


def _describe_groups(body: bytes, version: int) -> Sequence[ConsumerGroupEpochs]:
    return decode_consumer_group_describe_response(body, version).groups


def _offsets_body(version: int, groups: list[str], require_stable: bool) -> bytes:
    return encode_offset_fetch_request(version, groups, require_stable)


def _offsets_groups(body: bytes, version: int) -> Sequence[GroupOffsets]:
    return decode_offset_fetch_response(body, version).groups


def _classic_body(version: int, groups: list[str]) -> bytes:
    return encode_describe_groups_request(version, groups)


def _classic_groups(body: bytes, version: int) -> Sequence[ClassicGroup]:
    return decode_describe_groups_response(body, version).groups


def _name_the_coordinator(result: R, coordinator: str) -> R:
    """OffsetFetch (and DescribeGroups before v6) carry codes without messages: say which
    coordinator gave the error."""
    if result.ok or result.error_message is not None:
        return result
    return replace(result, error_message=f"coordinator {coordinator}: {result.error_name}")


_DESCRIBE = _GroupApi(
    api_key=CONSUMER_GROUP_DESCRIBE,
    name="ConsumerGroupDescribe",
    encode=_describe_body,
    decode=_describe_groups,
    failed=ConsumerGroupEpochs.failed,
    batch=None,
    absent=": no KIP-848 groups there",
)


def _offset_fetch(require_stable: bool) -> _GroupApi[GroupOffsets]:
    return _GroupApi(
        api_key=OFFSET_FETCH,
        name="OffsetFetch",
        encode=partial(_offsets_body, require_stable=require_stable),
        decode=_offsets_groups,
        failed=GroupOffsets.failed,
        batch=OFFSET_FETCH_BATCH,
        absent=" (batched OffsetFetch is v8+, Kafka 3.0+)",
        annotate=_name_the_coordinator,
    )


def _describe_classic() -> _GroupApi[ClassicGroup]:
    return _GroupApi(
        api_key=DESCRIBE_GROUPS,
        name="DescribeGroups",
        encode=_classic_body,
        decode=_classic_groups,
        failed=ClassicGroup.failed,
        batch=DESCRIBE_GROUPS_BATCH,
        absent="",
        annotate=_name_the_coordinator,
    )


@dataclass
class _Pending:
    """A request sent to a coordinator, whose answer has not been read yet."""

    conn: _Connection
    version: int
    correlation_id: int
    groups: list[str]


class GroupClient:
    """Asks group coordinators about many groups at once; keeps its broker connections
    between calls. ``describe`` gives KIP-848 epochs, ``fetch_committed`` committed offsets,
    ``describe_classic`` classic groups' members and assignments.

    ``config`` is the librdkafka-style client configuration the cluster already has: only
    ``security.protocol``, the ``ssl.*`` settings and ``client.id`` are read.
    """

    def __init__(self, bootstrap_servers: str, config: Mapping[str, Any] | None = None) -> None:
        config = config or {}
        self._bootstrap = parse_bootstrap(bootstrap_servers)
        self._ssl = ssl_context(config)
        self._client_id = str(config.get("client.id") or DEFAULT_CLIENT_ID)
        self._connections: dict[Address, _Connection] = {}
        # Each group's coordinator ("host:port") as the last FindCoordinator named it: shown
        # with the group, as DescribeGroups itself does not say who answered.
        self.coordinators: dict[str, str] = {}

    def __enter__(self) -> Self:
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
        return self._per_group(_DESCRIBE, groups, timeout_s, retries=1)

    def fetch_committed(
        self,
        groups: Sequence[str],
        timeout_s: float,
        *,
        retries: int = 3,
        require_stable: bool = False,
    ) -> dict[str, GroupOffsets]:
        """Every group's committed offsets, all topics (in the order asked), within
        ``timeout_s``: OffsetFetch v8/v9, ``OFFSET_FETCH_BATCH`` groups per request, every
        coordinator's requests sent before any answer is read.

        What replaces ``AdminClient.list_consumer_group_offsets``, which with librdkafka 2.16
        crashes the process when a coordinator answers NOT_COORDINATOR (librdkafka #5040):
        here that answer, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE (also
        what a coordinator that closed the connection gives) are asked again, up to
        ``retries`` times, each with a fresh FindCoordinator after a pause (0.1 s, doubling),
        if the deadline leaves room. Bounded, because a call that spent its whole deadline
        retrying would leave the caller's next requests none.

        Other per-group errors are that group's result, not raised: GROUP_AUTHORIZATION_FAILED,
        REQUEST_TIMED_OUT (its coordinator did not answer in time), UNSUPPORTED_VERSION (a
        broker older than Kafka 3.0). A group the coordinator does not know (deleted, expired,
        never committed) is answered with no error and no offsets, as Kafka does.
        ``require_stable``: see ``encode_offset_fetch_request``.
        """
        if retries < 0:
            raise ValueError("retries must be >= 0")
        return self._per_group(_offset_fetch(require_stable), groups, timeout_s, retries)

    def describe_classic(
        self, groups: Sequence[str], timeout_s: float, *, retries: int = 3
    ) -> dict[str, ClassicGroup]:
        """Every group's ``ClassicGroup`` (in the order asked), within ``timeout_s``:
        DescribeGroups v5/v6, ``DESCRIBE_GROUPS_BATCH`` groups per request, every
        coordinator's requests sent before any answer is read.

        What replaces ``AdminClient.describe_consumer_groups`` for classic groups, which with
        librdkafka 2.16 aborts the process when a coordinator's connection drops mid-call
        (librdkafka #4605/#3663). Retried as in ``fetch_committed``: NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE (also what a coordinator
        that closed the connection gives), up to ``retries`` times, with a fresh
        FindCoordinator after a pause (0.1 s, doubling), while the deadline leaves room.

        Other per-group errors are that group's result, not raised. Kafka 4.1 answers a group
        it has no classic group of (never existed, deleted, or a KIP-848 "consumer" group,
        which ``describe`` is for) GROUP_ID_NOT_FOUND with state "Dead" (v6; a v5 broker says
        "Dead" without an error); a group holding only commits made without a member (an
        admin's, or ``assign``-ing consumers) is "Empty" with no members.
        """
        if retries < 0:
            raise ValueError("retries must be >= 0")
        return self._per_group(_describe_classic(), groups, timeout_s, retries)

    # --- one call ---------------------------------------------------------------------------

    def _per_group(
        self, api: _GroupApi[R], groups: Sequence[str], timeout_s: float, retries: int
    ) -> dict[str, R]:
        deadline = time.monotonic() + timeout_s
        wanted = list(dict.fromkeys(groups))
        if not wanted:
            return {}
        results = self._attempt(api, wanted, deadline, timeout_s)
        pause = _RETRY_BACKOFF_S
        for _ in range(retries):
            retry = [g for g in wanted if results[g].error_code in _RETRIABLE]
            if not retry or deadline - time.monotonic() <= 2 * pause:
                break
            time.sleep(pause)
            pause = min(2 * pause, _MAX_RETRY_BACKOFF_S)
            try:
                results.update(self._attempt(api, retry, deadline, timeout_s))
            except (BrokerUnreachable, DeadlineExceeded):
                break  # a retry that cannot even find the coordinators: earlier answers stand
        return {g: results[g] for g in wanted}

    def _attempt(
        self, api: _GroupApi[R], groups: list[str], deadline: float, timeout_s: float
    ) -> dict[str, R]:
        results: dict[str, R] = {}
        by_address: dict[Address, list[str]] = {}
        for group, found in self._find_coordinators(api, groups, deadline).items():
            if isinstance(found, Coordinator):
                by_address.setdefault((found.host, found.port), []).append(group)
            else:
                results[group] = api.failed(group, *found)
        results.update(self._ask_coordinators(api, by_address, deadline, timeout_s))
        return results

    def _find_coordinators(
        self, api: _GroupApi[Any], groups: list[str], deadline: float
    ) -> dict[str, Coordinator | _Failure]:
        """Each group's coordinator, or why there is none, from any broker."""
        errors: list[str] = []
        for conn in self._brokers(deadline, errors):
            version = choose_version(FIND_COORDINATOR, conn.api_versions)
            if version is None:
                low = OUR_VERSIONS[api.api_key][0]
                why = (
                    f"{conn.name} does not offer FindCoordinator v4+ (Kafka 3.0+), "
                    f"so not {api.name} v{low}+ either"
                )
                return {g: (_UNSUPPORTED_VERSION, why) for g in groups}
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
            for c in decoded.coordinators:
                if c.error_code == 0 and c.host:
                    self.coordinators[c.key] = f"{c.host}:{c.port}"
            return {g: _coordinator_or_error(found.get(g), conn.name) for g in groups}
        tried = "; ".join(errors) or "no address"
        raise BrokerUnreachable(f"no broker of {self._bootstrap_text()} reachable: {tried}")

    def _ask_coordinators(
        self,
        api: _GroupApi[R],
        by_address: Mapping[Address, list[str]],
        deadline: float,
        timeout_s: float,
    ) -> dict[str, R]:
        """Every coordinator asked before any answer is read, so several coordinators cost
        one round trip, and a slow one fails only its groups.

        A coordinator with more groups than one request holds gets its batches on one
        connection (Kafka answers a connection's requests in order), at most
        ``_MAX_IN_FLIGHT`` unanswered at a time, the next sent as an answer is read: a broker
        reads no request while its previous answer is unsent, so a client that sent every
        batch before reading could fill both sides' socket buffers and stall.
        """
        results: dict[str, R] = {}
        pending: list[_Pending] = []  # sent, in order; answered in that order per connection
        queued: dict[_Connection, tuple[int, deque[list[str]]]] = {}  # version, batches

        def fail(groups: list[str], name: str, exc: OSError) -> None:
            if isinstance(exc, DeadlineExceeded):
                code, why = _REQUEST_TIMED_OUT, f"no answer within {timeout_s:g} s"
            else:
                code, why = _COORDINATOR_NOT_AVAILABLE, f"unreachable: {exc}"
            results.update({g: api.failed(g, code, f"coordinator {name} {why}") for g in groups})

        def abandon(conn: _Connection, exc: OSError) -> None:
            """Fail everything still expected of a connection that is gone."""
            for entry in [e for e in pending if e.conn is conn]:
                pending.remove(entry)
                fail(entry.groups, conn.name, exc)
            _, batches = queued.pop(conn, (0, deque()))
            for batch in batches:
                fail(batch, conn.name, exc)

        def send_more(conn: _Connection) -> None:
            version, batches = queued[conn]
            in_flight = sum(1 for e in pending if e.conn is conn)
            while batches and in_flight < _MAX_IN_FLIGHT:
                batch = batches.popleft()
                body = api.encode(version, batch)
                try:
                    correlation_id = self._guarded(conn, conn.send, api.api_key,
                                                   version, body, deadline)  # fmt: skip
                except OSError as exc:
                    fail(batch, conn.name, exc)
                    abandon(conn, exc)
                    return
                pending.append(_Pending(conn, version, correlation_id, batch))
                in_flight += 1

        for address, groups in by_address.items():
            try:
                conn = self._connection(address, deadline)
            except OSError as exc:
                fail(groups, f"{address[0]}:{address[1]}", exc)
                continue
            version = choose_version(api.api_key, conn.api_versions)
            if version is None:
                why = _unsupported(api, conn)
                results.update({g: api.failed(g, _UNSUPPORTED_VERSION, why) for g in groups})
                continue
            size = api.batch or len(groups)
            batches = deque(groups[i : i + size] for i in range(0, len(groups), size))
            queued[conn] = (version, batches)
            send_more(conn)

        # Answers are read as they arrive, so that one slow coordinator cannot make the
        # others' answers, already here, miss the deadline.
        while pending:
            conns = list(dict.fromkeys(e.conn for e in pending))
            ready = _ready(conns, deadline)
            if not ready:
                for conn in conns:
                    self._drop(conn)  # its answer may still come: the stream is mid-message
                    abandon(conn, DeadlineExceeded())
                break
            for conn in ready:
                entry = next(e for e in pending if e.conn is conn)  # the oldest: answered first
                pending.remove(entry)
                try:
                    answer = self._guarded(conn, conn.receive, api.api_key, entry.version,
                                           entry.correlation_id, deadline)  # fmt: skip
                except OSError as exc:
                    fail(entry.groups, conn.name, exc)
                    abandon(conn, exc)
                    continue
                answered = self._guarded(conn, api.decode, answer, entry.version)
                results.update(_by_group(api, entry.groups, answered, conn.name))
                send_more(conn)
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


# The name the Kafka adapter and the lab know the client by, from when it only read epochs.
EpochReader = GroupClient


def _coordinator_or_error(found: Coordinator | None, asked: str) -> Coordinator | _Failure:
    if found is None:
        return _UNKNOWN_SERVER_ERROR, f"{asked} left the group out of FindCoordinator"
    if found.error_code:
        why = found.error_message or error_name(found.error_code)
        return found.error_code, f"FindCoordinator: {why}"
    return found


def _by_group(
    api: _GroupApi[R], groups: list[str], answered: Sequence[R], coordinator: str
) -> dict[str, R]:
    found = {result.group: result for result in answered}
    missing = f"{coordinator} left the group out of its answer"
    return {
        g: api.annotate(found[g], coordinator)
        if g in found
        else api.failed(g, _UNKNOWN_SERVER_ERROR, missing)
        for g in groups
    }


def _unsupported(api: _GroupApi[Any], conn: _Connection) -> str:
    theirs = conn.api_versions.get(api.api_key)
    low, high = OUR_VERSIONS[api.api_key]
    if theirs is None:
        return f"{conn.name} does not offer {api.name} (API {api.api_key}){api.absent}"
    return f"{conn.name} offers {api.name} v{theirs[0]}-{theirs[1]}, not v{low}-{high}"


def describe_consumer_group_epochs(
    bootstrap_servers: str,
    groups: Sequence[str],
    *,
    config: Mapping[str, Any] | None = None,
    timeout_s: float,
) -> dict[str, ConsumerGroupEpochs]:
    """One-off ``GroupClient.describe`` (connects, describes, closes)."""
    with GroupClient(bootstrap_servers, config) as client:
        return client.describe(groups, timeout_s)


def fetch_committed_offsets(
    bootstrap_servers: str,
    groups: Sequence[str],
    *,
    config: Mapping[str, Any] | None = None,
    timeout_s: float,
) -> dict[str, GroupOffsets]:
    """One-off ``GroupClient.fetch_committed`` (connects, fetches, closes)."""
    with GroupClient(bootstrap_servers, config) as client:
        return client.fetch_committed(groups, timeout_s)


def describe_classic_groups(
    bootstrap_servers: str,
    groups: Sequence[str],
    *,
    config: Mapping[str, Any] | None = None,
    timeout_s: float,
) -> dict[str, ClassicGroup]:
    """One-off ``GroupClient.describe_classic`` (connects, describes, closes)."""
    with GroupClient(bootstrap_servers, config) as client:
        return client.describe_classic(groups, timeout_s)

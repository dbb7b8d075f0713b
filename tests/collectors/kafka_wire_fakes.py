"""What the Kafka wire client's tests share: byte builders, a scripted fake broker, and the
steps of the real-broker tests that the three test modules take alike.

The builders are written from Kafka's message schemas, never with the encoders under test,
so a test states the bytes a broker sends. The fake broker stages what a real one will not do
on demand (NOT_COORDINATOR, silence, a dropped connection, a wrong correlation id); it answers
ApiVersions, FindCoordinator (naming itself) and ConsumerGroupDescribe by default, and a test
module's subclass adds the default answer of the API it tests.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import statistics
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from collectors.kafka_wire import BrokerUnreachable, DeadlineExceeded
from tests.waiting import wait_for

# --- byte builders, straight from the schemas ---------------------------------------------


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uv(v: int) -> bytes:
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def cs(s: str | None) -> bytes:
    """COMPACT_(NULLABLE_)STRING: uvarint length + 1 (0 = null), UTF-8."""
    if s is None:
        return b"\x00"
    raw = s.encode()
    return uv(len(raw) + 1) + raw


def carr(items: Sequence[bytes]) -> bytes:
    return uv(len(items) + 1) + b"".join(items)


def cb(raw: bytes) -> bytes:
    """COMPACT_BYTES: uvarint length + 1, the bytes."""
    return uv(len(raw) + 1) + raw


NO_TAGS = b"\x00"


def tags(*fields: tuple[int, bytes]) -> bytes:
    return uv(len(fields)) + b"".join(uv(t) + uv(len(d)) + d for t, d in fields)


TOPIC_A = bytes(range(16))
TOPIC_B = bytes(range(100, 116))


def tp(topic_id: bytes, topic: str, partitions: Sequence[int], tagged: bytes = NO_TAGS) -> bytes:
    return topic_id + cs(topic) + carr([i32(p) for p in partitions]) + tagged


def assignment(*topics: bytes, tagged: bytes = NO_TAGS) -> bytes:
    return carr(topics) + tagged


def member(
    member_id: str = "m1",
    instance: str | None = None,
    rack: str | None = None,
    epoch: int = 5,
    client_id: str = "c1",
    host: str = "/10.0.0.1",
    topics: Sequence[str] = ("orders",),
    regex: str | None = None,
    assigned: bytes = assignment(),
    target: bytes = assignment(),
    member_type: int | None = None,
    tagged: bytes = NO_TAGS,
) -> bytes:
    return (
        cs(member_id) + cs(instance) + cs(rack) + i32(epoch) + cs(client_id) + cs(host)
        + carr([cs(t) for t in topics]) + cs(regex) + assigned + target
        + (b"" if member_type is None else i8(member_type)) + tagged
    )  # fmt: skip


def described(
    group: str = "g",
    members: Sequence[bytes] = (),
    error: int = 0,
    message: str | None = None,
    state: str = "Stable",
    epoch: int = 5,
    assignment_epoch: int = 5,
    assignor: str = "uniform",
    operations: int = -(2**31),
    tagged: bytes = NO_TAGS,
) -> bytes:
    return (
        i16(error) + cs(message) + cs(group) + cs(state) + i32(epoch) + i32(assignment_epoch)
        + cs(assignor) + carr(members) + i32(operations) + tagged
    )  # fmt: skip


def describe_response(*groups: bytes, throttle: int = 0, tagged: bytes = NO_TAGS) -> bytes:
    return i32(throttle) + carr(groups) + tagged


def coordinator(key: str, port: int, error: int = 0, message: str | None = None,
                host: str = "127.0.0.1", node: int = 1) -> bytes:  # fmt: skip
    return cs(key) + i32(node) + cs(host) + i32(port) + i16(error) + cs(message) + NO_TAGS


def find_response(*coordinators: bytes) -> bytes:
    return i32(0) + carr(coordinators) + NO_TAGS


def api_versions_v3(
    apis: dict[int, tuple[int, int]], error: int = 0, tagged: bytes = NO_TAGS
) -> bytes:
    keys = [i16(k) + i16(lo) + i16(hi) + NO_TAGS for k, (lo, hi) in apis.items()]
    return i16(error) + carr(keys) + i32(0) + tagged


# Bytes that are no Kafka answer at all: an HTTP reply, a TLS alert, noise.
GARBAGE = [
    b"HTTP/1.1 400 Bad Request\r\n\r\n",
    b"\x15\x03\x03\x00\x02\x02\x50",
    bytes(range(256)),
    b"\xff" * 64,
    b"\x00" * 64,
]


# --- a scripted broker ----------------------------------------------------------------------

ALL_APIS = {18: (0, 4), 10: (0, 6), 69: (0, 1)}
SILENT = object()  # a handler's answer: read the request, never answer
CLOSE = object()  # a handler's answer: close the connection


# The first flexible version of each API the client speaks (the schemas' "flexibleVersions").
_FIRST_FLEXIBLE = {69: 0, 10: 3, 18: 3, 9: 6, 15: 5}


def read_request(frame: bytes) -> tuple[int, int, int, bytes]:
    """(api key, version, correlation id, body) of one request frame without its size."""
    api_key, version, correlation_id, client_len = struct.unpack(">hhih", frame[:10])
    pos = 10 + max(client_len, 0)
    if version >= _FIRST_FLEXIBLE[api_key]:
        assert frame[pos] == 0  # no tagged fields in our headers
        pos += 1
    return api_key, version, correlation_id, frame[pos:]


def strings(body: bytes, start: int) -> list[str]:
    """A compact string array of short strings (one-byte varints) at ``start``."""
    count, pos, out = body[start] - 1, start + 1, []
    for _ in range(count):
        size = body[pos] - 1
        out.append(body[pos + 1 : pos + 1 + size].decode())
        pos += 1 + size
    return out


class FakeBroker:
    """A local Kafka-protocol server answering through ``handler(broker, api, version, body)``
    (a body, SILENT or CLOSE). ApiVersions, FindCoordinator (pointing at itself) and
    ConsumerGroupDescribe have defaults the handler may fall back to."""

    def __init__(self, handler: Callable[..., Any] | None = None,
                 tls: ssl.SSLContext | None = None, apis: dict | None = None,
                 host: str = "127.0.0.1") -> None:  # fmt: skip
        self.handler = handler or (
            lambda broker, api, version, body: broker.default(api, version, body)
        )
        self.apis = apis or ALL_APIS
        self.host = host
        self.tls = tls
        self.requests: list[tuple[int, int, bytes]] = []
        self.connections = 0
        self.misnumber = False
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._open: list[socket.socket] = []
        self._accept = threading.Thread(target=self._accept_loop, daemon=True)
        self._accept.start()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def apis_called(self) -> list[int]:
        return [api for api, _, _ in self.requests]

    def default(self, api: int, version: int, body: bytes) -> bytes:
        if api == 18:
            return api_versions_v3(self.apis)
        if api == 10:
            return find_response(
                *(coordinator(g, self.port, host=self.host) for g in strings(body, 1))
            )
        member_type = 1 if version >= 1 else None
        return describe_response(
            *(described(g, [member(member_type=member_type)]) for g in strings(body, 0))
        )

    def close(self) -> None:
        # shutdown, not just close: it is what wakes a thread blocked in accept or recv.
        for sock in [self._server, *self._open]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._accept.join(5)
        for thread in self._threads:
            thread.join(5)

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            self._open.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            if self.tls is not None:
                try:
                    sock = self.tls.wrap_socket(sock, server_side=True)
                except OSError:
                    sock.close()  # as a TLS listener does with a client that is not TLS
                    return
                self._open.append(sock)
            with sock:
                while True:
                    size = self._recv(sock, 4)
                    if size is None:
                        return
                    frame = self._recv(sock, struct.unpack(">i", size)[0])
                    if frame is None:
                        return
                    api, version, correlation_id, body = read_request(frame)
                    self.requests.append((api, version, body))
                    answer = self.handler(self, api, version, body)
                    if answer is CLOSE:
                        return
                    if answer is SILENT:
                        continue
                    correlation_id += 1 if self.misnumber else 0
                    header = i32(correlation_id) + (b"" if api == 18 else NO_TAGS)
                    sock.sendall(i32(len(header) + len(answer)) + header + answer)
        except (OSError, ValueError):
            return

    @staticmethod
    def _recv(sock: socket.socket, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data


def started_brokers(kind: type[FakeBroker]) -> Iterator[Callable[..., Any]]:
    """A fixture's body: yields a function starting brokers of ``kind``; closes them after."""
    brokers: list[FakeBroker] = []

    def start(*args: Any, **kwargs: Any) -> FakeBroker:
        brokers.append(kind(*args, **kwargs))
        return brokers[-1]

    yield start
    for broker in brokers:
        broker.close()


def answering(api: int, *answers: bytes | object) -> Callable[..., Any]:
    """A handler giving these answers to ``api`` in turn, then the default ones."""
    queue = list(answers)

    def handler(broker: FakeBroker, asked: int, version: int, body: bytes) -> Any:
        if asked == api and queue:
            return queue.pop(0)
        return broker.default(asked, version, body)

    return handler


def slow_on(api: int, seconds: float) -> Callable[..., Any]:
    """A handler answering ``api`` as by default, after ``seconds``."""

    def handler(broker: FakeBroker, asked: int, version: int, body: bytes) -> Any:
        if asked == api:
            time.sleep(seconds)
        return broker.default(asked, version, body)

    return handler


def silent_on(api: int) -> Callable[..., Any]:
    """A handler that reads ``api`` requests and never answers them."""
    return lambda broker, asked, version, body: (
        SILENT if asked == api else broker.default(asked, version, body)
    )


def finding(coordinators: dict[str, int | None]) -> Callable[..., Any]:
    """A handler whose FindCoordinator names the broker on each port as its group's
    coordinator (None: the broker asked), every other answer the default one."""

    def handler(broker: FakeBroker, api: int, version: int, body: bytes) -> Any:
        if api == 10:
            return find_response(
                *(coordinator(g, broker.port if p is None else p) for g, p in coordinators.items())
            )
        return broker.default(api, version, body)

    return handler


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- against the real broker ----------------------------------------------------------------


def through_a_restart(lab_services: Any, call: Callable[[float], dict], what: str) -> dict:
    """Stop the broker, then ``call(timeout_s)`` over and over while it starts again, until
    every group's answer is ok; returns that answer. Asserts that the calls raised nothing but
    what a caller expects of a cluster that is down, and went from ``BrokerUnreachable`` to
    all ok; prints what they gave in between."""
    lab_services.stop("kafka")
    with pytest.raises(BrokerUnreachable):
        call(5)
    starting = threading.Thread(target=lab_services.start, args=("kafka",), daemon=True)
    starting.start()

    seen: list[str] = []  # what each call gave, in order, repeats collapsed

    def answered() -> dict | None:
        try:
            results = call(2)
        except (BrokerUnreachable, DeadlineExceeded) as exc:
            outcome, results = type(exc).__name__, None
        else:
            outcome = "/".join(sorted({r.error_name for r in results.values()}))
        if not seen or seen[-1] != outcome:
            seen.append(outcome)
        return results if results and all(r.ok for r in results.values()) else None

    after = wait_for(answered, timeout=120, what=what, every=0.1)
    starting.join(120)
    assert seen[0] == "BrokerUnreachable" and seen[-1] == "NONE"
    print(f"\nwhile the broker started: {' -> '.join(seen)}")
    return after


def timing_summary(title: str, timings: dict[str, list[float]]) -> dict[str, tuple[float, float]]:
    """Best and median of each way's timings, printed under ``title``."""
    summary = {k: (min(v), statistics.median(v)) for k, v in timings.items()}
    print(
        f"\n{title}, best / median of {len(next(iter(timings.values())))}: "
        + ", ".join(
            f"{k} {lo * 1000:.0f} / {med * 1000:.0f} ms" for k, (lo, med) in summary.items()
        )
    )
    return summary

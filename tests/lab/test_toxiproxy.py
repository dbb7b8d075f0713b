"""The lab's Toxiproxy (``lab/toxiproxy.py``): where the product is pointed when a stack runs
it (pure, in tables), and the faults against a real Toxiproxy server in front of a small TCP
echo server of the test's own."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.ports import LOOPBACK, pick_free_ports
from lab.services import Context, kafka_properties
from lab.toxiproxy import (
    ToxiproxyClient,
    injected,
    product_env,
    proxied_listener,
    proxy_config,
    source_addr,
    toxiproxy_binary,
)
from tests.waiting import wait_for

PORTS = {
    "zookeeper": 2181, "kafka": 9092, "kafka_controller": 9093, "redis": 6379,
    "postgres": 5432, "toxiproxy": 8474, "proxy_kafka": 10001, "proxy_zookeeper": 10002,
    "proxy_redis": 10003, "proxy_postgres": 10004, "kafka_proxied": 9094,
}  # fmt: skip
WITHOUT = {k: v for k, v in PORTS.items() if k != "toxiproxy" and not k.startswith("proxy_")}


def ctx(ports: dict[str, int], redis_url: str | None = None) -> Context:
    return Context(run_dir=Path("/nonexistent"), ports=ports, redis_url=redis_url)


@pytest.mark.parametrize(
    ("var", "url", "expected"),
    [
        ("REDIS_URL", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:10003/0"),
        ("DATABASE_URL", "postgres://lagwatch:s3cr%2Ft@127.0.0.1:5432/lagwatch",
         "postgres://lagwatch:s3cr%2Ft@127.0.0.1:10004/lagwatch"),
        ("REDIS_URL", "redis://:pw@127.0.0.1:6379/2", "redis://:pw@127.0.0.1:10003/2"),
        ("DATABASE_URL", "", ""),  # SQLite: nothing to proxy
    ],
)  # fmt: skip
def test_the_product_reaches_its_stores_through_the_proxies(
    var: str, url: str, expected: str
) -> None:
    assert product_env(ctx(PORTS), {var: url})[var] == expected
    assert product_env(ctx(WITHOUT), {var: url})[var] == url  # no Toxiproxy: unchanged


def test_sources_are_the_proxies_only_with_toxiproxy() -> None:
    assert source_addr(ctx(PORTS), "kafka") == "127.0.0.1:10001"
    assert source_addr(ctx(PORTS), "zookeeper") == "127.0.0.1:10002"
    assert source_addr(ctx(WITHOUT), "kafka") == "127.0.0.1:9092"


def test_the_broker_advertises_its_proxied_listener_at_the_proxy() -> None:
    props = dict(line.split("=", 1) for line in kafka_properties(ctx(PORTS)).splitlines())
    assert props["listeners"].endswith(",PROXIED://127.0.0.1:9094")
    assert props["advertised.listeners"] == ("PLAINTEXT://127.0.0.1:9092,PROXIED://127.0.0.1:10001")
    assert props["listener.security.protocol.map"].endswith(",PROXIED:PLAINTEXT")
    plain = dict(line.split("=", 1) for line in kafka_properties(ctx(WITHOUT)).splitlines())
    assert "PROXIED" not in plain["listeners"] + plain["advertised.listeners"]
    assert proxied_listener(ctx(WITHOUT), {"listeners": "x"}) == {"listeners": "x"}


def test_proxies_are_made_for_the_upstreams_the_stack_has() -> None:
    config = {p["name"]: (p["listen"], p["upstream"]) for p in proxy_config(ctx(PORTS))}
    assert config == {
        "kafka": ("127.0.0.1:10001", "127.0.0.1:9094"),
        "zookeeper": ("127.0.0.1:10002", "127.0.0.1:2181"),
        "redis": ("127.0.0.1:10003", "127.0.0.1:6379"),
        "postgres": ("127.0.0.1:10004", "127.0.0.1:5432"),
    }
    no_pg = {k: v for k, v in PORTS.items() if k != "postgres"}
    reused = {p["name"]: p["upstream"] for p in proxy_config(ctx(no_pg, "redis://10.0.0.5:7000/0"))}
    assert reused == {"kafka": "127.0.0.1:9094", "zookeeper": "127.0.0.1:2181",
                      "redis": "10.0.0.5:7000"}  # fmt: skip


# --- against a real Toxiproxy ----------------------------------------------------------------


@pytest.fixture
def echo() -> Iterator[int]:
    """A TCP server answering each line with itself."""
    server = socket.create_server((LOOPBACK, 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # a reset from the proxy ends the connection
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


@pytest.fixture
def proxy(tmp_path: Path, echo: int) -> Iterator[tuple[ToxiproxyClient, int]]:
    api_port, listen = pick_free_ports(2)
    config = tmp_path / "proxies.json"
    config.write_text(
        f'[{{"name": "echo", "listen": "{LOOPBACK}:{listen}", "upstream": "{LOOPBACK}:{echo}"}}]'
    )
    server = subprocess.Popen(
        [str(toxiproxy_binary()), "-host", LOOPBACK, "-port", str(api_port), "-config",
         str(config)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        client = ToxiproxyClient(f"http://{LOOPBACK}:{api_port}")
        wait_for(lambda: _answers(client), 20, "toxiproxy's API")
        yield client, listen
    finally:
        server.terminate()
        server.wait(10)


def _answers(client: ToxiproxyClient) -> bool:
    try:
        return "echo" in client.proxies()
    except OSError:
        return False


def round_trip(port: int, timeout: float = 5.0) -> tuple[bytes, float]:
    """One line through the proxy: the answer and how long it took."""
    start = time.monotonic()
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as conn:
        conn.sendall(b"ping\n")
        return conn.recv(100), time.monotonic() - start


def test_each_fault_does_what_it_says_and_is_undone(proxy: tuple[ToxiproxyClient, int]) -> None:
    client, port = proxy
    assert round_trip(port)[0] == b"ping\n"
    with injected(client, "echo", "latency"):
        answer, took = round_trip(port)
        assert answer == b"ping\n" and took >= 2.0
    with injected(client, "echo", "hang"), pytest.raises(TimeoutError):
        round_trip(port, timeout=1.5)
    with injected(client, "echo", "reset"), pytest.raises((ConnectionError, OSError)):
        answer, _ = round_trip(port)
        assert answer  # a reset may come as an empty read first
    with injected(client, "echo", "cut"), pytest.raises(ConnectionError):
        round_trip(port)
    with injected(client, "echo", "slow-link"):
        assert round_trip(port)[0] == b"ping\n"  # 5 bytes pass a 10 KB/s link at once
    assert client.proxies()["echo"]["toxics"] == [] and client.proxies()["echo"]["enabled"]
    assert round_trip(port)[1] < 2.0

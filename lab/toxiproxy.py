"""Toxiproxy in the lab: real network faults between the product and its sources and stores.

`Toxiproxy <https://github.com/Shopify/toxiproxy>`_ is a TCP proxy whose links can be made
slow, hung, reset or cut through a small HTTP API. The lab builds its server from the Go
module (``go install github.com/Shopify/toxiproxy/v2/cmd/server@TOXIPROXY_VERSION``, through
the Go module proxy, once into ``~/.cache/lagwatch/toxiproxy-<version>/``; ``scripts/setup
dev`` runs ``python -m lab.toxiproxy``) and runs it as the optional service ``toxiproxy``.

With it in a stack, the product's processes reach Kafka, ZooKeeper, Redis and PostgreSQL
through one proxy each (``proxy_<name>`` ports): the lab cluster's ``clusters.yaml`` names
the proxies' addresses, and ``services.django_env`` points ``REDIS_URL`` and ``DATABASE_URL``
at them. The workload, the lab's probes and ``Stack.django_env`` (``manage.py`` run from
outside) keep the direct addresses, so a fault cuts the product off and nothing else.

Kafka needs one more step: a client connects to the addresses the broker *advertises*, not to
the one it bootstrapped from. The lab broker therefore gets a second listener, ``PROXIED``, on
its own port (``kafka_proxied``), advertised as the Kafka proxy's listen address
(``proxied_listener``): the product's clients, bootstrapped through the proxy, are told the
proxy's address, so every one of their connections crosses it; the workload, on ``PLAINTEXT``,
is told the broker's own address.

``FAULTS`` are the faults the lab tests and the soak inject, each by ``ToxiproxyClient``.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

from lab.go_build import go_built
from lab.ports import LOOPBACK
from lab.services import Context, ServiceSpec

TOXIPROXY_VERSION = "v2.12.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"

# The proxies, by upstream: (proxy name, the port name of what it forwards to). Kafka's
# upstream is the broker's PROXIED listener; Redis's may be a reused server (``_upstream``).
PROXIES = (
    ("kafka", "kafka_proxied"),
    ("zookeeper", "zookeeper"),
    ("redis", "redis"),
    ("postgres", "postgres"),
)
PROXIED_LISTENER = "PROXIED"


def toxiproxy_binary() -> Path:
    """The cached Toxiproxy server, built from its Go module first if it is not there yet."""
    from lab.kafka_dist import cache_root

    target = cache_root() / f"toxiproxy-{TOXIPROXY_VERSION}" / "toxiproxy-server"
    return go_built(
        target, ["install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"], Path.cwd(),
        built_name="server",
    )  # fmt: skip


def enabled(ctx: Context) -> bool:
    """Whether this stack runs the product through Toxiproxy."""
    return "toxiproxy" in ctx.ports


def proxy_addr(ctx: Context, name: str) -> str:
    """Where the product connects for ``name`` (kafka, zookeeper, redis, postgres)."""
    return ctx.addr(f"proxy_{name}")


def source_addr(ctx: Context, name: str) -> str:
    """The address the product is given for ``name``: its proxy's when the stack runs
    Toxiproxy, else the service's own."""
    return proxy_addr(ctx, name) if enabled(ctx) else ctx.addr(name)


def _upstream(ctx: Context, target_port: str) -> str | None:
    if target_port == "redis" and ctx.redis_url:
        parsed = urlparse(ctx.redis_url)
        return f"{parsed.hostname or LOOPBACK}:{parsed.port or 6379}"
    return ctx.addr(target_port) if target_port in ctx.ports else None


def proxy_config(ctx: Context) -> list[dict[str, Any]]:
    """The proxies Toxiproxy creates at its start (its ``-config`` file), for the upstreams
    this stack has."""
    out = []
    for name, target in PROXIES:
        upstream = _upstream(ctx, target)
        if upstream is not None:
            out.append({"name": name, "listen": proxy_addr(ctx, name), "upstream": upstream})
    return out


def proxied_listener(ctx: Context, settings: Mapping[str, str]) -> dict[str, str]:
    """The lab broker's ``settings`` with the ``PROXIED`` listener added when the stack runs
    Toxiproxy (else unchanged): bound to ``kafka_proxied``, advertised as the Kafka proxy."""
    if not enabled(ctx):
        return dict(settings)
    out = dict(settings)
    out["listeners"] += f",{PROXIED_LISTENER}://{ctx.addr('kafka_proxied')}"
    out["advertised.listeners"] += f",{PROXIED_LISTENER}://{proxy_addr(ctx, 'kafka')}"
    out["listener.security.protocol.map"] += f",{PROXIED_LISTENER}:PLAINTEXT"
    return out


def product_env(ctx: Context, env: Mapping[str, str]) -> dict[str, str]:
    """The product's ``REDIS_URL`` and ``DATABASE_URL`` through their proxies (when the stack
    runs Toxiproxy): the same URL with the proxy's host and port."""
    out = dict(env)
    if not enabled(ctx):
        return out
    for var, name in (("REDIS_URL", "redis"), ("DATABASE_URL", "postgres")):
        if out.get(var):
            parsed = urlparse(out[var])
            userinfo = parsed.netloc.rpartition("@")[0]
            netloc = (userinfo + "@" if userinfo else "") + proxy_addr(ctx, name)
            out[var] = urlunparse(parsed._replace(netloc=netloc))
    return out


def api_url(ctx: Context) -> str:
    return ctx.url("toxiproxy")


def _prepare(ctx: Context, env: dict[str, str], log: Path) -> None:
    folder = ctx.run_dir / "toxiproxy"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "proxies.json").write_text(json.dumps(proxy_config(ctx), indent=1) + "\n")


def _argv(ctx: Context) -> list[str]:
    return [
        str(toxiproxy_binary()), "-host", LOOPBACK, "-port", str(ctx.ports["toxiproxy"]),
        "-config", str(ctx.run_dir / "toxiproxy" / "proxies.json"),
    ]  # fmt: skip


def _ready(ctx: Context, log: str) -> bool:
    wanted = {p["name"] for p in proxy_config(ctx)}
    return wanted <= ToxiproxyClient(api_url(ctx)).proxies().keys()


TOXIPROXY_SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec(
        name="toxiproxy",
        # The API first (checked to be ours), then each proxy's listen port, and the broker's
        # PROXIED listener (the broker binds it; kept here so a stack without Toxiproxy has
        # no such port).
        ports=("toxiproxy", *(f"proxy_{name}" for name, _ in PROXIES), "kafka_proxied"),
        prepare=_prepare,
        argv=_argv,
        ready=_ready,
        endpoints=lambda ctx: {"toxiproxy": api_url(ctx)},
        ready_timeout_s=30.0,
        optional=True,
    ),
)


# --- the client and the faults ---------------------------------------------------------------


class ToxiproxyError(RuntimeError):
    """Toxiproxy answered an error (the message carries its text)."""


@dataclass
class ToxiproxyClient:
    """Toxiproxy's HTTP API (JSON): proxies enabled or disabled, toxics added and removed."""

    url: str
    timeout_s: float = 10.0

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url.rstrip("/") + path, data=data, method=method,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            raise ToxiproxyError(f"{method} {path}: {exc.code} {exc.read()[:300]!r}") from exc
        return json.loads(text) if text.strip() else None

    def proxies(self) -> dict[str, Any]:
        return self._call("GET", "/proxies")

    def set_enabled(self, proxy: str, on: bool) -> None:
        """Disabled, a proxy closes its connections and refuses new ones: a network cut."""
        self._call("POST", f"/proxies/{proxy}", {"enabled": on})

    def add_toxic(
        self, proxy: str, kind: str, attributes: Mapping[str, Any], stream: str = "downstream"
    ) -> str:
        """Adds a toxic (``latency``, ``bandwidth``, ``timeout``, ``reset_peer``…) on the
        stream; returns its name, for ``remove_toxic``."""
        name = f"{kind}_{stream}"
        body = {"name": name, "type": kind, "stream": stream, "attributes": dict(attributes)}
        self._call("POST", f"/proxies/{proxy}/toxics", body)
        return name

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def reset(self) -> None:
        """Every proxy enabled again and every toxic removed."""
        self._call("POST", "/reset")


@dataclass(frozen=True)
class Fault:
    """One kind of network fault: a toxic (with its attributes, on both streams or one), or
    the proxy disabled (``toxic`` None: the cut)."""

    name: str
    toxic: str | None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    streams: tuple[str, ...] = ("downstream",)
    what: str = ""


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault("latency", "latency", {"latency": 2000}, what="2 s added to every answer"),
        Fault("slow-link", "bandwidth", {"rate": 10}, ("upstream", "downstream"),
              what="10 KB/s each way"),
        # timeout 0: data stops and the connection is held open until the toxic goes.
        Fault("hang", "timeout", {"timeout": 0}, ("upstream", "downstream"),
              what="connections open, nothing passes"),
        Fault("reset", "reset_peer", {"timeout": 0}, ("upstream", "downstream"),
              what="every connection reset (TCP RST)"),
        Fault("cut", None, what="the proxy disabled: connections closed and refused"),
    )
}  # fmt: skip


@contextmanager
def injected(client: ToxiproxyClient, proxy: str, fault: str) -> Iterator[Fault]:
    """``fault`` on ``proxy`` for the block; undone after it, whatever happens."""
    spec = FAULTS[fault]
    added: list[str] = []
    try:
        if spec.toxic is None:
            client.set_enabled(proxy, False)
        else:
            for stream in spec.streams:
                added.append(client.add_toxic(proxy, spec.toxic, spec.attributes, stream))
        yield spec
    finally:
        if spec.toxic is None:
            client.set_enabled(proxy, True)
        for name in added:
            client.remove_toxic(proxy, name)


if __name__ == "__main__":
    print(toxiproxy_binary())
    sys.exit(0)
